// Analytics: hourly rollups kept in the ingest transaction, and exact aggregates over any range.
import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { applyRollupDeltas, rollupDeltas } from './rollups.ts';
import { registerAnalyticsRoutes } from './routes.ts';

export { aggregate, type Dimension, emptySums, mean, ratio, type Sums, usd } from './aggregate.ts';
export { backfillRollups, createRollupTable, subtractSessionsFromRollups } from './rollups.ts';

export const analyticsFeature: ObserveFeature = defineFeature('analytics', ({ app, context }) => {
  registerAnalyticsRoutes(app, context);
  context.events.inTransaction((batch) => applyRollupDeltas(batch.trx, rollupDeltas(batch.events.map((event) => event.row)), 1));
});
