/**
 * What the LLM client wrappers (observeOpenAI, observeAnthropic) share: a Proxy that swaps a few
 * methods of a client and passes everything else through, one captured call (llm_call now,
 * llm_response or the error later, exactly once), and the hooks that see a call's answer without
 * changing what the caller gets: the library's own promise object and its own stream object.
 */
import { resolveSession, warnUnrecorded, type SessionChoice } from './ambient.ts';
import type { EventOptions, LlmCallHandle, LlmCallInput, LlmResponseInput, VigilSession } from './session.ts';

export interface LlmCaptureOptions {
  /** The session to record in (default: the ambient one; outside any session calls run unrecorded). */
  session?: SessionChoice;
  /**
   * Record the messages, system prompt, completion and tool call arguments (default true). False
   * records the call's shape only (model, parameters, tool definitions, tool call names, usage,
   * cost, latency) with `redacted: true` on llm_call and llm_response.
   */
  captureContent?: boolean;
}

type AnyFunction = (...args: unknown[]) => unknown;

/** Makes the replacement of one method from the library's method (unbound) and the object it belongs to. */
export type MethodPatch = (original: AnyFunction, owner: object) => AnyFunction;

/** Which methods to replace, by property path from the client (e.g. `{ chat: { completions: { create } } }`). */
export interface ClientPatch {
  readonly [property: string]: ClientPatch | MethodPatch;
}

/**
 * `target` with the methods `patch` names replaced. Every other property reads through; methods
 * are bound to their own object (the libraries keep private state there) and the same function is
 * answered on every read. Patched objects keep their prototype, so `instanceof` still holds.
 */
export function patchClient<T extends object>(target: T, patch: ClientPatch): T {
  const made = new Map<PropertyKey, { from: unknown; value: unknown }>();
  return new Proxy(target, {
    get(object, property) {
      const value: unknown = Reflect.get(object, property, object);
      const cached = made.get(property);
      if (cached && cached.from === value) return cached.value;
      const entry = typeof property === 'string' && Object.hasOwn(patch, property) ? patch[property] : undefined;
      let answer: unknown = value;
      if (typeof entry === 'function' && typeof value === 'function') answer = entry(value as AnyFunction, object);
      else if (typeof entry === 'object' && typeof value === 'object' && value !== null) answer = patchClient(value, entry);
      else if (typeof value === 'function' && property !== 'constructor') answer = (value as AnyFunction).bind(object);
      made.set(property, { from: value, value: answer });
      return answer;
    },
  });
}

/** The part of an answer the wrappers read; usage is absent when the provider did not report it. */
export type CapturedResponse = Omit<LlmResponseInput, 'usage' | 'redacted'> & { usage?: LlmResponseInput['usage'] };

function warnRecordingFailed(error: unknown): void {
  console.warn(`vigil: could not record an LLM call: ${error instanceof Error ? error.message : String(error)}`);
}

/** One LLM call being recorded: llm_call is queued; then exactly one of succeed() and fail() records. */
export class CapturedLlmCall {
  private settled = false;

  constructor(
    private readonly session: VigilSession,
    private readonly handle: LlmCallHandle,
    private readonly captureContent: boolean,
  ) {}

  /** Records llm_response (usage 0, flagged `metadata.usageUnknown`, when the provider gave none). */
  succeed(response: CapturedResponse): void {
    if (this.settled) return;
    this.settled = true;
    const options: EventOptions = response.usage ? {} : { metadata: { usageUnknown: true } };
    const usage = response.usage ?? { inputTokens: 0, outputTokens: 0 };
    const recorded: LlmResponseInput = this.captureContent
      ? { ...response, usage }
      : {
          ...response,
          usage,
          completion: null,
          redacted: true,
          ...(response.toolCalls && { toolCalls: response.toolCalls.map(withoutArguments) }),
        };
    try {
      this.session.recordLlmResponse(this.handle, recorded, options);
    } catch (error) {
      warnRecordingFailed(error);
    }
  }

  /** Records the failure (a tool_error with the provider's HTTP status as errorCode). */
  fail(error: unknown): void {
    if (this.settled) return;
    this.settled = true;
    try {
      this.session.recordLlmError(this.handle, error);
    } catch (recordError) {
      warnRecordingFailed(recordError);
    }
  }
}

function withoutArguments(toolCall: unknown): unknown {
  const { arguments: _left, ...rest } = toolCall as Record<string, unknown>;
  return rest;
}

/**
 * Queues llm_call in the chosen session and answers the call to settle later; undefined (after a
 * one-time warning) outside any session, or when recording failed — the LLM call itself still runs.
 */
export function startLlmCall(options: LlmCaptureOptions, kind: string, input: LlmCallInput): CapturedLlmCall | undefined {
  const session = resolveSession(options.session);
  if (!session) {
    warnUnrecorded(kind);
    return undefined;
  }
  const captureContent = options.captureContent ?? true;
  const { systemPrompt: _prompt, ...shape } = input;
  try {
    const handle = session.recordLlmCall(captureContent ? input : { ...shape, messages: [], redacted: true });
    return new CapturedLlmCall(session, handle, captureContent);
  } catch (error) {
    warnRecordingFailed(error);
    return undefined;
  }
}

/**
 * The libraries' promise object (Stainless APIPromise, openai ≥ 4, @anthropic-ai/sdk ≥ 0.30): the
 * HTTP exchange (`responsePromise`, rejected with the library's APIError on an error status) and
 * the parser every way of reading the answer goes through (`parseResponse`: await, .withResponse(),
 * and the promises helpers derive from it with _thenUnwrap).
 */
interface ApiPromise {
  responsePromise: PromiseLike<unknown>;
  parseResponse: AnyFunction;
}

function isApiPromise(value: unknown): value is ApiPromise {
  const candidate = value as Partial<ApiPromise> | null;
  return typeof candidate?.parseResponse === 'function' && isPromiseLike(candidate.responsePromise);
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null)?.then === 'function';
}

/**
 * Runs the library's method (`invoke`) as `call` and answers what the method answered. For the
 * libraries' APIPromise that is the very same object, with its parser hooked, so awaiting it,
 * `.withResponse()` and the helpers built on it behave as without the wrapper; `.asResponse()`
 * hands over the unread HTTP response, so a call read that way records llm_call (and its error)
 * only. `onValue` sees the parsed answer; an error (the library's APIError carries the HTTP
 * status) is recorded and reaches the caller unchanged.
 */
export function observeCall<R>(call: CapturedLlmCall, invoke: () => R, onValue: (value: unknown) => void): R {
  let result: R;
  try {
    result = invoke();
  } catch (error) {
    call.fail(error);
    throw error;
  }
  const settle = (value: unknown): unknown => {
    try {
      onValue(value);
    } catch (error) {
      warnRecordingFailed(error);
    }
    return value;
  };
  const fail = (error: unknown): never => {
    call.fail(error);
    throw error;
  };
  if (isApiPromise(result)) {
    const parseResponse = result.parseResponse;
    result.parseResponse = async function (this: unknown, ...args: unknown[]) {
      return settle(await Promise.resolve(parseResponse.apply(this, args)).catch(fail));
    };
    // Recorded even when the caller reads only .asResponse(); the caller's own chain still rejects.
    result.responsePromise.then(undefined, (error: unknown) => call.fail(error));
    return result;
  }
  if (isPromiseLike(result)) return Promise.resolve(result).then(settle, fail) as R;
  settle(result);
  return result;
}

/** Gathers a streamed answer chunk by chunk. */
export interface StreamAccumulator {
  /** Takes one chunk; answers whether the caller sees it (false only for chunks the wrapper itself asked for). */
  add(chunk: unknown): boolean;
  /** After the last chunk: the whole response, or why the stream ended without one. */
  finish(): CapturedResponse | Error;
}

/** Why a stream's call is recorded as failed without an error from the library. */
export class StreamEndedError extends Error {
  constructor(
    message: string,
    readonly code: 'stream_abandoned' | 'stream_incomplete',
  ) {
    super(message);
    this.name = 'StreamEndedError';
  }
}

/**
 * Makes the library's stream object record `call` as it is read: its iterator (Stainless streams
 * keep one `iterator` function that for-await, tee() and toReadableStream() all use; otherwise
 * Symbol.asyncIterator) is replaced by one that feeds `accumulator`. The answer is recorded when
 * the stream ends, the error when it breaks, and `stream_abandoned` when the reader stops early
 * (break out of for-await). A stream nobody reads records llm_call only.
 */
export function observeStream(stream: unknown, accumulator: StreamAccumulator, call: CapturedLlmCall): void {
  const target = stream as Record<PropertyKey, unknown>;
  const key = typeof target.iterator === 'function' ? 'iterator' : Symbol.asyncIterator;
  const iterate = target[key];
  if (typeof iterate !== 'function') {
    call.fail(new Error('the library answered a stream without an async iterator'));
    return;
  }
  target[key] = () => recordChunks(iterate.call(stream) as AsyncIterator<unknown>, accumulator, call);
}

async function* recordChunks(source: AsyncIterator<unknown>, accumulator: StreamAccumulator, call: CapturedLlmCall): AsyncGenerator<unknown> {
  const chunks: AsyncIterable<unknown> = { [Symbol.asyncIterator]: () => source };
  let ended = false;
  try {
    for await (const chunk of chunks) {
      let visible = true;
      try {
        visible = accumulator.add(chunk);
      } catch (error) {
        warnRecordingFailed(error);
      }
      if (visible) yield chunk;
    }
    ended = true;
  } catch (error) {
    call.fail(error);
    throw error;
  } finally {
    if (!ended) call.fail(new StreamEndedError('the stream was abandoned before it ended', 'stream_abandoned'));
  }
  let outcome: CapturedResponse | Error;
  try {
    outcome = accumulator.finish();
  } catch (error) {
    warnRecordingFailed(error);
    return;
  }
  if (outcome instanceof Error) call.fail(outcome);
  else call.succeed(outcome);
}

/** Tool call arguments as stored: the parsed object when they are JSON text, else as given (a model may send malformed JSON: kept as text). */
export function toolArguments(value: unknown): unknown {
  if (typeof value !== 'string') return value ?? null;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
