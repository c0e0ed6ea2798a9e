export { buildObserveService, type ObserveOptions, type ObserveService } from './app.ts';
export type { DataKeyStore, StoredDataKey } from './encryption/index.ts';
export { observeConfig, observeConfigFromEnvironment, observeEnvironment, type ObserveConfig, type ObserveEnvironment } from './config.ts';
// Derived data recomputed from chained events, for `vigil verify --deep` (the audit-log feature's; docs/audit.md#--deep).
export { OBSERVE_DERIVED_TABLES } from './app.ts';
export { type ChainedEventFields, DerivedDataRecomputation, type EventDerivedColumns, movedToSystemAgent } from './audit-log/index.ts';
export {
  type AuditedTable,
  type DerivedTable,
  EVENT_DERIVED_COLUMNS,
  type EventDerivedRow,
  SESSION_DERIVED_FIELDS,
  type SessionDerivedFields,
  type SessionDerivedRow,
  type StoredEventDerivedRow,
  type StoredSessionDerivedRow,
} from './events/index.ts';
export { ROLLUP_SUMS, ROLLUPS_TABLE } from './analytics/index.ts';
export type { ObserveSchema } from './schema.ts';
export type { LatencySketchRow, RollupRow } from './analytics/index.ts';
export { observeErrors } from './errors.ts';
export {
  buildEvidence,
  type CheckpointsPart,
  EvidenceReadError,
  httpEvidenceService,
  MANIFEST_PATH,
  type PackFile,
  readContainer,
  sha256Hex,
  SIGNATURES_PATH,
  writeContainer,
} from './evidence-pack/index.ts';
