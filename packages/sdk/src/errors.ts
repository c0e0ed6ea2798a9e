/**
 * Every error the SDK throws is a VigilError. An HTTP answer outside 2xx is a VigilApiError (or
 * one of its per-status subclasses) whose `message` is the server's own message: observe answers
 * `{ error, code, status, details? }`, the gate `{ error: { code, message, details? } }`.
 */

import type { ApprovalOutcome } from './gate.ts';

export type ServiceName = 'observe' | 'gate';

/** One field-level problem of a validation error (observe: `{ path, message }`). */
export interface ErrorDetail {
  path: string;
  message: string;
}

export class VigilError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

export interface ApiErrorInit {
  service: ServiceName;
  status: number;
  message: string;
  method: string;
  path: string;
  /** The error's code: the gate's `error.code` (`bad_request`, `conflict`, …), observe's `code` (`session_not_found`, …; none from servers older than observe's codes). */
  code?: string;
  details?: ErrorDetail[];
  /** The parsed response body (or its text when it was not JSON). */
  body?: unknown;
  /** From the Retry-After header, when the server sent one. */
  retryAfterMs?: number;
}

/** The server answered with a non-2xx status. */
export class VigilApiError extends VigilError {
  readonly service: ServiceName;
  readonly status: number;
  readonly code: string | undefined;
  readonly details: ErrorDetail[];
  readonly method: string;
  readonly path: string;
  readonly body: unknown;
  readonly retryAfterMs: number | undefined;

  constructor(init: ApiErrorInit) {
    super(init.message);
    this.service = init.service;
    this.status = init.status;
    this.code = init.code;
    this.details = init.details ?? [];
    this.method = init.method;
    this.path = init.path;
    this.body = init.body;
    this.retryAfterMs = init.retryAfterMs;
  }
}

/** 400: the request was invalid; `details` lists the offending fields when the server named them. */
export class VigilValidationError extends VigilApiError {}
/** 401: missing or invalid API key. */
export class VigilAuthenticationError extends VigilApiError {}
/** 403: the key lacks the scope the route needs (gate). */
export class VigilPermissionError extends VigilApiError {}
/** 404: no such resource (or route). */
export class VigilNotFoundError extends VigilApiError {}
/** 409: the resource is not in a state that allows the change (e.g. a request already decided). */
export class VigilConflictError extends VigilApiError {}
/** 429: rate limited; `retryAfterMs` says when to try again. */
export class VigilRateLimitError extends VigilApiError {}
/** 5xx: the server failed or a dependency is unavailable. */
export class VigilServerError extends VigilApiError {}

export function apiError(init: ApiErrorInit): VigilApiError {
  switch (init.status) {
    case 400:
      return new VigilValidationError(init);
    case 401:
      return new VigilAuthenticationError(init);
    case 403:
      return new VigilPermissionError(init);
    case 404:
      return new VigilNotFoundError(init);
    case 409:
      return new VigilConflictError(init);
    case 429:
      return new VigilRateLimitError(init);
    default:
      return init.status >= 500 ? new VigilServerError(init) : new VigilApiError(init);
  }
}

/** No HTTP answer: connection refused or reset, DNS failure, or the per-attempt timeout. */
export class VigilNetworkError extends VigilError {
  constructor(
    message: string,
    readonly service: ServiceName,
    readonly method: string,
    readonly path: string,
    readonly timedOut: boolean,
    cause?: unknown,
  ) {
    super(message, { cause });
  }
}

/** requestApproval() gave up waiting; the request stays as it is on the gate (normally pending). */
export class ApprovalTimeoutError extends VigilError {
  constructor(
    readonly requestId: string,
    readonly waitedMs: number,
    readonly lastStatus: string,
  ) {
    super(`No decision on approval request ${requestId} within ${waitedMs} ms (status ${lastStatus})`);
  }
}

/** withApproval: the gate denied the action, or the request expired undecided; the action did not run. */
export class ApprovalDeniedError extends VigilError {
  readonly requestId: string;
  constructor(readonly outcome: ApprovalOutcome) {
    super(
      `Approval request ${outcome.id} for "${outcome.action}" was ${outcome.status}` +
        (outcome.decidedBy ? ` by ${outcome.decidedBy}` : '') +
        (outcome.decisionReason ? `: ${outcome.decisionReason}` : ''),
    );
    this.requestId = outcome.id;
  }
}

/** Why runApproved refused to run an approved action (ApprovalReceiptError.reason). */
export type ReceiptFailure = 'missing' | 'malformed' | 'signature' | 'expired' | 'mismatch' | 'replayed' | 'refused';

/**
 * runApproved: the approval's receipt did not hold — absent, malformed, not signed by a trusted
 * gate key, expired, for another action, request or params, or already redeemed — so the action
 * did not run (fail closed). `cause` is the gate's answer when the gate refused the redemption.
 */
export class ApprovalReceiptError extends VigilError {
  constructor(
    readonly requestId: string,
    readonly reason: ReceiptFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`Approval request ${requestId}: ${message}; the action did not run`, options);
  }
}

/** A client method whose server feature was removed; thrown at once, before any request is made. */
export class VigilDeprecationError extends VigilError {
  constructor(
    readonly method: string,
    readonly removedIn: string,
    readonly replacement: string,
  ) {
    super(`${method} was removed in ${removedIn}: ${replacement}`);
  }
}

/** The client was closed; it sends nothing more. */
export class VigilClosedError extends VigilError {}

/**
 * Why events were not stored (the same names as the Python client's):
 * - `refused`: observe answered a final 4xx (400 naming invalid events: only those; else the batch, e.g. 401, 413, 422);
 * - `retries_exhausted`: no answer that stored them within `maxRetryTimeMs` (or a Retry-After beyond it);
 * - `queue_full`: pushed while `maxQueueSize` events or `maxQueueBytes` were waiting;
 * - `unserializable`: the event is not JSON (a BigInt, a cycle);
 * - `closed`: still unsent when `close({ timeoutMs })` gave up waiting;
 * - `exit`: the process exited (process.exit()) before they were sent;
 * - `spool_full`: the disk spool held `maxSpoolBytes` or could not be written (`@vigil/sdk/node`);
 * - `several`: a flush() whose batches failed for different reasons (each was reported on its own).
 */
export type DeliveryFailureReason = 'refused' | 'retries_exhausted' | 'queue_full' | 'unserializable' | 'closed' | 'exit' | 'spool_full' | 'several';

/**
 * Events that were not stored and never will be (dropped), reported to `onError` exactly once:
 * `count` of them, for `reason`; `cause` is the last error of the delivery, when there was one.
 */
export class VigilDeliveryError extends VigilError {
  readonly count: number;
  constructor(
    message: string,
    /** The events that were not stored. */
    readonly events: readonly unknown[],
    readonly reason: DeliveryFailureReason,
    cause?: unknown,
  ) {
    super(message, { cause });
    this.count = events.length;
  }
}

/** `@vigil/sdk/node`: the disk spool could not be opened (another process holds its lock, or the directory is unusable). */
export class VigilSpoolError extends VigilError {
  constructor(
    message: string,
    readonly directory: string,
    cause?: unknown,
  ) {
    super(message, { cause });
  }
}
