import { ConfigError, defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerSettingsRoutes } from './routes.ts';
import { belowRetentionFloor, readSettings } from './service.ts';

export { settingsMigrations } from './migrations.ts';
export { loggedRetentionPeriod, readSettings, type Settings } from './service.ts';
export type { SettingsTables } from './tables.ts';

/** The resource name the log of administrative changes records the settings under (context.ts composes the service's list). */
export const SETTINGS_CHANGES = 'settings';

/** Refuses to start when the retention period in force (a stored setting, else RETENTION_DAYS) is below RETENTION_FLOOR_DAYS. */
export const settingsFeature: ObserveFeature = defineFeature('settings', async ({ app, context }) => {
  const floor = belowRetentionFloor(context, (await readSettings(context)).retentionDays);
  if (floor !== null) throw new ConfigError(`Invalid configuration:\n  the retention setting in force (PUT /api/config, else RETENTION_DAYS): ${floor}`);
  registerSettingsRoutes(app, context);
});
