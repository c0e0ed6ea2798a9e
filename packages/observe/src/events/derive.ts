import type { EventRow } from '../schema.ts';

const ERROR_SEVERITIES = new Set(['error', 'critical']);

type DerivedColumns = Pick<
  EventRow,
  'is_error' | 'cost_usd' | 'duration_ms' | 'latency_ms' | 'tool_name' | 'call_id' | 'provider' | 'model' | 'input_tokens' | 'output_tokens'
>;

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
    input_tokens: eventType === 'cost_tracked' ? asNumber(payload.inputTokens) : asNumber(usage.inputTokens),
    output_tokens: eventType === 'cost_tracked' ? asNumber(payload.outputTokens) : asNumber(usage.outputTokens),
  };
}
