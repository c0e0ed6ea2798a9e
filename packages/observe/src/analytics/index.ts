// Analytics: hourly rollups and latency sketches kept in the ingest transaction; exact aggregates and
// percentiles within 1 % over any range.
import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { applySketchDeltas, sketchDeltas } from './latency.ts';
import { applyRollupDeltas, rollupDeltas } from './rollups.ts';
import { registerAnalyticsRoutes } from './routes.ts';

export { aggregate, type Dimension, emptySums, mean, ratio, type Sums } from './aggregate.ts';
export { backfillSketches, SketchCounts, sketchKey, subtractSessionsFromSketches } from './latency.ts';
export { backfillRollups, ROLLUP_KEY, ROLLUP_SUMS, RollupSums, rollupKey, subtractSessionsFromRollups } from './rollups.ts';
export type { AnalyticsTables, LatencySketchRow, RollupRow } from './tables.ts';

export const analyticsFeature: ObserveFeature = defineFeature('analytics', ({ app, context }) => {
  registerAnalyticsRoutes(app, context);
  // Rows every batch of an agent and hour updates: after the commit-ordering lock (WriterPosition).
  context.events.inTransaction(
    async (batch) => {
      const rows = batch.events.map((event) => event.row);
      await applyRollupDeltas(batch.trx, rollupDeltas(rows), 1);
      await applySketchDeltas(batch.trx, sketchDeltas(rows), 1);
    },
    { sharedRows: true },
  );
});
