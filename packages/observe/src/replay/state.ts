/**
 * Session replay, pure: no database, no clock. A session's events (timeline order: timestamp, then
 * seq) are turned into `ReplayEvent`s once; `pairEvents` links requests with their outcomes over
 * the whole session; `ReplayState` is advanced one event at a time (O(1) amortised per step) and
 * rendered into the per-step `context` (docs/api.md#replay); `summarize` gives the whole-session summary.
 *
 * Decisions (also in docs/guide/behaviour.md, *Replay*):
 * - The context of step i describes the session right AFTER event i (event i counted).
 * - Pairs: tool_call ↔ tool_response | tool_error (callId), llm_call ↔ llm_response (callId),
 *   approval_requested ↔ approval_granted | denied | expired (requestId), form_submitted ↔
 *   form_completed | form_expired (submissionId). Matching follows timeline order: an outcome
 *   pairs with the oldest earlier request of its key that has no outcome yet (FIFO, so a reused id
 *   pairs call by call). Both sides point at each other; pairDurationMs = |Δ timestamp|.
 * - llmHistory: one entry per llm_call (response, costUsd and latencyMs null until its llm_response
 *   has been replayed) and one per llm_response without an llm_call (messages null); the last 50,
 *   oldest first. A response whose call has already left the last 50 does not bring it back.
 * - toolResults: one entry per tool_response / tool_error `{callId, toolName, ok, result, error,
 *   durationMs}` (result null for an error, error null for a success); the last 50, oldest first.
 * - pendingApprovals: approval_requested without an outcome yet `{requestId, action, urgency,
 *   requestedAt}`, in request order (never capped: it is the list of open items).
 * - warnings `{eventIndex, eventId, code, message}`, the last 50, oldest first; codes:
 *   `warn_event` (severity warn), `unmatched_tool_result`, `unmatched_llm_response`,
 *   `unmatched_approval_outcome`, `unmatched_form_outcome` (an outcome with no earlier open
 *   request), `duplicate_request` (a request whose id already has an open request).
 * - Error events and cost follow the one definitions (events/derive.ts): severity error/critical
 *   or tool_error; costUsd of llm_response and cost_tracked. Money is reported to the nano-dollar.
 */
import { toIso } from '@vigil/platform';
import { nanosOf, roundUsd, usdOf } from '@vigil/pricing';
import { deriveColumns, isErrorEvent } from '../events/index.ts';
import { ByteWriter } from './bytes.ts';

export const LLM_HISTORY_LIMIT = 50;
export const TOOL_RESULTS_LIMIT = 50;
export const WARNINGS_LIMIT = 50;

/** Values of the replay `eventTypes` filter (docs/api.md#replay). */
export const REPLAY_EVENT_TYPES = [
  'session_started',
  'session_ended',
  'llm_call',
  'llm_response',
  'tool_call',
  'tool_response',
  'error',
  'decision',
  'observation',
  'custom',
] as const;
export type ReplayEventType = (typeof REPLAY_EVENT_TYPES)[number];

type PairKind = 'tool' | 'llm' | 'approval' | 'form';
const REQUESTS: Record<string, PairKind> = { tool_call: 'tool', llm_call: 'llm', approval_requested: 'approval', form_submitted: 'form' };
const OUTCOMES: Record<string, PairKind> = {
  tool_response: 'tool',
  tool_error: 'tool',
  llm_response: 'llm',
  approval_granted: 'approval',
  approval_denied: 'approval',
  approval_expired: 'approval',
  form_completed: 'form',
  form_expired: 'form',
};
/** The `decision` filter: a human's approvals and forms, asked and answered, and eval verdicts. */
const DECISION_TYPES = new Set([
  ...Object.entries({ ...REQUESTS, ...OUTCOMES })
    .filter(([, kind]) => kind === 'approval' || kind === 'form')
    .map(([type]) => type),
  'eval_result',
]);
const OBSERVATION_TYPES = new Set(['custom', 'cost_tracked', 'alert_triggered', 'alert_resolved']);
const ID_FIELD: Record<PairKind, string> = { tool: 'callId', llm: 'callId', approval: 'requestId', form: 'submissionId' };
const UNMATCHED: Record<PairKind, string> = {
  tool: 'unmatched_tool_result',
  llm: 'unmatched_llm_response',
  approval: 'unmatched_approval_outcome',
  form: 'unmatched_form_outcome',
};

/** The stored columns of an event the replay starts from. */
export interface ReplayEventInput {
  id: string;
  seq: number;
  eventType: string;
  severity: string;
  ts: number;
  /** The stored payload JSON, spliced into responses as is. */
  payloadJson: string;
  /** The credential that wrote the event (events/writer.ts); null when not recorded. */
  writtenBy: string | null;
}

/** What the replay keeps of one event: the stored payload text plus the few fields it reads. */
export interface ReplayEvent extends ReplayEventInput {
  /** `ts` in ISO 8601, formatted once. */
  timestamp: string;
  isError: boolean;
  costUsd: number | null;
  kind: PairKind | null;
  side: 'request' | 'outcome' | null;
  /** `<kind>:<id>` for pairing, null when the event takes no part in a pair. */
  pairKey: string | null;
  pairId: string | null;
  toolName: string | null;
  provider: string | null;
  model: string | null;
  /** JSON text of llm_call messages, llm_response completion, tool_response result or tool_error error. */
  detailJson: string | null;
  durationMs: number | null;
  latencyMs: number | null;
  action: string | null;
  urgency: string | null;
}

const asString = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const asNumber = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const jsonOf = (v: unknown): string => (v === undefined ? 'null' : JSON.stringify(v));
/** An event's spend as every answer gives money: to the nano-dollar. */
const roundedUsd = (usd: number | null): number | null => (usd === null ? null : roundUsd(usd));

export function toReplayEvent(input: ReplayEventInput): ReplayEvent {
  const payload = JSON.parse(input.payloadJson) as Record<string, unknown>;
  const { eventType } = input;
  const requestKind = REQUESTS[eventType];
  const outcomeKind = OUTCOMES[eventType];
  const kind = requestKind ?? outcomeKind ?? null;
  const pairId = kind === null ? null : asString(payload[ID_FIELD[kind]]);
  let detailJson: string | null = null;
  if (eventType === 'llm_call') detailJson = jsonOf(payload.messages);
  else if (eventType === 'llm_response') detailJson = jsonOf(payload.completion);
  else if (eventType === 'tool_response') detailJson = jsonOf(payload.result);
  else if (eventType === 'tool_error') detailJson = jsonOf(payload.error);
  return {
    id: input.id,
    seq: input.seq,
    eventType,
    severity: input.severity,
    ts: input.ts,
    timestamp: toIso(input.ts),
    payloadJson: input.payloadJson,
    writtenBy: input.writtenBy,
    // From the hashed fields (severity, payload), not the stored derived columns: what the replay
    // counts is what the chain verifies and what the step shows.
    isError: isErrorEvent(eventType, input.severity),
    costUsd: roundedUsd(deriveColumns(eventType, input.severity, payload).cost_usd),
    kind: pairId === null ? null : kind,
    side: pairId === null ? null : requestKind ? 'request' : 'outcome',
    pairKey: pairId === null ? null : `${kind}:${pairId}`,
    pairId,
    toolName: asString(payload.toolName),
    provider: asString(payload.provider),
    model: asString(payload.model),
    detailJson,
    durationMs: asNumber(payload.durationMs),
    latencyMs: asNumber(payload.latencyMs),
    action: asString(payload.action),
    urgency: asString(payload.urgency),
  };
}

/** Does the event belong to a replay filtered by `filter` (any of its values)? */
export function matchesReplayFilter(event: ReplayEvent, filter: ReadonlySet<ReplayEventType>): boolean {
  if (filter.has(event.eventType as ReplayEventType)) return true;
  if (filter.has('error') && event.isError) return true;
  if (filter.has('decision') && DECISION_TYPES.has(event.eventType)) return true;
  return filter.has('observation') && OBSERVATION_TYPES.has(event.eventType);
}

/**
 * The partner of every event (index into `events`, -1 when unpaired), over the whole session:
 * the request side points at its later outcome, the outcome side at its earlier request.
 */
export function pairEvents(events: readonly ReplayEvent[]): Int32Array {
  const partner = new Int32Array(events.length).fill(-1);
  const open = new Map<string, number[]>();
  for (let i = 0; i < events.length; i++) {
    const { pairKey, side } = events[i]!;
    if (pairKey === null) continue;
    const queue = open.get(pairKey);
    if (side === 'request') {
      if (queue) queue.push(i);
      else open.set(pairKey, [i]);
    } else if (queue) {
      const request = queue.shift()!;
      if (queue.length === 0) open.delete(pairKey);
      partner[i] = request;
      partner[request] = i;
    }
  }
  return partner;
}

/** The summary of the session's events; the response adds totalDurationMs, the session's duration (sessions/figures.ts). */
export interface ReplaySummary {
  totalCost: number;
  totalLlmCalls: number;
  totalToolCalls: number;
  totalErrors: number;
  models: string[];
  tools: string[];
}

/**
 * The whole session: totalLlmCalls = llm_call events plus
 * llm_response events without an llm_call; totalToolCalls = tool_call events (the session's
 * toolCallCount); models of llm_call, llm_response and cost_tracked and tools of tool_* events,
 * distinct and sorted.
 */
export function summarize(events: readonly ReplayEvent[], partner: Int32Array): ReplaySummary {
  let costNanos = 0;
  let llmCalls = 0;
  let toolCalls = 0;
  let errors = 0;
  const models = new Set<string>();
  const tools = new Set<string>();
  for (let i = 0; i < events.length; i++) {
    const e = events[i]!;
    if (e.costUsd !== null) costNanos += nanosOf(e.costUsd);
    if (e.isError) errors += 1;
    if (e.eventType === 'llm_call' || (e.eventType === 'llm_response' && partner[i] === -1)) llmCalls += 1;
    if (e.eventType === 'tool_call') toolCalls += 1;
    if (e.model !== null && (e.eventType === 'llm_call' || e.eventType === 'llm_response' || e.eventType === 'cost_tracked')) models.add(e.model);
    if (e.toolName !== null && (e.eventType === 'tool_call' || e.eventType === 'tool_response' || e.eventType === 'tool_error')) tools.add(e.toolName);
  }
  return {
    totalCost: usdOf(costNanos),
    totalLlmCalls: llmCalls,
    totalToolCalls: toolCalls,
    totalErrors: errors,
    models: [...models].sort(),
    tools: [...tools].sort(),
  };
}

// ---------------------------------------------------------------------------------------------
// Incremental state

interface LlmEntry {
  callId: string;
  provider: string | null;
  model: string | null;
  messagesJson: string | null;
  responseJson: string | null;
  costUsd: number | null;
  latencyMs: number | null;
}

interface ToolResult {
  callId: string;
  toolName: string | null;
  ok: boolean;
  resultJson: string | null;
  errorJson: string | null;
  durationMs: number | null;
}

interface PendingApproval {
  requestId: string;
  action: string | null;
  urgency: string | null;
  requestedAt: number;
}

export interface ReplayWarning {
  eventIndex: number;
  eventId: string;
  code: string;
  message: string;
}

/** An open request: the index of its event, and for an llm_call the number of its llmHistory entry. */
interface OpenRequest {
  index: number;
  llmEntry: number;
}

const quote = JSON.stringify;
const num = (v: number | null): string => (v === null ? 'null' : String(v));

/** Renders and encodes once per immutable item (entries are shared between a state and its clones). */
const rendered = new WeakMap<object, Buffer>();
function memo<T extends object>(item: T, render: (item: T) => string): Buffer {
  let json = rendered.get(item);
  if (json === undefined) {
    json = Buffer.from(render(item));
    rendered.set(item, json);
  }
  return json;
}

const OPEN_BRACKET = 0x5b;
const COMMA = 0x2c;
const CLOSE_BRACKET = 0x5d;

const renderLlm = (e: LlmEntry): string =>
  `{"callId":${quote(e.callId)},"provider":${e.provider === null ? 'null' : quote(e.provider)},"model":${e.model === null ? 'null' : quote(e.model)}` +
  `,"messages":${e.messagesJson ?? 'null'},"response":${e.responseJson ?? 'null'},"costUsd":${num(e.costUsd)},"latencyMs":${num(e.latencyMs)}}`;
const renderTool = (t: ToolResult): string =>
  `{"callId":${quote(t.callId)},"toolName":${t.toolName === null ? 'null' : quote(t.toolName)},"ok":${t.ok}` +
  `,"result":${t.resultJson ?? 'null'},"error":${t.errorJson ?? 'null'},"durationMs":${num(t.durationMs)}}`;
const renderWarning = (w: ReplayWarning): string =>
  `{"eventIndex":${w.eventIndex},"eventId":${quote(w.eventId)},"code":${quote(w.code)},"message":${quote(w.message)}}`;
const renderApproval = (a: PendingApproval): string =>
  `{"requestId":${quote(a.requestId)},"action":${a.action === null ? 'null' : quote(a.action)},"urgency":${a.urgency === null ? 'null' : quote(a.urgency)},"requestedAt":"${toIso(a.requestedAt)}"}`;

/**
 * The last `cap` items of an append-only log whose items can still be replaced while they are in
 * view. Push is O(1) amortised (the backing array is trimmed to `cap` when it reaches 2 × cap).
 * The JSON array, encoded, is written into a buffer the log owns and reuses (a page copies it at
 * every step and it changes at about every other one: allocating it anew each time is what made
 * a page's garbage collection cost more than its rendering).
 */
class RecentLog<T extends object> {
  private items: T[] = [];
  private dropped = 0;
  private json: Buffer | null = null;
  /** Bytes of `json` in use; the buffer is this log's alone, never a clone's. */
  private jsonLength = 0;
  private jsonCurrent = false;

  constructor(
    private readonly cap: number,
    private readonly render: (item: T) => string,
  ) {}

  /** Items ever pushed. */
  get total(): number {
    return this.dropped + this.items.length;
  }

  /** Appends; returns the item's number (0-based over every push). */
  push(item: T): number {
    this.items.push(item);
    if (this.items.length >= 2 * this.cap) {
      const drop = this.items.length - this.cap;
      this.items = this.items.slice(drop);
      this.dropped += drop;
    }
    this.jsonCurrent = false;
    return this.total - 1;
  }

  /** Replaces item number `n` when it is still among the last `cap`; false when it has left the view. */
  update(n: number, change: (item: T) => T): boolean {
    if (n < this.total - this.cap || n < this.dropped || n >= this.total) return false;
    const slot = n - this.dropped;
    this.items[slot] = change(this.items[slot]!);
    this.jsonCurrent = false;
    return true;
  }

  view(): T[] {
    return this.items.slice(-this.cap);
  }

  /** Writes the JSON array of the items in view. */
  writeJson(out: ByteWriter): void {
    if (!this.jsonCurrent) this.renderJson();
    out.bytes(this.json!, this.jsonLength);
  }

  private renderJson(): void {
    const items = this.view().map((item) => memo(item, this.render));
    let length = 1 + Math.max(items.length, 1);
    for (const item of items) length += item.length;
    if (this.json === null || this.json.length < length) this.json = Buffer.allocUnsafe(Math.max(length, 2 * (this.json?.length ?? 0)));
    const json = this.json;
    let at = 0;
    json[at++] = OPEN_BRACKET;
    for (let i = 0; i < items.length; i++) {
      if (i > 0) json[at++] = COMMA;
      json.set(items[i]!, at);
      at += items[i]!.length;
    }
    json[at++] = CLOSE_BRACKET;
    this.jsonLength = at;
    this.jsonCurrent = true;
  }

  clone(): RecentLog<T> {
    const copy = new RecentLog<T>(this.cap, this.render);
    copy.items = this.view();
    copy.dropped = this.total - copy.items.length;
    return copy;
  }
}

/** The per-step context as the API answers it. */
export interface ReplayContext {
  eventIndex: number;
  totalEvents: number;
  cumulativeCostUsd: number;
  elapsedMs: number;
  eventCounts: Record<string, number>;
  llmHistory: {
    callId: string;
    provider: string | null;
    model: string | null;
    messages: unknown;
    response: unknown;
    costUsd: number | null;
    latencyMs: number | null;
  }[];
  toolResults: { callId: string; toolName: string | null; ok: boolean; result: unknown; error: unknown; durationMs: number | null }[];
  pendingApprovals: { requestId: string; action: string | null; urgency: string | null; requestedAt: string }[];
  errorCount: number;
  warnings: ReplayWarning[];
}

/**
 * The session as replayed so far. `advance` applies the next event in timeline order; `clone` is a
 * checkpoint (O(open requests + 50-entry windows)); `contextJson` renders the per-step context of the
 * last applied event, reusing the cached JSON of every part that did not change.
 */
export class ReplayState {
  /** Events applied so far; the context describes event `position - 1`. */
  position = 0;
  private firstTs: number | null = null;
  private lastTs = 0;
  private costNanos = 0;
  private errors = 0;
  private counts = new Map<string, number>();
  private countsJson: string | null = null;
  private open = new Map<string, OpenRequest[]>();
  /** Open approval requests by the index of their event (insertion order = request order). */
  private approvals = new Map<number, PendingApproval>();
  private approvalsJson: string | null = null;
  private llm = new RecentLog<LlmEntry>(LLM_HISTORY_LIMIT, renderLlm);
  private tools = new RecentLog<ToolResult>(TOOL_RESULTS_LIMIT, renderTool);
  private warnings = new RecentLog<ReplayWarning>(WARNINGS_LIMIT, renderWarning);

  constructor(readonly totalEvents: number) {}

  advance(event: ReplayEvent): void {
    const index = this.position++;
    if (this.firstTs === null) this.firstTs = event.ts;
    this.lastTs = event.ts;
    this.counts.set(event.eventType, (this.counts.get(event.eventType) ?? 0) + 1);
    this.countsJson = null;
    if (event.isError) this.errors += 1;
    if (event.costUsd !== null) this.costNanos += nanosOf(event.costUsd);
    if (event.severity === 'warn') this.warn(index, event, 'warn_event', `${event.eventType} logged with severity warn`);
    if (event.side === 'request') this.request(index, event);
    else if (event.side === 'outcome') this.outcome(index, event);
  }

  private warn(index: number, event: ReplayEvent, code: string, message: string): void {
    this.warnings.push({ eventIndex: index, eventId: event.id, code, message });
  }

  private request(index: number, event: ReplayEvent): void {
    const key = event.pairKey!;
    let llmEntry = -1;
    if (event.kind === 'llm') {
      llmEntry = this.llm.push({
        callId: event.pairId!,
        provider: event.provider,
        model: event.model,
        messagesJson: event.detailJson,
        responseJson: null,
        costUsd: null,
        latencyMs: null,
      });
    } else if (event.kind === 'approval') {
      this.approvals.set(index, { requestId: event.pairId!, action: event.action, urgency: event.urgency, requestedAt: event.ts });
      this.approvalsJson = null;
    }
    const queue = this.open.get(key);
    if (queue) {
      this.warn(index, event, 'duplicate_request', `${event.eventType} reuses ${ID_FIELD[event.kind!]} ${event.pairId} while an earlier one is still open`);
      queue.push({ index, llmEntry });
    } else {
      this.open.set(key, [{ index, llmEntry }]);
    }
  }

  private outcome(index: number, event: ReplayEvent): void {
    const key = event.pairKey!;
    const queue = this.open.get(key);
    const request = queue?.shift();
    if (queue && queue.length === 0) this.open.delete(key);
    if (request === undefined) {
      this.warn(index, event, UNMATCHED[event.kind!], `${event.eventType} for ${ID_FIELD[event.kind!]} ${event.pairId} has no earlier open request`);
    }
    switch (event.kind) {
      case 'tool': {
        const ok = event.eventType === 'tool_response';
        this.tools.push({
          callId: event.pairId!,
          toolName: event.toolName,
          ok,
          resultJson: ok ? event.detailJson : null,
          errorJson: ok ? null : event.detailJson,
          durationMs: event.durationMs,
        });
        break;
      }
      case 'llm': {
        const answer = { responseJson: event.detailJson, costUsd: event.costUsd, latencyMs: event.latencyMs };
        if (request === undefined) {
          this.llm.push({ callId: event.pairId!, provider: event.provider, model: event.model, messagesJson: null, ...answer });
        } else {
          // A call that has already left the last 50 stays out.
          this.llm.update(request.llmEntry, (entry) => ({ ...entry, ...answer }));
        }
        break;
      }
      case 'approval':
        if (request !== undefined && this.approvals.delete(request.index)) this.approvalsJson = null;
        break;
      default:
        break;
    }
  }

  clone(): ReplayState {
    const copy = new ReplayState(this.totalEvents);
    copy.position = this.position;
    copy.firstTs = this.firstTs;
    copy.lastTs = this.lastTs;
    copy.costNanos = this.costNanos;
    copy.errors = this.errors;
    copy.counts = new Map(this.counts);
    copy.countsJson = this.countsJson;
    copy.open = new Map([...this.open].map(([key, queue]) => [key, queue.slice()]));
    copy.approvals = new Map(this.approvals);
    copy.approvalsJson = this.approvalsJson;
    copy.llm = this.llm.clone();
    copy.tools = this.tools.clone();
    copy.warnings = this.warnings.clone();
    return copy;
  }

  /** Writes the context of the last applied event as JSON (what the API sends). */
  writeContext(out: ByteWriter): void {
    if (this.countsJson === null) {
      this.countsJson = `{${[...this.counts].map(([type, n]) => `${quote(type)}:${n}`).join(',')}}`;
    }
    if (this.approvalsJson === null) this.approvalsJson = `[${[...this.approvals.values()].map(renderApproval).join(',')}]`;
    out.text(
      `{"eventIndex":${this.position - 1},"totalEvents":${this.totalEvents},"cumulativeCostUsd":${usdOf(this.costNanos)}` +
        `,"elapsedMs":${this.firstTs === null ? 0 : this.lastTs - this.firstTs},"eventCounts":${this.countsJson},"llmHistory":`,
    );
    this.llm.writeJson(out);
    out.text(',"toolResults":');
    this.tools.writeJson(out);
    out.text(`,"pendingApprovals":${this.approvalsJson},"errorCount":${this.errors},"warnings":`);
    this.warnings.writeJson(out);
    out.text('}');
  }

  /** The context of the last applied event as JSON text. */
  contextJson(): string {
    const out = new ByteWriter();
    this.writeContext(out);
    const json = out.toString();
    out.release();
    return json;
  }

  /** The same context as an object. */
  context(): ReplayContext {
    return JSON.parse(this.contextJson()) as ReplayContext;
  }
}
