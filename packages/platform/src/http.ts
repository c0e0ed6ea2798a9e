import { isUtf8 } from 'node:buffer';
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import swagger from '@fastify/swagger';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyHttpOptions,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifySchema,
  type FastifyServerOptions,
  type RouteOptions,
  type RawReplyDefaultExpression,
  type RawRequestDefaultExpression,
  type RawServerDefault,
} from 'fastify';
import {
  hasZodFastifySchemaValidationErrors,
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import secureJson from 'secure-json-parse';
import { z } from 'zod';
import type { ServiceBaseConfig } from './config.ts';
import { databaseFailure } from './db.ts';
import { ServiceError, type ErrorDetail, type ErrorFactory } from './errors.ts';
import { OutageLog } from './outage.ts';
import { callerOf, readingRoute, type ReplicaRouter } from './read-replica.ts';
import { validateResponses } from './response-validation.ts';
import { isStorableText, jsonValueProblem, MAX_JSON_DEPTH } from './text.ts';

export interface HttpKitOptions {
  title: string;
  /** What the service is, in a sentence or two: the OpenAPI document's `info.description`. */
  description: string;
  version: string;
  /** The service's name in its log lines (`observe`, `gate`): both share one console under `vigil up`. */
  service: string;
  logLevel: string;
  /** `pretty`: short coloured lines for a person at a terminal; `json`: one object per line for machines. */
  logFormat?: 'json' | 'pretty';
  bodyLimitBytes: number;
  /** How long a client may take to send its request (HTTP_HEADERS_TIMEOUT_MS, HTTP_REQUEST_TIMEOUT_MS). */
  timeouts: ServiceBaseConfig['http'];
  errors: ErrorFactory<never>;
  /** The service's error body. */
  renderError(error: ServiceError): unknown;
  /** Resolves when the database answers: probed after requests failed for it, to log the outage's end. */
  databaseProbe(): Promise<unknown>;
  /** Where log lines go (tests read them); stdout by default. */
  logStream?: NodeJS.WritableStream;
  /** Request headers besides Authorization and Cookie that carry a credential (a webhook's signature): never logged. */
  credentialHeaders?: readonly string[];
  /** The service's reading of errors the kit cannot classify (database down, storage failure). */
  classify?(error: unknown): ServiceError | undefined;
  /** The service's error body as a zod schema named with `.meta({ id })`: the component every documented error response refers to. */
  errorSchema: z.ZodType;
  /**
   * The service's authentication modes beyond the kit's `required` (an API key with the route's
   * scope), `public` and `metrics` (see RouteAuthModes), and whether each takes an API key too.
   */
  authModes?: Record<string, { takesKey: boolean }>;
  /** Every scope a route may declare: a route that takes a key declares one of these (or several), checked at registration. */
  scopes: readonly string[];
  /** The error statuses a route answers because of how it is authenticated (401, and 403/429 where scopes and rate limits apply); none for a public route. */
  authErrorStatuses(route: RouteEntry): number[];
  /**
   * The headers, by name (JSON Schemas with a description), that a route which can answer 429
   * sets on its answers once the caller is authenticated: documented on its 2xx and 4xx
   * responses but 401 and 403. None where nothing is rate limited.
   */
  rateLimitHeaders?: Record<string, Record<string, unknown>>;
  /** Test kits only: every 2xx JSON answer is checked against its route's response schema (response-validation.ts). */
  validateResponses?: boolean;
  /** READ_DATABASE_URL: GET routes' handlers may read from the replica, and writes pin their caller to the primary (read-replica.ts). */
  replica?: ReplicaRouter;
}

/** A Fastify instance whose route schemas are zod schemas. */
export type ZodApp = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, ZodTypeProvider>;

/** Why a request was answered 5xx (`vigil_http_failed_requests_total`'s `cause`). */
export type FailureCause = 'database_unavailable' | 'shutting_down' | 'internal' | 'other';

/** Seconds every 503 tells a client to wait before retrying (Retry-After): the database back, or another instance serving. */
export const RETRY_AFTER_SECONDS = 1;

/**
 * How a route authenticates, named by its `config.auth`. The kit knows `required` (an API key with
 * the route's `scope`: the default), `public` (no credentials) and `metrics` (its Prometheus route,
 * which admits the scrape itself: metrics.ts). A service adds modes of its own by augmenting this
 * interface (`declare module '@vigil/platform'`) and listing them in HttpKitOptions.authModes.
 */
export interface RouteAuthModes {
  required: true;
  public: true;
  metrics: true;
}
export type RouteAuth = keyof RouteAuthModes;

/**
 * What a route's `config.scope` may hold, one member per service (`observe: ObserveScope`), added by
 * augmenting this interface; at registration the kit checks that a route names its own service's
 * scopes (HttpKitOptions.scopes).
 */
export interface RouteScopes {}
export type RouteScope = RouteScopes[keyof RouteScopes];

/** One method of a registered route, with what it declares where it is registered. */
export interface RouteEntry {
  method: string;
  url: string;
  auth: RouteAuth;
  /** Whether the route takes an API key (auth `required`, or a service mode that does): then it declares a scope. */
  takesKey: boolean;
  /** The scope a key needs for the route (`config.scope`); none for a route that takes no key. */
  scope?: RouteScope;
  /** In the OpenAPI document (its schema is not `hide`): then it has an operationId. */
  documented: boolean;
  /** The OpenAPI operation's name (`schema.operationId`): what typed clients call it by. */
  operationId?: string;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Every route registered, with its authentication policy: what the route-walking auth test iterates. */
    routeTable: RouteEntry[];
    /**
     * A write off the request path failed (recording a key's use, …): an unreachable database
     * joins the outage's one log line instead of a warning per write; anything else is warned.
     */
    backgroundWriteFailed(error: unknown, what: string): void;
  }
  interface FastifyRequest {
    /** Why the request failed (5xx), for the failed-request counter of /metrics; null if it did not. */
    failureCause: FailureCause | null;
  }
  interface FastifyContextConfig {
    /** How the route authenticates (RouteAuthModes). Default: `required`, an API key with `scope`. */
    auth?: RouteAuth;
    /** The scope an API key needs for the route: required of every route that takes a key (the app does not build without it). */
    scope?: RouteScope;
    /** `primary`: a GET route that must see the latest write (verification, the audit log) never reads from a replica (read-replica.ts). */
    reads?: 'primary';
  }
  interface FastifySchema {
    /**
     * The error statuses the operation answers beyond those the kit documents for every route of
     * its kind (documentedOperation): documentation only, as the OpenAPI document lists them.
     */
    errorStatuses?: readonly number[];
    /**
     * The request body of a route that decodes its own (a content-type parser of its own, e.g.
     * protobuf), as the OpenAPI document shows it per content type: documentation only, never
     * validated (a zod `body` would be).
     */
    documentedBody?: Record<string, { schema: Record<string, unknown> }>;
  }
}

/** GET routes that read from the primary whatever their config says: the audit log and verification, and the probes of the primary's health. */
const PRIMARY_READS = /^\/api\/audit(\/|$)|\/verify$|^\/(health|ready|metrics)(\/|$)/;

/** A GET route's handler runs as a read route (readingRoute): its plain reads may use the replica, unless the route reads from the primary. */
function readFromReplica(route: RouteOptions): void {
  const methods = [route.method].flat();
  if (!methods.every((method) => method === 'GET' || method === 'HEAD') || route.config?.reads === 'primary' || PRIMARY_READS.test(route.url)) return;
  const handler = route.handler;
  route.handler = function (this: FastifyInstance, request, reply) {
    return readingRoute(callerOf(request.headers), () => handler.call(this, request, reply));
  };
}

/** Every other request holds its caller's reads on the primary from its start until the replica has replayed its writes (ReplicaRouter). */
function pinWritersToPrimary(app: FastifyInstance, router: ReplicaRouter): void {
  const writer = (request: FastifyRequest): string | null =>
    request.method === 'GET' || request.method === 'HEAD' || request.method === 'OPTIONS' ? null : callerOf(request.headers);
  const ended = (request: FastifyRequest, _reply: unknown, done: () => void): void => {
    const caller = writer(request);
    if (caller !== null && writing.delete(request)) router.writeEnded(caller);
    done();
  };
  const writing = new WeakSet<FastifyRequest>();
  app.addHook('onRequest', (request, _reply, done) => {
    const caller = writer(request);
    if (caller !== null) {
      writing.add(request);
      router.writeStarted(caller);
    }
    done();
  });
  app.addHook('onResponse', ended);
  app.addHook('onRequestAbort', (request, done) => ended(request, undefined, done));
}

function validationDetails(error: FastifyError): ErrorDetail[] {
  if (!hasZodFastifySchemaValidationErrors(error)) return [];
  return error.validation.flatMap((issue) => {
    const path = issue.instancePath.split('/').filter(Boolean).join('.');
    // An unknown key is named as the path of its own detail (`agnetId: unknown parameter`), one per key.
    if (issue.keyword === 'unrecognized_keys' && Array.isArray(issue.params.keys)) {
      const where = error.validationContext === 'querystring' ? 'query parameter' : 'field';
      return (issue.params.keys as string[]).map((key) => ({ path: path ? `${path}.${key}` : key, message: `unknown ${where}` }));
    }
    return [{ path, message: issue.message ?? 'invalid value' }];
  });
}

/**
 * A GET route's query schema with unknown keys refused: a misspelt or unsupported filter is a 400
 * naming it, never an answer the filter did not narrow. A documented GET route without a query
 * schema takes no query parameter at all. Hidden routes (the dashboard's pages, the gate proxy,
 * /metrics) keep theirs as they are.
 */
function strictQuery(route: RouteOptions): void {
  const schema = route.schema as DocumentedSchema | undefined;
  if (![route.method].flat().includes('GET') || schema?.hide) return;
  const query = schema?.querystring;
  route.schema = { ...schema, querystring: query === undefined ? z.strictObject({}) : strictQuerySchema(query, route.url) };
}

function strictQuerySchema(schema: unknown, url: string): z.ZodType {
  if (schema instanceof z.ZodObject) return schema.strict();
  // A query refined or transformed as a whole: the object it starts from is made strict.
  if (schema instanceof z.ZodPipe) return strictQuerySchema(schema.in, url).pipe(schema.out);
  throw new Error(`GET ${url}: its querystring schema must be a zod object (or one piped on), so unknown parameters can be refused`);
}

/** Maps anything thrown in a request to the service's catalogue. */
function toServiceError(error: unknown, options: HttpKitOptions, request: FastifyRequest): ServiceError {
  const { errors } = options;
  if (error instanceof ServiceError) return error;
  const classified = options.classify?.(error);
  if (classified) return classified;
  const fastifyError = error as FastifyError;
  // No body at all (none sent, or an empty one) where the route needs one: said so, rather than
  // as zod's "expected object, received null" (the framework validates a missing body as null).
  if (hasZodFastifySchemaValidationErrors(fastifyError) && fastifyError.validationContext === 'body' && request.body === undefined) {
    return errors('validation', 'Validation failed in body: this operation needs a JSON body', [{ path: '', message: 'a JSON body is required' }]);
  }
  if (hasZodFastifySchemaValidationErrors(fastifyError)) {
    const details = validationDetails(fastifyError);
    const where = fastifyError.validationContext ? ` in ${fastifyError.validationContext}` : '';
    const summary = details.map((d) => (d.path ? `${d.path}: ${d.message}` : d.message)).join('; ');
    return errors('validation', `Validation failed${where}: ${summary}`, details);
  }
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors('payloadTooLarge', `Request body exceeds ${options.bodyLimitBytes} bytes`);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return errors('unsupportedMediaType');
  }
  if (error instanceof SyntaxError || fastifyError.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return errors('invalidJson', `Malformed JSON body: ${fastifyError.message}`);
  }
  const status = fastifyError.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    // Remaining framework client errors (bad content length, prototype-poisoned JSON, ...).
    const key = status === 413 ? 'payloadTooLarge' : status === 415 ? 'unsupportedMediaType' : 'invalidJson';
    return new ServiceError(status, errors(key).code, fastifyError.message);
  }
  return errors('internal');
}

/** The kit's own authentication modes; `required` alone takes a key. */
const KIT_AUTH_MODES: Record<string, { takesKey: boolean }> = { required: { takesKey: true }, public: { takesKey: false }, metrics: { takesKey: false } };

/**
 * The route-table row of one method of a route, from what the route declares where it is
 * registered. What would leave a route unguarded or unnamed fails the app's build instead: a route
 * that takes a key without a scope (or naming one the service does not have), a scope on a route
 * that takes no key, an authentication mode the service does not declare, a documented route
 * without an operationId.
 */
function routeEntry(method: string, route: RouteOptions, options: HttpKitOptions): RouteEntry {
  const config = route.config as { auth?: RouteAuth; scope?: RouteScope } | undefined;
  const auth = config?.auth ?? 'required';
  const scope = config?.scope;
  const schema = route.schema as DocumentedSchema | undefined;
  const where = `${method} ${route.url}`;
  const mode = Object.hasOwn(KIT_AUTH_MODES, auth) ? KIT_AUTH_MODES[auth] : options.authModes?.[auth];
  if (mode === undefined) throw new Error(`${where}: authentication mode "${auth}" is not one of the service's (HttpKitOptions.authModes)`);
  if (mode.takesKey && scope === undefined) throw new Error(`${where} takes an API key but declares no scope: add config: { scope } where it is registered`);
  if (!mode.takesKey && scope !== undefined) throw new Error(`${where} takes no API key (auth "${auth}") but declares a scope`);
  for (const name of [scope ?? []].flat() as string[]) {
    if (!options.scopes.includes(name)) throw new Error(`${where}: scope "${name}" is not one of the service's (${options.scopes.join(', ')})`);
  }
  const documented = schema?.hide !== true;
  if (documented && schema?.operationId === undefined) {
    throw new Error(`${where} is documented but has no operationId: add schema.operationId (camelCase) where it is registered, or hide it`);
  }
  return {
    method,
    url: route.url,
    auth,
    takesKey: mode.takesKey,
    ...(scope !== undefined && { scope }),
    documented,
    ...(documented && { operationId: schema!.operationId! }),
  };
}

/** What each error status means, as the documents describe it. */
const ERROR_DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid input: a validation error (details name each field), malformed JSON or a malformed URL',
  401: 'Missing or invalid credentials',
  403: 'The credential does not allow this operation',
  404: 'Not found',
  409: 'Conflicts with the current state',
  413: 'Request body too large',
  414: 'A path parameter is too long',
  415: 'Content-Type is not application/json',
  429: 'Rate limit exceeded; retry after Retry-After seconds',
  500: 'Internal or storage error',
  501: 'Not implemented',
  502: 'An upstream service failed',
  503: 'Unavailable (database or a dependency); retry after Retry-After seconds',
};

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

/** The header every 429 carries (the kit's 429 description refers to it). */
const RETRY_AFTER = { 'Retry-After': { type: 'integer', minimum: 1, maximum: 86_400, description: 'Seconds to wait before retrying' } };

type DocumentedSchema = FastifySchema & { hide?: boolean; response?: Record<string, unknown> };

/** Where the documents say the API is: relative, so the server a document was fetched from (docs/api.md). */
const SERVERS = [{ url: '/', description: 'The server this document was fetched from: every path is relative to its root' }];

/**
 * A route's schema as its OpenAPI operation shows it: its operationId, and the service's error body
 * for every status the route can answer that it does not document itself: 400 (any request), 404
 * and 414 (path parameters), 413 and 415 (a body), the service's authentication statuses, the
 * route's own (`errorStatuses`), 500 and 503.
 */
function documentedOperation(route: RouteOptions, options: HttpKitOptions): DocumentedSchema {
  const schema = route.schema as DocumentedSchema | undefined;
  if (schema?.hide) return schema;
  const { operationId, errorStatuses, ...rest } = schema ?? {};
  const methods = [route.method].flat();
  const statuses = new Set([400, 500, 503, ...methods.flatMap((method) => options.authErrorStatuses(routeEntry(method, route, options)))]);
  if (route.url.includes(':')) [404, 414].forEach((status) => statuses.add(status));
  if (methods.some((method) => BODY_METHODS.has(method))) [413, 415].forEach((status) => statuses.add(status));
  errorStatuses?.forEach((status) => statuses.add(status));
  const response: Record<string, unknown> = { ...rest.response };
  for (const status of [...statuses].sort((a, b) => a - b)) {
    response[status] ??= { description: ERROR_DESCRIPTIONS[status] ?? 'Error', content: { 'application/json': { schema: options.errorSchema } } };
  }
  const description = withScope(rest.description, routeEntry(methods[0]!, route, options).scope);
  return { ...rest, ...(description !== undefined && { description }), ...(operationId !== undefined && { operationId }), response };
}

/** An operation's description ending with the scope its route declares, so the document (and the reference built from it) says which key it takes. */
function withScope(description: string | undefined, scope: RouteScope | undefined): string | undefined {
  if (scope === undefined) return description;
  const scopes = ([scope].flat() as string[]).map((name) => `\`${name}\``).join(' or ');
  const needs = `Scope: ${scopes}.`;
  return description === undefined ? needs : `${description}\n\n${needs}`;
}

/**
 * The rate-limit headers on the responses of an operation that lists 429 (the swagger plugin
 * reads a response schema's `headers`): Retry-After on the 429, the service's own on every 2xx and
 * 4xx answered after authentication (401 and 403 come before the limiter is asked).
 */
function withRateLimitHeaders(schema: DocumentedSchema, headers: Record<string, Record<string, unknown>>): void {
  const response = schema.response;
  if (response?.['429'] === undefined) return;
  for (const [status, documented] of Object.entries(response)) {
    const code = Number(status);
    if (code === 401 || code === 403 || code >= 500 || code < 200 || (code >= 300 && code < 400)) continue;
    response[status] = { ...(documented as object), headers: { ...headers, ...(code === 429 && RETRY_AFTER) } };
  }
}

/**
 * A Fastify app with the house rules: zod validation, OpenAPI from the same schemas, one error
 * body per service for every failure (validation, malformed JSON, 404, 413, 500), redacted logs.
 */
/** The name of the first query or path parameter holding unstorable text, or null. */
function unstorableField(fields: unknown): string | null {
  if (fields === null || typeof fields !== 'object') return null;
  for (const name in fields) {
    const value = (fields as Record<string, unknown>)[name];
    if (typeof value === 'string' ? !isStorableText(value) : Array.isArray(value) && value.some((v) => typeof v === 'string' && !isStorableText(v))) {
      return name;
    }
  }
  return null;
}

/** A request URL as logged: a `token` query parameter (the event stream's credential for browsers) is blanked. */
export function urlForLog(url: string): string {
  return url.replace(/([?&]token=)[^&#]*/gi, '$1[redacted]');
}

/**
 * Node checks its header and request deadlines on a timer, every 30 s by default, so a slow
 * client could stay twice the bound: checked every second (a quarter of a smaller bound) instead.
 */
function deadlineCheckInterval(timeouts: ServiceBaseConfig['http']): number {
  return Math.max(50, Math.min(1000, Math.floor(timeouts.headersTimeoutMs / 4)));
}

/**
 * A connection the HTTP parser gave up on, answered in the service's error body before it is
 * closed: 408 when the client was too slow (headers or body past their deadline), 431 for headers
 * too large, else 400. A reset connection has no one to answer.
 */
function clientErrorHandler(options: HttpKitOptions) {
  const { headersTimeoutMs, requestTimeoutMs } = options.timeouts;
  return function (this: FastifyInstance, error: Error & { code?: string }, socket: Socket): void {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const serviceError =
      error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? options.errors(
            'requestTimeout',
            `The request was not received in time: headers within ${headersTimeoutMs} ms, the whole request within ${requestTimeoutMs} ms (HTTP_HEADERS_TIMEOUT_MS, HTTP_REQUEST_TIMEOUT_MS)`,
          )
        : error.code === 'HPE_HEADER_OVERFLOW'
          ? options.errors('headersTooLarge')
          : options.errors('validation', 'Malformed HTTP request');
    this.log.debug({ err: error }, 'client error');
    if (socket.writable) {
      const body = JSON.stringify(options.renderError(serviceError));
      socket.write(
        `HTTP/1.1 ${serviceError.status} ${STATUS_CODES[serviceError.status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy();
  };
}

/** Longest path parameter the router accepts (ids are at most 256 characters). */
const MAX_PATH_PARAM_LENGTH = 1024;

/** The 414 of a path segment (a path parameter) longer than MAX_PATH_PARAM_LENGTH. */
function pathTooLong(errors: ErrorFactory<never>): ServiceError {
  return errors('pathTooLong', `A path parameter is longer than ${MAX_PATH_PARAM_LENGTH} characters`);
}

/**
 * Whether a path has a segment longer than a path parameter may be. The router answers 414 for
 * one only when no other route matches: under observe's dashboard catch-all (`/*`) it was a 404.
 */
function hasOverlongSegment(url: string): boolean {
  if (url.length <= MAX_PATH_PARAM_LENGTH) return false;
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return path.split('/').some((segment) => segment.length > MAX_PATH_PARAM_LENGTH);
}

/** The charset a Content-Type names, lowercased and unquoted; undefined when it names none. */
function charsetOf(contentType: string | undefined): string | undefined {
  const match = /;\s*charset\s*=\s*"?([^";\s]*)"?/i.exec(contentType ?? '');
  return match?.[1]?.toLowerCase();
}

/**
 * A JSON body's text, read strictly: UTF-8 only (RFC 8259 §8.1), as sent. Another charset is 415;
 * a byte order mark or bytes that are not UTF-8 are 400 (they were skipped or replaced by U+FFFD,
 * so the stored text was not what the client sent). For routes that read JSON bodies themselves
 * (OTLP/JSON) as for the kit's own parser.
 */
export function jsonBodyText(bytes: Buffer, contentType: string | undefined, errors: ErrorFactory<never>): string {
  const charset = charsetOf(contentType);
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw errors('unsupportedMediaType', `Content-Type charset ${charset} is not accepted: JSON bodies are UTF-8`);
  }
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
    throw errors('invalidJson', 'Malformed JSON body: it starts with a byte order mark (U+FEFF); send UTF-8 without one');
  }
  if (!isUtf8(bytes)) throw errors('invalidJson', 'Malformed JSON body: the bytes are not valid UTF-8');
  return bytes.toString('utf8');
}

/**
 * A JSON body as a value, every refusal a ServiceError: the text read strictly (jsonBodyText),
 * prototype-poisoning keys refused, and anything no route could hash or store (text with U+0000 or
 * unpaired surrogates, numbers beyond the double range, nesting deeper than MAX_JSON_DEPTH) named
 * with the path of the offending value.
 */
export function readJsonBody(bytes: Buffer, contentType: string | undefined, errors: ErrorFactory<never>): unknown {
  const text = jsonBodyText(bytes, contentType, errors);
  let parsed: unknown;
  try {
    parsed = secureJson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' });
  } catch (error) {
    const reason = error instanceof SyntaxError ? error.message : 'forbidden key (__proto__ or constructor.prototype)';
    throw errors('invalidJson', `Malformed JSON body: ${reason}`);
  }
  const problem = jsonValueProblem(parsed, MAX_JSON_DEPTH);
  if (problem) {
    const detail = { path: problem.path.join('.'), message: problem.message };
    throw errors('validation', `Validation failed in body: ${detail.path}: ${detail.message}`, [detail]);
  }
  return parsed;
}

/** A Content-Encoding other than identity, which no route but OTLP's decodes; null when there is none. */
function undecodedEncoding(header: string | undefined): string | null {
  const encoding = header?.trim().toLowerCase();
  return encoding === undefined || encoding === '' || encoding === 'identity' ? null : encoding;
}

/**
 * `10:42:01 INFO observe listening on http://127.0.0.1:3400`: the time, the level, the service and
 * the message, other fields after it on the same line. Loaded only when wanted (pino-pretty, synchronous).
 */
async function prettyLogStream(): Promise<NodeJS.WritableStream> {
  const { default: pretty } = await import('pino-pretty');
  return pretty({
    colorize: process.stdout.isTTY === true,
    translateTime: 'SYS:HH:MM:ss',
    ignore: 'pid,hostname,service',
    messageFormat: '{service} {msg}',
    singleLine: true,
    sync: true,
  });
}

export async function createHttpApp(options: HttpKitOptions): Promise<ZodApp> {
  // Fastify types this factory by ajv's compiler; at run time it calls what the factory returns as
  // any schema compiler, with `{ schema, method, url, httpPart }`, which is zod's compiler's input.
  type ValidatorFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>['buildValidator'];
  const zodValidatorFactory = (() => validatorCompiler) as unknown as ValidatorFactory;
  const serverOptions: FastifyHttpOptions<RawServerDefault> = {
    bodyLimit: options.bodyLimitBytes,
    // Slow clients (a body or headers trickling in) are cut at a bound, key or not: each holds a connection.
    http: {
      headersTimeout: options.timeouts.headersTimeoutMs,
      requestTimeout: options.timeouts.requestTimeoutMs,
      connectionsCheckingInterval: deadlineCheckInterval(options.timeouts),
    },
    // Fastify sets the server's request timeout from its own option (0, none, by default).
    requestTimeout: options.timeouts.requestTimeoutMs,
    clientErrorHandler: clientErrorHandler(options),
    logger: {
      level: options.logLevel,
      base: { service: options.service },
      ...(options.logFormat === 'pretty' && { stream: await prettyLogStream() }),
      ...(options.logStream !== undefined && { stream: options.logStream }),
      redact: ['req.headers.authorization', 'req.headers.cookie', ...(options.credentialHeaders ?? []).map((name) => `req.headers[${JSON.stringify(name)}]`)],
      // Fastify's request fields, with a credential in the query (`?token=` of the event stream) blanked.
      serializers: {
        req: (request: FastifyRequest) => ({
          method: request.method,
          url: urlForLog(request.url),
          host: request.host,
          remoteAddress: request.ip,
          remotePort: request.socket?.remotePort,
        }),
      },
    },
    // Per-request lines only at debug and below: at info the hot path stays quiet.
    logController: new LogController({ disableRequestLogging: options.logLevel !== 'debug' && options.logLevel !== 'trace' }),
    // Requests arriving while the app closes are answered by the kit (below): 503 in the service's
    // error body with Retry-After, where Fastify's own answer had neither.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    onProtoPoisoning: 'error',
    onConstructorPoisoning: 'error',
    ajv: undefined,
    // Validation by zod, responses serialised as built (their schemas document the API, no second
    // validation pass). Given here rather than by setValidatorCompiler, Fastify never loads its
    // defaults, ajv and fast-json-stringify (~120 modules, ~1 MiB of a start's RSS).
    schemaController: { compilersFactory: { buildValidator: zodValidatorFactory, buildSerializer: () => () => (data) => JSON.stringify(data) } },
    // Path parameters carry ids up to 256 characters (session and agent ids); the default 100 answered 414.
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
    // A URL the router cannot decode, or a longer parameter, answers in the service's error body too.
    frameworkErrors: (error, _request, reply) => {
      const serviceError =
        error.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? pathTooLong(options.errors)
          : error.code === 'FST_ERR_BAD_URL'
            ? options.errors('validation', 'Malformed URL: invalid percent-encoding in the path')
            : options.errors('internal');
      void (reply as FastifyReply).status(serviceError.status).send(options.renderError(serviceError));
    },
  };
  const app = Fastify(serverOptions);
  app.decorateRequest('failureCause', null);
  // Set by preClose: requests that still arrive are answered 503 (onRequest below).
  let closing = false;
  const outage = new OutageLog(app.log, 'database', options.databaseProbe);
  const routeTable: RouteEntry[] = [];
  app.decorate('routeTable', routeTable);
  app.decorate('backgroundWriteFailed', (error: unknown, what: string) => {
    if (databaseFailure(error) === 'unavailable') outage.noticed(error);
    else app.log.warn({ err: error }, what);
  });
  app.addHook('onRoute', (route) => {
    strictQuery(route);
    for (const method of [route.method].flat()) {
      if (method !== 'HEAD') routeTable.push(routeEntry(method, route, options));
    }
    if (options.replica !== undefined) readFromReplica(route);
  });
  if (options.replica !== undefined) pinWritersToPrimary(app, options.replica);
  // JSON bodies: prototype-poisoning keys are refused, and so is anything no route could hash or
  // store (text with U+0000 or unpaired surrogates, numbers beyond the double range, nesting deeper
  // than MAX_JSON_DEPTH), with the path of the offending value.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const encoding = undecodedEncoding(request.headers['content-encoding']);
    if (encoding !== null) {
      return done(options.errors('unsupportedMediaType', `Content-Encoding ${encoding} is not accepted here: send the JSON body uncompressed`), undefined);
    }
    // No bytes is no body, whatever the Content-Type says (clients send the header on every call,
    // DELETE included); a route that needs a body then answers its own validation error.
    if ((body as Buffer).length === 0) return done(null, undefined);
    try {
      done(null, readJsonBody(body as Buffer, request.headers['content-type'], options.errors));
    } catch (error) {
      done(error as ServiceError, undefined);
    }
  });
  // Callback-style hooks: no promise per request on the hot path.
  app.addHook('onRequest', (request, reply, done) => {
    if (closing) {
      request.failureCause = 'shutting_down';
      void reply.status(503).send(options.renderError(options.errors('unavailable', 'The service is shutting down; retry shortly')));
      return;
    }
    done(hasOverlongSegment(request.url) ? pathTooLong(options.errors) : undefined);
  });
  // Query strings and path parameters go through the same rule.
  app.addHook('preValidation', (request, _reply, done) => {
    const name = unstorableField(request.query) ?? unstorableField(request.params);
    if (name === null) return done();
    done(
      options.errors('validation', `Validation failed: ${name} must not contain U+0000 or unpaired UTF-16 surrogates`, [
        { path: name, message: 'must not contain U+0000 or unpaired UTF-16 surrogates' },
      ]),
    );
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: options.title, description: options.description, version: options.version },
      servers: SERVERS,
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    transform: (input) => {
      const { documentedBody, ...schema } = documentedOperation(input.route, options);
      const transformed = jsonSchemaTransform({ ...input, schema });
      // Per content type, as the swagger plugin reads a body's `content` (a requestBody of those types).
      if (documentedBody !== undefined) (transformed.schema as FastifySchema).body = { content: documentedBody };
      withRateLimitHeaders(transformed.schema as DocumentedSchema, options.rateLimitHeaders ?? {});
      return transformed;
    },
    // Named schemas (`.meta({id})`) become components; zod's registry is process-wide, so under
    // `vigil up` each service keeps only the schemas its own paths reference.
    transformObject: (input) =>
      describedOperations(namedWildcards(onlyReferencedSchemas(jsonSchemaTransformObject(input) as OpenApiDocument))) as ReturnType<
        typeof jsonSchemaTransformObject
      >,
  });

  // Graceful shutdown: idle keep-alive connections are closed at once (forceCloseConnections:
  // 'idle'); a connection busy with a request is told to close after its response, so close()
  // never waits out a client's keep-alive timeout.
  app.addHook('preClose', async () => {
    closing = true;
    outage.stop();
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) void reply.header('connection', 'close');
    if (reply.statusCode === 503 && !reply.hasHeader('retry-after')) void reply.header('retry-after', String(RETRY_AFTER_SECONDS));
    done(null, payload);
  });

  if (options.validateResponses === true) validateResponses(app, options.errors);

  app.setErrorHandler((error, request, reply) => {
    const serviceError = toServiceError(error, options, request);
    if (serviceError.status >= 500) {
      if (serviceError.status === 503 && databaseFailure(error) === 'unavailable') {
        // Logged once per outage (OutageLog), not once per request.
        request.failureCause = 'database_unavailable';
        outage.failed(error);
      } else {
        request.failureCause = serviceError.status === 500 ? 'internal' : 'other';
        request.log.error({ err: error }, 'request failed');
      }
    }
    void reply.status(serviceError.status).send(options.renderError(serviceError));
  });

  app.setNotFoundHandler((request, reply) => {
    const error = options.errors('routeNotFound', `Route ${request.method} ${request.url.split('?')[0]} not found`);
    void reply.status(error.status).send(options.renderError(error));
  });

  return app.withTypeProvider<ZodTypeProvider>();
}

export type { ZodTypeProvider };

export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1] ?? null;
}

/**
 * Sends a body that is already JSON text or its UTF-8 bytes (spliced from stored JSON), bypassing
 * serialisation. The route's response schema still documents its shape.
 */
export function sendJsonText(reply: FastifyReply, json: string | Buffer): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(json as never);
}

interface OpenApiOperation {
  summary?: string;
  tags?: string[];
  parameters?: { in?: string; name?: string; description?: string }[];
  responses?: Record<string, { description?: string }>;
}

interface OpenApiDocument {
  paths?: Record<string, Record<string, OpenApiOperation>>;
  tags?: { name: string }[];
  components?: { schemas?: Record<string, unknown> } & Record<string, unknown>;
}

/** What the swagger plugin calls a response whose schema carries no description. */
const PLUGIN_PLACEHOLDER = 'Default Response';

/**
 * The document with every tag its operations use declared at the top, and every success response
 * described: a route's own description wins, otherwise the status and the operation's summary
 * (`Created: Create an API key`) instead of the plugin's placeholder.
 */
function describedOperations(document: OpenApiDocument): OpenApiDocument {
  const tags = new Set<string>();
  for (const operation of Object.values(document.paths ?? {}).flatMap((methods) => Object.values(methods))) {
    operation.tags?.forEach((tag) => tags.add(tag));
    for (const [status, response] of Object.entries(operation.responses ?? {})) {
      if (response.description !== PLUGIN_PLACEHOLDER) continue;
      const outcome = STATUS_CODES[status] ?? status;
      response.description = operation.summary === undefined ? outcome : `${outcome}: ${operation.summary}`;
    }
  }
  return { ...document, tags: [...tags].sort().map((name) => ({ name })) };
}

/** What a route's trailing wildcard (`/*`, the rest of the path, slashes included) is called in the document. */
export const WILDCARD_PARAMETER = 'path';

/** A route's URL as the OpenAPI document spells it: `:id` is `{id}`, a trailing `*` is `{path}`. */
export function openApiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\*$/, `{${WILDCARD_PARAMETER}}`);
}

/**
 * The document with each route's trailing wildcard named: the swagger plugin writes `{*}`, which
 * is no parameter name OpenAPI tools accept (Spectral's path-params), so it becomes
 * `{WILDCARD_PARAMETER}`, described as keeping its slashes (typed clients send it so).
 */
function namedWildcards(document: OpenApiDocument): OpenApiDocument {
  const paths = Object.entries(document.paths ?? {}).map(([path, methods]): [string, Record<string, OpenApiOperation>] => {
    if (!path.endsWith('/{*}')) return [path, methods];
    for (const operation of Object.values(methods)) {
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in !== 'path' || parameter.name !== '*') continue;
        parameter.name = WILDCARD_PARAMETER;
        parameter.description ??= 'The rest of the path, its slashes included (each segment percent-encoded)';
      }
    }
    return [`${path.slice(0, -'{*}'.length)}{${WILDCARD_PARAMETER}}`, methods];
  });
  return { ...document, paths: Object.fromEntries(paths) };
}

/** The document with `components.schemas` cut to the schemas reachable from its paths. */
function onlyReferencedSchemas(document: OpenApiDocument): OpenApiDocument {
  const schemas = document.components?.schemas;
  if (!schemas) return document;
  const PREFIX = '#/components/schemas/';
  const kept = new Set<string>();
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (value === null || typeof value !== 'object') return;
    for (const [key, child] of Object.entries(value)) {
      if (key === '$ref' && typeof child === 'string' && child.startsWith(PREFIX)) {
        const name = child.slice(PREFIX.length);
        if (!kept.has(name)) {
          kept.add(name);
          visit(schemas[name]);
        }
      } else visit(child);
    }
  };
  visit(document.paths);
  const referenced = Object.fromEntries(
    Object.keys(schemas)
      .filter((name) => kept.has(name))
      .sort()
      .map((name) => [name, schemas[name]]),
  );
  return { ...document, components: { ...document.components, schemas: referenced } };
}
