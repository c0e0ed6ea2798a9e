// The tables erasure/ owns (times are epoch milliseconds); the service's schema (schema.ts) is
// composed of every feature's tables.

/** A request's data subject, by the keyed hash of its id (platform subjects.ts), written with the request: what erasure finds a subject's requests by. */
export interface RequestSubjectRow {
  subject_hash: string;
  request_id: string;
}

/** An erasure's signed leaf (its data, as appended to the audit log, and the audit key's signature): what verification holds erased requests to. */
export interface AuditErasureRow {
  erasure_id: string;
  leaf_idx: number;
  subject_hash: string;
  body: string;
  signature: string;
  created_at: number;
}

export interface ErasureTables {
  request_subjects: RequestSubjectRow;
  audit_erasures: AuditErasureRow;
}
