// The settings feature's migration steps (src/migrations.ts collects every feature's in name order
// after the frozen history). A step imports no other feature's code.
import { adoptGovernedRows, type MigrationStep } from '@vigil/platform';

export const settingsMigrations: Record<string, MigrationStep> = {
  /**
   * The retention setting governed by the change log (retention applies a stored setting only as
   * its last logged change left it): a setting stored at the upgrade is recorded as logged then,
   * as service.ts's retentionState shows it.
   */
  async '0028_logged_retention_setting'(db) {
    const row = await db.selectFrom('settings').select('value').where('key', '=', 'retentionDays').executeTakeFirst();
    if (row !== undefined) await adoptGovernedRows(db, 'settings', [{ id: null, state: { retentionDays: row.value as string } }], Date.now());
  },
};
