import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, beforeEach, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import { sendJson, TestHttpServer, type ReceivedRequest } from '@vigil/platform/testing';
import { startLiveServices, type LiveServices } from '@vigil/cli/testing';
import { ObserveClient, PriceTable, type VigilSession } from './node.ts';
import { observeOpenAI } from './openai.ts';

/** What the fake provider waits before answering: the recorded latency must include it. */
const DELAY_MS = 60;
const PRICES = PriceTable.fromDefaults();

let live: LiveServices;
let vigil: ObserveClient;
let fake: TestHttpServer;
/** The fake OpenAI API's answer to the current test's requests. */
let answer: (request: ReceivedRequest, body: Record<string, unknown>, res: ServerResponse) => void;

before(async () => {
  live = await startLiveServices();
  vigil = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey, flushIntervalMs: 60_000 });
  fake = await new TestHttpServer((request, res) => {
    setTimeout(() => answer(request, request.body ? (JSON.parse(request.body) as Record<string, unknown>) : {}, res), DELAY_MS);
  }).start();
});

beforeEach(() => {
  fake.requests.length = 0;
});

after(async () => {
  await vigil?.close();
  await fake?.stop();
  await live?.close();
});

function openai(): OpenAI {
  return new OpenAI({ baseURL: `${fake.url}/v1`, apiKey: 'sk-test', maxRetries: 0 });
}

/** Server-sent events as the OpenAI API streams them: `data:` lines (with `event:` for the Responses API), then [DONE]. */
async function sendSse(res: ServerResponse, events: unknown[], options: { named?: boolean; done?: boolean } = {}): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const event of events) {
    const name = options.named ? `event: ${(event as { type: string }).type}\n` : '';
    res.write(`${name}data: ${JSON.stringify(event)}\n\n`);
    await sleep(5);
  }
  if (options.done ?? !options.named) res.write('data: [DONE]\n\n');
  res.end();
}

async function timelineOf(sessionId: string) {
  const { events, chainValid } = await vigil.getTimeline(sessionId);
  assert.equal(chainValid, true);
  return events;
}

/** Runs `fn` in a new session (ambient inside it) and answers what Vigil stored for it. */
async function recorded<T>(fn: (session: VigilSession) => Promise<T>) {
  let id = '';
  const result = await vigil.withSession({ agentId: 'openai-agent' }, (session) => {
    id = session.id;
    return fn(session);
  });
  return { result, events: await timelineOf(id), sessionId: id };
}

function types(events: Array<{ eventType: string }>): string[] {
  return events.map((e) => e.eventType);
}

const MODEL = 'gpt-4o-mini';
const SERVED_MODEL = 'gpt-4o-mini-2024-07-18';

function chatCompletion(message: Record<string, unknown>, finishReason: string, usage = { prompt_tokens: 1200, completion_tokens: 300, total_tokens: 1500 }) {
  return {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1_764_000_000,
    model: SERVED_MODEL,
    system_fingerprint: 'fp_1',
    choices: [{ index: 0, message: { role: 'assistant', refusal: null, ...message }, logprobs: null, finish_reason: finishReason }],
    usage,
  };
}

function chunk(delta: Record<string, unknown>, finishReason: string | null = null, withUsageField = false) {
  return {
    id: 'chatcmpl-2',
    object: 'chat.completion.chunk',
    created: 1_764_000_000,
    model: SERVED_MODEL,
    system_fingerprint: 'fp_1',
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...(withUsageField && { usage: null }),
  };
}

/** A streamed answer with text and a tool call, honouring stream_options.include_usage as the API does. */
function streamedChat(body: Record<string, unknown>, res: ServerResponse): Promise<void> {
  const usage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
  const chunks: unknown[] = [
    chunk({ role: 'assistant', content: '' }, null, usage),
    chunk({ content: 'Checking ' }, null, usage),
    chunk({ content: 'the weather.' }, null, usage),
    chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] }, null, usage),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":' } }] }, null, usage),
    chunk({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] }, null, usage),
    chunk({}, 'tool_calls', usage),
  ];
  if (usage) {
    chunks.push({
      id: 'chatcmpl-2',
      object: 'chat.completion.chunk',
      created: 1_764_000_000,
      model: SERVED_MODEL,
      system_fingerprint: 'fp_1',
      choices: [],
      usage: { prompt_tokens: 800, completion_tokens: 40, total_tokens: 840 },
    });
  }
  return sendSse(res, chunks);
}

async function readAll<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const seen: T[] = [];
  for await (const item of stream) seen.push(item);
  return seen;
}

describe('observeOpenAI: chat completions', () => {
  test('a plain completion: llm_call, then llm_response with usage, priced cost and latency; the answer is the unwrapped one', async () => {
    answer = (_request, _body, res) => sendJson(res, 200, chatCompletion({ content: 'Hello from the model' }, 'stop'));
    const messages: Array<{ role: 'system' | 'user' | 'assistant'; content: string }> = [
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Say hello' },
    ];
    const plain = await openai().chat.completions.create({ model: MODEL, messages, temperature: 0.2 });
    const client = observeOpenAI(openai());
    const { result, events } = await recorded(async () => {
      const completion = await client.chat.completions.create({ model: MODEL, messages, temperature: 0.2 });
      messages.push({ role: 'assistant', content: completion.choices[0]!.message.content! });
      return completion;
    });
    assert.deepEqual(result, plain, 'the caller gets what the library answers');
    assert.ok(client instanceof OpenAI);
    assert.deepEqual(types(events), ['session_started', 'llm_call', 'llm_response', 'session_ended']);
    const [, call, response] = events;
    assert.deepEqual(call!.payload.messages, messages.slice(0, 2), 'the messages as sent, not as appended to afterwards');
    assert.equal(call!.payload.provider, 'openai');
    assert.equal(call!.payload.model, MODEL);
    assert.equal(call!.payload.systemPrompt, 'You are terse.');
    assert.deepEqual(call!.payload.parameters, { temperature: 0.2 });
    assert.equal(response!.payload.callId, call!.payload.callId);
    assert.equal(response!.payload.provider, 'openai');
    assert.equal(response!.payload.model, SERVED_MODEL, 'the model that answered');
    assert.equal(response!.payload.completion, 'Hello from the model');
    assert.equal(response!.payload.finishReason, 'stop');
    assert.deepEqual(response!.payload.usage, { inputTokens: 1200, outputTokens: 300, totalTokens: 1500 });
    const cost = PRICES.costUsd(SERVED_MODEL, 'openai', 1200, 300)!;
    assert.ok(cost > 0);
    assert.equal(response!.payload.costUsd, cost);
    const latency = response!.payload.latencyMs as number;
    assert.ok(latency >= DELAY_MS && latency < DELAY_MS + 2000, `latencyMs ${latency} includes the provider's ${DELAY_MS} ms`);
    assert.equal(response!.metadata.costUnpriced, undefined);
  });

  test('.withResponse() still answers the data and the HTTP response, and the call is recorded', async () => {
    answer = (_request, _body, res) => {
      res.setHeader('x-request-id', 'req_42');
      sendJson(res, 200, chatCompletion({ content: 'ok' }, 'stop'));
    };
    const client = observeOpenAI(openai());
    const { result, events } = await recorded(() =>
      client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] }).withResponse(),
    );
    assert.equal(result.data.choices[0]!.message.content, 'ok');
    assert.equal(result.request_id, 'req_42');
    assert.equal(result.response.status, 200);
    assert.deepEqual(types(events), ['session_started', 'llm_call', 'llm_response', 'session_ended']);
  });

  test('tool calls: toolCalls with parsed arguments and finishReason tool_calls', async () => {
    const toolCall = { id: 'call_7', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris","unit":"c"}' } };
    answer = (_request, _body, res) => sendJson(res, 200, chatCompletion({ content: null, tool_calls: [toolCall] }, 'tool_calls'));
    const tools = [{ type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
    const client = observeOpenAI(openai());
    const { result, events } = await recorded(() =>
      client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'Weather in Paris?' }], tools }),
    );
    assert.deepEqual(result.choices[0]!.message.tool_calls, [toolCall]);
    const [, call, response] = events;
    assert.deepEqual(call!.payload.tools, tools);
    assert.equal(response!.payload.finishReason, 'tool_calls');
    assert.equal(response!.payload.completion, null);
    assert.deepEqual(response!.payload.toolCalls, [{ id: 'call_7', name: 'get_weather', arguments: { city: 'Paris', unit: 'c' } }]);
  });

  test('streaming: the same chunks reach the caller; the record has the assembled text, tool call and usage', async () => {
    answer = (_request, body, res) => void streamedChat(body, res);
    const request = { model: MODEL, messages: [{ role: 'user' as const, content: 'Weather?' }], stream: true as const };
    const plain = await readAll(await openai().chat.completions.create(request));
    fake.requests.length = 0;
    const client = observeOpenAI(openai());
    const { result, events } = await recorded(async () => {
      const stream = await client.chat.completions.create(request);
      assert.equal(stream.constructor.name, 'Stream', "the library's own stream object");
      assert.equal(typeof stream.toReadableStream, 'function');
      return readAll(stream);
    });
    assert.deepEqual(result, plain, 'the usage the wrapper asked for is kept from the caller');
    assert.ok(result.every((c) => !('usage' in c) && c.choices.length === 1));
    assert.deepEqual(JSON.parse(fake.requests[0]!.body).stream_options, { include_usage: true }, 'the wrapper asked for usage');
    assert.deepEqual(types(events), ['session_started', 'llm_call', 'llm_response', 'session_ended']);
    const response = events[2]!;
    assert.equal(response.payload.completion, 'Checking the weather.');
    assert.deepEqual(response.payload.toolCalls, [{ id: 'call_1', name: 'get_weather', arguments: { city: 'Paris' } }]);
    assert.equal(response.payload.finishReason, 'tool_calls');
    assert.deepEqual(response.payload.usage, { inputTokens: 800, outputTokens: 40, totalTokens: 840 });
    assert.equal(response.payload.costUsd, PRICES.costUsd(SERVED_MODEL, 'openai', 800, 40));
    assert.ok((response.payload.latencyMs as number) >= DELAY_MS + 30, 'measured to the end of the stream');
    assert.deepEqual(events[1]!.payload.parameters, { stream: true });
  });

  test('streaming with include_usage asked by the caller: the caller sees the usage chunk, as without the wrapper', async () => {
    answer = (_request, body, res) => void streamedChat(body, res);
    const request = {
      model: MODEL,
      messages: [{ role: 'user' as const, content: 'Weather?' }],
      stream: true as const,
      stream_options: { include_usage: true },
    };
    const plain = await readAll(await openai().chat.completions.create(request));
    const client = observeOpenAI(openai());
    const { result, events } = await recorded(async () => readAll(await client.chat.completions.create(request)));
    assert.deepEqual(result, plain);
    assert.deepEqual(result.at(-1)!.usage, { prompt_tokens: 800, completion_tokens: 40, total_tokens: 840 });
    assert.deepEqual(events[2]!.payload.usage, { inputTokens: 800, outputTokens: 40, totalTokens: 840 });
  });

  test('streamUsage: false sends the request untouched and records usage 0, flagged usageUnknown', async () => {
    answer = (_request, body, res) => void streamedChat(body, res);
    const client = observeOpenAI(openai(), { streamUsage: false });
    const { events } = await recorded(async () =>
      readAll(await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], stream: true })),
    );
    assert.equal(JSON.parse(fake.requests[0]!.body).stream_options, undefined);
    const response = events[2]!;
    assert.equal(response.payload.completion, 'Checking the weather.');
    assert.deepEqual(response.payload.usage, { inputTokens: 0, outputTokens: 0, totalTokens: 0 });
    assert.equal(response.metadata.usageUnknown, true);
  });

  test('a stream the caller leaves early (break) is recorded as an error, stream_abandoned', async () => {
    answer = (_request, body, res) => void streamedChat(body, res);
    const client = observeOpenAI(openai());
    const { result, events } = await recorded(async () => {
      const stream = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], stream: true });
      const first: unknown[] = [];
      for await (const part of stream) {
        first.push(part);
        break;
      }
      return first;
    });
    assert.equal(result.length, 1);
    assert.deepEqual(types(events), ['session_started', 'llm_call', 'tool_error', 'session_ended']);
    const error = events[2]!;
    assert.equal(error.severity, 'error');
    assert.equal(error.payload.errorCode, 'stream_abandoned');
    assert.equal(error.payload.callId, events[1]!.payload.callId);
    assert.equal(error.payload.toolName, `openai:${MODEL}`);
  });

  test("a stream that breaks off mid-way: the caller gets the library's error, and it is recorded", async () => {
    answer = (_request, _body, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify(chunk({ role: 'assistant', content: 'Hal' }))}\n\n`);
      setTimeout(() => res.socket?.destroy(), 20);
    };
    const client = observeOpenAI(openai());
    let thrown: unknown;
    const { events } = await recorded(async () => {
      try {
        await readAll(await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }], stream: true }));
      } catch (error) {
        thrown = error;
      }
    });
    assert.ok(thrown instanceof Error);
    assert.deepEqual(types(events), ['session_started', 'llm_call', 'tool_error', 'session_ended']);
    assert.equal(events[2]!.severity, 'error');
    assert.equal(events[2]!.payload.error, thrown.message);
  });

  for (const status of [429, 500, 400]) {
    test(`an HTTP ${status}: the library's APIError is rethrown unchanged and stored as tool_error with errorCode ${status}`, async () => {
      answer = (_request, _body, res) =>
        sendJson(res, status, { error: { message: `provider said ${status}`, type: 'test_error', param: null, code: 'test_code' } });
      const request = { model: MODEL, messages: [{ role: 'user' as const, content: 'x' }] };
      const plain = await openai()
        .chat.completions.create(request)
        .catch((error: unknown) => error);
      const client = observeOpenAI(openai());
      let thrown: unknown;
      const { events } = await recorded(() => client.chat.completions.create(request).catch((error: unknown) => (thrown = error)));
      assert.ok(thrown instanceof OpenAI.APIError);
      assert.equal(thrown.constructor, (plain as Error).constructor, 'the same error class as without the wrapper');
      assert.equal(thrown.status, status);
      assert.deepEqual(types(events), ['session_started', 'llm_call', 'tool_error', 'session_ended']);
      const error = events[2]!;
      assert.equal(error.severity, 'error');
      assert.equal(error.payload.errorCode, status);
      assert.equal(error.payload.error, thrown.message);
      assert.equal(error.payload.callId, events[1]!.payload.callId);
      assert.ok((error.payload.durationMs as number) >= DELAY_MS);
      assert.equal((await vigil.getSession(events[0]!.sessionId)).errorCount, 1);
    });
  }

  test('a model without a price: cost 0, flagged costUnpriced', async () => {
    answer = (_request, _body, res) => sendJson(res, 200, { ...chatCompletion({ content: 'x' }, 'stop'), model: 'acme-llm-1' });
    const client = observeOpenAI(openai(), { provider: 'acme' });
    const { events } = await recorded(() => client.chat.completions.create({ model: 'acme-llm-1', messages: [{ role: 'user', content: 'x' }] }));
    const response = events[2]!;
    assert.equal(response.payload.provider, 'acme');
    assert.equal(response.payload.costUsd, 0);
    assert.equal(response.metadata.costUnpriced, true);
  });

  test('captureContent: false records the shape of the call without its content', async () => {
    const toolCall = { id: 'call_8', type: 'function', function: { name: 'lookup_customer', arguments: '{"email":"a@b.c"}' } };
    answer = (_request, _body, res) => sendJson(res, 200, chatCompletion({ content: 'private answer', tool_calls: [toolCall] }, 'tool_calls'));
    const client = observeOpenAI(openai(), { captureContent: false });
    const { result, events } = await recorded(() =>
      client.chat.completions.create({
        model: MODEL,
        messages: [
          { role: 'system', content: 'secret prompt' },
          { role: 'user', content: 'my email is a@b.c' },
        ],
        max_tokens: 50,
      }),
    );
    assert.equal(result.choices[0]!.message.content, 'private answer');
    const [, call, response] = events;
    assert.deepEqual(call!.payload.messages, []);
    assert.equal(call!.payload.systemPrompt, undefined);
    assert.equal(call!.payload.redacted, true);
    assert.deepEqual(call!.payload.parameters, { max_tokens: 50 });
    assert.equal(response!.payload.completion, null);
    assert.equal(response!.payload.redacted, true);
    assert.deepEqual(response!.payload.toolCalls, [{ id: 'call_8', name: 'lookup_customer' }]);
    assert.deepEqual(response!.payload.usage, { inputTokens: 1200, outputTokens: 300, totalTokens: 1500 });
    assert.ok(JSON.stringify(events).indexOf('a@b.c') === -1, 'no content anywhere in the record');
  });
});

describe('observeOpenAI: Responses API and embeddings', () => {
  const RESPONSE_MODEL = 'gpt-4.1-2025-04-14';
  function response(status: string, output: unknown[]) {
    return {
      id: 'resp_1',
      object: 'response',
      created_at: 1_764_000_000,
      status,
      model: RESPONSE_MODEL,
      output,
      instructions: 'Be brief.',
      incomplete_details: null,
      error: null,
      parallel_tool_calls: true,
      tools: [],
      usage: {
        input_tokens: 500,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: 70,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 570,
      },
    };
  }
  const message = {
    type: 'message',
    id: 'msg_1',
    status: 'completed',
    role: 'assistant',
    content: [{ type: 'output_text', text: 'Paris is sunny.', annotations: [] }],
  };
  const functionCall = { type: 'function_call', id: 'fc_1', call_id: 'call_9', name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' };

  /** A streamed response's events, as the Responses API sends them. */
  function streamedResponseEvents() {
    return [
      { type: 'response.created', sequence_number: 0, response: { ...response('in_progress', []), usage: null } },
      { type: 'response.output_item.added', sequence_number: 1, output_index: 0, item: { ...message, status: 'in_progress', content: [] } },
      {
        type: 'response.content_part.added',
        sequence_number: 2,
        item_id: 'msg_1',
        output_index: 0,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
      },
      { type: 'response.output_text.delta', sequence_number: 3, item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'Paris is ' },
      { type: 'response.output_text.delta', sequence_number: 4, item_id: 'msg_1', output_index: 0, content_index: 0, delta: 'sunny.' },
      { type: 'response.output_text.done', sequence_number: 5, item_id: 'msg_1', output_index: 0, content_index: 0, text: 'Paris is sunny.' },
      { type: 'response.completed', sequence_number: 6, response: response('completed', [message]) },
    ];
  }

  test('responses.create: the output text, function calls, usage and cost', async () => {
    answer = (_request, _body, res) => sendJson(res, 200, response('completed', [message, functionCall]));
    const client = observeOpenAI(openai());
    const { result, events } = await recorded(() => client.responses.create({ model: 'gpt-4.1', instructions: 'Be brief.', input: 'Weather in Paris?' }));
    assert.equal(result.output_text, 'Paris is sunny.', "the library's own convenience field is still there");
    assert.deepEqual(types(events), ['session_started', 'llm_call', 'llm_response', 'session_ended']);
    const [, call, recordedResponse] = events;
    assert.deepEqual(call!.payload.messages, [{ role: 'user', content: 'Weather in Paris?' }]);
    assert.equal(call!.payload.systemPrompt, 'Be brief.');
    assert.equal(recordedResponse!.payload.completion, 'Paris is sunny.');
    assert.deepEqual(recordedResponse!.payload.toolCalls, [{ id: 'call_9', name: 'get_weather', arguments: { city: 'Paris' } }]);
    assert.equal(recordedResponse!.payload.finishReason, 'tool_calls');
    assert.deepEqual(recordedResponse!.payload.usage, { inputTokens: 500, outputTokens: 70, totalTokens: 570 });
    assert.equal(recordedResponse!.payload.costUsd, PRICES.costUsd(RESPONSE_MODEL, 'openai', 500, 70));
    assert.ok((recordedResponse!.payload.costUsd as number) > 0);
  });

  test('responses.create streamed: recorded from the final response.completed event; the caller sees every event', async () => {
    const events = streamedResponseEvents();
    answer = (_request, _body, res) => void sendSse(res, events, { named: true });
    const request = { model: 'gpt-4.1', input: [{ role: 'user' as const, content: 'Weather?' }], stream: true as const };
    const plain = await readAll(await openai().responses.create(request));
    const client = observeOpenAI(openai());
    const { result, events: stored } = await recorded(async () => readAll(await client.responses.create(request)));
    assert.deepEqual(result, plain);
    assert.equal(result.length, 7);
    assert.deepEqual(types(stored), ['session_started', 'llm_call', 'llm_response', 'session_ended']);
    assert.deepEqual(stored[1]!.payload.messages, [{ role: 'user', content: 'Weather?' }]);
    assert.equal(stored[2]!.payload.completion, 'Paris is sunny.');
    assert.equal(stored[2]!.payload.finishReason, 'stop');
    assert.deepEqual(stored[2]!.payload.usage, { inputTokens: 500, outputTokens: 70, totalTokens: 570 });
  });

  test('a streamed response that fails (response.failed) is recorded as an error with its code', async () => {
    const failed = { ...response('failed', []), error: { code: 'server_error', message: 'The model crashed' }, usage: null };
    answer = (_request, _body, res) =>
      void sendSse(
        res,
        [
          { type: 'response.created', sequence_number: 0, response: { ...failed, status: 'in_progress', error: null } },
          { type: 'response.failed', sequence_number: 1, response: failed },
        ],
        { named: true },
      );
    const client = observeOpenAI(openai());
    const { events } = await recorded(async () => readAll(await client.responses.create({ model: 'gpt-4.1', input: 'x', stream: true })));
    assert.deepEqual(types(events), ['session_started', 'llm_call', 'tool_error', 'session_ended']);
    assert.equal(events[2]!.payload.error, 'The model crashed');
    assert.equal(events[2]!.payload.errorCode, 'server_error');
  });

  test('the library helpers built on create are recorded: chat.completions.parse and .stream, responses.stream', async () => {
    answer = (request, body, res) => {
      if (request.url === '/v1/responses') void sendSse(res, streamedResponseEvents(), { named: true });
      else if (body.stream === true) void streamedChat(body, res);
      else sendJson(res, 200, chatCompletion({ content: '{"city":"Paris"}' }, 'stop'));
    };
    const client = observeOpenAI(openai());
    const { result, events } = await recorded(async () => {
      const parsed = await client.chat.completions.parse({
        model: MODEL,
        messages: [{ role: 'user', content: 'Which city?' }],
        response_format: {
          type: 'json_schema',
          json_schema: {
            name: 'city',
            strict: true,
            schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false },
          },
        },
      });
      const final = await client.chat.completions.stream({ model: MODEL, messages: [{ role: 'user', content: 'Weather?' }] }).finalChatCompletion();
      const streamedResponse = await client.responses.stream({ model: 'gpt-4.1', input: 'Weather?' }).finalResponse();
      return { parsed: parsed.choices[0]!.message.parsed, streamed: final.choices[0]!.message.content, response: streamedResponse.output_text };
    });
    assert.deepEqual(result, { parsed: { city: 'Paris' }, streamed: 'Checking the weather.', response: 'Paris is sunny.' });
    assert.deepEqual(types(events), ['session_started', 'llm_call', 'llm_response', 'llm_call', 'llm_response', 'llm_call', 'llm_response', 'session_ended']);
    const responses = events.filter((e) => e.eventType === 'llm_response');
    assert.deepEqual(
      responses.map((e) => e.payload.completion),
      ['{"city":"Paris"}', 'Checking the weather.', 'Paris is sunny.'],
    );
    assert.deepEqual(responses[1]!.payload.usage, { inputTokens: 800, outputTokens: 40, totalTokens: 840 }, 'the stream helper is priced too');
  });

  test('chat.completions.runTools: each round trip of the tool loop is recorded', async () => {
    answer = (_request, body, res) => {
      const messages = body.messages as Array<{ role: string; content?: string }>;
      const toolResult = messages.find((m) => m.role === 'tool');
      if (toolResult) sendJson(res, 200, chatCompletion({ content: `It is ${toolResult.content}.` }, 'stop'));
      else
        sendJson(
          res,
          200,
          chatCompletion(
            { content: null, tool_calls: [{ id: 'call_rt', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } }] },
            'tool_calls',
          ),
        );
    };
    const client = observeOpenAI(openai());
    const { result, events } = await recorded(() =>
      client.chat.completions
        .runTools({
          model: MODEL,
          messages: [{ role: 'user', content: 'Weather in Rome?' }],
          tools: [
            {
              type: 'function',
              function: {
                name: 'get_weather',
                description: 'Weather by city',
                parameters: { type: 'object', properties: { city: { type: 'string' } } },
                parse: JSON.parse,
                function: (args: { city: string }) => `sunny in ${args.city}`,
              },
            },
          ],
        })
        .finalContent(),
    );
    assert.equal(result, 'It is sunny in Rome.');
    assert.deepEqual(types(events), ['session_started', 'llm_call', 'llm_response', 'llm_call', 'llm_response', 'session_ended']);
    assert.deepEqual(events[2]!.payload.toolCalls, [{ id: 'call_rt', name: 'get_weather', arguments: { city: 'Rome' } }]);
    assert.equal((events[3]!.payload.messages as unknown[]).length, 3, 'the second call carries the tool result');
    assert.equal(events[4]!.payload.completion, 'It is sunny in Rome.');
  });

  test('embeddings.create: input tokens, and a summary instead of the vectors', async () => {
    answer = (_request, body, res) => {
      const inputs = body.input as string[];
      const vector = (i: number) => new Float32Array([i, 0.5, -0.25]);
      const base64 = body.encoding_format === 'base64';
      sendJson(res, 200, {
        object: 'list',
        model: 'text-embedding-3-small',
        data: inputs.map((_, i) => ({
          object: 'embedding',
          index: i,
          embedding: base64 ? Buffer.from(vector(i).buffer).toString('base64') : Array.from(vector(i)),
        })),
        usage: { prompt_tokens: 12, total_tokens: 12 },
      });
    };
    const request = { model: 'text-embedding-3-small', input: ['first text', 'second text'] };
    const plain = await openai().embeddings.create(request);
    const client = observeOpenAI(openai());
    const { result, events } = await recorded(() => client.embeddings.create(request));
    assert.deepEqual(result, plain);
    assert.deepEqual(result.data[1]!.embedding, [1, 0.5, -0.25], 'decoded by the library as usual');
    const [, call, response] = events;
    assert.deepEqual(call!.payload.messages, ['first text', 'second text']);
    assert.deepEqual(response!.payload.completion, { embeddings: 2, dimensions: 3 });
    assert.deepEqual(response!.payload.usage, { inputTokens: 12, outputTokens: 0, totalTokens: 12 });
    assert.equal(response!.payload.finishReason, 'stop');
    assert.equal(response!.metadata.costUnpriced, true, 'the price table has no embedding models');
  });
});

describe('observeOpenAI: sessions', () => {
  test('concurrent ambient sessions (withSession) each get their own calls', async () => {
    answer = (_request, body, res) => {
      const [message] = body.messages as Array<{ content: string }>;
      sendJson(res, 200, chatCompletion({ content: `echo ${message!.content}` }, 'stop'));
    };
    const client = observeOpenAI(openai());
    const agent = (name: string) =>
      recorded(async () => {
        for (let i = 0; i < 3; i++) {
          await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: `${name} ${i}` }] });
          await sleep(Math.random() * 10);
        }
      });
    const [a, b] = await Promise.all([agent('alpha'), agent('beta')]);
    for (const [name, { events }] of [
      ['alpha', a],
      ['beta', b],
    ] as const) {
      const calls = events.filter((e) => e.eventType === 'llm_call');
      assert.equal(calls.length, 3);
      assert.deepEqual(
        events.filter((e) => e.eventType === 'llm_response').map((e) => e.payload.completion),
        [0, 1, 2].map((i) => `echo ${name} ${i}`),
      );
    }
  });

  test('an explicit session wins over the ambient one', async () => {
    answer = (_request, _body, res) => sendJson(res, 200, chatCompletion({ content: 'x' }, 'stop'));
    const target = vigil.startSession({ agentId: 'explicit-agent' });
    const client = observeOpenAI(openai(), { session: target });
    const { events } = await recorded(() => client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] }));
    assert.deepEqual(types(events), ['session_started', 'session_ended']);
    await target.end();
    assert.deepEqual(types(await timelineOf(target.id)), ['session_started', 'llm_call', 'llm_response', 'session_ended']);
  });

  test('outside any session the call runs unrecorded, with one warning', async () => {
    answer = (_request, _body, res) => sendJson(res, 200, chatCompletion({ content: 'unrecorded' }, 'stop'));
    const client = observeOpenAI(openai());
    const warnings: string[] = [];
    const warn = console.warn;
    console.warn = (message: string) => warnings.push(message);
    try {
      for (let i = 0; i < 2; i++) {
        const completion = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] });
        assert.equal(completion.choices[0]!.message.content, 'unrecorded');
      }
    } finally {
      console.warn = warn;
    }
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /OpenAI chat completion ran outside any session/);
  });

  test('a Vigil client that cannot record (closed) never fails the LLM call', async () => {
    answer = (_request, _body, res) => sendJson(res, 200, chatCompletion({ content: 'still answered' }, 'stop'));
    const closed = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey });
    const session = closed.startSession({ agentId: 'closed-agent' });
    await closed.close();
    const client = observeOpenAI(openai(), { session });
    const warnings: string[] = [];
    const warn = console.warn;
    console.warn = (message: string) => warnings.push(message);
    try {
      const completion = await client.chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] });
      assert.equal(completion.choices[0]!.message.content, 'still answered');
    } finally {
      console.warn = warn;
    }
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /could not record an LLM call/);
  });

  test('withOptions() clients are recorded too; other methods pass through', async () => {
    answer = (request, _body, res) =>
      request.url.startsWith('/v1/models')
        ? sendJson(res, 200, { object: 'list', data: [{ id: MODEL, object: 'model', created: 1, owned_by: 'openai' }] })
        : sendJson(res, 200, chatCompletion({ content: 'x' }, 'stop'));
    const client = observeOpenAI(openai());
    const { result, events } = await recorded(async () => {
      await client.withOptions({ timeout: 5000 }).chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'x' }] });
      return (await client.models.list()).data.map((model) => model.id);
    });
    assert.deepEqual(result, [MODEL]);
    assert.deepEqual(types(events), ['session_started', 'llm_call', 'llm_response', 'session_ended']);
  });
});
