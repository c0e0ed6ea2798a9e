/**
 * The HTTP side of `vigil eval-gate`: JSON calls to the observe service with a bearer key, a
 * timeout on every call, and errors that carry the server's own message.
 */

/** The observe service's error body (`{ error, code, status, details? }`). */
interface ErrorBody {
  error?: unknown;
  status?: unknown;
  details?: unknown;
}

/** Any failure to get a usable answer: connection, timeout, non-2xx status, unreadable body. */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    message: string,
    /** HTTP status when the server answered; undefined for connection failures and timeouts. */
    readonly status?: number,
  ) {
    super(message);
  }

  /** Worth another try for an idempotent read: no answer, or the server's 5xx. */
  get transient(): boolean {
    return this.status === undefined || this.status >= 500;
  }
}

/** Detail lines the message does not already spell out (validation messages summarise their details). */
function describeDetails(details: unknown, message: string): string {
  if (!Array.isArray(details) || details.length === 0) return '';
  const lines = details
    .slice(0, 10)
    .map((detail): string => {
      if (detail && typeof detail === 'object') {
        const { path, message } = detail as { path?: unknown; message?: unknown };
        const where = Array.isArray(path) ? path.join('.') : typeof path === 'string' ? path : '';
        if (typeof message === 'string') return where ? `${where}: ${message}` : message;
      }
      return JSON.stringify(detail);
    })
    .filter((line) => !message.includes(line));
  if (lines.length === 0) return '';
  return `\n  ${lines.join('\n  ')}`;
}

/** The cause of a failed fetch as a person reads it: "connect ECONNREFUSED 127.0.0.1:1". */
function networkCause(error: unknown): string {
  const cause = (error as { cause?: unknown }).cause;
  if (cause && typeof cause === 'object') {
    const { code, message, errors } = cause as { code?: unknown; message?: unknown; errors?: unknown };
    // Happy-eyeballs failures (AggregateError) keep the useful message on the first attempt.
    if ((!message || message === '') && Array.isArray(errors) && errors[0] instanceof Error) return errors[0].message;
    if (typeof message === 'string' && message !== '') return message;
    if (typeof code === 'string') return code;
  }
  return error instanceof Error ? error.message : String(error);
}

export interface ApiClientOptions {
  baseUrl: string;
  apiKey: string | undefined;
  timeoutMs: number;
  /** Aborts every call in flight (used to stop sibling calls once one has failed). */
  signal?: AbortSignal;
}

export class ApiClient {
  constructor(private readonly options: ApiClientOptions) {}

  get baseUrl(): string {
    return this.options.baseUrl;
  }

  /** The Authorization header the client sends, for a call it does not make itself (a text answer). */
  get authorization(): string | undefined {
    return this.options.apiKey ? `Bearer ${this.options.apiKey}` : undefined;
  }

  async request<T>(method: 'GET' | 'POST', path: string, body?: unknown, timeoutMs = this.options.timeoutMs): Promise<{ status: number; body: T }> {
    const url = `${this.options.baseUrl}${path}`;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = this.options.signal ? AbortSignal.any([timeout, this.options.signal]) : timeout;
    const what = `${method} ${path}`;
    let response: Response;
    let text: string;
    try {
      response = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal });
      text = await response.text();
    } catch (error) {
      if (timeout.aborted) throw new ApiError(`${what}: no answer from ${this.options.baseUrl} within ${formatSeconds(timeoutMs)}`);
      if (this.options.signal?.aborted) throw new ApiError(`${what}: cancelled`);
      throw new ApiError(`cannot reach the Vigil server at ${this.options.baseUrl} (${what}): ${networkCause(error)}`);
    }
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (response.status < 200 || response.status > 299) {
      const errorBody = (parsed && typeof parsed === 'object' ? parsed : {}) as ErrorBody;
      const message =
        typeof errorBody.error === 'string' && errorBody.error !== ''
          ? errorBody.error
          : text.trim() !== ''
            ? text.trim().slice(0, 300)
            : response.statusText || 'no message';
      let hint = '';
      if (response.status === 401) {
        hint = this.options.apiKey ? ' (check VIGIL_API_KEY)' : ' (set VIGIL_API_KEY to an observe API key)';
      }
      throw new ApiError(`${what} answered ${response.status}: ${message}${hint}${describeDetails(errorBody.details, message)}`, response.status);
    }
    if (parsed === undefined || parsed === null || typeof parsed !== 'object') {
      throw new ApiError(`${what} answered ${response.status} without a JSON object (is ${this.options.baseUrl} a Vigil observe server?)`, response.status);
    }
    return { status: response.status, body: parsed as T };
  }

  get<T>(path: string, timeoutMs?: number): Promise<T> {
    return this.request<T>('GET', path, undefined, timeoutMs).then((r) => r.body);
  }

  post<T>(path: string, body: unknown, timeoutMs?: number): Promise<{ status: number; body: T }> {
    return this.request<T>('POST', path, body, timeoutMs);
  }
}

export function formatSeconds(ms: number): string {
  const seconds = ms / 1000;
  return `${Number.isInteger(seconds) ? seconds : seconds.toFixed(1)} s`;
}

export function pathSegment(id: string): string {
  return encodeURIComponent(id);
}
