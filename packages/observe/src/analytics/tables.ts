// The tables analytics/ owns (times are epoch milliseconds, JSON is stored as text); the service's schema
// (schema.ts) is composed of every feature's tables.

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

/**
 * Sessions per agent and the hour they started in, with their summed duration by the idle rule
 * (sessions/figures.ts), kept by the ingest transaction as sessions start, move their start or
 * their measured end, and by retention (analytics/session-hours.ts).
 */
export interface AgentSessionHourRow {
  hour: number;
  agent_id: string;
  session_count: number;
  duration_sum: number;
}

/**
 * Hourly and daily rollups, latency sketches and sessions per agent, kept by the ingest transaction
 * and by retention. A daily table has its hourly table's columns, `hour` holding the day's first
 * hour (00:00 UTC), so that one code path keeps and reads both (analytics/spans.ts).
 */
export interface AnalyticsTables {
  event_rollups: RollupRow;
  latency_sketches: LatencySketchRow;
  agent_session_hours: AgentSessionHourRow;
  event_rollups_daily: RollupRow;
  latency_sketches_daily: LatencySketchRow;
  agent_session_days: AgentSessionHourRow;
}
