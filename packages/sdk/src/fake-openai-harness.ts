/**
 * A local fake of OpenAI's chat completions API (POST /chat/completions), for capture tests that
 * drive real client libraries (@ai-sdk/openai, @langchain/openai) over HTTP. Each request takes
 * the next scripted answer: a message (JSON, or server-sent events when the request asks to
 * stream, usage in the last chunk), an error status, or a stream that breaks mid-answer.
 */
import type { ServerResponse } from 'node:http';
import { sendJson, TestHttpServer, type ReceivedRequest } from '@vigil/platform/testing';

export interface FakeToolCall {
  id: string;
  name: string;
  /** JSON text, as the API sends it. */
  arguments: string;
}

export type FakeAnswer =
  | {
      kind: 'message';
      model: string;
      content?: string;
      toolCalls?: FakeToolCall[];
      promptTokens: number;
      completionTokens: number;
      /** Of promptTokens, read from the prompt cache. */
      cachedTokens?: number;
      /** Of completionTokens, spent reasoning. */
      reasoningTokens?: number;
      delayMs?: number;
    }
  | { kind: 'error'; status: number; message: string }
  /** Streams `content` in words, then drops the connection before finishing. */
  | { kind: 'broken-stream'; model: string; content: string };

export interface FakeOpenAI {
  url: string;
  /** Requests received, with their parsed JSON bodies. */
  requests: Array<ReceivedRequest & { json: Record<string, unknown> }>;
  /** Answers for the next requests, in order. */
  script(...answers: FakeAnswer[]): void;
  stop(): Promise<void>;
}

const CREATED = 1_764_000_000;

function words(text: string): string[] {
  return text.match(/\S+\s*/g) ?? [];
}

function writeEvents(res: ServerResponse, chunks: unknown[], done: boolean): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (const chunk of chunks) res.write(`data: ${JSON.stringify(chunk)}\n\n`);
  if (done) res.end('data: [DONE]\n\n');
}

function streamChunks(id: string, model: string, content: string, toolCalls: FakeToolCall[]) {
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
    id,
    object: 'chat.completion.chunk',
    created: CREATED,
    model,
    choices: [{ index: 0, delta, finish_reason: finishReason }],
  });
  return [
    chunk({ role: 'assistant', content: '' }),
    ...words(content).map((word) => chunk({ content: word })),
    ...toolCalls.flatMap((call, index) => [
      chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }),
      chunk({ tool_calls: [{ index, function: { arguments: call.arguments } }] }),
    ]),
  ];
}

function answer(res: ServerResponse, reply: FakeAnswer, stream: boolean, id: string): void {
  if (reply.kind === 'error') {
    sendJson(res, reply.status, { error: { message: reply.message, type: reply.status === 429 ? 'rate_limit_exceeded' : 'server_error', code: null } });
    return;
  }
  if (reply.kind === 'broken-stream') {
    writeEvents(res, streamChunks(id, reply.model, reply.content, []), false);
    setTimeout(() => res.destroy(), 20);
    return;
  }
  const content = reply.content ?? '';
  const toolCalls = reply.toolCalls ?? [];
  const finishReason = toolCalls.length > 0 ? 'tool_calls' : 'stop';
  const usage = {
    prompt_tokens: reply.promptTokens,
    completion_tokens: reply.completionTokens,
    total_tokens: reply.promptTokens + reply.completionTokens,
    ...(reply.cachedTokens !== undefined && { prompt_tokens_details: { cached_tokens: reply.cachedTokens } }),
    ...(reply.reasoningTokens !== undefined && { completion_tokens_details: { reasoning_tokens: reply.reasoningTokens } }),
  };
  if (stream) {
    const chunks = streamChunks(id, reply.model, content, toolCalls);
    const last = { id, object: 'chat.completion.chunk', created: CREATED, model: reply.model, choices: [{ index: 0, delta: {}, finish_reason: finishReason }] };
    writeEvents(res, [...chunks, last, { id, object: 'chat.completion.chunk', created: CREATED, model: reply.model, choices: [], usage }], true);
    return;
  }
  sendJson(res, 200, {
    id,
    object: 'chat.completion',
    created: CREATED,
    model: reply.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: toolCalls.length > 0 && content === '' ? null : content,
          ...(toolCalls.length > 0 && {
            tool_calls: toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })),
          }),
        },
        finish_reason: finishReason,
      },
    ],
    usage,
  });
}

export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const pending: FakeAnswer[] = [];
  const requests: FakeOpenAI['requests'] = [];
  const server = new TestHttpServer((request, res) => {
    const json = (request.body === '' ? {} : JSON.parse(request.body)) as Record<string, unknown>;
    requests.push({ ...request, json });
    const reply = pending.shift();
    if (request.method !== 'POST' || !request.url.endsWith('/chat/completions') || !reply) {
      sendJson(res, 404, { error: { message: `fake OpenAI: nothing scripted for ${request.method} ${request.url}` } });
      return;
    }
    const id = `chatcmpl-${requests.length}`;
    const delayMs = reply.kind === 'message' ? (reply.delayMs ?? 0) : 0;
    setTimeout(() => answer(res, reply, json.stream === true, id), delayMs);
  });
  await server.start();
  return {
    url: `${server.url}/v1`,
    requests,
    script: (...answers) => pending.push(...answers),
    stop: () => server.stop(),
  };
}
