/**
 * A session's events as a tree of timed nodes, pure: no database, no clock (docs/api.md, docs/guide/behaviour.md
 * *Trace trees*).
 *
 * - An event whose metadata carries `otel` (what OTLP ingest stores: traceId, spanId,
 *   parentSpanId, name, kind, startTime, endTime, durationMs) belongs to the node of its span; a
 *   span's events (its call and outcome, or one custom event) make one node with the span's own
 *   timing. Spans nest by parentSpanId within their trace; a span whose parent is not in the events
 *   read is a root, and so is one span of each parent cycle (hostile metadata cannot lose a node).
 * - Events without a span pair by callId, in timeline order, oldest open call first (as replay
 *   pairs them): tool_call + tool_response | tool_error make a tool node, llm_call + llm_response
 *   an llm node, llm_call + tool_error (what the SDK records for a failed LLM call) a failed llm
 *   node. The duration is the outcome's durationMs / latencyMs, else the time between the two
 *   events. A call without an outcome is `open` until the last event read; an outcome without a
 *   call is a node of its own that ended at its timestamp.
 * - Every other event is a leaf of kind `event` at its timestamp.
 * - Siblings are ordered by start time, then by the chain order of their first event.
 * - Nodes deeper than TREE_MAX_DEPTH hang, flattened in start order, from their ancestor at that
 *   depth, so the answer stays within the 100 levels of JSON nesting every client can read.
 */
import { toIso } from '@vigil/platform';
import { addUsd } from '@vigil/pricing';
import type { DerivedColumns, EventRow } from '../events/index.ts';

/** The most events one tree is built from; beyond it the answer says `truncated: true`. */
export const TREE_EVENT_LIMIT = 10_000;
/** Levels of nesting kept (a root is level 1): a node at level L sits at JSON depth 2L + 1. */
export const TREE_MAX_DEPTH = 40;
/** Longest error text a node carries. */
const ERROR_TEXT_MAX = 500;

export const SPAN_KINDS = ['llm', 'tool', 'agent', 'chain', 'retriever', 'embedding', 'other'] as const;
export type SpanKind = (typeof SPAN_KINDS)[number];
export const NODE_KINDS = [...SPAN_KINDS, 'event'] as const;
export type NodeKind = (typeof NODE_KINDS)[number];
export const NODE_STATUSES = ['ok', 'error', 'open'] as const;
export type NodeStatus = (typeof NODE_STATUSES)[number];

/** The columns the tree reads of an event (its place and its derived columns); `payload` is read for custom and tool_error events only (their type, their error). */
export type TreeEventRow = Pick<EventRow, 'id' | 'seq' | 'ts' | 'event_type' | 'metadata'> & DerivedColumns & { payload: string | null };

export interface SpanIds {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
}

/** What a node carries of its calls: the model's figures of an LLM call, the tool's name and error of a tool call. */
interface CallFigures {
  model?: string;
  provider?: string;
  inputTokens?: number;
  outputTokens?: number;
  costUsd?: number;
  toolName?: string;
  /** The error text of a tool_error, cut to 500 characters. */
  error?: string;
}

export interface TreeNode extends CallFigures {
  /** The id of the node's first event. */
  id: string;
  name: string;
  kind: NodeKind;
  status: NodeStatus;
  startTime: string;
  endTime: string;
  durationMs: number;
  eventIds: string[];
  eventTypes: string[];
  /** The span the node is, null for events that came without one. */
  span: SpanIds | null;
  children: TreeNode[];
}

export interface SessionTree {
  startTime: string | null;
  endTime: string | null;
  durationMs: number;
  eventCount: number;
  nodeCount: number;
  truncated: boolean;
  roots: TreeNode[];
}

interface SpanRef extends SpanIds {
  name: string;
  kind: SpanKind;
  start: number;
  end: number;
  durationMs: number;
}

interface Draft extends CallFigures {
  id: string;
  name: string;
  kind: NodeKind;
  status: NodeStatus;
  start: number;
  end: number;
  durationMs: number;
  firstSeq: number;
  eventIds: string[];
  eventTypes: string[];
  span: SpanIds | null;
  /** A call whose outcome has not been read. */
  awaiting: boolean;
  parent: Draft | null;
  children: Draft[];
}

const finite = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value);
const nonEmpty = (value: unknown): value is string => typeof value === 'string' && value.length > 0;
const timeOf = (value: unknown): number => (typeof value === 'string' ? Date.parse(value) : Number.NaN);

/** The span an event belongs to, read from `metadata.otel`; null when there is none or it lacks ids or a start. */
export function spanOf(metadataJson: string): SpanRef | null {
  if (!metadataJson.includes('"otel"')) return null; // most events: no parse
  const otel = (JSON.parse(metadataJson) as Record<string, unknown>).otel;
  if (otel === null || typeof otel !== 'object' || Array.isArray(otel)) return null;
  const { traceId, spanId, parentSpanId, name, kind, startTime, endTime, durationMs } = otel as Record<string, unknown>;
  const start = timeOf(startTime);
  if (!nonEmpty(traceId) || !nonEmpty(spanId) || !Number.isFinite(start)) return null;
  let end = timeOf(endTime);
  if (!Number.isFinite(end)) end = finite(durationMs) ? start + durationMs : start;
  end = Math.max(start, end);
  return {
    traceId,
    spanId,
    parentSpanId: nonEmpty(parentSpanId) ? parentSpanId : null,
    name: nonEmpty(name) ? name : '',
    kind: (SPAN_KINDS as readonly unknown[]).includes(kind) ? (kind as SpanKind) : 'other',
    start,
    end,
    durationMs: finite(durationMs) && durationMs >= 0 ? durationMs : end - start,
  };
}

function detailOf(event: TreeEventRow): Record<string, unknown> {
  return event.payload === null ? {} : (JSON.parse(event.payload) as Record<string, unknown>);
}

function errorText(error: unknown): string {
  const text = typeof error === 'string' ? error : (JSON.stringify(error) ?? '');
  return text.length > ERROR_TEXT_MAX ? `${text.slice(0, ERROR_TEXT_MAX - 1)}…` : text;
}

function draft(event: TreeEventRow, kind: NodeKind, name: string, start: number, span: SpanIds | null): Draft {
  return {
    id: event.id,
    name,
    kind,
    status: 'ok',
    start,
    end: start,
    durationMs: 0,
    firstSeq: event.seq,
    eventIds: [],
    eventTypes: [],
    span,
    awaiting: false,
    parent: null,
    children: [],
  };
}

/** Adds an event to its node: ids, error status, and the figures it carries. */
function addEvent(node: Draft, event: TreeEventRow): void {
  node.eventIds.push(event.id);
  node.eventTypes.push(event.event_type);
  if (event.is_error === 1) node.status = 'error';
  if (event.model !== null) node.model ??= event.model;
  if (event.provider !== null) node.provider ??= event.provider;
  if (event.input_tokens !== null) node.inputTokens = (node.inputTokens ?? 0) + event.input_tokens;
  if (event.output_tokens !== null) node.outputTokens = (node.outputTokens ?? 0) + event.output_tokens;
  if (event.cost_usd !== null) node.costUsd = addUsd(node.costUsd ?? 0, event.cost_usd);
  if (node.kind === 'tool' && event.tool_name !== null) node.toolName ??= event.tool_name;
  if (event.event_type === 'tool_error') node.error ??= errorText(detailOf(event).error);
}

const callName = (event: TreeEventRow): string =>
  event.event_type === 'llm_call' || event.event_type === 'llm_response' ? `${event.provider ?? '?'}/${event.model ?? '?'}` : (event.tool_name ?? 'tool');

const outcomeDuration = (event: TreeEventRow): number | null => (event.event_type === 'llm_response' ? event.latency_ms : event.duration_ms);

/** Ends an open call with its outcome. */
function close(node: Draft, outcome: TreeEventRow): void {
  addEvent(node, outcome);
  node.awaiting = false;
  node.durationMs = Math.max(0, outcomeDuration(outcome) ?? Number(outcome.ts) - node.start);
  node.end = node.start + node.durationMs;
}

const byStart = (a: Draft, b: Draft): number => a.start - b.start || a.firstSeq - b.firstSeq;

/** Events in timeline order (timestamp, then seq), at most TREE_EVENT_LIMIT of them; `truncated` when the session has more. */
export function buildSessionTree(events: readonly TreeEventRow[], truncated: boolean): SessionTree {
  const nodes: Draft[] = [];
  const spans = new Map<string, Draft>();
  const spanParent = new Map<Draft, string>();
  // Open calls per callId, oldest first.
  const openTools = new Map<string, Draft[]>();
  const openLlms = new Map<string, Draft[]>();
  let lastTs = Number.NEGATIVE_INFINITY;

  const open = (calls: Map<string, Draft[]>, callId: string, node: Draft) => {
    const queue = calls.get(callId);
    if (queue) queue.push(node);
    else calls.set(callId, [node]);
  };
  const take = (calls: Map<string, Draft[]>, callId: string): Draft | undefined => {
    const queue = calls.get(callId);
    const node = queue?.shift();
    if (queue?.length === 0) calls.delete(callId);
    return node;
  };

  for (const event of events) {
    const ts = Number(event.ts);
    lastTs = Math.max(lastTs, ts);
    const span = spanOf(event.metadata);
    if (span !== null) {
      const key = `${span.traceId}/${span.spanId}`;
      let node = spans.get(key);
      if (!node) {
        const { traceId, spanId, parentSpanId } = span;
        node = draft(event, span.kind, span.name || event.event_type, span.start, { traceId, spanId, parentSpanId });
        node.end = span.end;
        node.durationMs = span.durationMs;
        spans.set(key, node);
        nodes.push(node);
        if (parentSpanId !== null) spanParent.set(node, `${traceId}/${parentSpanId}`);
      }
      addEvent(node, event);
      continue;
    }
    const callId = event.call_id ?? event.id;
    switch (event.event_type) {
      case 'tool_call':
      case 'llm_call': {
        const node = draft(event, event.event_type === 'tool_call' ? 'tool' : 'llm', callName(event), ts, null);
        addEvent(node, event);
        node.awaiting = true;
        open(event.event_type === 'tool_call' ? openTools : openLlms, callId, node);
        nodes.push(node);
        break;
      }
      case 'tool_response':
      case 'tool_error':
      case 'llm_response': {
        const call =
          event.event_type === 'llm_response'
            ? take(openLlms, callId)
            : (take(openTools, callId) ?? (event.event_type === 'tool_error' ? take(openLlms, callId) : undefined));
        if (call) {
          close(call, event);
          break;
        }
        // An outcome without its call: it ended here, after its own duration when it states one.
        const duration = Math.max(0, outcomeDuration(event) ?? 0);
        const node = draft(event, event.event_type === 'llm_response' ? 'llm' : 'tool', callName(event), ts - duration, null);
        addEvent(node, event);
        node.end = ts;
        node.durationMs = duration;
        nodes.push(node);
        break;
      }
      default: {
        const name = event.event_type === 'custom' ? String(detailOf(event).type ?? 'custom') : event.event_type;
        const node = draft(event, 'event', name, ts, null);
        addEvent(node, event);
        nodes.push(node);
      }
    }
  }

  // Calls still open run until the last event read.
  for (const node of nodes) {
    if (!node.awaiting) continue;
    if (node.status === 'ok') node.status = 'open';
    node.end = Math.max(node.start, lastTs);
    node.durationMs = node.end - node.start;
  }

  for (const [node, parentKey] of spanParent) {
    const parent = spans.get(parentKey);
    if (parent !== undefined && parent !== node) node.parent = parent;
  }
  breakParentCycles(nodes);
  const roots: Draft[] = [];
  for (const node of nodes) (node.parent ? node.parent.children : roots).push(node);
  for (const node of nodes) node.children.sort(byStart);
  roots.sort(byStart);

  let start = Number.POSITIVE_INFINITY;
  let end = Number.NEGATIVE_INFINITY;
  for (const node of nodes) {
    start = Math.min(start, node.start);
    end = Math.max(end, node.end);
  }
  const empty = nodes.length === 0;
  return {
    startTime: empty ? null : toIso(start),
    endTime: empty ? null : toIso(end),
    durationMs: empty ? 0 : end - start,
    eventCount: events.length,
    nodeCount: nodes.length,
    truncated,
    roots: roots.map((root) => toNode(root, 1)),
  };
}

/**
 * Makes a root of one span of every parent cycle (A's parent B, B's parent A): walks down from the
 * nodes without a parent, then cuts, in creation order, the first node the walk has not reached.
 */
function breakParentCycles(nodes: readonly Draft[]): void {
  const children = new Map<Draft, Draft[]>();
  for (const node of nodes) {
    if (node.parent) {
      const list = children.get(node.parent);
      if (list) list.push(node);
      else children.set(node.parent, [node]);
    }
  }
  const reached = new Set<Draft>();
  const walk = (from: Draft) => {
    const stack = [from];
    while (stack.length > 0) {
      const node = stack.pop()!;
      if (reached.has(node)) continue;
      reached.add(node);
      stack.push(...(children.get(node) ?? []));
    }
  };
  for (const node of nodes) if (!node.parent) walk(node);
  for (const node of nodes) {
    if (reached.has(node)) continue;
    node.parent = null;
    walk(node);
  }
}

/** Every node below `node`, in no particular order (iterative: the depth is unbounded here). */
function descendants(node: Draft): Draft[] {
  const found: Draft[] = [];
  const stack = [...node.children];
  while (stack.length > 0) {
    const next = stack.pop()!;
    found.push(next);
    stack.push(...next.children);
  }
  return found;
}

function toNode(node: Draft, level: number): TreeNode {
  const below =
    level < TREE_MAX_DEPTH
      ? node.children
      : descendants(node)
          .sort(byStart)
          .map((child) => ({ ...child, children: [] }));
  return {
    id: node.id,
    name: node.name,
    kind: node.kind,
    status: node.status,
    startTime: toIso(node.start),
    endTime: toIso(node.end),
    durationMs: node.durationMs,
    eventIds: node.eventIds,
    eventTypes: node.eventTypes,
    span: node.span,
    ...(node.model !== undefined && { model: node.model }),
    ...(node.provider !== undefined && { provider: node.provider }),
    ...(node.inputTokens !== undefined && { inputTokens: node.inputTokens }),
    ...(node.outputTokens !== undefined && { outputTokens: node.outputTokens }),
    ...(node.costUsd !== undefined && { costUsd: node.costUsd }),
    ...(node.toolName !== undefined && { toolName: node.toolName }),
    ...(node.error !== undefined && { error: node.error }),
    children: below.map((child) => toNode(child, level + 1)),
  };
}
