// The tables health/ owns (times are epoch milliseconds, JSON is stored as text); the service's schema
// (schema.ts) is composed of every feature's tables.

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

/** Each agent's daily health snapshot. */
export interface HealthTables {
  health_snapshots: HealthSnapshotRow;
}
