// The tables recall/ owns (times are epoch milliseconds, JSON is stored as text); the service's schema
// (schema.ts) is composed of every feature's tables.

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
  /** An event row's session's `session_start` (the events' partition key), read back by the drain; null for session rows and rows queued before 0051. */
  session_start: number | null;
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
  /** The model's name as written (NewEmbedding); stored as its key (store.ts modelKey) since migration 0048. */
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

/** The embedding queue, the vectors and their write-order counter. */
export interface RecallTables {
  embedding_queue: EmbeddingQueueRow;
  embeddings: EmbeddingRow;
  embedding_meta: EmbeddingMetaRow;
}
