/**
 * `@vigil/sdk/ai`: capture for the Vercel AI SDK (`ai` v6). `vigilMiddleware()` is a language-model
 * middleware: wrap a model with `wrapLanguageModel({ model, middleware: vigilMiddleware() })` and
 * every generateText / streamText / generateObject call made through it records llm_call, then
 * llm_response (text, tool calls, tokens, cost, latency) or, when the provider fails, an
 * error-severity tool_error with its HTTP status. `observeTools(tools)` records the tools the AI
 * SDK runs for the model (tool_call / tool_response / tool_error, under the model's tool-call id).
 * Only types come from `ai`, so this entry adds nothing to a bundle beyond the SDK core.
 */
import type { LanguageModelMiddleware, ToolExecutionOptions, ToolSet } from 'ai';
import { resolveSession, warnUnrecorded, type SessionChoice } from './ambient.ts';
import { toolArguments } from './capture.ts';
import { callRecord, recordSafely, responseRecord, warnRecordingFailed, type FrameworkCaptureOptions } from './framework-capture.ts';
import type { LlmCallHandle, VigilSession } from './session.ts';

type Middleware = Required<Pick<LanguageModelMiddleware, 'wrapGenerate' | 'wrapStream'>>;
type CallArgs = Parameters<Middleware['wrapGenerate']>[0];
type CallParams = CallArgs['params'];
type ModelInfo = CallArgs['model'];
type GenerateResult = Awaited<ReturnType<CallArgs['doGenerate']>>;
type StreamResult = Awaited<ReturnType<CallArgs['doStream']>>;
type StreamPart = StreamResult['stream'] extends ReadableStream<infer Part> ? Part : never;
type Usage = GenerateResult['usage'];

export type VigilMiddlewareOptions = FrameworkCaptureOptions;

/** A session and what to record in it. */
interface Recorder {
  session: VigilSession;
  captureContent: boolean;
}

/** The price table's provider for an AI SDK provider id: 'openai.chat' → 'openai', 'google.vertex.chat' → 'google'. */
const PROVIDER_NAMES: Record<string, string> = { azure: 'openai', vertex: 'google', 'amazon-bedrock': 'amazon', bedrock: 'amazon' };

/**
 * Provider and model as the price table names them. The AI SDK gateway's models are
 * 'creator/model' (e.g. 'openai/gpt-4o'): the creator is the provider there.
 */
export function priceTableModel(model: { provider: string; modelId: string }): { provider: string; model: string } {
  const slash = model.modelId.indexOf('/');
  if (slash > 0) return { provider: model.modelId.slice(0, slash), model: model.modelId.slice(slash + 1) };
  const family = model.provider.split('.')[0]!;
  return { provider: PROVIDER_NAMES[family] ?? family, model: model.modelId };
}

/** A message part as stored: binary file contents become their size (an image is no event payload). */
function storablePart(part: unknown): unknown {
  const data = (part as { data?: unknown } | null)?.data;
  return data instanceof Uint8Array ? { ...(part as object), data: `[${data.byteLength} bytes]` } : part;
}

function recordCall({ session, captureContent }: Recorder, model: ModelInfo, params: CallParams): LlmCallHandle {
  const system = params.prompt.filter((message) => message.role === 'system').map((message) => message.content);
  const messages = params.prompt
    .filter((message) => message.role !== 'system')
    .map((message) => ({ ...message, content: (message.content as unknown[]).map(storablePart) }));
  const { maxOutputTokens, temperature, topP, topK, presencePenalty, frequencyPenalty, stopSequences, seed, responseFormat, toolChoice } = params;
  const parameters = Object.fromEntries(
    Object.entries({ maxOutputTokens, temperature, topP, topK, presencePenalty, frequencyPenalty, stopSequences, seed, responseFormat, toolChoice }).filter(
      ([, value]) => value !== undefined,
    ),
  );
  const input = {
    ...priceTableModel(model),
    messages,
    ...(system.length > 0 && { systemPrompt: system.join('\n\n') }),
    ...(Object.keys(parameters).length > 0 && { parameters }),
    ...(params.tools !== undefined && params.tools.length > 0 && { tools: params.tools }),
  };
  return session.recordLlmCall(callRecord(input, captureContent));
}

interface ToolCallRecord {
  id: string;
  name: string;
  arguments: unknown;
}

function toolCallRecord(part: { toolCallId: string; toolName: string; input: string }): ToolCallRecord {
  return { id: part.toolCallId, name: part.toolName, arguments: toolArguments(part.input) };
}

interface Answer {
  text: string;
  toolCalls: ToolCallRecord[];
  usage: Usage;
  finishReason: string;
  modelId?: string;
}

function recordResponse({ session, captureContent }: Recorder, call: LlmCallHandle, answer: Answer): void {
  const { inputTokens, outputTokens } = answer.usage;
  const response = {
    completion: answer.text,
    usage: {
      inputTokens: inputTokens.total ?? 0,
      outputTokens: outputTokens.total ?? 0,
      // Kept beside the totals they are part of; the price table has no cache rates.
      ...(inputTokens.cacheRead && { cacheReadInputTokens: inputTokens.cacheRead }),
      ...(inputTokens.cacheWrite && { cacheCreationInputTokens: inputTokens.cacheWrite }),
      ...(outputTokens.reasoning && { reasoningTokens: outputTokens.reasoning }),
    } as { inputTokens: number; outputTokens: number },
    finishReason: answer.finishReason,
    ...(answer.toolCalls.length > 0 && { toolCalls: answer.toolCalls }),
    // The model that answered (a dated snapshot of the one asked for, say) is the one billed.
    ...(answer.modelId !== undefined && { model: priceTableModel({ provider: call.provider, modelId: answer.modelId }).model }),
  };
  recordSafely(() => session.recordLlmResponse(call, responseRecord(response, captureContent)));
}

/**
 * The AI SDK's APICallError carries the HTTP status as `statusCode`; recordLlmError reads `status`.
 * A stream that breaks after a 200 is an APICallError with statusCode 200: no error status then.
 */
function recordError({ session }: Recorder, call: LlmCallHandle, error: unknown, severity?: 'warn'): void {
  const statusCode = (error as { statusCode?: unknown } | null)?.statusCode;
  const recorded =
    typeof statusCode === 'number' && statusCode >= 400
      ? Object.assign(new Error(error instanceof Error ? error.message : String(error)), { status: statusCode })
      : error;
  recordSafely(() => session.recordLlmError(call, recorded, severity === undefined ? {} : { severity }));
}

/** The model's stream, passed through unchanged, with the answer assembled and recorded once it ends. */
function recordedStream(recorder: Recorder, call: LlmCallHandle, source: ReadableStream<StreamPart>): ReadableStream<StreamPart> {
  const reader = source.getReader();
  let text = '';
  const toolCalls: ToolCallRecord[] = [];
  let modelId: string | undefined;
  let recorded = false;
  const once = (record: () => void): void => {
    if (recorded) return;
    recorded = true;
    record();
  };
  const observe = (part: StreamPart): void => {
    if (part.type === 'text-delta') text += part.delta;
    else if (part.type === 'tool-call') toolCalls.push(toolCallRecord(part));
    else if (part.type === 'response-metadata' && part.modelId !== undefined) modelId = part.modelId;
    else if (part.type === 'error') once(() => recordError(recorder, call, part.error));
    else if (part.type === 'finish') {
      once(() =>
        recordResponse(recorder, call, {
          text,
          toolCalls,
          usage: part.usage,
          finishReason: part.finishReason.unified,
          ...(modelId !== undefined && { modelId }),
        }),
      );
    }
  };
  return new ReadableStream<StreamPart>({
    async pull(controller) {
      let next: ReadableStreamReadResult<StreamPart>;
      try {
        next = await reader.read();
      } catch (error) {
        // The connection broke mid-answer.
        once(() => recordError(recorder, call, error));
        controller.error(error);
        return;
      }
      if (next.done) {
        once(() => recordError(recorder, call, new Error('the model stream ended without a finish part')));
        controller.close();
        return;
      }
      observe(next.value);
      controller.enqueue(next.value);
    },
    async cancel(reason) {
      once(() => recordError(recorder, call, new Error('the stream was cancelled before the answer finished'), 'warn'));
      await reader.cancel(reason);
    },
  });
}

/**
 * A language-model middleware that records each model call in the session (given, else
 * ambient): `wrapLanguageModel({ model, middleware: vigilMiddleware() })`. A call records
 * llm_call (provider and model as the price table names them, the prompt's messages, system
 * prompt, parameters and tools) and then llm_response (the text, the tool calls the model asked
 * for, tokens, cost from the price table, latency, finish reason) — for streamText when the stream
 * finishes. A failed call records an error-severity tool_error named `<provider>:<model>` with the
 * provider's HTTP status as errorCode; a stream the caller cancels, one with severity warn. The
 * call's results and errors reach the caller unchanged.
 */
export function vigilMiddleware(options: VigilMiddlewareOptions = {}): LanguageModelMiddleware {
  const captureContent = options.captureContent ?? true;
  /** llm_call recorded, or undefined (outside any session, or recording failed): the call then runs unrecorded. */
  const start = (model: ModelInfo, params: CallParams): { recorder: Recorder; call: LlmCallHandle } | undefined => {
    const session = resolveSession(options.session);
    if (!session) {
      warnUnrecorded(`AI SDK model "${model.modelId}"`);
      return undefined;
    }
    const recorder = { session, captureContent };
    const call = recordSafely(() => recordCall(recorder, model, params));
    return call && { recorder, call };
  };
  return {
    specificationVersion: 'v3',
    async wrapGenerate({ doGenerate, params, model }) {
      const started = start(model, params);
      if (!started) return doGenerate();
      const { recorder, call } = started;
      let result: GenerateResult;
      try {
        result = await doGenerate();
      } catch (error) {
        recordError(recorder, call, error);
        throw error;
      }
      const text = result.content.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('');
      const toolCalls = result.content.flatMap((part) => (part.type === 'tool-call' ? [toolCallRecord(part)] : []));
      const modelId = result.response?.modelId;
      recordResponse(recorder, call, {
        text,
        toolCalls,
        usage: result.usage,
        finishReason: result.finishReason.unified,
        ...(modelId !== undefined && { modelId }),
      });
      return result;
    },
    async wrapStream({ doStream, params, model }) {
      const started = start(model, params);
      if (!started) return doStream();
      const { recorder, call } = started;
      let result: StreamResult;
      try {
        result = await doStream();
      } catch (error) {
        recordError(recorder, call, error);
        throw error;
      }
      return { ...result, stream: recordedStream(recorder, call, result.stream) };
    },
  };
}

export interface ObserveToolsOptions {
  /** The session to record in (default: the ambient one at the time the tool runs). */
  session?: SessionChoice;
  /** The MCP server or toolbox the tools belong to. */
  serverName?: string;
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof (value as { [Symbol.asyncIterator]?: unknown } | null)?.[Symbol.asyncIterator] === 'function';
}

/**
 * The tools with each `execute` recorded: tool_call (the model's input, callId = the AI SDK's
 * toolCallId, so it matches the tool call on the llm_response), then tool_response with the output
 * or tool_error with the error, with durationMs. A tool that streams its output (execute returns
 * an AsyncIterable) is recorded with its last value once the stream ends. Tools without execute
 * are returned as they are. Pass the result as `tools` to generateText / streamText.
 */
export function observeTools<TOOLS extends ToolSet>(tools: TOOLS, options: ObserveToolsOptions = {}): TOOLS {
  const observed: ToolSet = {};
  for (const [name, tool] of Object.entries(tools)) {
    const execute = tool.execute;
    if (!execute) {
      observed[name] = tool;
      continue;
    }
    const recordedExecute = (input: unknown, execution: ToolExecutionOptions): unknown => {
      const session = resolveSession(options.session);
      if (!session) {
        warnUnrecorded(`AI SDK tool "${name}"`);
        return execute(input, execution);
      }
      let ran = false;
      let output: unknown;
      let settle: ((last: unknown) => void) | undefined;
      let fail: ((error: unknown) => void) | undefined;
      // wrapToolCall emits tool_call and calls its function at once: `output` is set when it returns.
      const recorded = session.wrapToolCall(
        name,
        input,
        () => {
          ran = true;
          try {
            output = execute(input, execution);
          } catch (error) {
            // Thrown at once: the caller (which awaits the tool) gets it as a rejection instead.
            output = Promise.reject(error);
          }
          if (!isAsyncIterable(output)) return output;
          return new Promise<unknown>((resolve, reject) => {
            settle = resolve;
            fail = reject;
          });
        },
        { callId: execution.toolCallId, ...(options.serverName !== undefined && { serverName: options.serverName }) },
      );
      if (!ran) {
        // Recording failed before the tool ran: run it unrecorded.
        recorded.catch(warnRecordingFailed);
        return execute(input, execution);
      }
      // The caller gets the tool's own answer and error; the recording follows them.
      recorded.catch(() => undefined);
      if (!isAsyncIterable(output)) return output;
      const source = output;
      return (async function* relay() {
        let last: unknown;
        try {
          for await (const value of source) {
            last = value;
            yield value;
          }
        } catch (error) {
          fail?.(error);
          throw error;
        } finally {
          settle?.(last);
        }
      })();
    };
    observed[name] = { ...tool, execute: recordedExecute } as ToolSet[string];
  }
  return observed as TOOLS;
}
