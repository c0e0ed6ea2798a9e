// The tables holds/ owns (times are epoch milliseconds); the service's schema (schema.ts) is
// composed of every feature's tables.

/**
 * A legal hold: while `released_at` is null, retention keeps what it covers and erasure refuses it.
 * A subject's hold names the subject by its keyed hash (erasure/subjects.ts), never its raw id.
 */
export interface LegalHoldRow {
  id: string;
  scope: 'session' | 'agent' | 'subject';
  target_id: string;
  reason: string;
  placed_by: string;
  placed_at: number;
  released_at: number | null;
  released_by: string | null;
  release_reason: string | null;
}

export interface HoldsTables {
  legal_holds: LegalHoldRow;
}
