import { toIso } from '@vigil/platform';
import type { EventRow, SessionRow } from '../events/index.ts';

/** Stored `text` of an embedding (what was embedded, cut to this many characters; the vector covers up to MAX_EMBED_CHARS). */
export const STORED_TEXT_CHARS = 1000;

/** Cuts `text` to `max` characters (ellipsis included) without splitting a surrogate pair. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  return `${text.slice(0, end)}…`;
}

/** Whitespace that `collapse` would rewrite: any but a single space. Most texts have none, and are then not copied. */
const UNCOLLAPSED = /[^\S ]|\s{2}/;
const collapse = (text: string): string => (UNCOLLAPSED.test(text) ? text.replace(/\s+/g, ' ') : text).trim();

/**
 * A JSON value as readable text: strings as they are, objects as `key: value` pairs, arrays as
 * comma lists, nesting bounded. Keys carry meaning in tool arguments (`to: ops@acme.com`).
 */
export function flatten(value: unknown, budget = 2000, depth = 0): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value.length > budget ? value.slice(0, budget) : value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (depth >= 4) return '';
  const parts: string[] = [];
  let used = 0;
  const push = (part: string): boolean => {
    if (part.length === 0) return true;
    parts.push(part);
    used += part.length + 2;
    return used < budget;
  };
  if (Array.isArray(value)) {
    for (const item of value) if (!push(flatten(item, budget - used, depth + 1))) break;
  } else if (typeof value === 'object') {
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
      const text = flatten(item, budget - used, depth + 1);
      if (text.length > 0 && !push(`${key}: ${text}`)) break;
    }
  }
  return parts.join(', ');
}

/** Text of an LLM message's content: a string, or the text parts of a content array. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (typeof part === 'string' ? part : typeof (part as { text?: unknown })?.text === 'string' ? (part as { text: string }).text : ''))
      .filter(Boolean)
      .join(' ');
  }
  return flatten(content);
}

/**
 * What an llm_call asks: its last user message (earlier messages repeat the conversation and the
 * system prompt is the same on every call, so neither says what this call is about).
 */
export function lastUserMessage(messages: unknown): string {
  if (!Array.isArray(messages) || messages.length === 0) return '';
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as { role?: unknown; content?: unknown } | null;
    if (message?.role === 'user') return contentText(message.content);
  }
  const last = messages[messages.length - 1] as { content?: unknown } | string | null;
  return typeof last === 'string' ? last : contentText(last?.content);
}

/** The first user message of a conversation (what the session was asked to do). */
export function firstUserMessage(messages: unknown): string {
  if (!Array.isArray(messages)) return '';
  for (const item of messages) {
    const message = item as { role?: unknown; content?: unknown } | null;
    if (message?.role === 'user') return contentText(message.content);
  }
  return '';
}

const str = (value: unknown): string => (typeof value === 'string' ? value : value === undefined || value === null ? '' : flatten(value, 500));

/** Event types whose payload can carry text worth a vector of its own (see isEmbeddedEvent). */
export const EMBEDDED_EVENT_TYPES = new Set([
  'tool_call',
  'tool_error',
  'llm_call',
  'llm_response',
  'session_ended',
  'approval_requested',
  'approval_granted',
  'approval_denied',
  'approval_expired',
  'alert_triggered',
  'custom',
  'eval_result',
]);

const hasText = (value: unknown): boolean => typeof value === 'string' && value.trim().length > 0;

/**
 * Whether an event gets a vector: only what recall and context search for meaning, i.e. an event
 * whose payload carries words a person or a model wrote. A session_ended only with a summary; an
 * llm_call only when its last message is the user's (a new request: the calls of a tool loop end
 * with a tool result and would repeat the same user message); an llm_response only with a
 * completion (an answer made only of tool calls says nothing its tool_call events do not); an
 * approval decision only with a reason (without one, the request's own vector already holds the
 * action and its parameters). Decided from the payload alone, in the ingest transaction.
 */
export function isEmbeddedEvent(eventType: string, payload: Record<string, unknown>): boolean {
  if (!EMBEDDED_EVENT_TYPES.has(eventType)) return false;
  switch (eventType) {
    case 'session_ended':
      return hasText(payload.summary);
    case 'llm_call': {
      const messages = payload.messages;
      if (!Array.isArray(messages) || messages.length === 0) return false;
      const last = messages[messages.length - 1] as { role?: unknown } | string | null;
      return typeof last === 'string' || (last !== null && typeof last === 'object' && last.role === 'user');
    }
    case 'llm_response':
      return contentText(payload.completion).trim().length > 0;
    case 'approval_granted':
    case 'approval_denied':
    case 'approval_expired':
      return hasText(payload.reason);
    default:
      return true;
  }
}

/**
 * The text embedded for an event: a short label (type and tool/model) and the payload's words.
 * Not embedded (their text is machine output, ids or numbers, and each is summarised in its
 * session's vector): session_started, tool_response, form_*, cost_tracked, alert_resolved.
 */
export function eventText(eventType: string, payload: Record<string, unknown>): string | null {
  if (!isEmbeddedEvent(eventType, payload)) return null;
  return collapse(describeEvent(eventType, payload));
}

/** What an event's vector and its recall result are built from. */
export type EmbeddedEventSource = Pick<EventRow, 'id' | 'session_id' | 'agent_id' | 'event_type' | 'severity' | 'ts' | 'payload' | 'tool_name' | 'model'>;

/**
 * Text and metadata of an event's recall result, built from the event itself (never stored twice
 * beside the vector); null when the event gets no vector. `text` is what the embedder receives;
 * results show it cut to STORED_TEXT_CHARS.
 */
export function eventDetails(event: EmbeddedEventSource): { text: string; metadata: Record<string, unknown> } | null {
  const text = eventText(event.event_type, JSON.parse(event.payload) as Record<string, unknown>);
  if (text === null || text.length === 0) return null;
  const metadata: Record<string, unknown> = {
    sessionId: event.session_id,
    eventType: event.event_type,
    agentId: event.agent_id,
    severity: event.severity,
    timestamp: toIso(Number(event.ts)),
  };
  if (event.tool_name !== null) metadata.toolName = event.tool_name;
  if (event.model !== null) metadata.model = event.model;
  return { text, metadata };
}

/** A one-line description of any event (key events of context use it for every type). */
export function describeEvent(eventType: string, payload: Record<string, unknown>): string {
  switch (eventType) {
    case 'tool_call':
      return `tool_call ${str(payload.toolName)}${payload.serverName ? ` on ${str(payload.serverName)}` : ''}: ${flatten(payload.arguments)}`;
    case 'tool_response':
      return `tool_response ${str(payload.toolName)}: ${flatten(payload.result)}`;
    case 'tool_error':
      return `tool_error ${str(payload.toolName)}: ${flatten(payload.error)}${payload.errorCode !== undefined ? ` (code ${str(payload.errorCode)})` : ''}`;
    case 'llm_call':
      return `llm_call ${str(payload.model)}: ${lastUserMessage(payload.messages)}`;
    case 'llm_response':
      return `llm_response ${str(payload.model)}: ${contentText(payload.completion)}${payload.finishReason === 'error' ? ' (finished with error)' : ''}`;
    case 'session_started':
      return `session_started ${str(payload.agentName)}${Array.isArray(payload.tags) && payload.tags.length > 0 ? ` tags: ${payload.tags.join(', ')}` : ''}`;
    case 'session_ended':
      return `session_ended (${str(payload.reason)}): ${str(payload.summary)}`;
    case 'approval_requested':
      return `approval_requested ${str(payload.action)} (${str(payload.urgency)}): ${flatten(payload.params)}`;
    case 'approval_granted':
    case 'approval_denied':
    case 'approval_expired':
      return `${eventType} ${str(payload.action)} by ${str(payload.decidedBy)}${payload.reason ? `: ${str(payload.reason)}` : ''}`;
    case 'alert_triggered':
      return `alert_triggered ${str(payload.alertName)}: ${str(payload.message)}`;
    case 'alert_resolved':
      return `alert_resolved ${str(payload.alertName)}`;
    case 'custom':
      return `${str(payload.type)}: ${flatten(payload.data)}`;
    case 'cost_tracked':
      return `cost_tracked ${str(payload.provider)} ${str(payload.model)}: ${str(payload.totalTokens)} tokens, ${str(payload.costUsd)} USD`;
    default:
      return `${eventType}: ${flatten(payload, 1000)}`;
  }
}

/** What a session summary needs from one of its events. */
export interface SummaryEvent {
  event_type: string;
  is_error: number;
  ts: number;
  payload: string;
  metadata: string;
}

/** At most this many errors are quoted in a session summary. */
const SUMMARY_ERRORS = 3;
const QUOTE_CHARS = 300;

/** The user a session belongs to: tag `user:<id>`, else `userId` in the metadata of one of the given events. */
export function sessionUser(tags: readonly string[], events: readonly SummaryEvent[]): string | null {
  const tag = tags.find((t) => t.startsWith('user:') && t.length > 5);
  if (tag) return tag.slice(5);
  for (const event of events) {
    if (!event.metadata.includes('userId')) continue;
    const userId = (JSON.parse(event.metadata) as Record<string, unknown>).userId;
    if (typeof userId === 'string' && userId.length > 0) return userId;
  }
  return null;
}

/**
 * The text a session is embedded from (and the `summary` context shows): agent, status and
 * counters from the session row; first user request, tools, models, latest errors and the
 * closing summary from the given events (the first and the last ones of the session, so the
 * cost of a summary does not grow with the session).
 */
export function sessionSummary(session: SessionRow, events: readonly SummaryEvent[]): string {
  const tags = JSON.parse(session.tags) as string[];
  const tools = new Set<string>();
  const models = new Set<string>();
  const errors: string[] = [];
  let request = '';
  let outcome = '';
  for (const event of events) {
    const payload = JSON.parse(event.payload) as Record<string, unknown>;
    if (event.event_type === 'tool_call' && typeof payload.toolName === 'string') tools.add(payload.toolName);
    if ((event.event_type === 'llm_call' || event.event_type === 'llm_response') && typeof payload.model === 'string') models.add(payload.model);
    if (!request && event.event_type === 'llm_call') request = firstUserMessage(payload.messages);
    if (event.event_type === 'session_ended' && typeof payload.summary === 'string') outcome = payload.summary;
    if (event.is_error === 1) errors.push(truncate(collapse(describeEvent(event.event_type, payload)), QUOTE_CHARS));
  }
  const parts = [
    `Session ${session.id} of agent ${session.agent_name}${session.agent_name === session.agent_id ? '' : ` (${session.agent_id})`}, ${session.status}`,
    `${session.event_count} events, ${session.tool_call_count} tool calls, ${session.error_count} errors`,
  ];
  if (tags.length > 0) parts.push(`tags: ${tags.join(', ')}`);
  if (request) parts.push(`request: ${truncate(collapse(request), QUOTE_CHARS)}`);
  if (tools.size > 0) parts.push(`tools: ${[...tools].slice(0, 20).join(', ')}`);
  if (models.size > 0) parts.push(`models: ${[...models].slice(0, 10).join(', ')}`);
  if (errors.length > 0) parts.push(`errors: ${errors.slice(-SUMMARY_ERRORS).join('; ')}`);
  if (outcome) parts.push(`outcome: ${truncate(collapse(outcome), QUOTE_CHARS)}`);
  return `${parts.join('. ')}.`;
}
