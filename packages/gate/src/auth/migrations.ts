// The auth feature's migration steps (src/migrations.ts collects every feature's in name order after
// the frozen history). A step imports no other feature's code.
import { adoptGovernedTable, type MigrationStep } from '@vigil/platform';

export const authMigrations: Record<string, MigrationStep> = {
  /**
   * API keys governed by the change log (a key authenticates only as its last logged change left
   * it): each key stored at the upgrade is recorded as logged then, with the columns keys.ts's
   * keyState governs.
   */
  async '0014_logged_api_keys'(db) {
    await adoptGovernedTable(db, 'api_keys', 'api_key', ['id', 'name', 'prefix', 'key_hash', 'scopes', 'rate_limit', 'created_at', 'revoked_at']);
  },
};
