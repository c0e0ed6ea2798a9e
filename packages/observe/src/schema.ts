import type { Database } from '@vigil/platform';

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

export interface LeaseRow {
  name: string;
  holder: string;
  expires_at: number;
}

export interface ObserveSchema {
  events: EventRow;
  sessions: SessionRow;
  session_tags: SessionTagRow;
  agents: AgentRow;
  api_keys: ApiKeyRow;
  settings: SettingRow;
  leases: LeaseRow;
}

export type ObserveDatabase = Database<ObserveSchema>;
