// The auth feature's migration steps (src/migrations.ts collects every feature's in name order after
// the frozen history). A step imports no other feature's code.
import { adoptGovernedRows, governedState, logChangeRowsAsLeaves, type MigrationStep } from '@vigil/platform';

export const authMigrations: Record<string, MigrationStep> = {
  /**
   * The change log (whose route this feature serves) under the evidence: every change row a leaf
   * of the audit log, with the hash of a governed row's state. API keys are governed by it (a key
   * authenticates only as its last logged change left it): each key stored at the upgrade is
   * recorded as logged then, with the columns store.ts's keyState governs.
   */
  async '0027_logged_changes_and_keys'(db) {
    await logChangeRowsAsLeaves(db);
    const columns = ['id', 'name', 'prefix', 'key_hash', 'scopes', 'created_at', 'revoked_at'];
    const rows = await db.selectFrom('api_keys').select(columns).execute();
    await adoptGovernedRows(
      db,
      'api_key',
      rows.map((row) => ({ id: row.id as string, state: governedState(row, columns) })),
      Date.now(),
    );
  },
};
