/**
 * @vigil/sdk: typed clients for Vigil's observe (events, sessions, analytics) and gate
 * (approvals) services, and capture of the agent's tools and approvals. Request and answer types
 * are generated from the services' OpenAPI documents (src/generated/*.ts). This entry uses only
 * web APIs (fetch, crypto, timers), so it runs in Node, Bun, Deno, edge workers and browsers;
 * `@vigil/sdk/node` adds AsyncLocalStorage sessions and sending on process exit.
 */
export { ObserveClient, DEFAULT_OBSERVE_URL, type ObserveClientOptions } from './observe.ts';
export {
  GateClient,
  DEFAULT_GATE_URL,
  type ApprovalOutcome,
  type ApprovalRequest,
  type CreatedApprovalRequest,
  type GateClientOptions,
  type NewApprovalRequest,
  type RequestStatus,
  type WaitOptions,
} from './gate.ts';
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
export { currentSession, runInSession, setSessionScope, type SessionChoice, type SessionScope } from './ambient.ts';
export {
  canonicalJson,
  ed25519Verifiers,
  isReceiptShaped,
  receiptArgsDigest,
  receiptKeyId,
  trustedReceiptKeys,
  verifyReceipt,
  type ApprovalReceipt,
  type Ed25519Verifier,
  type GatePublicKeys,
  type ReceiptPublicKey,
} from './receipts.ts';
export {
  askApproval,
  awaitApproval,
  redeemOutcome,
  runApproved,
  traceTool,
  withApproval,
  type AskApprovalOptions,
  type TraceToolOptions,
  type WithApprovalOptions,
} from './tools.ts';
export { defaultErrorReporter, type BatchingOptions, type CloseOptions, type CloseResult } from './queue.ts';
export type { TransportOptions } from './http.ts';
export { DEFAULT_PRICES, PriceTable, type ModelPrice } from './pricing.ts';
export {
  ApprovalDeniedError,
  ApprovalReceiptError,
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
  VigilSpoolError,
  VigilValidationError,
  type DeliveryFailureReason,
  type ErrorDetail,
  type ReceiptFailure,
  type ServiceName,
} from './errors.ts';
export type * from './types.ts';
export type * as observeTypes from './generated/observe.ts';
export type * as gateTypes from './generated/gate.ts';
