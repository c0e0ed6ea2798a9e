/**
 * `@vigil/sdk/anthropic`: records the messages an `@anthropic-ai/sdk` client creates — plain,
 * streamed (`stream: true`) and through the `stream()` and `parse()` helpers — as llm_call and
 * llm_response (with usage, cost from the price table and latency) in the session given or the
 * ambient one; a failed call as an error-severity tool_error with the HTTP status. The client
 * works exactly as before.
 */
import {
  isRecord,
  observeCall,
  observeStream,
  patchClient,
  startLlmCall,
  StreamEndedError,
  toolArguments,
  type CapturedResponse,
  type ClientPatch,
  type LlmCaptureOptions,
  type MethodPatch,
  type StreamAccumulator,
} from './capture.ts';

export interface ObserveAnthropicOptions extends LlmCaptureOptions {
  /** The provider recorded and priced (default 'anthropic'). */
  provider?: string;
}

interface AnthropicUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

interface ContentBlock {
  type?: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
}

interface AnthropicMessage {
  model?: string;
  content?: ContentBlock[];
  stop_reason?: string | null;
  usage?: AnthropicUsage;
}

interface StreamEvent {
  type?: string;
  message?: AnthropicMessage;
  index?: number;
  content_block?: ContentBlock;
  delta?: { type?: string; text?: string; partial_json?: string; stop_reason?: string | null };
  usage?: AnthropicUsage;
}

const CONTENT = ['model', 'messages', 'system', 'tools'] as const;

/**
 * Usage as recorded: input_tokens is what the API bills at the base rate; cached prompt tokens
 * are kept beside it (the price table has no cache rates, so they are not in the cost).
 */
function usageOf(usage: AnthropicUsage | undefined): CapturedResponse['usage'] {
  if (!usage) return undefined;
  const inputTokens = usage.input_tokens ?? 0;
  const outputTokens = usage.output_tokens ?? 0;
  return {
    inputTokens,
    outputTokens,
    totalTokens: inputTokens + outputTokens,
    ...(usage.cache_creation_input_tokens && { cacheCreationInputTokens: usage.cache_creation_input_tokens }),
    ...(usage.cache_read_input_tokens && { cacheReadInputTokens: usage.cache_read_input_tokens }),
  };
}

/** The system prompt as text (it may be given as text blocks). */
function systemText(system: unknown): string | undefined {
  if (typeof system === 'string') return system;
  if (!Array.isArray(system)) return undefined;
  return system.map((block: ContentBlock) => block.text ?? '').join('\n');
}

function messageResponse(message: AnthropicMessage): CapturedResponse {
  let text: string | null = null;
  const toolCalls: Array<{ id: string | undefined; name: string | undefined; arguments: unknown }> = [];
  for (const block of message.content ?? []) {
    if (block.type === 'text' && typeof block.text === 'string') text = (text ?? '') + block.text;
    else if (block.type === 'tool_use' || block.type === 'server_tool_use') toolCalls.push({ id: block.id, name: block.name, arguments: block.input ?? null });
  }
  return {
    completion: text,
    usage: usageOf(message.usage),
    finishReason: message.stop_reason ?? 'end_turn',
    ...(message.model !== undefined && { model: message.model }),
    ...(toolCalls.length > 0 && { toolCalls }),
  };
}

/** A streamed message, assembled from its events (message_start … message_stop). */
class MessageEvents implements StreamAccumulator {
  private message: AnthropicMessage | undefined;
  private readonly blocks: ContentBlock[] = [];
  private readonly json: string[] = [];
  private usage: AnthropicUsage = {};
  private stopReason: string | null | undefined;
  private stopped = false;

  add(value: unknown): boolean {
    const event = value as StreamEvent;
    switch (event.type) {
      case 'message_start':
        this.message = event.message;
        this.usage = { ...event.message?.usage };
        break;
      case 'content_block_start':
        if (event.content_block) this.blocks[event.index ?? 0] = { ...event.content_block };
        break;
      case 'content_block_delta': {
        const block = this.blocks[event.index ?? 0];
        if (!block) break;
        if (event.delta?.type === 'text_delta') block.text = (block.text ?? '') + (event.delta.text ?? '');
        else if (event.delta?.type === 'input_json_delta') this.json[event.index ?? 0] = (this.json[event.index ?? 0] ?? '') + (event.delta.partial_json ?? '');
        break;
      }
      case 'message_delta':
        if (event.delta?.stop_reason !== undefined) this.stopReason = event.delta.stop_reason;
        // The counts here are cumulative; only those present replace the ones from message_start.
        for (const [key, count] of Object.entries(event.usage ?? {})) if (typeof count === 'number') this.usage[key as keyof AnthropicUsage] = count;
        break;
      case 'message_stop':
        this.stopped = true;
        break;
      default:
        // ping, content_block_stop and events of newer API versions carry nothing the record keeps.
        break;
    }
    return true;
  }

  finish(): CapturedResponse | Error {
    if (!this.stopped) return new StreamEndedError('the stream ended before the message was complete', 'stream_incomplete');
    const content = this.blocks.map((block, index) => {
      const json = this.json[index];
      return json === undefined ? block : { ...block, input: json === '' ? {} : toolArguments(json) };
    });
    return messageResponse({ ...this.message, content: content.filter(Boolean), stop_reason: this.stopReason ?? null, usage: this.usage });
  }
}

function messagesCreate(create: (...args: unknown[]) => unknown, owner: object, options: ObserveAnthropicOptions, provider: string) {
  return (...args: unknown[]): unknown => {
    const [body] = args;
    if (!isRecord(body) || !Array.isArray(body.messages)) return create.apply(owner, args);
    const parameters: Record<string, unknown> = {};
    for (const key in body) if (!(CONTENT as readonly string[]).includes(key) && body[key] !== undefined) parameters[key] = body[key];
    const systemPrompt = systemText(body.system);
    const call = startLlmCall(options, 'Anthropic message', {
      provider,
      model: String(body.model),
      // A copy of the list: agent loops append to the array they passed.
      messages: [...(body.messages as unknown[])],
      ...(systemPrompt !== undefined && { systemPrompt }),
      parameters,
      ...(Array.isArray(body.tools) && { tools: [...(body.tools as unknown[])] }),
    });
    if (!call) return create.apply(owner, args);
    return observeCall(
      call,
      () => create.apply(owner, args),
      (value) => (body.stream === true ? observeStream(value, new MessageEvents(), call) : call.succeed(messageResponse(value as AnthropicMessage))),
    );
  };
}

/** A library helper (stream, parse) run on the wrapped resource: it creates its message through `this.create`, which is then recorded. */
const onWrapped: MethodPatch = (helper) =>
  function (this: unknown, ...args: unknown[]) {
    return helper.apply(this, args);
  };

/**
 * `client` (an `Anthropic` from `@anthropic-ai/sdk`) with `messages.create` and
 * `beta.messages.create` recorded, and so the helpers that create through them (`stream()`,
 * `parse()`); clients made from it with `withOptions()` are recorded too. Everything else is the
 * client's own.
 */
export function observeAnthropic<T extends object>(client: T, options: ObserveAnthropicOptions = {}): T {
  const provider = options.provider ?? 'anthropic';
  const messages: ClientPatch = {
    create: (create, owner) => messagesCreate(create, owner, options, provider),
    stream: onWrapped,
    parse: onWrapped,
  };
  return patchClient(client, {
    messages,
    beta: { messages },
    withOptions:
      (withOptions, owner) =>
      (...args) =>
        observeAnthropic(withOptions.apply(owner, args) as object, options),
  });
}
