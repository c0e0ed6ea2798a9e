// Spans → Vigil events, pure. Reads the OpenTelemetry GenAI semantic conventions (gen_ai.*, the
// structured messages and the older indexed and event forms), OpenInference (openinference.span.kind,
// llm.*, tool.*, input/output.value) and OpenLLMetry's indexed prompts. docs/guide/opentelemetry.md
// has the table; the tree contract (metadata.otel) is in otelMetadata.
import { createHash } from 'node:crypto';
import { jsonValueProblem, toIso } from '@vigil/platform';
import { clientAgentId, payloadSchemas, type IncomingEvent, type IngestEventType } from '../events/index.ts';
import type { AttributeValue, Attributes, OtlpSpan } from './spans.ts';

export const OTEL_SPAN_KINDS = ['llm', 'tool', 'agent', 'chain', 'retriever', 'embedding', 'other'] as const;
export type OtelSpanKind = (typeof OTEL_SPAN_KINDS)[number];

/** What every event made from a span carries in metadata.otel: enough to rebuild the trace tree. */
export interface OtelMetadata {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  kind: OtelSpanKind;
  startTime: string;
  endTime: string;
  durationMs: number;
  resource?: Record<string, AttributeValue>;
}

/** What cost lookups need of the price table (@vigil/pricing's PriceTable). */
export interface CostLookup {
  costUsd(model: string, provider: string | undefined, inputTokens: number, outputTokens: number): number | undefined;
}

/** Fallback agent id when a span names no agent and its resource no service. */
export const DEFAULT_AGENT_ID = 'otel';
/** Longest session or agent id observe accepts. */
export const MAX_ID_LENGTH = 256;

// --- attribute readers -------------------------------------------------------------------------

function text(attributes: Attributes, ...keys: string[]): string | undefined {
  for (const key of keys) {
    const value = attributes[key];
    if (typeof value === 'string' && value.length > 0) return value;
    if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  }
  return undefined;
}

function count(attributes: Attributes, ...keys: string[]): number | undefined {
  for (const key of keys) {
    const value = attributes[key];
    const number = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
    if (typeof number === 'number' && Number.isFinite(number) && number >= 0) return number;
  }
  return undefined;
}

/** A JSON text as its value; anything else (plain text) as itself. */
function parsedJson(value: AttributeValue | undefined): AttributeValue | undefined {
  if (typeof value !== 'string') return value;
  const trimmed = value.trim();
  if (!trimmed.startsWith('{') && !trimmed.startsWith('[') && !trimmed.startsWith('"')) return value;
  try {
    return JSON.parse(trimmed) as AttributeValue;
  } catch {
    return value;
  }
}

/**
 * Flattened lists (`llm.input_messages.0.message.role`, `gen_ai.prompt.1.content`): one object per
 * index, keyed by the rest of the name, in index order.
 */
function indexed(attributes: Attributes, prefix: string): Record<string, AttributeValue>[] {
  const start = `${prefix}.`;
  const items = new Map<number, Record<string, AttributeValue>>();
  for (const key in attributes) {
    if (!key.startsWith(start)) continue;
    const rest = key.slice(start.length);
    const dot = rest.indexOf('.');
    const index = Number(dot < 0 ? rest : rest.slice(0, dot));
    if (!Number.isInteger(index) || index < 0 || dot < 0) continue;
    const item = items.get(index) ?? {};
    item[rest.slice(dot + 1)] = attributes[key]!;
    items.set(index, item);
  }
  return [...items.keys()].sort((a, b) => a - b).map((index) => items.get(index)!);
}

function isObject(value: unknown): value is Record<string, AttributeValue> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

// --- kinds ------------------------------------------------------------------------------------

const OPENINFERENCE_KINDS: Record<string, OtelSpanKind> = {
  LLM: 'llm',
  TOOL: 'tool',
  AGENT: 'agent',
  CHAIN: 'chain',
  RETRIEVER: 'retriever',
  EMBEDDING: 'embedding',
};

const GENAI_OPERATIONS: Record<string, OtelSpanKind> = {
  chat: 'llm',
  text_completion: 'llm',
  generate_content: 'llm',
  completion: 'llm',
  embeddings: 'embedding',
  execute_tool: 'tool',
  invoke_agent: 'agent',
  create_agent: 'agent',
  invoke_workflow: 'chain',
  retrieval: 'retriever',
};

/** OpenLLMetry's traceloop.span.kind, as its OpenInference counterpart (TOOL, CHAIN, AGENT). */
const TRACELOOP_KINDS: Record<string, OtelSpanKind> = {
  tool: 'tool',
  task: 'chain',
  workflow: 'chain',
  agent: 'agent',
};

/**
 * The span's kind: openinference.span.kind, else OpenLLMetry's traceloop.span.kind, else
 * gen_ai.operation.name (or OpenLLMetry's llm.request.type), else other.
 */
export function spanKind(span: OtlpSpan): OtelSpanKind {
  const attributes = span.attributes;
  const openInference = text(attributes, 'openinference.span.kind');
  if (openInference !== undefined) return OPENINFERENCE_KINDS[openInference.toUpperCase()] ?? 'other';
  const traceloop = TRACELOOP_KINDS[text(attributes, 'traceloop.span.kind')?.toLowerCase() ?? ''];
  if (traceloop !== undefined) return traceloop;
  const operation = text(attributes, 'gen_ai.operation.name', 'llm.request.type');
  if (operation !== undefined) return GENAI_OPERATIONS[operation.toLowerCase()] ?? 'other';
  return 'other';
}

// --- sessions and agents ----------------------------------------------------------------------

/** An id within observe's bound: a longer one keeps its start and a hash of the whole, so distinct ids stay distinct. */
export function boundedId(id: string): string {
  if (id.length <= MAX_ID_LENGTH) return id;
  const digest = createHash('sha256').update(id).digest('hex').slice(0, 16);
  return `${id.slice(0, MAX_ID_LENGTH - digest.length - 1)}~${digest}`;
}

/**
 * The session a span names itself: gen_ai.conversation.id, else session.id (OpenInference), else
 * the session_id association property (OpenLLMetry's Traceloop.set_association_properties).
 */
export function spanSessionId(span: OtlpSpan): string | undefined {
  return text(span.attributes, 'gen_ai.conversation.id', 'session.id', 'traceloop.association.properties.session_id');
}

/** The agent a span names itself (gen_ai.agent.name). */
export function spanAgentName(span: OtlpSpan): string | undefined {
  return text(span.attributes, 'gen_ai.agent.name');
}

/** The resource's service.name, unless it is the SDK's placeholder `unknown_service…`. */
function serviceName(span: OtlpSpan): string | undefined {
  const name = text(span.resource, 'service.name');
  return name === undefined || name.startsWith('unknown_service') ? undefined : name;
}

export interface SpanIdentity {
  sessionId: string;
  agentId: string;
}

const spanKey = (span: Pick<OtlpSpan, 'traceId' | 'spanId'>): string => `${span.traceId}:${span.spanId}`;

/**
 * Session and agent of each span of a request. Session: the span's own gen_ai.conversation.id or
 * session.id, else the nearest ancestor's in the request, else one named by another span of the
 * trace in the request, else the session spans of the trace were stored under before
 * (`storedSessions`), else the trace id. Agent: gen_ai.agent.name of the span or its nearest
 * ancestor in the request, else the resource's service.name, else `otel`.
 */
export function resolveIdentities(spans: readonly OtlpSpan[], storedSessions: ReadonlyMap<string, string>): Map<string, SpanIdentity> {
  const byKey = new Map(spans.map((span) => [spanKey(span), span]));
  const traceSession = new Map<string, string>();
  for (const span of spans) {
    const own = spanSessionId(span);
    if (own !== undefined && !traceSession.has(span.traceId)) traceSession.set(span.traceId, own);
  }
  const nearest = (span: OtlpSpan, read: (span: OtlpSpan) => string | undefined): string | undefined => {
    const seen = new Set<string>();
    for (let current: OtlpSpan | undefined = span; current !== undefined && !seen.has(current.spanId);) {
      seen.add(current.spanId);
      const value = read(current);
      if (value !== undefined) return value;
      current = current.parentSpanId === null ? undefined : byKey.get(`${current.traceId}:${current.parentSpanId}`);
    }
    return undefined;
  };
  const identities = new Map<string, SpanIdentity>();
  for (const span of spans) {
    const sessionId = nearest(span, spanSessionId) ?? traceSession.get(span.traceId) ?? storedSessions.get(span.traceId) ?? span.traceId;
    const agentId = nearest(span, spanAgentName) ?? serviceName(span) ?? DEFAULT_AGENT_ID;
    identities.set(spanKey(span), { sessionId: boundedId(sessionId), agentId: boundedId(agentId) });
  }
  return identities;
}

export function identityOf(identities: ReadonlyMap<string, SpanIdentity>, span: OtlpSpan): SpanIdentity {
  return identities.get(spanKey(span))!;
}

// --- messages ---------------------------------------------------------------------------------

interface ToolCall {
  id?: string;
  name: string;
  arguments: AttributeValue;
}

interface Message {
  role: string;
  content: AttributeValue;
  toolCalls?: ToolCall[];
  toolCallId?: string;
}

interface Output {
  completion: AttributeValue;
  toolCalls: ToolCall[];
  finishReason?: string;
}

/** The text parts of a GenAI structured message, joined; the parts themselves when none is text. */
function partsText(parts: AttributeValue[]): AttributeValue {
  const texts = parts
    .filter(isObject)
    .filter((part) => part.type === 'text' && typeof part.content === 'string')
    .map((part) => part.content as string);
  return texts.length > 0 ? texts.join('') : null;
}

/** A message of gen_ai.input.messages / gen_ai.output.messages (role, parts, finish_reason). */
function genAiMessage(value: AttributeValue): Message & { finishReason?: string } {
  if (!isObject(value)) return { role: 'user', content: value };
  const parts = Array.isArray(value.parts) ? value.parts : [];
  const toolCalls = parts
    .filter(isObject)
    .filter((part) => part.type === 'tool_call')
    .map((part) => ({
      ...(typeof part.id === 'string' && { id: part.id }),
      name: typeof part.name === 'string' ? part.name : '',
      arguments: parsedJson(part.arguments) ?? null,
    }));
  const response = parts.filter(isObject).find((part) => part.type === 'tool_call_response');
  const content = Array.isArray(value.parts) ? (response ? (response.response ?? null) : partsText(parts)) : (value.content ?? null);
  return {
    role: typeof value.role === 'string' ? value.role : 'user',
    content,
    ...(toolCalls.length > 0 && { toolCalls }),
    ...(response && typeof response.id === 'string' && { toolCallId: response.id }),
    ...(typeof value.finish_reason === 'string' && { finishReason: value.finish_reason }),
  };
}

/** A message flattened the OpenInference way (message.role, message.content, message.tool_calls.N.tool_call.*). */
function openInferenceMessage(item: Record<string, AttributeValue>): Message {
  const contents = indexed(item, 'message.contents')
    .map((part) => part['message_content.text'])
    .filter((t) => typeof t === 'string');
  const toolCalls = indexed(item, 'message.tool_calls').map((call) => ({
    ...(typeof call['tool_call.id'] === 'string' && { id: call['tool_call.id'] }),
    name: typeof call['tool_call.function.name'] === 'string' ? call['tool_call.function.name'] : '',
    arguments: parsedJson(call['tool_call.function.arguments']) ?? null,
  }));
  return {
    role: typeof item['message.role'] === 'string' ? item['message.role'] : 'user',
    content: item['message.content'] ?? (contents.length > 0 ? contents.join('') : null),
    ...(toolCalls.length > 0 && { toolCalls }),
    ...(typeof item['message.tool_call_id'] === 'string' && { toolCallId: item['message.tool_call_id'] }),
  };
}

/** A message flattened the OpenLLMetry way (gen_ai.prompt.N.role, .content, .tool_calls.M.name). */
function indexedPromptMessage(item: Record<string, AttributeValue>): Message & { finishReason?: string } {
  const toolCalls = indexed(item, 'tool_calls').map((call) => ({
    ...(typeof call.id === 'string' && { id: call.id }),
    name: typeof call.name === 'string' ? call.name : '',
    arguments: parsedJson(call.arguments) ?? null,
  }));
  return {
    role: typeof item.role === 'string' ? item.role : 'user',
    content: item.content ?? null,
    ...(toolCalls.length > 0 && { toolCalls }),
    ...(typeof item.tool_call_id === 'string' && { toolCallId: item.tool_call_id }),
    ...(typeof item.finish_reason === 'string' && { finishReason: item.finish_reason }),
  };
}

const MESSAGE_EVENTS: Record<string, string> = {
  'gen_ai.system.message': 'system',
  'gen_ai.user.message': 'user',
  'gen_ai.assistant.message': 'assistant',
  'gen_ai.tool.message': 'tool',
};

const CONTENT_EVENTS = new Set(['gen_ai.client.inference.operation.details', 'gen_ai.content.prompt', 'gen_ai.content.completion']);

/** Span attributes, with those of the GenAI content events (operation details, prompt/completion) under them. */
function contentAttributes(span: OtlpSpan): Attributes {
  const contentEvents = span.events.filter((event) => CONTENT_EVENTS.has(event.name));
  // Most spans have none: their attributes are used as they are, not copied.
  if (contentEvents.length === 0) return span.attributes;
  return Object.assign({}, ...contentEvents.map((event) => event.attributes), span.attributes) as Attributes;
}

function inputMessages(span: OtlpSpan, attributes: Attributes): Message[] {
  const structured = parsedJson(attributes['gen_ai.input.messages']);
  if (Array.isArray(structured)) return structured.map(genAiMessage);
  const openInference = indexed(attributes, 'llm.input_messages');
  if (openInference.length > 0) return openInference.map(openInferenceMessage);
  const openLlmetry = indexed(attributes, 'gen_ai.prompt');
  if (openLlmetry.length > 0) return openLlmetry.map(indexedPromptMessage);
  const fromEvents = span.events
    .filter((event) => MESSAGE_EVENTS[event.name] !== undefined)
    .map((event) => ({ role: text(event.attributes, 'role') ?? MESSAGE_EVENTS[event.name]!, content: parsedJson(event.attributes.content) ?? null }));
  if (fromEvents.length > 0) return fromEvents;
  const prompt = parsedJson(attributes['gen_ai.prompt']);
  if (Array.isArray(prompt)) return prompt.map(genAiMessage);
  if (prompt !== undefined && prompt !== null) return [{ role: 'user', content: prompt }];
  return [];
}

function firstOutput(messages: (Message & { finishReason?: string })[]): Output | undefined {
  const message = messages[0];
  if (message === undefined) return undefined;
  return { completion: message.content, toolCalls: message.toolCalls ?? [], ...(message.finishReason !== undefined && { finishReason: message.finishReason }) };
}

function output(span: OtlpSpan, attributes: Attributes): Output {
  const structured = parsedJson(attributes['gen_ai.output.messages']);
  if (Array.isArray(structured) && structured.length > 0) return firstOutput(structured.map(genAiMessage))!;
  const openInference = indexed(attributes, 'llm.output_messages');
  if (openInference.length > 0) return firstOutput(openInference.map(openInferenceMessage))!;
  const openLlmetry = indexed(attributes, 'gen_ai.completion');
  if (openLlmetry.length > 0) return firstOutput(openLlmetry.map(indexedPromptMessage))!;
  const choice = span.events.find((event) => event.name === 'gen_ai.choice');
  if (choice !== undefined) {
    const message = genAiMessage(parsedJson(choice.attributes.message) ?? null);
    const finishReason = text(choice.attributes, 'finish_reason');
    return { completion: message.content, toolCalls: message.toolCalls ?? [], ...(finishReason !== undefined && { finishReason }) };
  }
  const completion = parsedJson(attributes['gen_ai.completion']) ?? attributes['output.value'] ?? null;
  return { completion: Array.isArray(completion) ? (firstOutput(completion.map(genAiMessage))?.completion ?? null) : completion, toolCalls: [] };
}

function systemPrompt(attributes: Attributes): string | undefined {
  const instructions = parsedJson(attributes['gen_ai.system_instructions']);
  if (typeof instructions === 'string' && instructions.length > 0) return instructions;
  if (Array.isArray(instructions)) {
    const joined = partsText(instructions);
    if (typeof joined === 'string') return joined;
  }
  return undefined;
}

const REQUEST_PARAMETERS: Record<string, string> = {
  'gen_ai.request.temperature': 'temperature',
  'gen_ai.request.max_tokens': 'maxTokens',
  'gen_ai.request.top_p': 'topP',
  'gen_ai.request.top_k': 'topK',
  'gen_ai.request.frequency_penalty': 'frequencyPenalty',
  'gen_ai.request.presence_penalty': 'presencePenalty',
  'gen_ai.request.seed': 'seed',
  'gen_ai.request.stop_sequences': 'stopSequences',
  'gen_ai.request.choice.count': 'choiceCount',
};

function parameters(attributes: Attributes): Record<string, AttributeValue> | undefined {
  const invocation = parsedJson(attributes['llm.invocation_parameters']);
  const result: Record<string, AttributeValue> = isObject(invocation) ? { ...invocation } : {};
  for (const [key, name] of Object.entries(REQUEST_PARAMETERS)) {
    if (attributes[key] !== undefined) result[name] = attributes[key]!;
  }
  return Object.keys(result).length > 0 ? result : undefined;
}

function toolDefinitions(attributes: Attributes): AttributeValue[] | undefined {
  const definitions = parsedJson(attributes['gen_ai.tool.definitions']);
  if (Array.isArray(definitions) && definitions.length > 0) return definitions;
  const openInference = indexed(attributes, 'llm.tools')
    .map((tool) => parsedJson(tool['tool.json_schema']) ?? null)
    .filter((tool) => tool !== null);
  return openInference.length > 0 ? openInference : undefined;
}

// --- events -----------------------------------------------------------------------------------

const NANOS_PER_MS = 1_000_000n;

function msOf(nanos: bigint): number {
  return Number(nanos / NANOS_PER_MS);
}

/** The resource attributes kept on each event: those that say which service and deployment sent it. */
const KEPT_RESOURCE_ATTRIBUTES = [
  'service.name',
  'service.version',
  'service.namespace',
  'service.instance.id',
  'deployment.environment',
  'deployment.environment.name',
];

export function otelMetadata(span: OtlpSpan, kind: OtelSpanKind): OtelMetadata {
  const resource: Record<string, AttributeValue> = {};
  for (const key of KEPT_RESOURCE_ATTRIBUTES) if (span.resource[key] !== undefined) resource[key] = span.resource[key]!;
  return {
    traceId: span.traceId,
    spanId: span.spanId,
    parentSpanId: span.parentSpanId,
    name: span.name,
    kind,
    startTime: toIso(msOf(span.startNanos)),
    endTime: toIso(msOf(span.endNanos)),
    // Nanoseconds to milliseconds in full precision (a difference of two fixed64 fits a double well).
    durationMs: Number(span.endNanos - span.startNanos) / 1e6,
    ...(Object.keys(resource).length > 0 && { resource }),
  };
}

/** The error of a failed span: its status message, else its exception event's, and a code from error.type / exception.type / the HTTP status. */
function spanError(span: OtlpSpan): { error: string; errorCode?: string | number } {
  const exception = span.events.find((event) => event.name === 'exception')?.attributes ?? {};
  const message = span.status.message || text(exception, 'exception.message') || 'error';
  const status = count(span.attributes, 'http.response.status_code', 'http.status_code');
  const code = text(span.attributes, 'error.type') ?? text(exception, 'exception.type') ?? status;
  return { error: message, ...(code !== undefined && { errorCode: code }) };
}

export type SpanMapping = { events: IncomingEvent[] } | { reason: string };

/** Latest instant observe can show (year 9999): a span later than that is refused. */
const MAX_TIMESTAMP_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * The events of one span: an LLM span → llm_call (at its start) + llm_response (at its end), or
 * llm_call + tool_error when its status is ERROR; a tool span → tool_call + tool_response or
 * tool_error; any other → one custom event. Each carries metadata.otel. A span whose events would
 * not pass ingest's validation is refused with the reason.
 */
export function mapSpan(span: OtlpSpan, identity: SpanIdentity, prices: CostLookup): SpanMapping {
  const startMs = msOf(span.startNanos);
  const endMs = msOf(span.endNanos);
  if (endMs > MAX_TIMESTAMP_MS) return { reason: 'the span ends after the year 9999' };
  const kind = spanKind(span);
  const otel = otelMetadata(span, kind);
  const failed = span.status.code === 'error';
  const attributes = contentAttributes(span);
  const base = { sessionId: identity.sessionId, agentId: identity.agentId };
  // The data subject (erasure: docs/guide/erasure.md), by the semantic conventions' end user id or Vigil's own attribute.
  const subjectId = text(span.attributes, 'vigil.subject.id', 'enduser.id');
  const event = (
    eventType: IngestEventType,
    timestamp: number,
    payload: Record<string, unknown>,
    extra: { severity?: 'error'; costUnpriced?: boolean; usageUnknown?: boolean } = {},
  ): IncomingEvent => ({
    ...base,
    eventType,
    timestamp,
    ...(extra.severity !== undefined && { severity: extra.severity }),
    metadata: {
      otel,
      ...(subjectId !== undefined && { subjectId }),
      ...(extra.costUnpriced === true && { costUnpriced: true }),
      ...(extra.usageUnknown === true && { usageUnknown: true }),
    },
    payload,
  });

  let events: IncomingEvent[];
  if (kind === 'llm') {
    const provider = text(span.attributes, 'gen_ai.provider.name', 'gen_ai.system', 'llm.provider', 'llm.system') ?? 'unknown';
    const requestModel = text(span.attributes, 'gen_ai.request.model', 'llm.model_name', 'gen_ai.response.model') ?? 'unknown';
    const responseModel = text(span.attributes, 'gen_ai.response.model', 'llm.model_name', 'gen_ai.request.model') ?? 'unknown';
    const callId = span.spanId;
    const input = attributes['input.value'];
    const messages = inputMessages(span, attributes);
    const system = systemPrompt(attributes);
    const params = parameters(span.attributes);
    const tools = toolDefinitions(span.attributes);
    const call = event('llm_call', startMs, {
      callId,
      provider,
      model: requestModel,
      messages,
      ...(system !== undefined && { systemPrompt: system }),
      ...(params !== undefined && { parameters: params }),
      ...(tools !== undefined && { tools }),
      // No messages in any convention: the raw input (OpenInference input.value) is kept instead.
      ...(input !== undefined && messages.length === 0 && { input }),
    });
    if (failed) {
      events = [
        call,
        event('tool_error', endMs, { callId, toolName: `${provider}:${requestModel}`, ...spanError(span), durationMs: otel.durationMs }, { severity: 'error' }),
      ];
    } else {
      const reportedInput = count(span.attributes, 'gen_ai.usage.input_tokens', 'gen_ai.usage.prompt_tokens', 'llm.token_count.prompt');
      const reportedOutput = count(span.attributes, 'gen_ai.usage.output_tokens', 'gen_ai.usage.completion_tokens', 'llm.token_count.completion');
      const reportedTotal = count(span.attributes, 'llm.token_count.total', 'gen_ai.usage.total_tokens', 'llm.usage.total_tokens');
      // No count at all (a streamed call whose provider sent no usage): 0, flagged as the SDK flags it.
      const usageUnknown = reportedInput === undefined && reportedOutput === undefined && reportedTotal === undefined;
      const inputTokens = reportedInput ?? 0;
      const outputTokens = reportedOutput ?? 0;
      const totalTokens = reportedTotal ?? inputTokens + outputTokens;
      const carried = count(span.attributes, 'llm.cost.total', 'gen_ai.usage.cost');
      const priced =
        carried ?? prices.costUsd(responseModel, provider, inputTokens, outputTokens) ?? prices.costUsd(responseModel, undefined, inputTokens, outputTokens);
      const result = output(span, attributes);
      const finishReasons = span.attributes['gen_ai.response.finish_reasons'];
      const finishReason =
        result.finishReason ??
        (Array.isArray(finishReasons) && typeof finishReasons[0] === 'string'
          ? finishReasons[0]
          : text(span.attributes, 'gen_ai.response.finish_reasons', 'llm.finish_reason')) ??
        (result.toolCalls.length > 0 ? 'tool_calls' : 'stop');
      events = [
        call,
        event(
          'llm_response',
          endMs,
          {
            callId,
            provider,
            model: responseModel,
            completion: result.completion,
            ...(result.toolCalls.length > 0 && { toolCalls: result.toolCalls }),
            finishReason,
            usage: { inputTokens, outputTokens, totalTokens },
            costUsd: priced ?? 0,
            latencyMs: otel.durationMs,
          },
          { costUnpriced: priced === undefined, usageUnknown },
        ),
      ];
    }
  } else if (kind === 'tool') {
    const toolName = text(span.attributes, 'gen_ai.tool.name', 'tool.name', 'traceloop.entity.name') ?? (span.name || 'tool');
    const callId = text(span.attributes, 'gen_ai.tool.call.id', 'tool_call.id') ?? span.spanId;
    const args =
      parsedJson(
        span.attributes['gen_ai.tool.call.arguments'] ??
          span.attributes['input.value'] ??
          span.attributes['tool.parameters'] ??
          span.attributes['traceloop.entity.input'],
      ) ?? {};
    const call = event('tool_call', startMs, { toolName, callId, arguments: args });
    const outcome = failed
      ? event('tool_error', endMs, { toolName, callId, ...spanError(span), durationMs: otel.durationMs }, { severity: 'error' })
      : event('tool_response', endMs, {
          toolName,
          callId,
          result:
            parsedJson(span.attributes['gen_ai.tool.call.result'] ?? span.attributes['output.value'] ?? span.attributes['traceloop.entity.output']) ?? null,
          durationMs: otel.durationMs,
        });
    events = [call, outcome];
  } else {
    const data: Record<string, unknown> = { ...span.attributes };
    if (failed) data['otel.status_message'] = spanError(span).error;
    events = [event('custom', startMs, { type: span.name || kind, data }, failed ? { severity: 'error' } : {})];
  }
  const problem = eventsProblem(events, otel);
  return problem === null ? { events } : { reason: problem };
}

/** Why ingest would refuse one of the events (its payload, agent id or text), or null. */
function eventsProblem(events: readonly IncomingEvent[], otel: OtelMetadata): string | null {
  const agent = clientAgentId.safeParse(events[0]!.agentId);
  if (!agent.success) return `agentId: ${agent.error.issues[0]!.message}`;
  // The events of a span share their metadata.otel: its text is checked once.
  const unstorableMetadata = jsonValueProblem(otel);
  if (unstorableMetadata !== null) return `metadata.otel.${unstorableMetadata.path.join('.')}: ${unstorableMetadata.message}`;
  for (const event of events) {
    const payload = payloadSchemas[event.eventType as IngestEventType].safeParse(event.payload);
    if (!payload.success) {
      const issue = payload.error.issues[0]!;
      return `${event.eventType}.${issue.path.join('.')}: ${issue.message}`;
    }
    const unstorable = jsonValueProblem(event.payload);
    if (unstorable !== null) return `${event.eventType}.${unstorable.path.join('.')}: ${unstorable.message}`;
  }
  return null;
}
