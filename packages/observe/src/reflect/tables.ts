// The tables reflect/ owns (times are epoch milliseconds, JSON is stored as text); the service's schema
// (schema.ts) is composed of every feature's tables.

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

/** Each session's reflect state and figures. */
export interface ReflectTables {
  reflect_sessions: ReflectSessionRow;
  reflect_ngrams: ReflectNgramRow;
  reflect_errors: ReflectErrorRow;
  reflect_preceding: ReflectPrecedingRow;
}
