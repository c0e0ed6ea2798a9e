// The policies feature's migration steps (src/migrations.ts collects every feature's in name order
// after the frozen history). A step imports no other feature's code.
import { adoptGovernedTable, type MigrationStep } from '@vigil/platform';

export const policiesMigrations: Record<string, MigrationStep> = {
  /**
   * Policies governed by the change log (the engine applies a policy only as its last logged change
   * left it): each policy stored at the upgrade is recorded as logged then, with the columns
   * store.ts's policyState governs.
   */
  async '0013_logged_policies'(db) {
    await adoptGovernedTable(db, 'policies', 'policy', ['id', 'name', 'priority', 'enabled', 'rules', 'created_at']);
  },
};
