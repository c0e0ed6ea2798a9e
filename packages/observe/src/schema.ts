import type { AdminChangeRow, AuditLogTables, Database, DeliveryColumns } from '@vigil/platform';
import type { ObserveChangeResource } from './context.ts';

/** Row types of the observe database (times are epoch milliseconds, JSON is stored as text). */
export interface EventRow {
  id: string;
  session_id: string;
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

export interface ApiKeyRow {
  id: string;
  name: string;
  prefix: string;
  key_hash: string;
  /** JSON array of scopes (keys/scopes.ts); null for a key created before scopes: full access. */
  scopes: string | null;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

export interface SettingRow {
  key: string;
  value: string;
  updated_at: number;
}

export interface AlertRuleRow {
  id: string;
  name: string;
  description: string | null;
  /** 1 or 0. */
  enabled: number;
  condition: string;
  threshold: number;
  window_minutes: number;
  /** JSON `{agentId?, tags?}`. */
  scope: string;
  /** JSON array of URLs. */
  notify_channels: string;
  created_at: number;
  updated_at: number;
}

export interface AlertHistoryRow {
  id: string;
  rule_id: string;
  triggered_at: number;
  /** Null while the entry is open (at most one open entry per rule). */
  resolved_at: number | null;
  /** `condition_cleared` or `rule_deleted`. */
  resolved_by: string | null;
  current_value: number;
  threshold: number;
  /** 1 once every channel answered 2xx to the triggered notification. */
  notified: number;
  /** agentId of the entry's events: always the system agent (migration 0012 moved the older rows). */
  agent_id: string;
  /** JSON: the triggered notification body, a snapshot of the rule when it fired. */
  summary: string;
  /** Ids of the alert_triggered / alert_resolved events, null until appended. */
  triggered_event_id: string | null;
  resolved_event_id: string | null;
}

export interface AlertDeliveryRow extends DeliveryColumns {
  history_id: string;
  kind: 'triggered' | 'resolved';
}

export interface LeaseRow {
  name: string;
  holder: string;
  expires_at: number;
}

/**
 * Hourly pre-aggregates of events, kept exact by the ingest transaction (and by retention, which
 * subtracts what it deletes). One row per hour × agent × event type × tool × provider × model × complexity tier;
 * missing text dimensions are stored as '' so the key is a plain primary key on both databases.
 */
export interface RollupRow {
  hour: number;
  agent_id: string;
  event_type: string;
  tool_name: string;
  provider: string;
  model: string;
  /** complexity tier of llm_response events, '' for other events. */
  tier: string;
  event_count: number;
  error_count: number;
  cost_usd: number;
  duration_sum: number;
  duration_count: number;
  latency_sum: number;
  latency_count: number;
  input_tokens: number;
  output_tokens: number;
  /** llm_response events whose finishReason is `error`. */
  failure_count: number;
}

/**
 * Hourly DDSketch bins of tool durations (`metric` 'tool', by tool_name) and LLM latencies
 * (`metric` 'llm', by provider and model), kept like the rollups (analytics/latency.ts).
 */
export interface LatencySketchRow {
  hour: number;
  agent_id: string;
  metric: 'tool' | 'llm';
  tool_name: string;
  provider: string;
  model: string;
  /** The DDSketch logarithmic-mapping index of the values counted. */
  bin: number;
  count: number;
}

/** A day's health of an agent: the 7-day values at the first health query of that UTC day. */
export interface HealthSnapshotRow {
  agent_id: string;
  /** YYYY-MM-DD, UTC. */
  date: string;
  overall_score: number;
  error_rate_score: number;
  cost_efficiency_score: number;
  tool_success_score: number;
  latency_score: number;
  completion_rate_score: number;
  session_count: number;
  created_at: number;
}

/**
 * A session's reflect state (reflect/state.ts): its figures over every event up to the chain head
 * `head_hash`, counted only while that is still the session's head. min_ts / max_ts / agent_id
 * cover the rows the figures count (null: none; agent_id null also when they mix agents).
 */
export interface ReflectSessionRow {
  session_id: string;
  head_hash: string;
  version: number;
  agent_id: string | null;
  min_ts: number | null;
  max_ts: number | null;
}

/** A session's tool-call n-gram (`tools`: JSON array of names): occurrences and failed ones. */
export interface ReflectNgramRow {
  session_id: string;
  tools: string;
  frequency: number;
  failed: number;
}

/** A session's error pattern (`pattern`: JSON string): occurrences, first and last seen. */
export interface ReflectErrorRow {
  session_id: string;
  pattern: string;
  count: number;
  first_ts: number;
  last_ts: number;
}

/** Occurrences of a session's error pattern after these tool calls (`tools`: JSON array). */
export interface ReflectPrecedingRow {
  session_id: string;
  pattern: string;
  tools: string;
  count: number;
}

/** The audit log's tables come from the platform (AuditLogTables). */
export interface ObserveSchema extends AuditLogTables {
  events: EventRow;
  sessions: SessionRow;
  session_tags: SessionTagRow;
  agents: AgentRow;
  store_totals: StoreTotalsRow;
  api_keys: ApiKeyRow;
  settings: SettingRow;
  leases: LeaseRow;
  alert_rules: AlertRuleRow;
  alert_history: AlertHistoryRow;
  alert_deliveries: AlertDeliveryRow;
  event_rollups: RollupRow;
  latency_sketches: LatencySketchRow;
  health_snapshots: HealthSnapshotRow;
  embedding_queue: EmbeddingQueueRow;
  embeddings: EmbeddingRow;
  embedding_meta: EmbeddingMetaRow;
  benchmarks: BenchmarkRow;
  benchmark_variants: BenchmarkVariantRow;
  evaluators: EvaluatorRow;
  judge_calls: JudgeCallRow;
  judge_spend: JudgeSpendRow;
  datasets: DatasetRow;
  dataset_cases: DatasetCaseRow;
  eval_runs: EvalRunRow;
  eval_run_cases: EvalRunCaseRow;
  guardrail_rules: GuardrailRuleRow;
  guardrail_triggers: GuardrailTriggerRow;
  guardrail_deliveries: GuardrailDeliveryRow;
  stream_log: StreamLogRow;
  stream_head: StreamHeadRow;
  stream_tokens: StreamTokenRow;
  admin_changes: AdminChangeRow<ObserveChangeResource>;
  otel_spans: OtelSpanRow;
  idempotency_keys: IdempotencyKeyRow;
  reflect_sessions: ReflectSessionRow;
  reflect_ngrams: ReflectNgramRow;
  reflect_errors: ReflectErrorRow;
  reflect_preceding: ReflectPrecedingRow;
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

/** A span stored by OTLP ingest (otel/): its events are in `events`, metadata.otel; the row makes a resent span a no-op. */
export interface OtelSpanRow {
  trace_id: string;
  span_id: string;
  session_id: string;
  /** The span's start, epoch ms. */
  ts: number;
}

/**
 * The live stream's commit log: one row per session per ingest transaction, numbered in commit
 * order (stream/log.ts). The session's events of that transaction are seq first_seq..last_seq,
 * with timestamps in min_ts..max_ts (so the events_session_ts index finds them).
 */
export interface StreamLogRow {
  pos: number;
  session_id: string;
  first_seq: number;
  last_seq: number;
  min_ts: number;
  max_ts: number;
  /** When the transaction was received (the replay window is measured from it). */
  created_at: number;
}

/** One row (id 1): the last log position handed out; its row lock orders ingest commits. */
export interface StreamHeadRow {
  id: number;
  last_pos: number;
}

/** A short-lived token that opens GET /api/stream for a key (browsers' EventSource sends no headers). */
export interface StreamTokenRow {
  token_hash: string;
  /** The key that created it; null when created with AUTH_DISABLED. */
  key_id: string | null;
  expires_at: number;
}

export interface GuardrailRuleRow {
  id: string;
  name: string;
  description: string | null;
  /** null: the rule applies to every agent. */
  agent_id: string | null;
  condition_type: string;
  /** JSON, defaults applied. */
  condition_config: string;
  action_type: string;
  action_config: string;
  cooldown_minutes: number;
  enabled: number;
  dry_run: number;
  trigger_count: number;
  last_triggered_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface GuardrailTriggerRow {
  id: string;
  rule_id: string;
  rule_name: string;
  agent_id: string;
  triggered_at: number;
  condition_type: string;
  current_value: number;
  threshold: number;
  action_type: string;
  dry_run: number;
  /** JSON `{status, detail}`. */
  action_result: string;
}

export interface GuardrailDeliveryRow extends DeliveryColumns {
  trigger_id: string;
}

/**
 * Embedding work, written by the ingest transaction and drained after commit (recall/worker.ts).
 * A row stays until its source is embedded (or gone), so a restart loses nothing.
 */
export interface EmbeddingQueueRow {
  source_type: 'event' | 'session';
  source_id: string;
  enqueued_at: number;
  attempts: number;
  next_attempt_at: number;
  /** Set while a worker holds the row; a claim that outlives this is free again. */
  claimed_until: number | null;
  last_error: string | null;
  /** Bumped each time a session is touched again, so a row claimed before the change is not deleted by the worker. */
  generation: number;
}

/** One vector per event or session (primary key source_type, source_id). */
export interface EmbeddingRow {
  source_type: 'event' | 'session';
  source_id: string;
  agent_id: string;
  session_id: string;
  /** User the session belongs to (tag `user:<id>` or metadata.userId), for context's userId. */
  user_id: string | null;
  /** Event timestamp; a session's startedAt (what recall's from/to filter). */
  ts: number;
  /** Event timestamp; a session's last event (what context's recency uses). */
  last_ts: number;
  model: string;
  dims: number;
  /** Float32 little-endian, L2-normalised; empty for a tombstone. */
  vector: Uint8Array;
  /** What was embedded, cut to 1,000 characters. */
  text: string;
  /** JSON object returned as the recall result's metadata. */
  metadata: string;
  /** Position in the global write order (embedding_meta.last_seq); the in-memory indexes read rows past their watermark. */
  updated_seq: number;
  /** 1: tombstone of a source deleted by retention (kept a while so every instance's index drops it). */
  deleted: number;
}

/** A single row (id 1): the write-order counter of embeddings and how far tombstones were purged. */
export interface EmbeddingMetaRow {
  id: number;
  last_seq: number;
  purged_seq: number;
}

/** An A/B benchmark (benchmarks/). */
export interface BenchmarkRow {
  id: string;
  name: string;
  description: string | null;
  agent_id: string | null;
  /** draft, running, completed or cancelled. */
  status: string;
  /** JSON array of metric names, in the order given. */
  metrics: string;
  min_sessions_per_variant: number;
  /** Inclusive bounds on a session's started_at; null when open. */
  time_from: number | null;
  time_to: number | null;
  /** JSON results computed when the benchmark completed (distributions included); null before. */
  results: string | null;
  created_at: number;
  updated_at: number;
}

/** A variant of a benchmark: the sessions carrying `tag`. */
export interface BenchmarkVariantRow {
  id: string;
  benchmark_id: string;
  /** 0-based order of the variant in the benchmark. */
  position: number;
  name: string;
  tag: string;
  description: string | null;
  /** Overrides the benchmark's agent_id; null when not given. */
  agent_id: string | null;
}

/** A saved evaluator (evals/): the rules or rubric of a compliance evaluation, referenced by id. */
export interface EvaluatorRow {
  id: string;
  name: string;
  /** compliance or llm_judge. */
  kind: string;
  /** JSON array of compliance rules (compliance only). */
  rules: string | null;
  /** llm_judge only. */
  rubric: string | null;
  pass_threshold: number | null;
  /** llm_judge only; null: the configured default judge model. */
  model: string | null;
  created_at: number;
}

/**
 * One row per call of the LLM judge that the provider billed (evals/): its verdict and cost, or why
 * it gave none. Judge spend (GET /api/stats judgeSpendUsd) is the sum of cost_usd, apart from any
 * session's spend; rows are written before the verdict is chained, so money spent is never missed.
 */
export interface JudgeCallRow {
  id: string;
  session_id: string;
  evaluator_id: string | null;
  model: string;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  score: number | null;
  /** 1 or 0; null when the call gave no verdict. */
  passed: number | null;
  /** The chained eval_result; null until appended, and for a call without a verdict. */
  event_id: string | null;
  error: string | null;
  created_at: number;
}

/** One row (id 1): the sum of judge_calls' cost_usd, kept in the transaction that inserts each call (migration 0023 filled it). */
export interface JudgeSpendRow {
  id: number;
  usd: number;
}

/** A dataset of cases for evaluation runs (evals/). */
export interface DatasetRow {
  id: string;
  name: string;
  case_count: number;
  created_at: number;
}

export interface DatasetCaseRow {
  id: string;
  dataset_id: string;
  /** 0-based order of the case in the dataset. */
  position: number;
  /** Canonical JSON. */
  input: string;
  /** Canonical JSON; null when no expected output was given. */
  expected: string | null;
}

/** A run of a dataset against an agent webhook; counters are kept with each case outcome. */
export interface EvalRunRow {
  id: string;
  dataset_id: string;
  agent_id: string;
  webhook_url: string;
  evaluator_id: string | null;
  /** JSON snapshot of the evaluator when the run was created (a later delete does not change the run). */
  evaluator: string | null;
  case_timeout_ms: number;
  /** running or completed. */
  status: string;
  total_cases: number;
  completed_cases: number;
  passed_cases: number;
  failed_cases: number;
  created_at: number;
  finished_at: number | null;
}

/** One case of a run: pending until its outcome is recorded (once). */
export interface EvalRunCaseRow {
  run_id: string;
  position: number;
  case_id: string;
  /** pending or done. */
  status: string;
  /** Set while a worker holds the case; a claim that outlives this is free again (crash recovery). */
  claimed_until: number | null;
  attempts: number;
  session_id: string | null;
  /** 1 or 0 once done. */
  passed: number | null;
  score: number | null;
  error: string | null;
  finished_at: number | null;
}

export type ObserveDatabase = Database<ObserveSchema>;
