// The tables stream/ owns (times are epoch milliseconds, JSON is stored as text); the service's schema
// (schema.ts) is composed of every feature's tables.

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

/** The live stream's commit log and its head. */
export interface StreamTables {
  stream_log: StreamLogRow;
  stream_head: StreamHeadRow;
}
