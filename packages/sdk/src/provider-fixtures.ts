/**
 * Test support: a stand-in for the OpenAI (chat completions and Responses) and Anthropic HTTP APIs
 * that plays one scripted tool-using turn, for the example and adapter tests and the SDK benchmark.
 * A conversation without a tool result gets a call of `get_weather` for Oslo (or, when the request
 * offers other tools, of the first one: `issue_refund` for order 1042 in the approval examples, else
 * with the arguments `toolArguments` gives); one with a tool result gets the final answer (for
 * another tool than get_weather: `Done: <its result>`).
 */
import type { ServerResponse } from 'node:http';
import { sendJson, TestHttpServer, type ReceivedRequest } from '@vigil/platform/testing';

export const FINAL_ANSWER = 'It is -3 °C and snowing in Oslo.';

type Body = {
  model?: string;
  messages?: Array<{ role?: string; content?: unknown }>;
  input?: unknown;
  tools?: Array<{ name?: string; function?: { name?: string } }>;
};

export interface ScriptedProviderOptions {
  /** The arguments a tool other than get_weather is called with (default: none). */
  toolArguments?: (tool: string) => Record<string, unknown>;
}

/** The refund the approval examples' agents are asked for. */
const SCRIPTED_ARGUMENTS: Record<string, Record<string, unknown>> = { issue_refund: { orderId: '1042', amount: 25 } };

/** The tool the stand-in calls, and with what. */
function toolCall(body: Body, options: ScriptedProviderOptions): { name: string; args: Record<string, unknown> } {
  const name = body.tools?.[0]?.function?.name ?? body.tools?.[0]?.name ?? 'get_weather';
  return { name, args: name === 'get_weather' ? { city: 'Oslo' } : (options.toolArguments?.(name) ?? SCRIPTED_ARGUMENTS[name] ?? {}) };
}

function finalAnswer(tool: string, result: unknown): string {
  return tool === 'get_weather' ? FINAL_ANSWER : `Done: ${typeof result === 'string' ? result : JSON.stringify(result)}`;
}

function hasToolResult(body: Body): boolean {
  return (body.messages ?? []).some(
    (m) => m.role === 'tool' || (Array.isArray(m.content) && m.content.some((part) => (part as { type?: string }).type === 'tool_result')),
  );
}

let completions = 0;

function openaiChat(body: Body, res: ServerResponse, options: ScriptedProviderOptions): void {
  const done = hasToolResult(body);
  const call = toolCall(body, options);
  const result = body.messages?.filter((m) => m.role === 'tool').at(-1)?.content;
  const message = done
    ? { role: 'assistant', content: finalAnswer(call.name, result), refusal: null }
    : {
        role: 'assistant',
        content: null,
        refusal: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: call.name, arguments: JSON.stringify(call.args) } }],
      };
  sendJson(res, 200, {
    // One id per completion: LangGraph's message reducer replaces a message by id.
    id: `chatcmpl-stand-in-${++completions}`,
    object: 'chat.completion',
    created: 1_764_000_000,
    model: body.model ?? 'gpt-4o-mini',
    choices: [{ index: 0, message, logprobs: null, finish_reason: done ? 'stop' : 'tool_calls' }],
    usage: { prompt_tokens: done ? 180 : 120, completion_tokens: done ? 14 : 18, total_tokens: done ? 194 : 138 },
  });
}

let responses = 0;

/** The Responses API (the OpenAI Agents SDK's default): a function_call item, then a message. */
function openaiResponse(body: Body, res: ServerResponse, options: ScriptedProviderOptions): void {
  const input = Array.isArray(body.input) ? (body.input as Array<{ type?: string; call_id?: string; output?: unknown }>) : [];
  const result = input.filter((item) => item.type === 'function_call_output').at(-1);
  const call = toolCall(body, options);
  const n = ++responses;
  const output = result
    ? [
        {
          type: 'message',
          id: `msg_${n}`,
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: finalAnswer(call.name, result.output), annotations: [] }],
        },
      ]
    : [{ type: 'function_call', id: `fc_${n}`, call_id: `call_${n}`, name: call.name, arguments: JSON.stringify(call.args), status: 'completed' }];
  sendJson(res, 200, {
    id: `resp_${n}`,
    object: 'response',
    created_at: 1_764_000_000,
    status: 'completed',
    model: body.model ?? 'gpt-4o-mini',
    output,
    usage: {
      input_tokens: result ? 180 : 120,
      output_tokens: result ? 14 : 18,
      total_tokens: result ? 194 : 138,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens_details: { reasoning_tokens: 0 },
    },
  });
}

function anthropicMessage(body: Body, res: ServerResponse): void {
  const done = hasToolResult(body);
  sendJson(res, 200, {
    id: 'msg_stand_in',
    type: 'message',
    role: 'assistant',
    model: body.model ?? 'claude-sonnet-4-5',
    content: done ? [{ type: 'text', text: FINAL_ANSWER }] : [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather', input: { city: 'Oslo' } }],
    stop_reason: done ? 'end_turn' : 'tool_use',
    stop_sequence: null,
    usage: { input_tokens: done ? 410 : 380, output_tokens: done ? 16 : 40 },
  });
}

/** Answers like the providers do (after `delayMs`): /v1/chat/completions and /v1/responses (OpenAI), /v1/messages (Anthropic). */
export function startScriptedProviders(delayMs = 0, options: ScriptedProviderOptions = {}): Promise<TestHttpServer> {
  return new TestHttpServer((request: ReceivedRequest, res) => {
    const body = (request.body ? JSON.parse(request.body) : {}) as Body;
    const answer = (): void => {
      if (request.url.endsWith('/chat/completions')) openaiChat(body, res, options);
      else if (request.url.endsWith('/responses')) openaiResponse(body, res, options);
      else if (request.url.endsWith('/messages')) anthropicMessage(body, res);
      else sendJson(res, 404, { error: { message: `no stand-in for ${request.url}` } });
    };
    if (delayMs > 0) setTimeout(answer, delayMs);
    else answer();
  }).start();
}
