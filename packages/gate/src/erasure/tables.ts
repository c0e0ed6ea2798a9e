// The tables erasure/ owns (times are epoch milliseconds); the service's schema (schema.ts) is
// composed of every feature's tables.
import type { AuditErasureRow } from '@vigil/platform';

/** A request's data subject, by the keyed hash of its id (platform subjects.ts), written with the request: what erasure finds a subject's requests by. */
export interface RequestSubjectRow {
  subject_hash: string;
  request_id: string;
}

export interface ErasureTables {
  request_subjects: RequestSubjectRow;
  audit_erasures: AuditErasureRow;
}
