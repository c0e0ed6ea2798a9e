/**
 * The services' API types and nothing else, for code that bundles types but no client (the
 * dashboard imports this as `@vigil/sdk/types`). Everything here is generated from the
 * OpenAPI documents (src/generated/*.ts), so a route schema change is a type error in every
 * consumer.
 */
export type { GatePaths, HttpMethod, Methods, ObservePaths, OperationShape, Success } from './types.ts';
/** Observe's named schemas (`ObserveSchemas.Agent`, `ObserveSchemas.Session`, …). */
export type * as ObserveSchemas from './generated/observe.ts';
/** The gate's named schemas (`GateSchemas.Policy`, `GateSchemas.AuditListEntry`, …). */
export type * as GateSchemas from './generated/gate.ts';
