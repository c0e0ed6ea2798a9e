// Analytics: hourly and daily rollups and latency sketches, derived tables kept in the ingest transaction
// (derived.ts); exact aggregates and percentiles within 1 % over any range.
import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerAnalyticsRoutes } from './routes.ts';

export { aggregate, type Dimension, emptySums, mean, ratio, type Sums } from './aggregate.ts';
export { ANALYTICS_DERIVED_TABLES, ROLLUPS_TABLE } from './derived.ts';
export { analyticsMigrations } from './migrations.ts';
export { ROLLUP_SUMS } from './rollups.ts';
export type { AnalyticsTables, LatencySketchRow, RollupRow } from './tables.ts';

export const analyticsFeature: ObserveFeature = defineFeature('analytics', ({ app, context }) => {
  registerAnalyticsRoutes(app, context);
});
