// The auth feature's migration steps (src/migrations.ts collects every feature's in name order after
// the frozen history). A step imports no other feature's code.
import { adoptGovernedTable, logChangeRowsAsLeaves, type MigrationStep } from '@vigil/platform';

export const authMigrations: Record<string, MigrationStep> = {
  /**
   * The change log (whose route this feature serves) under the evidence: every change row a leaf
   * of the audit log, with the hash of a governed row's state. API keys are governed by it (a key
   * authenticates only as its last logged change left it): each key stored at the upgrade is
   * recorded as logged then, with the columns store.ts's keyState governs.
   */
  async '0027_logged_changes_and_keys'(db) {
    await logChangeRowsAsLeaves(db);
    await adoptGovernedTable(db, 'api_keys', 'api_key', ['id', 'name', 'prefix', 'key_hash', 'scopes', 'created_at', 'revoked_at']);
  },
};
