/**
 * Test support: a stand-in for the OpenAI and Anthropic HTTP APIs that plays one scripted
 * tool-using turn, for the example tests and the SDK benchmark. A conversation without a tool
 * result gets a call of `get_weather` for Oslo (of `issue_refund` for order 1042 when the request
 * offers that tool: the approval examples); one with a tool result gets the final answer.
 */
import type { ServerResponse } from 'node:http';
import { sendJson, TestHttpServer, type ReceivedRequest } from '@vigil/platform/testing';

export const FINAL_ANSWER = 'It is -3 °C and snowing in Oslo.';

type Body = { model?: string; messages?: Array<{ role?: string; content?: unknown }>; tools?: Array<{ function?: { name?: string } }> };

function hasToolResult(body: Body): boolean {
  return (body.messages ?? []).some(
    (m) => m.role === 'tool' || (Array.isArray(m.content) && m.content.some((part) => (part as { type?: string }).type === 'tool_result')),
  );
}

function openaiChat(body: Body, res: ServerResponse): void {
  const done = hasToolResult(body);
  const message = done
    ? { role: 'assistant', content: FINAL_ANSWER, refusal: null }
    : {
        role: 'assistant',
        content: null,
        refusal: null,
        tool_calls: [
          {
            id: 'call_1',
            type: 'function',
            function: (body.tools ?? []).some((tool) => tool.function?.name === 'issue_refund')
              ? { name: 'issue_refund', arguments: '{"orderId":"1042","amount":25}' }
              : { name: 'get_weather', arguments: '{"city":"Oslo"}' },
          },
        ],
      };
  sendJson(res, 200, {
    id: 'chatcmpl-stand-in',
    object: 'chat.completion',
    created: 1_764_000_000,
    model: body.model ?? 'gpt-4o-mini',
    choices: [{ index: 0, message, logprobs: null, finish_reason: done ? 'stop' : 'tool_calls' }],
    usage: { prompt_tokens: done ? 180 : 120, completion_tokens: done ? 14 : 18, total_tokens: done ? 194 : 138 },
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

/** Answers like the providers do (after `delayMs`): /v1/chat/completions (OpenAI), /v1/messages (Anthropic). */
export function startScriptedProviders(delayMs = 0): Promise<TestHttpServer> {
  return new TestHttpServer((request: ReceivedRequest, res) => {
    const body = (request.body ? JSON.parse(request.body) : {}) as Body;
    const answer = (): void => {
      if (request.url.endsWith('/chat/completions')) openaiChat(body, res);
      else if (request.url.endsWith('/messages')) anthropicMessage(body, res);
      else sendJson(res, 404, { error: { message: `no stand-in for ${request.url}` } });
    };
    if (delayMs > 0) setTimeout(answer, delayMs);
    else answer();
  }).start();
}
