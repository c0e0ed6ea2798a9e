// The audit trail's migration steps (src/migrations.ts collects every feature's in name order after
// the frozen history). A step imports no other feature's code.
import { logChangeRowsAsLeaves, type MigrationStep } from '@vigil/platform';

export const auditTrailMigrations: Record<string, MigrationStep> = {
  /** The change log under the evidence: every change row a leaf of the audit log, and the hash of a governed row's state. */
  async '0012_change_rows_as_leaves'(db) {
    await logChangeRowsAsLeaves(db);
  },
};
