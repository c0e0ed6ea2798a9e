// The tables erasure/ owns (times are epoch milliseconds); the service's schema (schema.ts) is
// composed of every feature's tables.

/** An event's data subject, by the keyed hash of its id (subjects.ts), written by ingest: what erasure finds a subject's events by. */
export interface EventSubjectRow {
  subject_hash: string;
  event_id: string;
  session_id: string;
}

/** Where the subject index's backfill stands: it indexes events with ids after `after_id`; done once `done_at` is set. */
export interface SubjectIndexBackfillRow {
  name: string;
  after_id: string;
  /** The newest event when the backfill was bounded (migration 0049): it reads no further. */
  until_id: string | null;
  done_at: number | null;
}

export interface ErasureTables {
  event_subjects: EventSubjectRow;
  subject_index_backfill: SubjectIndexBackfillRow;
}
