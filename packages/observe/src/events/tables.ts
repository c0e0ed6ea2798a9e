// The tables events/ owns (times are epoch milliseconds, JSON is stored as text); the service's schema
// (schema.ts) is composed of every feature's tables.
import type { AuditErasureRow } from '@vigil/platform';

export interface EventRow {
  id: string;
  session_id: string;
  /** Its session's `session_start`, the same for all its events: the partition key on PostgreSQL (events/partitions.ts). */
  session_start: number;
  seq: number;
  agent_id: string;
  event_type: string;
  severity: string;
  ts: number;
  payload: string;
  metadata: string;
  /** SHA-256 values as their 32 bytes (platform stored-hash.ts); the API shows them in hex. */
  prev_hash: Buffer | null;
  hash: Buffer;
  /**
   * The credential that wrote the event (events/writer.ts): `key:<id>`, `webhook:<source>`,
   * `service_token`, `server` or `none`; null for events stored before migration 0027 (not
   * recorded). Outside the chain hash, under the batch's writer leaf in the audit log. Stored
   * compact for an API key (stored-writer.ts): read it through writerOfStored.
   */
  written_by: string | null;
  /** 1 when this is an error event (severity error/critical or tool_error), the one definition used everywhere. */
  is_error: number;
  /** costUsd of llm_response and cost_tracked events: the one definition of spend. */
  cost_usd: number | null;
  /** durationMs of tool_response and tool_error events. */
  duration_ms: number | null;
  /** latencyMs of llm_response events. */
  latency_ms: number | null;
  tool_name: string | null;
  call_id: string | null;
  provider: string | null;
  model: string | null;
  input_tokens: number | null;
  output_tokens: number | null;
  /** llm_response only: simple, moderate or complex (see events/derive.ts complexityTier). */
  complexity_tier: string | null;
  /** llm_response only: its finishReason. */
  finish_reason: string | null;
}

export interface SessionRow {
  id: string;
  agent_id: string;
  agent_name: string;
  status: string;
  started_at: number;
  /**
   * The time of the session's first stored event, set when ingest creates the row and never
   * changed (started_at moves back when an earlier event arrives later); every event of the
   * session carries it, as the events' partition key on PostgreSQL. 0 for sessions stored
   * before migration 0044.
   */
  session_start: number;
  ended_at: number | null;
  last_event_at: number;
  /**
   * Set once, by ingest: the last event before the first silence longer than the idle timeout
   * that the session went through without having ended. Null while it never idled (see
   * sessions/figures.ts).
   */
  idle_at: number | null;
  event_count: number;
  tool_call_count: number;
  error_count: number;
  total_cost_usd: number;
  tags: string;
  /** Chain head: seq and hash of the last appended event (-1 / null when empty). */
  last_seq: number;
  last_hash: string | null;
}

export interface SessionTagRow {
  tag: string;
  session_id: string;
}

export interface AgentRow {
  id: string;
  name: string;
  first_seen_at: number;
  last_seen_at: number;
  session_count: number;
  paused_at: number | null;
  pause_reason: string | null;
  model_override: string | null;
  approval_policy_id: string | null;
}

/**
 * One row (id 1): what the event store holds, kept by every write that changes it in that write's
 * transaction (ingest, retention; migration 0023 filled it from the rows), so GET /api/stats reads
 * one row: `events` is the sum of the sessions' event_count, `sessions` their number, `agents` the
 * agents rows but the system agent's.
 */
export interface StoreTotalsRow {
  id: number;
  events: number;
  sessions: number;
  agents: number;
}

/**
 * An Idempotency-Key of POST /api/events (events/idempotency.ts), written in its batch's ingest
 * transaction; answered for 24 hours from created_at, then deleted by the sweep.
 */
export interface IdempotencyKeyRow {
  /** The API key's id ('' with AUTH_DISABLED): keys are per API key. */
  scope: string;
  idempotency_key: string;
  /** SHA-256 (hex) of the request's body bytes. */
  fingerprint: string;
  /** The answer given, replayed as it was. */
  status: number;
  body: string;
  created_at: number;
}

/** The event store: the events, their sessions (with tags), agents and totals, and the Idempotency-Key rows, all written by the ingest transaction (retention deletes them). The sessions/ and agents/ features read and control these rows; they do not create them. */
export interface EventsTables {
  events: EventRow;
  sessions: SessionRow;
  session_tags: SessionTagRow;
  agents: AgentRow;
  store_totals: StoreTotalsRow;
  idempotency_keys: IdempotencyKeyRow;
  audit_writer_leaves: EventWriterLeafRow;
  audit_erasures: AuditErasureRow;
}

/** A writer leaf of the audit log (audit-log/writer-leaves.ts): its item id, its index and its leaf data. */
export interface EventWriterLeafRow {
  item_id: string;
  leaf_idx: number;
  /**
   * The leaf data, canonical JSON, in its stored form (events/writer-leaf-store.ts): compact bytes
   * since migration 0045; text as older versions stored it (SQLite keeps such rows' text).
   */
  body: Buffer | string;
}
