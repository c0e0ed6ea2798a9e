/**
 * The HTTP transport both clients share: bearer authentication, JSON bodies, a deadline per
 * attempt, and retries with exponential backoff (full jitter) on network errors, timeouts, 408,
 * 409 idempotency_in_flight, 425, 429, 500, 502, 503 and 504, honouring Retry-After, for at most
 * `maxRetries` retries and `maxRetryTimeMs`. A retried request may reach the server twice (its
 * first answer was lost): POST /api/events carries an Idempotency-Key, so observe stores it once.
 */
import { apiError, VigilNetworkError, type ErrorDetail, type ServiceName, type VigilApiError } from './errors.ts';
import type { CallOptions, InitArgs, Methods, Operation, RetryOptions, Success } from './types.ts';

export interface TransportOptions {
  /** Base address, e.g. `http://localhost:3400` (a path prefix is kept). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /** Deadline of one attempt (default 10 s). */
  timeoutMs?: number;
  /** Retry policy of the calls you await (default: 3 retries from 250 ms, within 30 s); `false` disables retries. */
  retry?: RetryOptions | false;
  /** A fetch implementation (default: the global one). */
  fetch?: typeof fetch;
}

export interface TransportRequest extends CallOptions {
  params?: Record<string, unknown>;
  query?: Record<string, unknown>;
  body?: unknown;
}

const RETRYABLE_STATUS = new Set([408, 425, 429, 500, 502, 503, 504]);
export const DEFAULT_RETRY: Required<RetryOptions> = { maxRetries: 3, maxRetryTimeMs: 30_000, baseDelayMs: 250, maxDelayMs: 30_000 };

/** `base` with the options `overrides` sets (an option given as undefined keeps the base's value). */
export function retryPolicy(base: Required<RetryOptions>, overrides: RetryOptions | undefined): Required<RetryOptions> {
  const policy = { ...base };
  for (const [name, value] of Object.entries(overrides ?? {}) as [keyof RetryOptions, number | undefined][]) if (value !== undefined) policy[name] = value;
  return policy;
}

/**
 * Whether a failed answer is worth repeating. A 409 is, only when it is observe's "the same
 * Idempotency-Key is still being processed" (code idempotency_in_flight): every other conflict is
 * final. An observe older than its error codes sends no code, only Retry-After on that 409.
 */
export function retryableAnswer(error: VigilApiError): boolean {
  if (RETRYABLE_STATUS.has(error.status)) return true;
  return error.status === 409 && (error.code === 'idempotency_in_flight' || (error.code === undefined && error.retryAfterMs !== undefined));
}

/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Retry-After as milliseconds: delta-seconds or an HTTP date. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * Exponential backoff with "full jitter": anywhere between 0 and base × 2^retry, capped at
 * maxDelayMs, so clients that failed together do not come back together.
 */
export function backoffDelay(retry: number, policy: Pick<Required<RetryOptions>, 'baseDelayMs' | 'maxDelayMs'>): number {
  return Math.random() * Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
}

function expandPath(template: string, params: Record<string, unknown> | undefined): string {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const value = params?.[name];
    if (value === undefined || value === null || value === '') throw new TypeError(`path parameter "${name}" is required for ${template}`);
    // A route's trailing wildcard, `{path}` at the end of the template (a tile path such as
    // 0/x001/234.p/5), keeps its slashes; each segment is encoded.
    const rest = name === 'path' && template.endsWith('/{path}');
    return rest ? String(value).split('/').map(encodeURIComponent).join('/') : encodeURIComponent(String(value));
  });
}

function queryString(query: Record<string, unknown> | undefined): string {
  if (!query) return '';
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) search.set(key, value.map(String).join(','));
    else if (value instanceof Date) search.set(key, value.toISOString());
    else search.set(key, String(value));
  }
  const text = search.toString();
  return text === '' ? '' : `?${text}`;
}

function errorParts(body: unknown): { message?: string; code?: string; details?: ErrorDetail[] } {
  if (typeof body !== 'object' || body === null) return {};
  const error = (body as { error?: unknown }).error;
  // observe: { error: string, code, status, details? } (older servers send no `code`)
  if (typeof error === 'string') {
    const { code, details } = body as { code?: unknown; details?: unknown };
    return { message: error, code: typeof code === 'string' ? code : undefined, details: Array.isArray(details) ? (details as ErrorDetail[]) : undefined };
  }
  // gate: { error: { code, message, details? } }
  if (typeof error === 'object' && error !== null) {
    const { code, message, details } = error as { code?: unknown; message?: unknown; details?: unknown };
    return {
      message: typeof message === 'string' ? message : undefined,
      code: typeof code === 'string' ? code : undefined,
      details: Array.isArray(details) ? (details as ErrorDetail[]) : undefined,
    };
  }
  return {};
}

export class HttpTransport {
  readonly baseUrl: string;
  private readonly fetchImpl: (input: string, init: RequestInit) => Promise<Response>;
  private readonly retry: Required<RetryOptions> | false;
  private readonly timeoutMs: number;

  constructor(
    readonly service: ServiceName,
    private readonly options: TransportOptions,
  ) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    // Called without a receiver: a browser's fetch invoked as a method of another object throws
    // "Illegal invocation" (Node's does not care).
    const fetchImpl = options.fetch ?? globalThis.fetch;
    this.fetchImpl = (input, init) => fetchImpl(input, init);
    this.retry = options.retry === false ? false : retryPolicy(DEFAULT_RETRY, options.retry);
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  /** Sends one request (retrying as configured) and answers the parsed JSON body (undefined for an empty body). */
  async request<T>(method: string, pathTemplate: string, init: TransportRequest = {}): Promise<T> {
    const verb = method.toUpperCase();
    const path = expandPath(pathTemplate, init.params);
    const url = `${this.baseUrl}${path}${queryString(init.query)}`;
    const headers: Record<string, string> = { accept: 'application/json', ...this.options.headers, ...init.headers };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    let body: string | undefined;
    if (init.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(init.body);
    }
    const policy = init.retry === false ? false : init.retry === undefined ? this.retry : retryPolicy(DEFAULT_RETRY, init.retry);
    const deadline = Date.now() + (policy === false ? 0 : policy.maxRetryTimeMs);
    /** The wait before retry number `retry + 1`, or undefined when the policy gives up (count, or no time left). */
    const pause = (retry: number, retryAfterMs?: number): number | undefined => {
      const timeLeft = deadline - Date.now();
      if (policy === false || retry >= policy.maxRetries || timeLeft <= 0) return undefined;
      // Never sooner than the server asked: a Retry-After beyond the time left ends the retries now rather than after a useless wait.
      if (retryAfterMs !== undefined) return retryAfterMs > timeLeft ? undefined : retryAfterMs;
      // A backoff ends by the deadline at the latest, for one last attempt there.
      return Math.min(backoffDelay(retry, policy), timeLeft);
    };

    for (let retry = 0; ; retry++) {
      const attempt = new AbortController();
      const timer = setTimeout(() => attempt.abort(new Error('timeout')), this.timeoutMs);
      const onAbort = (): void => attempt.abort(init.signal!.reason);
      init.signal?.addEventListener('abort', onAbort, { once: true });
      let response: Response;
      let text: string;
      try {
        if (init.signal?.aborted) throw init.signal.reason;
        response = await this.fetchImpl(url, { method: verb, headers, body, signal: attempt.signal });
        text = await response.text();
      } catch (error) {
        if (init.signal?.aborted) throw init.signal.reason;
        const timedOut = attempt.signal.aborted;
        const failure = new VigilNetworkError(
          timedOut
            ? `${this.service}: ${verb} ${path} got no answer within ${this.timeoutMs} ms`
            : `${this.service}: ${verb} ${path} failed: ${(error as Error).message}${causeText(error)}`,
          this.service,
          verb,
          path,
          timedOut,
          error,
        );
        const delay = pause(retry);
        if (delay === undefined) throw failure;
        await sleep(delay, init.signal);
        continue;
      } finally {
        clearTimeout(timer);
        init.signal?.removeEventListener('abort', onAbort);
      }

      let parsed: unknown = undefined;
      if (text !== '') {
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = text;
        }
      }
      if (response.ok) return parsed as T;

      const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
      const parts = errorParts(parsed);
      const error: VigilApiError = apiError({
        service: this.service,
        status: response.status,
        message: parts.message ?? `${this.service}: ${verb} ${path} answered ${response.status} ${response.statusText}`.trim(),
        code: parts.code,
        details: parts.details,
        method: verb,
        path,
        body: parsed,
        retryAfterMs,
      });
      const delay = retryableAnswer(error) ? pause(retry, retryAfterMs) : undefined;
      if (delay === undefined) throw error;
      await sleep(delay, init.signal);
    }
  }
}

function causeText(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  if (!cause) return '';
  return typeof cause.code === 'string' ? ` (${cause.code})` : typeof cause.message === 'string' ? ` (${cause.message})` : '';
}

/**
 * What both clients share: their transport (base URL and key from the options, else from the
 * environment) and `call`, any operation of the service typed by its route schema, e.g.
 * `call('get', '/api/sessions/{id}', { params: { id } })`.
 */
export abstract class ServiceClient<Paths> {
  protected readonly http: HttpTransport;

  protected constructor(service: ServiceName, options: Partial<TransportOptions>, defaults: { baseUrl: string; apiKey: string | undefined }) {
    this.http = new HttpTransport(service, { ...options, baseUrl: options.baseUrl ?? defaults.baseUrl, apiKey: options.apiKey ?? defaults.apiKey });
  }

  get baseUrl(): string {
    return this.http.baseUrl;
  }

  call<P extends keyof Paths, M extends Methods<Paths, P>>(
    method: M,
    path: P,
    ...[init]: InitArgs<Operation<Paths, P, M>>
  ): Promise<Success<Operation<Paths, P, M>>> {
    return this.http.request(method, path as string, init as TransportRequest | undefined);
  }
}
