// The tables policies/ owns (times are epoch milliseconds, JSON is stored as text); the service's schema
// (schema.ts) is composed of every feature's tables.

export interface PolicyRow {
  id: string;
  name: string;
  priority: number;
  enabled: number;
  rules: string;
  created_at: number;
  updated_at: number;
}

export interface CounterRow {
  name: string;
  value: number;
}

/** Policies, and the counters whose `policies` row every policy change bumps (so every instance's cache can tell). */
export interface PoliciesTables {
  policies: PolicyRow;
  counters: CounterRow;
}
