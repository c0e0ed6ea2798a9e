/**
 * Operation types read off the generated `paths` interfaces (src/generated/*.ts), so every
 * method signature of the clients follows the route schemas the services serve.
 */
import type { paths as GatePaths } from './generated/gate.ts';
import type { paths as ObservePaths } from './generated/observe.ts';

export type { GatePaths, ObservePaths };

export type HttpMethod = 'get' | 'put' | 'post' | 'delete' | 'patch';

/** The shape every generated operation has. */
export interface OperationShape {
  params: object;
  query: object;
  body: unknown;
  bodyRequired: boolean;
  responses: object;
}

export type Methods<Paths, P extends keyof Paths> = Extract<keyof Paths[P], HttpMethod>;

export type Operation<Paths, P extends keyof Paths, M extends keyof Paths[P]> = Paths[P][M] extends OperationShape ? Paths[P][M] : never;

type SuccessCode = 200 | 201 | 202 | 204;

/** The body of the operation's success answer. */
export type Success<O> = O extends { responses: infer R } ? R[Extract<keyof R, SuccessCode>] : never;

/** Per-call transport options. */
export interface CallOptions {
  /** Aborts the call (and any wait between retries). */
  signal?: AbortSignal;
  /** Overrides the client's retry policy for this call; `false` disables retries. */
  retry?: RetryOptions | false;
  /** Extra request headers. */
  headers?: Record<string, string>;
}

export interface RetryOptions {
  /** Retries after the first attempt (default 3; queued events: unlimited, within maxRetryTimeMs). */
  maxRetries?: number;
  /**
   * Time after the first attempt within which retries are made (default 30 s; queued events: the
   * client's `maxRetryTimeMs`, 10 minutes). A wait that would end later (a long Retry-After) ends
   * the retries at once; 0 disables them.
   */
  maxRetryTimeMs?: number;
  /** Ceiling of the first backoff delay; doubled per retry, full jitter (default 250 ms). */
  baseDelayMs?: number;
  /** Ceiling of any backoff delay (default 30 s). A Retry-After is honoured beyond it, within maxRetryTimeMs. */
  maxDelayMs?: number;
}

/** Generated operations without parameters of a kind have `Record<string, never>` there (an index signature). */
type IsEmpty<T> = string extends keyof T ? true : false;
/** Whether an object of this type may be left out (no required key). */
type AllOptional<T> = {} extends T ? true : false;

type ParamsPart<O extends OperationShape> = IsEmpty<O['params']> extends true ? { params?: undefined } : { params: O['params'] };
type QueryPart<O extends OperationShape> =
  IsEmpty<O['query']> extends true ? { query?: undefined } : AllOptional<O['query']> extends true ? { query?: O['query'] } : { query: O['query'] };
type BodyPart<O extends OperationShape> = [O['body']] extends [never]
  ? { body?: undefined }
  : O['bodyRequired'] extends true
    ? { body: O['body'] }
    : { body?: O['body'] };

/** What `call()` needs for one operation: path parameters, query, body, per the route's schema. */
export type CallInit<O extends OperationShape> = ParamsPart<O> & QueryPart<O> & BodyPart<O> & CallOptions;

/** `init` may be omitted when it has no required part. */
export type InitArgs<O extends OperationShape> = AllOptional<CallInit<O>> extends true ? [init?: CallInit<O>] : [init: CallInit<O>];

// Observe shorthands
export type ObserveOperation<P extends keyof ObservePaths, M extends Methods<ObservePaths, P>> = Operation<ObservePaths, P, M>;
export type ObserveQuery<P extends keyof ObservePaths, M extends Methods<ObservePaths, P> = Methods<ObservePaths, P>> = ObserveOperation<P, M>['query'];
export type ObserveBody<P extends keyof ObservePaths, M extends Methods<ObservePaths, P>> = ObserveOperation<P, M>['body'];
export type ObserveResult<P extends keyof ObservePaths, M extends Methods<ObservePaths, P> = Methods<ObservePaths, P>> = Success<ObserveOperation<P, M>>;

// Gate shorthands
export type GateOperation<P extends keyof GatePaths, M extends Methods<GatePaths, P>> = Operation<GatePaths, P, M>;
export type GateQuery<P extends keyof GatePaths, M extends Methods<GatePaths, P> = Methods<GatePaths, P>> = GateOperation<P, M>['query'];
export type GateBody<P extends keyof GatePaths, M extends Methods<GatePaths, P>> = GateOperation<P, M>['body'];
export type GateResult<P extends keyof GatePaths, M extends Methods<GatePaths, P> = Methods<GatePaths, P>> = Success<GateOperation<P, M>>;

/** One event as POST /api/events accepts it: a union discriminated by `eventType`. */
export type IncomingEvent = ObserveBody<'/api/events', 'post'>['events'][number];
export type EventType = IncomingEvent['eventType'];
/** The payload type of one event type. */
export type PayloadOf<T extends EventType> = Extract<IncomingEvent, { eventType: T }>['payload'];
export type Severity = NonNullable<IncomingEvent['severity']>;
