export { buildObserveService, type ObserveOptions, type ObserveService } from './app.ts';
export { observeConfig, observeConfigFromEnvironment, observeEnvironment, type ObserveConfig, type ObserveEnvironment } from './config.ts';
// Derived data recomputed from chained events, for `vigil verify --deep` (the audit-log feature's; docs/audit.md#--deep).
export {
  type ChainedEventFields,
  DerivedDataRecomputation,
  EVENT_DERIVED_COLUMNS,
  type EventDerivedColumns,
  movedToSystemAgent,
  SESSION_DERIVED_FIELDS,
  type SessionDerivedFields,
} from './audit-log/derived.ts';
export { ROLLUP_SUMS, rollupKey, sketchKey } from './analytics/index.ts';
export type { LatencySketchRow, ObserveSchema, RollupRow } from './schema.ts';
export { observeErrors } from './errors.ts';
