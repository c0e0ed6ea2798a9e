// The tables audit-trail/ owns: the audit list's filter terms (terms.ts writes them); the service's
// schema (schema.ts) is composed of every feature's tables.

/** One filter value of one entry: `(kind, value)` leads, so a filter reads one range in (ts, id) order. */
export interface AuditEntryTermRow {
  kind: number;
  value: string;
  ts: number;
  entry_id: string;
}

/** How far the terms cover the log: every entry whose leaf index is below `indexed_to` has its terms (one row, id 1). */
export interface AuditTermsProgressRow {
  id: number;
  indexed_to: number;
}

export interface AuditTrailTables {
  audit_entry_terms: AuditEntryTermRow;
  audit_terms_progress: AuditTermsProgressRow;
}
