import type { Database, DeliveryColumns } from '@vigil/platform';

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
  prev_hash: string | null;
  hash: string;
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

export interface ApiKeyRow {
  id: string;
  name: string;
  prefix: string;
  key_hash: string;
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
  /** agentId of the entry's events (scope.agentId or `system`). */
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

export interface ObserveSchema {
  events: EventRow;
  sessions: SessionRow;
  session_tags: SessionTagRow;
  agents: AgentRow;
  api_keys: ApiKeyRow;
  settings: SettingRow;
  leases: LeaseRow;
  alert_rules: AlertRuleRow;
  alert_history: AlertHistoryRow;
  alert_deliveries: AlertDeliveryRow;
  event_rollups: RollupRow;
  health_snapshots: HealthSnapshotRow;
}

export type ObserveDatabase = Database<ObserveSchema>;
