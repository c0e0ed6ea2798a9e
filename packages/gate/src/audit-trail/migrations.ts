// The audit trail's migration steps (src/migrations.ts collects every feature's in name order after
// the frozen history). A step imports no other feature's code.
import { logChangeRowsAsLeaves, type MigrationStep } from '@vigil/platform';
import { createAuditTerms } from './terms.ts';

export const auditTrailMigrations: Record<string, MigrationStep> = {
  /** The change log under the evidence: every change row a leaf of the audit log, and the hash of a governed row's state. */
  async '0012_change_rows_as_leaves'(db) {
    await logChangeRowsAsLeaves(db);
  },
  /** The audit list's filter index off the request path: each entry's terms, written in batches by a job (terms.ts). */
  async '0028_audit_list_terms'(db, dialect) {
    await createAuditTerms(db, dialect);
  },
};
