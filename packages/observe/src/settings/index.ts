import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerSettingsRoutes } from './routes.ts';

export { settingsMigrations } from './migrations.ts';
export { loggedRetentionPeriod, readSettings, type Settings } from './service.ts';
export type { SettingsTables } from './tables.ts';

/** The resource name the log of administrative changes records the settings under (context.ts composes the service's list). */
export const SETTINGS_CHANGES = 'settings';

export const settingsFeature: ObserveFeature = defineFeature('settings', ({ app, context }) => registerSettingsRoutes(app, context));
