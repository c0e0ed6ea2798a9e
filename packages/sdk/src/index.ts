/**
 * @vigil/sdk: typed clients for Vigil's observe (events, sessions, analytics) and gate
 * (approvals) services. Request and answer types are generated from the services' OpenAPI
 * documents (src/generated/*.ts).
 */
export { ObserveClient, DEFAULT_OBSERVE_URL, type ObserveClientOptions } from './observe.ts';
export { GateClient, DEFAULT_GATE_URL, type ApprovalOutcome, type ApprovalRequest, type GateClientOptions, type NewApprovalRequest, type RequestStatus, type WaitOptions } from './gate.ts';
export {
  VigilSession,
  type EndSessionOptions,
  type EventOptions,
  type LlmCallHandle,
  type LlmCallInput,
  type LlmResponseInput,
  type LlmResponseRecord,
  type StartSessionOptions,
  type ToolCallOptions,
} from './session.ts';
export type { BatchingOptions } from './queue.ts';
export type { TransportOptions } from './http.ts';
export { DEFAULT_PRICES, PriceTable, type ModelPrice } from './pricing.ts';
export {
  ApprovalTimeoutError,
  VigilApiError,
  VigilAuthenticationError,
  VigilClosedError,
  VigilConflictError,
  VigilDeliveryError,
  VigilDeprecationError,
  VigilError,
  VigilNetworkError,
  VigilNotFoundError,
  VigilPermissionError,
  VigilRateLimitError,
  VigilServerError,
  VigilValidationError,
  type ErrorDetail,
  type ServiceName,
} from './errors.ts';
export type * from './types.ts';
export type * as observeTypes from './generated/observe.ts';
export type * as gateTypes from './generated/gate.ts';
