// Agent health: scores, snapshots (a periodic job keeps one per agent and day).
import { defineFeature, type PeriodicJob } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerHealthRoutes } from './routes.ts';
import { ensureSnapshots, HEALTH_SNAPSHOT_INTERVAL_MS, HEALTH_SNAPSHOT_JOB } from './service.ts';

export { DIMENSION_NAMES, HEALTH_WEIGHTS } from './scores.ts';
export { agentHealth, DEFAULT_WINDOW_DAYS, type HealthReport } from './service.ts';
export type { HealthTables } from './tables.ts';

/** Resolves to the snapshot job. */
export const healthFeature: ObserveFeature<PeriodicJob> = defineFeature('health', ({ app, context, job }) => {
  registerHealthRoutes(app, context);
  return job({
    name: HEALTH_SNAPSHOT_JOB,
    intervalMs: HEALTH_SNAPSHOT_INTERVAL_MS,
    run: async (now) => {
      const written = await ensureSnapshots(context, now);
      if (written > 0) app.log.info({ written }, 'health snapshots saved');
    },
  });
});
