/**
 * Client of the observe service (default http://localhost:3400): batched event tracking with
 * background flush, session helpers, and typed methods for the query endpoints. Every request
 * and answer type comes from src/generated/observe.ts.
 */
import { VigilDeprecationError } from './errors.ts';
import { DEFAULT_RETRY, retryPolicy, ServiceClient, type TransportOptions } from './http.ts';
import { environment, newId } from './runtime.ts';
import { priceTable, type ModelPrice, type PriceTable } from './pricing.ts';
import { DEFAULT_MAX_RETRY_TIME_MS, EventQueue, type BatchingOptions, type CloseOptions, type CloseResult, type QueueJournal } from './queue.ts';
import { VigilSession, type EndSessionOptions, type SessionSink, type StartSessionOptions } from './session.ts';
import type { CallOptions, IncomingEvent, ObserveBody, ObservePaths, ObserveQuery, ObserveResult, RetryOptions } from './types.ts';

export const DEFAULT_OBSERVE_URL = 'http://localhost:3400';

export interface ObserveClientOptions extends Partial<TransportOptions>, BatchingOptions {
  /** Default: VIGIL_URL, else http://localhost:3400. */
  baseUrl?: string;
  /** Default: VIGIL_API_KEY. */
  apiKey?: string;
  /** The price table for LLM costs: a PriceTable, or overrides of the built-in table (as in MODEL_PRICES). */
  prices?: PriceTable | readonly ModelPrice[];
}

/** The request header (IETF httpapi idempotency-key draft) observe stores a batch once by. */
const IDEMPOTENCY_KEY = 'idempotency-key';

const LESSONS_REMOVED = '0.12.0';
const LESSONS_REPLACEMENT = 'lesson management and community sharing moved to the external memory system (enable MEMORY_ENABLED and use /api/memory/*)';

export class ObserveClient extends ServiceClient<ObservePaths> implements SessionSink {
  readonly prices: PriceTable;
  protected readonly queue: EventQueue<IncomingEvent>;

  /** @param journal where queued events outlive the process (`@vigil/sdk/node`'s disk spool). */
  constructor(options: ObserveClientOptions = {}, journal?: QueueJournal<IncomingEvent>) {
    super('observe', options, { baseUrl: environment('VIGIL_URL') ?? DEFAULT_OBSERVE_URL, apiKey: environment('VIGIL_API_KEY') });
    this.prices = priceTable(options.prices);
    // Queued events are retried for maxRetryTimeMs, however many attempts that takes; the backoff delays follow `retry`.
    const retry: RetryOptions = retryPolicy(
      { ...DEFAULT_RETRY, maxRetries: Number.POSITIVE_INFINITY, maxRetryTimeMs: options.maxRetryTimeMs ?? DEFAULT_MAX_RETRY_TIME_MS },
      options.retry === false ? undefined : { baseDelayMs: options.retry?.baseDelayMs, maxDelayMs: options.retry?.maxDelayMs },
    );
    this.queue = new EventQueue((events, key, signal) => this.ingest(events, { headers: { [IDEMPOTENCY_KEY]: key }, signal, retry }).then(() => undefined), {
      ...options,
      journal,
    });
  }

  // ------------------------------------------------------------------------------------------
  // Events: batched

  /** Queues one event; it is sent with the next batch. Timestamped now unless it has a timestamp. */
  track(event: IncomingEvent): void {
    this.queue.push(event.timestamp === undefined ? { ...event, timestamp: new Date().toISOString() } : event);
  }

  /** Sends everything queued and waits for it (see EventQueue.flush). */
  flush(): Promise<void> {
    return this.queue.flush();
  }

  /**
   * Stops: later track() calls throw VigilClosedError. Sends what is queued and waits for it (at
   * most `timeoutMs`; default: as long as the retries go on). Never rejects: what was not stored
   * was reported to onError; it resolves with the counts (see CloseResult).
   */
  close(options?: CloseOptions): Promise<CloseResult> {
    return this.queue.close(options);
  }

  /** Drops what is still queued, reporting it to onError as lost (reason `exit`, message `why`); with a disk spool it stays there. */
  discardPending(why: string): void {
    this.queue.discard(why, 'exit');
  }

  /** Events queued and not yet sent. */
  get pendingEvents(): number {
    return this.queue.size;
  }

  /**
   * Sends events at once, as one atomic batch (1 to 1000), bypassing the queue. Its retries carry
   * one Idempotency-Key (a new UUID, unless `options.headers` has one), so observe stores it once.
   */
  ingest(events: IncomingEvent[], options?: CallOptions): Promise<ObserveResult<'/api/events', 'post'>> {
    const given = Object.keys(options?.headers ?? {}).some((name) => name.toLowerCase() === IDEMPOTENCY_KEY);
    const headers = given ? options?.headers : { [IDEMPOTENCY_KEY]: newId(), ...options?.headers };
    return this.call('post', '/api/events', { body: { events }, ...options, headers });
  }

  // ------------------------------------------------------------------------------------------
  // Sessions: one-line helpers

  /** Starts a session (queues session_started) and answers its helper object. */
  startSession(options: StartSessionOptions): VigilSession {
    return new VigilSession(this, options);
  }

  /**
   * Runs `fn` in a new session, ambient inside it (see VigilSession.run), and ends the session
   * when fn settles: reason `completed`, or `error` (and fn's error rethrown) when it threw. The
   * session's events are sent when it resolves; a delivery failure goes to `onError`.
   */
  async withSession<T>(options: StartSessionOptions, fn: (session: VigilSession) => T | Promise<T>): Promise<T> {
    const session = this.startSession(options);
    // A delivery failure is reported to onError already; it must not turn the agent's finished work into a failure.
    const end = (ending?: EndSessionOptions): Promise<void> => session.end(ending).catch(() => undefined);
    let result: T;
    try {
      result = await session.run(() => fn(session));
    } catch (error) {
      await end({ reason: 'error', summary: error instanceof Error ? error.message : String(error) });
      throw error;
    }
    await end();
    return result;
  }

  /** Ends a session (queues session_ended) and flushes. */
  endSession(session: VigilSession, options?: EndSessionOptions): Promise<void> {
    return session.end(options);
  }

  // ------------------------------------------------------------------------------------------
  // Queries

  listEvents(query?: ObserveQuery<'/api/events', 'get'>, options?: CallOptions) {
    return this.call('get', '/api/events', { query, ...options });
  }

  getEvent(id: string, options?: CallOptions) {
    return this.call('get', '/api/events/{id}', { params: { id }, ...options });
  }

  listSessions(query?: ObserveQuery<'/api/sessions'>, options?: CallOptions) {
    return this.call('get', '/api/sessions', { query, ...options });
  }

  getSession(id: string, options?: CallOptions) {
    return this.call('get', '/api/sessions/{id}', { params: { id }, ...options });
  }

  getTimeline(id: string, options?: CallOptions) {
    return this.call('get', '/api/sessions/{id}/timeline', { params: { id }, ...options });
  }

  /** The session's events without payloads, with their derived figures, a page at a time (GET /api/sessions/:id/steps). */
  listSessionSteps(id: string, query?: ObserveQuery<'/api/sessions/{id}/steps'>, options?: CallOptions) {
    return this.call('get', '/api/sessions/{id}/steps', { params: { id }, query, ...options });
  }

  /** The session's spans and call pairs as nested nodes with timings (GET /api/sessions/:id/tree). */
  getTree(id: string, options?: CallOptions) {
    return this.call('get', '/api/sessions/{id}/tree', { params: { id }, ...options });
  }

  replaySession(id: string, query?: ObserveQuery<'/api/sessions/{id}/replay'>, options?: CallOptions) {
    return this.call('get', '/api/sessions/{id}/replay', { params: { id }, query, ...options });
  }

  verifyChain(query: ObserveQuery<'/api/audit/verify'>, options?: CallOptions) {
    return this.call('get', '/api/audit/verify', { query, ...options });
  }

  /** Who created, changed or revoked keys, alert rules, guardrails and settings, newest first; pass `nextCursor` back as `cursor` (admin). */
  listAdminChanges(query?: ObserveQuery<'/api/audit/changes'>, options?: CallOptions) {
    return this.call('get', '/api/audit/changes', { query, ...options });
  }

  analytics(query?: ObserveQuery<'/api/analytics'>, options?: CallOptions) {
    return this.call('get', '/api/analytics', { query, ...options });
  }

  llmAnalytics(query?: ObserveQuery<'/api/analytics/llm'>, options?: CallOptions) {
    return this.call('get', '/api/analytics/llm', { query, ...options });
  }

  /** The LLM calls themselves, a page at a time: pass `nextCursor` as `cursor` (with the same sort) until it is null. */
  listLlmCalls(query?: ObserveQuery<'/api/llm-calls'>, options?: CallOptions) {
    return this.call('get', '/api/llm-calls', { query, ...options });
  }

  /** One LLM call with its prompt, completion and the price of its model. */
  getLlmCall(id: string, options?: CallOptions) {
    return this.call('get', '/api/llm-calls/{id}', { params: { id }, ...options });
  }

  costAnalytics(query?: ObserveQuery<'/api/analytics/costs'>, options?: CallOptions) {
    return this.call('get', '/api/analytics/costs', { query, ...options });
  }

  agentAnalytics(query?: ObserveQuery<'/api/analytics/agents'>, options?: CallOptions) {
    return this.call('get', '/api/analytics/agents', { query, ...options });
  }

  toolAnalytics(query?: ObserveQuery<'/api/analytics/tools'>, options?: CallOptions) {
    return this.call('get', '/api/analytics/tools', { query, ...options });
  }

  recall(query: ObserveQuery<'/api/recall'>, options?: CallOptions) {
    return this.call('get', '/api/recall', { query, ...options });
  }

  reflect(query: ObserveQuery<'/api/reflect'>, options?: CallOptions) {
    return this.call('get', '/api/reflect', { query, ...options });
  }

  context(query: ObserveQuery<'/api/context'>, options?: CallOptions) {
    return this.call('get', '/api/context', { query, ...options });
  }

  listAgents(options?: CallOptions) {
    return this.call('get', '/api/agents', { ...options });
  }

  getAgent(id: string, options?: CallOptions) {
    return this.call('get', '/api/agents/{id}', { params: { id }, ...options });
  }

  agentHealth(id: string, query?: ObserveQuery<'/api/agents/{id}/health'>, options?: CallOptions) {
    return this.call('get', '/api/agents/{id}/health', { params: { id }, query, ...options });
  }

  createAlertRule(rule: ObserveBody<'/api/alerts/rules', 'post'>, options?: CallOptions) {
    return this.call('post', '/api/alerts/rules', { body: rule, ...options });
  }

  health(options?: CallOptions) {
    return this.call('get', '/api/health', { ...options });
  }

  // ------------------------------------------------------------------------------------------
  // Lessons: removed in 0.12.0. Each throws VigilDeprecationError at once, without a request.

  /** @deprecated Removed in 0.12.0: lessons live in the external memory system. Always throws. */
  listLessons(..._args: unknown[]): never {
    throw new VigilDeprecationError('listLessons', LESSONS_REMOVED, LESSONS_REPLACEMENT);
  }

  /** @deprecated Removed in 0.12.0: lessons live in the external memory system. Always throws. */
  getLesson(..._args: unknown[]): never {
    throw new VigilDeprecationError('getLesson', LESSONS_REMOVED, LESSONS_REPLACEMENT);
  }

  /** @deprecated Removed in 0.12.0: lessons live in the external memory system. Always throws. */
  createLesson(..._args: unknown[]): never {
    throw new VigilDeprecationError('createLesson', LESSONS_REMOVED, LESSONS_REPLACEMENT);
  }

  /** @deprecated Removed in 0.12.0: lessons live in the external memory system. Always throws. */
  updateLesson(..._args: unknown[]): never {
    throw new VigilDeprecationError('updateLesson', LESSONS_REMOVED, LESSONS_REPLACEMENT);
  }

  /** @deprecated Removed in 0.12.0: lessons live in the external memory system. Always throws. */
  deleteLesson(..._args: unknown[]): never {
    throw new VigilDeprecationError('deleteLesson', LESSONS_REMOVED, LESSONS_REPLACEMENT);
  }

  /** @deprecated Removed in 0.12.0: lessons live in the external memory system. Always throws. */
  searchLessons(..._args: unknown[]): never {
    throw new VigilDeprecationError('searchLessons', LESSONS_REMOVED, LESSONS_REPLACEMENT);
  }

  /** @deprecated Removed in 0.12.0 (community sharing). Always throws. */
  shareLesson(..._args: unknown[]): never {
    throw new VigilDeprecationError('shareLesson', LESSONS_REMOVED, LESSONS_REPLACEMENT);
  }
}
