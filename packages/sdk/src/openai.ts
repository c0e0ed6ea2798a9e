/**
 * `@vigil/sdk/openai`: records the calls an `openai` client makes — chat completions, the
 * Responses API and embeddings, plain and streamed — as llm_call and llm_response (with usage,
 * cost from the price table and latency) in the session given or the ambient one; a failed call as
 * an error-severity tool_error with the HTTP status. The client works exactly as before.
 */
import {
  isRecord,
  observeCall,
  observeStream,
  patchClient,
  startLlmCall,
  StreamEndedError,
  toolArguments,
  type CapturedLlmCall,
  type CapturedResponse,
  type LlmCaptureOptions,
  type MethodPatch,
  type StreamAccumulator,
} from './capture.ts';
import type { LlmCallInput } from './session.ts';

export interface ObserveOpenAIOptions extends LlmCaptureOptions {
  /** The provider recorded and priced (default 'openai'; e.g. 'deepseek' for its OpenAI-compatible API). */
  provider?: string;
  /**
   * Ask streamed chat completions for their usage (`stream_options.include_usage`) so they are
   * priced (default true). The extra usage chunk, and the `usage: null` this adds to the other
   * chunks, are kept from your code, so the stream reads as without the option. Turn it off for an
   * OpenAI-compatible server that rejects stream_options: such streams are then recorded with
   * usage 0, flagged `metadata.usageUnknown`.
   */
  streamUsage?: boolean;
}

interface OpenAIUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  input_tokens?: number;
  output_tokens?: number;
  total_tokens?: number;
}

interface ChatToolCall {
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: string };
  custom?: { name?: string; input?: string };
}

interface ChatCompletion {
  model?: string;
  choices?: Array<{ message?: { content?: unknown; tool_calls?: ChatToolCall[] }; finish_reason?: string | null }>;
  usage?: OpenAIUsage | null;
}

interface ChatChunk {
  model?: string;
  choices?: Array<{
    index?: number;
    delta?: { content?: string | null; tool_calls?: Array<ChatToolCall & { index?: number }> };
    finish_reason?: string | null;
  }>;
  usage?: OpenAIUsage | null;
}

interface ResponseItem {
  type?: string;
  content?: Array<{ type?: string; text?: string }>;
  call_id?: string;
  name?: string;
  arguments?: string;
  input?: string;
}

interface OpenAIResponse {
  model?: string;
  status?: string;
  output?: ResponseItem[];
  usage?: OpenAIUsage | null;
  incomplete_details?: { reason?: string } | null;
  error?: { code?: string; message?: string } | null;
}

interface ResponseEvent {
  type?: string;
  response?: OpenAIResponse;
  code?: string | null;
  message?: string;
}

interface Embeddings {
  model?: string;
  data?: Array<{ embedding?: unknown }>;
  usage?: OpenAIUsage | null;
}

function usageOf(usage: OpenAIUsage | null | undefined): CapturedResponse['usage'] {
  if (!usage) return undefined;
  const inputTokens = usage.prompt_tokens ?? usage.input_tokens ?? 0;
  const outputTokens = usage.completion_tokens ?? usage.output_tokens ?? 0;
  return { inputTokens, outputTokens, totalTokens: usage.total_tokens ?? inputTokens + outputTokens };
}

/** Chat and Responses tool calls as stored: id, name, parsed arguments. */
function chatToolCall(call: ChatToolCall): { id: string | undefined; name: string | undefined; arguments: unknown } {
  return { id: call.id, name: call.function?.name ?? call.custom?.name, arguments: toolArguments(call.function?.arguments ?? call.custom?.input) };
}

/** The request fields recorded as `parameters`: all but the content, the model and the tool definitions. */
function parametersOf(body: Record<string, unknown>, content: readonly string[]): Record<string, unknown> {
  const parameters: Record<string, unknown> = {};
  for (const key in body) if (!content.includes(key) && body[key] !== undefined) parameters[key] = body[key];
  return parameters;
}

function callInput(provider: string, body: Record<string, unknown>, messages: unknown[], systemPrompt: unknown, content: readonly string[]): LlmCallInput {
  return {
    provider,
    model: String(body.model),
    // A copy of the list: agent loops append to the array they passed.
    messages,
    ...(typeof systemPrompt === 'string' && { systemPrompt }),
    parameters: parametersOf(body, content),
    ...(Array.isArray(body.tools) && { tools: [...(body.tools as unknown[])] }),
  };
}

// ---------------------------------------------------------------------------------------------
// Chat completions

const CHAT_CONTENT = ['model', 'messages', 'tools', 'stream_options'] as const;

function chatSystemPrompt(messages: unknown[]): unknown {
  const first = messages.find((message) => isRecord(message) && (message.role === 'system' || message.role === 'developer'));
  return isRecord(first) ? first.content : undefined;
}

function chatResponse(completion: ChatCompletion): CapturedResponse {
  const choice = completion.choices?.[0];
  const toolCalls = choice?.message?.tool_calls?.map(chatToolCall);
  return {
    completion: choice?.message?.content ?? null,
    usage: usageOf(completion.usage),
    finishReason: choice?.finish_reason ?? 'stop',
    ...(completion.model !== undefined && { model: completion.model }),
    ...(toolCalls?.length && { toolCalls }),
  };
}

/** A streamed chat completion, assembled from its deltas (the first choice's). */
class ChatChunks implements StreamAccumulator {
  private text: string | null = null;
  private readonly toolCalls: Array<{ id?: string; name?: string; arguments: string }> = [];
  private finishReason: string | undefined;
  private model: string | undefined;
  private usage: OpenAIUsage | undefined;

  /** `hideUsage`: the wrapper asked for the usage chunk; the caller did not. */
  constructor(private readonly hideUsage: boolean) {}

  add(value: unknown): boolean {
    const chunk = value as ChatChunk;
    this.model ??= chunk.model;
    if (chunk.usage) this.usage = chunk.usage;
    const choices = chunk.choices ?? [];
    if (this.hideUsage) {
      if (choices.length === 0) return false;
      delete chunk.usage;
    }
    for (const choice of choices) {
      if ((choice.index ?? 0) !== 0) continue;
      const delta = choice.delta;
      if (typeof delta?.content === 'string') this.text = (this.text ?? '') + delta.content;
      for (const part of delta?.tool_calls ?? []) {
        const entry = (this.toolCalls[part.index ?? 0] ??= { arguments: '' });
        if (part.id) entry.id = part.id;
        if (part.function?.name) entry.name = part.function.name;
        if (part.function?.arguments) entry.arguments += part.function.arguments;
      }
      if (choice.finish_reason) this.finishReason = choice.finish_reason;
    }
    return true;
  }

  finish(): CapturedResponse | Error {
    if (this.finishReason === undefined) return new StreamEndedError('the stream ended before the completion finished', 'stream_incomplete');
    const toolCalls = this.toolCalls.filter(Boolean).map((call) => ({ id: call.id, name: call.name, arguments: toolArguments(call.arguments) }));
    return {
      completion: this.text,
      usage: usageOf(this.usage),
      finishReason: this.finishReason,
      ...(this.model !== undefined && { model: this.model }),
      ...(toolCalls.length > 0 && { toolCalls }),
    };
  }
}

function chatCompletionsCreate(create: (...args: unknown[]) => unknown, owner: object, options: ObserveOpenAIOptions, provider: string) {
  return (...args: unknown[]): unknown => {
    const [body, ...rest] = args;
    if (!isRecord(body) || !Array.isArray(body.messages)) return create.apply(owner, args);
    const messages = [...(body.messages as unknown[])];
    const call = startLlmCall(options, 'OpenAI chat completion', callInput(provider, body, messages, chatSystemPrompt(messages), CHAT_CONTENT));
    if (!call) return create.apply(owner, args);
    const streamed = body.stream === true;
    const streamOptions = isRecord(body.stream_options) ? body.stream_options : undefined;
    const askUsage = streamed && options.streamUsage !== false && streamOptions?.include_usage !== true;
    const sent = askUsage ? { ...body, stream_options: { ...streamOptions, include_usage: true } } : body;
    return observeCall(
      call,
      () => create.call(owner, sent, ...rest),
      (value) => (streamed ? observeStream(value, new ChatChunks(askUsage), call) : call.succeed(chatResponse(value as ChatCompletion))),
    );
  };
}

// ---------------------------------------------------------------------------------------------
// Responses API

const RESPONSES_CONTENT = ['model', 'input', 'instructions', 'tools'] as const;

function responseResult(response: OpenAIResponse): CapturedResponse | Error {
  if (response.status === 'failed')
    return Object.assign(new Error(response.error?.message ?? 'the response failed'), { code: response.error?.code ?? 'response_failed' });
  let text: string | null = null;
  const toolCalls: ReturnType<typeof chatToolCall>[] = [];
  for (const item of response.output ?? []) {
    if (item.type === 'message') {
      for (const part of item.content ?? []) if (part.type === 'output_text' && typeof part.text === 'string') text = (text ?? '') + part.text;
    } else if (item.type === 'function_call' || item.type === 'custom_tool_call') {
      toolCalls.push({ id: item.call_id, name: item.name, arguments: toolArguments(item.arguments ?? item.input) });
    }
  }
  const finishReason = response.status === 'incomplete' ? (response.incomplete_details?.reason ?? 'incomplete') : toolCalls.length > 0 ? 'tool_calls' : 'stop';
  return {
    completion: text,
    usage: usageOf(response.usage),
    finishReason,
    ...(response.model !== undefined && { model: response.model }),
    ...(toolCalls.length > 0 && { toolCalls }),
  };
}

function settleResponse(call: CapturedLlmCall, response: OpenAIResponse): void {
  const result = responseResult(response);
  if (result instanceof Error) call.fail(result);
  else call.succeed(result);
}

/** A streamed response: its final event (response.completed, .incomplete or .failed) carries the whole response. */
class ResponseEvents implements StreamAccumulator {
  private outcome: CapturedResponse | Error | undefined;

  add(value: unknown): boolean {
    const event = value as ResponseEvent;
    if ((event.type === 'response.completed' || event.type === 'response.incomplete' || event.type === 'response.failed') && event.response) {
      this.outcome = responseResult(event.response);
    } else if (event.type === 'error') {
      this.outcome = Object.assign(new Error(event.message ?? 'the response stream reported an error'), { code: event.code ?? 'stream_error' });
    }
    return true;
  }

  finish(): CapturedResponse | Error {
    return this.outcome ?? new StreamEndedError('the stream ended before the response was complete', 'stream_incomplete');
  }
}

function responsesCreate(create: (...args: unknown[]) => unknown, owner: object, options: ObserveOpenAIOptions, provider: string) {
  return (...args: unknown[]): unknown => {
    const [body] = args;
    if (!isRecord(body) || typeof body.model !== 'string') return create.apply(owner, args);
    const messages = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : Array.isArray(body.input) ? [...(body.input as unknown[])] : [];
    const call = startLlmCall(options, 'OpenAI response', callInput(provider, body, messages, body.instructions, RESPONSES_CONTENT));
    if (!call) return create.apply(owner, args);
    return observeCall(
      call,
      () => create.apply(owner, args),
      (value) => (body.stream === true ? observeStream(value, new ResponseEvents(), call) : settleResponse(call, value as OpenAIResponse)),
    );
  };
}

// ---------------------------------------------------------------------------------------------
// Embeddings

const EMBEDDINGS_CONTENT = ['model', 'input'] as const;

/** Embeddings: the vectors are not recorded, only how many and of what size. */
function embeddingsResponse(result: Embeddings): CapturedResponse {
  const data = result.data ?? [];
  const first = data[0]?.embedding;
  const usage = result.usage ? { inputTokens: result.usage.prompt_tokens ?? 0, outputTokens: 0 } : undefined;
  return {
    completion: { embeddings: data.length, ...(Array.isArray(first) && { dimensions: first.length }) },
    usage,
    finishReason: 'stop',
    ...(result.model !== undefined && { model: result.model }),
  };
}

function embeddingsCreate(create: (...args: unknown[]) => unknown, owner: object, options: ObserveOpenAIOptions, provider: string) {
  return (...args: unknown[]): unknown => {
    const [body] = args;
    if (!isRecord(body) || typeof body.model !== 'string') return create.apply(owner, args);
    const messages = Array.isArray(body.input) ? [...(body.input as unknown[])] : [body.input];
    const call = startLlmCall(options, 'OpenAI embeddings', callInput(provider, body, messages, undefined, EMBEDDINGS_CONTENT));
    if (!call) return create.apply(owner, args);
    return observeCall(
      call,
      () => create.apply(owner, args),
      (value) => call.succeed(embeddingsResponse(value as Embeddings)),
    );
  };
}

/**
 * A library helper (parse, stream, runTools) run with the wrapped client as its `_client`: the
 * helpers make their requests through `this._client.<resource>.create`, which is then recorded.
 */
function throughWrapped(wrapped: () => object): MethodPatch {
  return (helper) =>
    function (this: object, ...args: unknown[]) {
      return helper.apply(Object.create(this, { _client: { value: wrapped() } }), args);
    };
}

/**
 * `client` (an `OpenAI` or `AzureOpenAI` from the `openai` package, v4 or later) with
 * `chat.completions.create`, `responses.create` and `embeddings.create` recorded, and so the
 * helpers built on them (`chat.completions.parse`, `.stream`, `.runTools`, `responses.parse`,
 * `.stream`); clients made from it with `withOptions()` are recorded too. Everything else is the
 * client's own.
 */
export function observeOpenAI<T extends object>(client: T, options: ObserveOpenAIOptions = {}): T {
  const provider = options.provider ?? 'openai';
  const helper = throughWrapped(() => wrapped);
  const wrapped: T = patchClient(client, {
    chat: {
      completions: {
        create: (create, owner) => chatCompletionsCreate(create, owner, options, provider),
        parse: helper,
        stream: helper,
        runTools: helper,
      },
    },
    responses: { create: (create, owner) => responsesCreate(create, owner, options, provider), parse: helper, stream: helper },
    embeddings: { create: (create, owner) => embeddingsCreate(create, owner, options, provider) },
    withOptions:
      (withOptions, owner) =>
      (...args) =>
        observeOpenAI(withOptions.apply(owner, args) as object, options),
  });
  return wrapped;
}
