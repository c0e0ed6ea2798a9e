/**
 * The dashboard's only way to the services: observe at /api on this origin, the gate at
 * /gate/api (observe forwards it to GATE_URL). Credentials live in sessionStorage, so they are
 * gone when the browser tab closes: the observe API key, and for the gate not the key but a
 * short-lived dashboard session token the gate issued for it (decisions: `dashboard:<name>`).
 */

import type { GatePaths, GateSchemas, Methods, ObservePaths, ObserveSchemas, OperationShape, Success } from '@vigil/sdk/types';

export type Service = 'observe' | 'gate';

/** What the dashboard keeps of the gate's sign-in answer (the token is the credential). */
export type GateSession = Pick<GateAnswer<'POST /api/dashboard/sessions'>, 'token' | 'name' | 'actor' | 'keyName' | 'scopes' | 'expiresAt'>;

export interface Credentials {
  observeKey: string | null;
  gate: GateSession | null;
}

const STORAGE_KEY = 'vigil.credentials';

export function loadCredentials(): Credentials {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    if (raw) {
      const parsed = JSON.parse(raw) as Credentials;
      const gate = parsed.gate && Date.parse(parsed.gate.expiresAt) > Date.now() ? parsed.gate : null;
      return { observeKey: parsed.observeKey ?? null, gate };
    }
  } catch {
    // Unreadable storage: start signed out.
  }
  return { observeKey: null, gate: null };
}

export function saveCredentials(credentials: Credentials): void {
  if (credentials.observeKey === null && credentials.gate === null) sessionStorage.removeItem(STORAGE_KEY);
  else sessionStorage.setItem(STORAGE_KEY, JSON.stringify(credentials));
}

/** An API failure, with a sentence a person can act on. */
export class ApiError extends Error {
  constructor(
    readonly service: Service,
    readonly status: number,
    message: string,
    readonly details: { path: string; message: string }[] = [],
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

type Listener = (service: Service, error: ApiError) => void;
const unauthorizedListeners = new Set<Listener>();

/** Called when a service answers 401 to a stored credential (expired session, revoked key). */
export function onUnauthorized(listener: Listener): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

const requestListeners = new Set<() => void>();

/** Called after this tab decided a request, so what counts requests (the navigation's pending badge) reloads at once. */
export function onRequestsChanged(listener: () => void): () => void {
  requestListeners.add(listener);
  return () => requestListeners.delete(listener);
}

export function requestsChanged(): void {
  for (const listener of requestListeners) listener();
}

let current: Credentials = loadCredentials();

export function credentials(): Credentials {
  return current;
}

export function setCredentials(next: Credentials): void {
  current = next;
  saveCredentials(next);
}

const SERVICE_NAMES: Record<Service, string> = { observe: 'Observe', gate: 'The gate' };

/** Reads either error body: observe `{error, code, status, details?}`, gate `{error: {code, message, details?}}`. */
function detailsOf(value: unknown): { path: string; message: string }[] {
  return Array.isArray(value) ? (value as { path: string; message: string }[]) : [];
}

function errorFrom(service: Service, status: number, body: unknown): ApiError {
  const record = body && typeof body === 'object' ? (body as Record<string, unknown>) : null;
  const error = record?.error;
  if (typeof error === 'string') return new ApiError(service, status, error, detailsOf(record?.details));
  if (error && typeof error === 'object') {
    const inner = error as Record<string, unknown>;
    if (typeof inner.message === 'string') return new ApiError(service, status, inner.message, detailsOf(inner.details));
  }
  return new ApiError(service, status, `${SERVICE_NAMES[service]} answered ${status} without an explanation`);
}

/**
 * A route as the service's OpenAPI document lists it, method first: `'GET /api/agents/{id}'`.
 * The types come from the SDK's generated modules (`@vigil/sdk/types`), so the path, its
 * parameters, query, body and answer follow the route schemas: a schema change that breaks a
 * page is a type error here.
 */
export type Route<Paths> = { [P in keyof Paths & string]: `${Uppercase<Methods<Paths, P>>} ${P}` }[keyof Paths & string];
export type ObserveRoute = Route<ObservePaths>;
export type GateRoute = Route<GatePaths>;

type OperationOf<Paths, R> = R extends `${infer Verb} ${infer P}`
  ? P extends keyof Paths
    ? Lowercase<Verb> extends keyof Paths[P]
      ? Paths[P][Lowercase<Verb>] extends OperationShape
        ? Paths[P][Lowercase<Verb>]
        : never
      : never
    : never
  : never;

/** The body of a route's success answer. */
export type ObserveAnswer<R extends ObserveRoute> = Success<OperationOf<ObservePaths, R>>;
export type GateAnswer<R extends GateRoute> = Success<OperationOf<GatePaths, R>>;
/** A route's query and body, as its schema accepts them. */
export type ObserveQuery<R extends ObserveRoute> = OperationOf<ObservePaths, R>['query'];
export type ObserveBody<R extends ObserveRoute> = OperationOf<ObservePaths, R>['body'];
export type GateQuery<R extends GateRoute> = OperationOf<GatePaths, R>['query'];
export type GateBody<R extends GateRoute> = OperationOf<GatePaths, R>['body'];

interface TransportOptions {
  signal?: AbortSignal;
  /** Use this bearer credential instead of the stored one (sign-in). `null`: send none. */
  token?: string | null;
  /** Also send the gate session, as X-Vigil-Gate-Authorization, to an observe route that reads the gate with it (the evidence pack). */
  gateCredential?: boolean;
}

/** Operations without parameters of a kind have `Record<string, never>` there (an index signature). */
type IsEmpty<T> = string extends keyof T ? true : false;

/** What one route takes: its path parameters, query and body, typed by its schema. */
export type RequestOptions<O extends OperationShape> = TransportOptions &
  (IsEmpty<O['params']> extends true ? { params?: undefined } : { params: O['params'] }) &
  (IsEmpty<O['query']> extends true ? { query?: undefined } : {} extends O['query'] ? { query?: O['query'] } : { query: O['query'] }) &
  ([O['body']] extends [never] ? { body?: undefined } : O['bodyRequired'] extends true ? { body: O['body'] } : { body?: O['body'] });

/** The options may be left out when nothing in them is required. */
type OptionsArgs<O extends OperationShape> = {} extends RequestOptions<O> ? [options?: RequestOptions<O>] : [options: RequestOptions<O>];

interface UntypedOptions extends TransportOptions {
  params?: object;
  query?: object;
  body?: unknown;
}

function queryString(query: object | undefined): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** `/api/agents/{id}` with `{ id: 'a/b' }` → `/api/agents/a%2Fb`. */
function fillPath(path: string, params: object | undefined): string {
  const values = (params ?? {}) as Record<string, unknown>;
  return path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(values[name])));
}

async function request(service: Service, route: string, options: UntypedOptions = {}): Promise<unknown> {
  const [method, path] = route.split(' ') as [string, string];
  // Observe serves the dashboard, so its /api is this origin's; the gate is forwarded at /gate/api.
  const base = service === 'observe' ? '' : '/gate';
  const stored = service === 'observe' ? current.observeKey : (current.gate?.token ?? null);
  const token = options.token === undefined ? stored : options.token;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (options.gateCredential && current.gate) headers['x-vigil-gate-authorization'] = `Bearer ${current.gate.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(`${base}${fillPath(path, options.params)}${queryString(options.query)}`, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: options.signal,
      cache: 'no-store',
    });
  } catch (error) {
    if ((error as Error).name === 'AbortError') throw error;
    throw new ApiError(
      service,
      0,
      `Could not reach ${service === 'observe' ? 'observe' : 'the gate (through observe)'}: check that Vigil is running and the network is up.`,
    );
  }
  const text = await response.text();
  let body: unknown = undefined;
  if (text) {
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
  }
  if (!response.ok) {
    const error = errorFrom(service, response.status, body);
    if (response.status === 401 && options.token === undefined && stored) {
      for (const listener of unauthorizedListeners) listener(service, error);
    }
    throw error;
  }
  return body;
}

/** Calls observe: `observe('GET /api/agents/{id}', { params: { id }, signal })`. */
export function observe<R extends ObserveRoute>(route: R, ...[options]: OptionsArgs<OperationOf<ObservePaths, R>>): Promise<ObserveAnswer<R>> {
  return request('observe', route, options) as Promise<ObserveAnswer<R>>;
}

/** Calls the gate (through observe's /gate forward): `gate('GET /api/requests/{id}', { params: { id } })`. */
export function gate<R extends GateRoute>(route: R, ...[options]: OptionsArgs<OperationOf<GatePaths, R>>): Promise<GateAnswer<R>> {
  return request('gate', route, options) as Promise<GateAnswer<R>>;
}

/** Whether the signed-in gate session has a scope (admin grants every scope). */
export function hasGateScope(scope: string): boolean {
  const scopes: readonly string[] = current.gate?.scopes ?? [];
  return scopes.includes('admin') || scopes.includes(scope);
}

// ---- Answers the pages read, named once: every one is a generated type (see @vigil/sdk/types) ----

export type Session = ObserveSchemas.Session;
export type VigilEvent = ObserveSchemas.Event;
export type Verification = ObserveAnswer<'GET /api/audit/verify'>;
export type Agent = ObserveSchemas.Agent;
export type AgentHealth = ObserveSchemas.AgentHealth;
export type Approval = GateSchemas.ApprovalRequest;
export type ApprovalSummary = GateAnswer<'GET /api/requests'>[number];
export type AuditEntry = GateSchemas.AuditEntry;
export type AuditListEntry = GateSchemas.AuditListEntry;

export type AdminChange = ObserveSchemas.AdminChange;
/** The resources each service's change log records (its `resource` filter takes no other). */
export interface AdminResources {
  observe: NonNullable<ObserveQuery<'GET /api/audit/changes'>['resource']>;
  gate: NonNullable<GateQuery<'GET /api/audit/changes'>['resource']>;
}
export type AdminResource = AdminResources[Service];
/** The change log's query: the same in both services but for the resources `resource` takes. */
export type AdminChangeQuery<S extends Service = Service> = Omit<ObserveQuery<'GET /api/audit/changes'>, 'resource'> & { resource?: AdminResources[S] };

/** One page of a service's administrative changes, newest first (admin scope). */
export function adminChanges<S extends Service>(
  service: S,
  query: AdminChangeQuery<S>,
  signal?: AbortSignal,
): Promise<ObserveAnswer<'GET /api/audit/changes'>> {
  // `S` ties the query's resource to the service, which TypeScript does not narrow through the comparison.
  return service === 'observe'
    ? observe('GET /api/audit/changes', { query: query as AdminChangeQuery<'observe'>, signal })
    : gate('GET /api/audit/changes', { query: query as AdminChangeQuery<'gate'>, signal });
}
