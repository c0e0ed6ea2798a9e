// The tables benchmarks/ owns (times are epoch milliseconds, JSON is stored as text); the service's schema
// (schema.ts) is composed of every feature's tables.

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

/** A/B benchmarks and their variants. */
export interface BenchmarksTables {
  benchmarks: BenchmarkRow;
  benchmark_variants: BenchmarkVariantRow;
}
