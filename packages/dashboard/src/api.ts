/**
 * The dashboard's only way to the services: observe at /api on this origin, the gate at
 * /gate/api (observe forwards it to GATE_URL). Credentials live in sessionStorage, so they are
 * gone when the browser tab closes: the observe API key, and for the gate not the key but a
 * short-lived dashboard session token the gate issued for it (decisions: `dashboard:<name>`).
 */

export type Service = 'observe' | 'gate';

export interface GateSession {
  token: string;
  name: string;
  actor: string;
  keyName: string;
  scopes: string[];
  expiresAt: string;
}

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

let current: Credentials = loadCredentials();

export function credentials(): Credentials {
  return current;
}

export function setCredentials(next: Credentials): void {
  current = next;
  saveCredentials(next);
}

const SERVICE_NAMES: Record<Service, string> = { observe: 'Observe', gate: 'The gate' };

/** Reads either error body: observe `{error, status, details?}`, gate `{error: {code, message, details?}}`. */
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

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined | null>;
  signal?: AbortSignal;
  /** Use this bearer credential instead of the stored one (sign-in). `null`: send none. */
  token?: string | null;
}

function queryString(query: RequestOptions['query']): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== '') params.set(name, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}

async function request<T>(service: Service, path: string, options: RequestOptions = {}): Promise<T> {
  const base = service === 'observe' ? '/api' : '/gate/api';
  const stored = service === 'observe' ? current.observeKey : (current.gate?.token ?? null);
  const token = options.token === undefined ? stored : options.token;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(`${base}${path}${queryString(options.query)}`, {
      method: options.method ?? 'GET',
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: options.signal,
      cache: 'no-store',
    });
  } catch (error) {
    if ((error as Error).name === 'AbortError') throw error;
    throw new ApiError(service, 0, `Could not reach ${service === 'observe' ? 'observe' : 'the gate (through observe)'}: check that Vigil is running and the network is up.`);
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
  return body as T;
}

export const observe = <T>(path: string, options?: RequestOptions): Promise<T> => request<T>('observe', path, options);
export const gate = <T>(path: string, options?: RequestOptions): Promise<T> => request<T>('gate', path, options);

/** Whether the signed-in gate session has a scope (admin grants every scope). */
export function hasGateScope(scope: string): boolean {
  const scopes = current.gate?.scopes ?? [];
  return scopes.includes('admin') || scopes.includes(scope);
}

// ---- Shapes of the answers the pages read (see the specs and each service's /api/openapi.json) ----

export interface Session {
  id: string;
  agentId: string;
  agentName: string;
  status: 'active' | 'completed' | 'error';
  startedAt: string;
  endedAt?: string;
  lastEventAt: string;
  eventCount: number;
  toolCallCount: number;
  errorCount: number;
  totalCostUsd: number;
  tags: string[];
}

export interface VigilEvent {
  id: string;
  seq: number;
  timestamp: string;
  sessionId: string;
  agentId: string;
  eventType: string;
  severity: 'debug' | 'info' | 'warn' | 'error' | 'critical';
  payload: Record<string, unknown>;
  metadata: Record<string, unknown>;
  prevHash: string | null;
  hash: string;
}

export interface ChainBreak {
  seq: number;
  eventId: string | null;
  reason: string;
}

export interface Verification {
  sessionId: string;
  valid: boolean;
  eventCount: number;
  headHash: string | null;
  brokenAt: ChainBreak | null;
}

export interface Agent {
  id: string;
  name: string;
  firstSeenAt: string;
  lastSeenAt: string;
  sessionCount: number;
  pausedAt: string | null;
  pauseReason: string | null;
  modelOverride: string | null;
  approvalPolicyId: string | null;
}

export interface HealthDimension {
  name: string;
  score: number;
  weight: number;
  rawValue: number;
  description: string;
}

export interface AgentHealth {
  agentId: string;
  overallScore: number;
  trend: 'improving' | 'stable' | 'degrading';
  trendDelta: number;
  dimensions: HealthDimension[];
  window: { from: string; to: string };
  sessionCount: number;
  computedAt: string;
}

export interface ApprovalSummary {
  id: string;
  action: string;
  status: 'pending' | 'approved' | 'denied' | 'expired';
  urgency: 'low' | 'normal' | 'high' | 'critical';
  createdAt: string;
}

export interface PolicyDecision {
  decision: 'auto_approve' | 'auto_deny' | 'route_to_human' | 'route_to_agent';
  policyId: string | null;
  approvers: string[];
  channels: string[];
  requireReason: boolean;
}

export interface Approval extends ApprovalSummary {
  params: Record<string, unknown>;
  context: Record<string, unknown>;
  decidedBy: string | null;
  decisionReason: string | null;
  decidedAt: string | null;
  expiresAt: string | null;
  confirmedAt: string | null;
  executionResult: unknown;
  policyDecision: PolicyDecision;
}

export interface AuditEntry {
  timestamp: string;
  event: string;
  actor: string;
  /** The API key behind the actor (its name as it was then); null for the gate's own actions. */
  actorKeyId: string | null;
  actorKeyName: string | null;
  details?: Record<string, unknown>;
}

export interface AuditListEntry extends AuditEntry {
  id: string;
  requestId: string;
  action: string;
}

export interface AuditListPage {
  entries: AuditListEntry[];
  nextCursor: string | null;
  hasMore: boolean;
}
