// Frozen migration history (steps.ts): what each service's steps 0001–0023 ran when they shipped,
// importing no feature code. A later step that must run the same code again (0025 rebuilds the
// rollups as 0003 built them) takes it from here, never from the feature's live code.
export { backfillRollups, createLatencySketchTable, createRollupTable, ROLLUP_SUMS } from './analytics.ts';
export { nanosSql, sumNanosSql } from './events.ts';
export { observeHistory } from './steps.ts';
