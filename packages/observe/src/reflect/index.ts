import { defineFeature, type PeriodicJob } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerReflectRoutes } from './routes.ts';
import { REFLECT_STATE_INTERVAL_MS, ReflectStateKeeper } from './state.ts';

export { ANALYSES } from './service.ts';
export { forgetReflectState } from './state.ts';
export type { ReflectTables } from './tables.ts';

/** Resolves to the job that keeps the per-session reflect state (state.ts). */
export const reflectFeature: ObserveFeature<PeriodicJob> = defineFeature('reflect', ({ app, context, job }) => {
  registerReflectRoutes(app, context);
  const keeper = new ReflectStateKeeper(context, app.log);
  return job({ name: 'observe.reflect-state', intervalMs: REFLECT_STATE_INTERVAL_MS, run: (now) => keeper.runJob(now) });
});
