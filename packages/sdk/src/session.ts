/**
 * One agent run as a Vigil session: one-line helpers that emit the events of the common cases
 * (session start and end, a tool call with its outcome and duration, an LLM call with its
 * response and cost). Events go through the client's batching queue.
 */
import { runInSession } from './ambient.ts';
import type { PriceTable } from './pricing.ts';
import { newId } from './runtime.ts';
import type { EventType, IncomingEvent, PayloadOf, Severity } from './types.ts';

export interface StartSessionOptions {
  agentId: string;
  /** Default: a random UUID. */
  sessionId?: string;
  agentName?: string;
  agentVersion?: string;
  tags?: string[];
  /** Metadata put on every event of the session (per-event metadata is merged over it). */
  metadata?: Record<string, unknown>;
  /** Further session_started payload fields (e.g. mcpClientInfo). */
  payload?: Record<string, unknown>;
  /**
   * The session was started elsewhere (by the process that ran before a restart, say): this one
   * adds to it under `sessionId` and records no session_started.
   */
  continues?: boolean;
}

export interface EndSessionOptions {
  reason?: 'completed' | 'error' | 'timeout' | 'manual';
  summary?: string;
}

export interface EventOptions {
  severity?: Severity;
  metadata?: Record<string, unknown>;
  /** Default: now (the time of the call, not of the batch's delivery). */
  timestamp?: string | Date;
}

export interface ToolCallOptions extends EventOptions {
  callId?: string;
  serverName?: string;
}

export interface LlmCallInput {
  provider: string;
  model: string;
  messages: unknown[];
  systemPrompt?: string;
  parameters?: Record<string, unknown>;
  tools?: unknown[];
  callId?: string;
  /** The messages (and system prompt) were left out on purpose. */
  redacted?: boolean;
}

/** What recordLlmCall returns and recordLlmResponse takes: the call's identity and start time. */
export interface LlmCallHandle {
  callId: string;
  provider: string;
  model: string;
  startedAt: number;
}

export interface LlmResponseInput {
  completion: unknown;
  usage: { inputTokens: number; outputTokens: number; totalTokens?: number };
  finishReason?: string;
  toolCalls?: unknown[];
  /** Default: computed from the price table (0, flagged `metadata.costUnpriced`, for a model without a price). */
  costUsd?: number;
  /** Default: time since recordLlmCall. */
  latencyMs?: number;
  /** Default: the call's. */
  provider?: string;
  model?: string;
  /** The completion (and tool call arguments) were left out on purpose. */
  redacted?: boolean;
}

export interface LlmResponseRecord {
  callId: string;
  costUsd: number;
  /** False when the model has no price in the table (costUsd is then 0). */
  priced: boolean;
  latencyMs: number;
}

/** What a session needs from its client. */
export interface SessionSink {
  track(event: IncomingEvent): void;
  flush(): Promise<void>;
  readonly prices: PriceTable;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : typeof error === 'string' ? error : (JSON.stringify(error) ?? String(error));
}

function errorCode(error: unknown): string | number | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' || typeof code === 'number' ? code : undefined;
}

/** A JSON-storable version of a tool result (undefined → null; cycles and bigints → a description). */
export function storable(value: unknown): unknown {
  if (value === undefined) return null;
  try {
    return JSON.parse(JSON.stringify(value) ?? 'null');
  } catch (error) {
    return { unserializable: true, type: typeof value, reason: (error as Error).message };
  }
}

export class VigilSession {
  readonly id: string;
  readonly agentId: string;
  /** The session's tags (what session_started recorded): approvals asked in the session carry them, so tag budgets cover them. */
  readonly tags: readonly string[];
  private readonly startedAt = Date.now();
  private readonly metadata: Record<string, unknown> | undefined;
  private toolCalls = 0;
  private ended = false;

  constructor(
    private readonly sink: SessionSink,
    options: StartSessionOptions,
  ) {
    this.id = options.sessionId ?? newId();
    this.agentId = options.agentId;
    this.tags = options.tags ?? [];
    this.metadata = options.metadata;
    if (options.continues === true) return;
    this.event('session_started', {
      ...options.payload,
      ...(options.agentName !== undefined && { agentName: options.agentName }),
      ...(options.agentVersion !== undefined && { agentVersion: options.agentVersion }),
      ...(options.tags !== undefined && { tags: options.tags }),
    });
  }

  /**
   * Runs `fn` with this session as the ambient one: calls captured inside it (observeOpenAI,
   * traceTool, withApproval, …) are recorded here without being handed the session.
   */
  run<T>(fn: () => T): T {
    return runInSession(this, fn);
  }

  /** Queues one event of this session. */
  event<T extends EventType>(eventType: T, payload: PayloadOf<T>, options: EventOptions = {}): void {
    const timestamp = options.timestamp instanceof Date ? options.timestamp.toISOString() : (options.timestamp ?? new Date().toISOString());
    const metadata = this.metadata || options.metadata ? { ...this.metadata, ...options.metadata } : undefined;
    this.sink.track({
      sessionId: this.id,
      agentId: this.agentId,
      eventType,
      payload,
      timestamp,
      ...(options.severity !== undefined && { severity: options.severity }),
      ...(metadata !== undefined && { metadata }),
    } as IncomingEvent);
  }

  /** A `custom` event. */
  custom(type: string, data: unknown, options?: EventOptions): void {
    this.event('custom', { type, data }, options);
  }

  /**
   * Runs `fn` as the tool `toolName`: emits tool_call, then tool_response with the result or
   * tool_error with the error (severity error), both with durationMs. Returns fn's result and
   * rethrows its error.
   */
  async wrapToolCall<T>(toolName: string, args: unknown, fn: () => T | Promise<T>, options: ToolCallOptions = {}): Promise<T> {
    const callId = options.callId ?? newId();
    const { callId: _ignored, serverName, ...eventOptions } = options;
    this.toolCalls += 1;
    this.event('tool_call', { toolName, callId, arguments: storable(args), ...(serverName !== undefined && { serverName }) }, eventOptions);
    const started = performance.now();
    try {
      const result = await fn();
      this.event('tool_response', { toolName, callId, result: storable(result), durationMs: performance.now() - started }, eventOptions);
      return result;
    } catch (error) {
      this.toolError(toolName, callId, error, errorCode(error), performance.now() - started, eventOptions);
      throw error;
    }
  }

  /** Emits llm_call; pass the handle to recordLlmResponse. */
  recordLlmCall(input: LlmCallInput, options?: EventOptions): LlmCallHandle {
    const callId = input.callId ?? newId();
    const { callId: _ignored, ...rest } = input;
    this.event('llm_call', { ...rest, callId }, options);
    return { callId, provider: input.provider, model: input.model, startedAt: performance.now() };
  }

  /** Emits llm_response with its cost (from the price table unless given) and latency. */
  recordLlmResponse(call: LlmCallHandle, response: LlmResponseInput, options: EventOptions = {}): LlmResponseRecord {
    const provider = response.provider ?? call.provider;
    const model = response.model ?? call.model;
    const { inputTokens, outputTokens } = response.usage;
    const computed = this.sink.prices.costUsd(model, provider, inputTokens, outputTokens);
    const costUsd = response.costUsd ?? computed ?? 0;
    const priced = response.costUsd !== undefined || computed !== undefined;
    const latencyMs = response.latencyMs ?? performance.now() - call.startedAt;
    this.event(
      'llm_response',
      {
        callId: call.callId,
        provider,
        model,
        completion: response.completion,
        finishReason: response.finishReason ?? 'stop',
        usage: { ...response.usage, totalTokens: response.usage.totalTokens ?? inputTokens + outputTokens },
        costUsd,
        latencyMs,
        ...(response.toolCalls !== undefined && { toolCalls: response.toolCalls }),
        ...(response.redacted !== undefined && { redacted: response.redacted }),
      },
      priced ? options : { ...options, metadata: { ...options.metadata, costUnpriced: true } },
    );
    return { callId: call.callId, costUsd, priced, latencyMs };
  }

  /**
   * Records a failed LLM call (the provider answered an error, or the connection broke): a
   * tool_error named `<provider>:<model>` with severity error, the call's id, the error text,
   * its code (the provider's HTTP status when it has one) and the time since recordLlmCall.
   */
  recordLlmError(call: LlmCallHandle, error: unknown, options: EventOptions = {}): void {
    const status = (error as { status?: unknown } | null)?.status;
    const code = typeof status === 'number' ? status : errorCode(error);
    this.toolError(`${call.provider}:${call.model}`, call.callId, error, code, performance.now() - call.startedAt, options);
  }

  /** A tool_error event: severity error unless the options say otherwise. */
  private toolError(toolName: string, callId: string, error: unknown, code: string | number | undefined, durationMs: number, options: EventOptions): void {
    this.event(
      'tool_error',
      { toolName, callId, error: errorText(error), durationMs, ...(code !== undefined && { errorCode: code }) },
      { ...options, severity: options.severity ?? 'error' },
    );
  }

  /**
   * Sends the client's queued events now: before a run is handed to another process (stored to be
   * resumed after a restart), what this one recorded must not wait for the next batch.
   */
  flush(): Promise<void> {
    return this.sink.flush();
  }

  /**
   * Emits session_ended (with totalToolCalls and totalDurationMs) and flushes the queue, so the
   * session is stored when the promise resolves. Ending twice is a no-op.
   */
  async end(options: EndSessionOptions = {}): Promise<void> {
    if (!this.ended) {
      this.ended = true;
      this.event('session_ended', {
        reason: options.reason ?? 'completed',
        totalToolCalls: this.toolCalls,
        totalDurationMs: Date.now() - this.startedAt,
        ...(options.summary !== undefined && { summary: options.summary }),
      });
    }
    await this.sink.flush();
  }
}
