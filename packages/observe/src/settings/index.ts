import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerSettingsRoutes } from './routes.ts';

export { readSettings, type Settings } from './service.ts';
export type { SettingRow, SettingsTables } from './tables.ts';

export const settingsFeature: ObserveFeature = defineFeature('settings', ({ app, context }) => registerSettingsRoutes(app, context));
