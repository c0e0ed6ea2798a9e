import type { EventRow } from './tables.ts';

const ERROR_SEVERITIES = new Set(['error', 'critical']);

/** The per-event columns ingest derives from the payload, in the order `vigil verify --deep` compares them. */
export const EVENT_DERIVED_COLUMNS = [
  'is_error',
  'cost_usd',
  'duration_ms',
  'latency_ms',
  'tool_name',
  'call_id',
  'provider',
  'model',
  'input_tokens',
  'output_tokens',
  'complexity_tier',
  'finish_reason',
] as const satisfies readonly (keyof EventRow)[];

export type DerivedColumns = Pick<EventRow, (typeof EVENT_DERIVED_COLUMNS)[number]>;

export const COMPLEXITY_TIERS = ['simple', 'moderate', 'complex'] as const;
export type ComplexityTier = (typeof COMPLEXITY_TIERS)[number];
/** Tier bounds (docs/api.md#optimize): simple < 1,000 input tokens and no tools; complex > 10,000 or ≥ 6 tools. */
export const SIMPLE_MAX_INPUT_TOKENS = 1_000;
export const COMPLEX_MIN_INPUT_TOKENS = 10_000;
export const COMPLEX_MIN_TOOLS = 6;

/** The one definition of an LLM call's complexity; "tools" are the entries of the response's toolCalls. */
export function complexityTier(inputTokens: number, toolCalls: number): ComplexityTier {
  if (inputTokens < SIMPLE_MAX_INPUT_TOKENS && toolCalls === 0) return 'simple';
  if (inputTokens > COMPLEX_MIN_INPUT_TOKENS || toolCalls >= COMPLEX_MIN_TOOLS) return 'complex';
  return 'moderate';
}

const asNumber = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const asString = (v: unknown): string | null => (typeof v === 'string' ? v : null);

/** The one definition of an error event: severity error or critical, or a tool_error. */
export function isErrorEvent(eventType: string, severity: string): boolean {
  return ERROR_SEVERITIES.has(severity) || eventType === 'tool_error';
}

/**
 * Columns lifted out of the payload at ingest so that filters and aggregates run in SQL on
 * indexed, typed columns instead of parsing JSON per row.
 */
export function deriveColumns(eventType: string, severity: string, payload: Record<string, unknown>): DerivedColumns {
  const usage = (payload.usage ?? {}) as Record<string, unknown>;
  const isLlmResponse = eventType === 'llm_response';
  const inputTokens = eventType === 'cost_tracked' ? asNumber(payload.inputTokens) : asNumber(usage.inputTokens);
  const spends = eventType === 'llm_response' || eventType === 'cost_tracked';
  const toolTiming = eventType === 'tool_response' || eventType === 'tool_error';
  return {
    is_error: isErrorEvent(eventType, severity) ? 1 : 0,
    cost_usd: spends ? asNumber(payload.costUsd) : null,
    duration_ms: toolTiming ? asNumber(payload.durationMs) : null,
    latency_ms: eventType === 'llm_response' ? asNumber(payload.latencyMs) : null,
    tool_name: asString(payload.toolName),
    call_id: asString(payload.callId),
    provider: asString(payload.provider),
    model: asString(payload.model),
    input_tokens: inputTokens,
    output_tokens: eventType === 'cost_tracked' ? asNumber(payload.outputTokens) : asNumber(usage.outputTokens),
    complexity_tier: isLlmResponse ? complexityTier(inputTokens ?? 0, Array.isArray(payload.toolCalls) ? payload.toolCalls.length : 0) : null,
    finish_reason: isLlmResponse ? asString(payload.finishReason) : null,
  };
}
