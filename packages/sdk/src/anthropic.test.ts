import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import Anthropic from '@anthropic-ai/sdk';
import { sendJson, TestHttpServer, type ReceivedRequest } from '@vigil/platform/testing';
import { startLiveServices, type LiveServices } from '@vigil/cli/testing';
import { ObserveClient, PriceTable, type VigilSession } from './node.ts';
import { observeAnthropic } from './anthropic.ts';

/** What the fake provider waits before answering: the recorded latency must include it. */
const DELAY_MS = 60;
const PRICES = PriceTable.fromDefaults();
const MODEL = 'claude-haiku-4-5-20251001';

let live: LiveServices;
let vigil: ObserveClient;
let fake: TestHttpServer;
/** The fake Anthropic API's answer to the current test's requests. */
let answer: (request: ReceivedRequest, body: Record<string, unknown>, res: ServerResponse) => void;

before(async () => {
  live = await startLiveServices();
  vigil = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey, flushIntervalMs: 60_000 });
  fake = await new TestHttpServer((request, res) => {
    setTimeout(() => answer(request, request.body ? (JSON.parse(request.body) as Record<string, unknown>) : {}, res), DELAY_MS);
  }).start();
});

after(async () => {
  await vigil?.close();
  await fake?.stop();
  await live?.close();
});

function anthropic(): Anthropic {
  return new Anthropic({ baseURL: fake.url, apiKey: 'sk-ant-test', maxRetries: 0 });
}

/** Server-sent events as the Messages API streams them: `event:` and `data:` per event. */
async function sendSse(res: ServerResponse, events: Array<{ type: string }>): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const event of events) {
    res.write(`event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
    await sleep(5);
  }
  res.end();
}

/** Runs `fn` in a new session (ambient inside it) and answers what Vigil stored for it. */
async function recorded<T>(fn: (session: VigilSession) => Promise<T>) {
  let id = '';
  const result = await vigil.withSession({ agentId: 'anthropic-agent' }, (session) => {
    id = session.id;
    return fn(session);
  });
  const { events, chainValid } = await vigil.getTimeline(id);
  assert.equal(chainValid, true);
  return { result, events };
}

function types(events: Array<{ eventType: string }>): string[] {
  return events.map((e) => e.eventType);
}

function message(content: unknown[], stopReason: string, usage = { input_tokens: 2100, output_tokens: 450 }) {
  return {
    id: 'msg_01',
    type: 'message',
    role: 'assistant',
    model: MODEL,
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage: { ...usage, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, service_tier: 'standard' },
  };
}

/** A streamed message with text and a tool_use block, in the Messages API's event sequence. */
const STREAM_EVENTS = [
  {
    type: 'message_start',
    message: {
      ...message([], 'x'),
      stop_reason: null,
      usage: { input_tokens: 900, output_tokens: 1, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
    },
  },
  { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
  { type: 'ping' },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Let me ' } },
  { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'check.' } },
  { type: 'content_block_stop', index: 0 },
  { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: {} } },
  { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '' } },
  { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"city": "Pa' } },
  { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: 'ris"}' } },
  { type: 'content_block_stop', index: 1 },
  { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { output_tokens: 64 } },
  { type: 'message_stop' },
];

async function readAll<T>(stream: AsyncIterable<T>): Promise<T[]> {
  const seen: T[] = [];
  for await (const item of stream) seen.push(item);
  return seen;
}

describe('observeAnthropic', () => {
  test('messages.create: system prompt, text, usage, priced cost, latency; the answer is the unwrapped one', async () => {
    answer = (_request, _body, res) => sendJson(res, 200, message([{ type: 'text', text: 'Hello there.' }], 'end_turn'));
    const request = { model: MODEL, max_tokens: 256, system: 'You are terse.', messages: [{ role: 'user' as const, content: 'Say hello' }] };
    const plain = await anthropic().messages.create(request);
    const client = observeAnthropic(anthropic());
    const { result, events } = await recorded(() => client.messages.create(request));
    assert.deepEqual(result, plain);
    assert.ok(client instanceof Anthropic);
    assert.deepEqual(types(events), ['session_started', 'llm_call', 'llm_response', 'session_ended']);
    const [, call, response] = events;
    assert.equal(call!.payload.provider, 'anthropic');
    assert.equal(call!.payload.model, MODEL);
    assert.equal(call!.payload.systemPrompt, 'You are terse.');
    assert.deepEqual(call!.payload.messages, request.messages);
    assert.deepEqual(call!.payload.parameters, { max_tokens: 256 });
    assert.equal(response!.payload.callId, call!.payload.callId);
    assert.equal(response!.payload.completion, 'Hello there.');
    assert.equal(response!.payload.finishReason, 'end_turn');
    assert.deepEqual(response!.payload.usage, { inputTokens: 2100, outputTokens: 450, totalTokens: 2550 });
    const cost = PRICES.costUsd(MODEL, 'anthropic', 2100, 450)!;
    assert.ok(cost > 0);
    assert.equal(response!.payload.costUsd, cost);
    const latency = response!.payload.latencyMs as number;
    assert.ok(latency >= DELAY_MS && latency < DELAY_MS + 2000, `latencyMs ${latency} includes the provider's ${DELAY_MS} ms`);
  });

  test('tool use: tool_use blocks become toolCalls; a system prompt given as blocks is recorded as text', async () => {
    answer = (_request, _body, res) =>
      sendJson(
        res,
        200,
        message(
          [
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 'toolu_02', name: 'get_weather', input: { city: 'Oslo' } },
          ],
          'tool_use',
        ),
      );
    const tools = [
      { name: 'get_weather', description: 'Weather by city', input_schema: { type: 'object' as const, properties: { city: { type: 'string' } } } },
    ];
    const client = observeAnthropic(anthropic());
    const { events } = await recorded(() =>
      client.messages.create({
        model: MODEL,
        max_tokens: 256,
        system: [{ type: 'text', text: 'Use tools.' }],
        tools,
        messages: [{ role: 'user', content: 'Oslo weather?' }],
      }),
    );
    const [, call, response] = events;
    assert.equal(call!.payload.systemPrompt, 'Use tools.');
    assert.deepEqual(call!.payload.tools, tools);
    assert.equal(response!.payload.finishReason, 'tool_use');
    assert.equal(response!.payload.completion, 'Checking.');
    assert.deepEqual(response!.payload.toolCalls, [{ id: 'toolu_02', name: 'get_weather', arguments: { city: 'Oslo' } }]);
  });

  test('stream: true: the same events reach the caller; the record has the assembled text, tool call and usage', async () => {
    answer = (_request, _body, res) => void sendSse(res, STREAM_EVENTS);
    const request = { model: MODEL, max_tokens: 256, messages: [{ role: 'user' as const, content: 'Weather?' }], stream: true as const };
    const plain = await readAll(await anthropic().messages.create(request));
    const client = observeAnthropic(anthropic());
    const { result, events } = await recorded(async () => {
      const stream = await client.messages.create(request);
      assert.equal(stream.constructor.name, 'Stream', "the library's own stream object");
      return readAll(stream);
    });
    assert.deepEqual(result, plain);
    assert.deepEqual(types(events), ['session_started', 'llm_call', 'llm_response', 'session_ended']);
    const response = events[2]!;
    assert.equal(response.payload.completion, 'Let me check.');
    assert.deepEqual(response.payload.toolCalls, [{ id: 'toolu_01', name: 'get_weather', arguments: { city: 'Paris' } }]);
    assert.equal(response.payload.finishReason, 'tool_use');
    assert.deepEqual(response.payload.usage, { inputTokens: 900, outputTokens: 64, totalTokens: 964 });
    assert.equal(response.payload.costUsd, PRICES.costUsd(MODEL, 'anthropic', 900, 64));
    assert.ok((response.payload.latencyMs as number) >= DELAY_MS + 40, 'measured to the end of the stream');
  });

  test('the messages.stream() helper is recorded through messages.create', async () => {
    answer = (_request, _body, res) => void sendSse(res, STREAM_EVENTS);
    const client = observeAnthropic(anthropic());
    const texts: string[] = [];
    const { result, events } = await recorded(async () => {
      const stream = client.messages.stream({ model: MODEL, max_tokens: 256, messages: [{ role: 'user', content: 'Weather?' }] });
      stream.on('text', (text) => texts.push(text));
      return stream.finalMessage();
    });
    assert.deepEqual(texts, ['Let me ', 'check.']);
    assert.deepEqual(result.content[1], { type: 'tool_use', id: 'toolu_01', name: 'get_weather', input: { city: 'Paris' } });
    assert.deepEqual(types(events), ['session_started', 'llm_call', 'llm_response', 'session_ended']);
    assert.equal(events[2]!.payload.completion, 'Let me check.');
    assert.deepEqual(events[2]!.payload.usage, { inputTokens: 900, outputTokens: 64, totalTokens: 964 });
  });

  test('beta.messages.create and the messages.parse() helper are recorded too', async () => {
    answer = (_request, _body, res) => sendJson(res, 200, message([{ type: 'text', text: 'Beta answer.' }], 'end_turn'));
    const client = observeAnthropic(anthropic());
    const { result, events } = await recorded(async () => {
      const beta = await client.beta.messages.create({
        model: MODEL,
        max_tokens: 64,
        betas: ['context-management-2025-06-27'],
        messages: [{ role: 'user', content: 'x' }],
      });
      const parsed = await client.messages.parse({ model: MODEL, max_tokens: 64, messages: [{ role: 'user', content: 'y' }] });
      return [beta.content[0], parsed.content[0]];
    });
    assert.deepEqual(
      result.map((block) => (block as { text: string }).text),
      ['Beta answer.', 'Beta answer.'],
    );
    assert.equal(fake.requests.at(-2)!.headers['anthropic-beta'], 'context-management-2025-06-27', 'sent as a beta request');
    assert.deepEqual(types(events), ['session_started', 'llm_call', 'llm_response', 'llm_call', 'llm_response', 'session_ended']);
    assert.deepEqual(events[1]!.payload.parameters, { max_tokens: 64, betas: ['context-management-2025-06-27'] });
  });

  test('a stream the caller leaves early is recorded as an error, stream_abandoned', async () => {
    answer = (_request, _body, res) => void sendSse(res, STREAM_EVENTS);
    const client = observeAnthropic(anthropic());
    const { events } = await recorded(async () => {
      for await (const event of await client.messages.create({ model: MODEL, max_tokens: 256, messages: [{ role: 'user', content: 'x' }], stream: true })) {
        if (event.type === 'content_block_delta') break;
      }
    });
    assert.deepEqual(types(events), ['session_started', 'llm_call', 'tool_error', 'session_ended']);
    assert.equal(events[2]!.severity, 'error');
    assert.equal(events[2]!.payload.errorCode, 'stream_abandoned');
  });

  test('an error event in the stream: the library throws it, and it is recorded', async () => {
    answer = (_request, _body, res) =>
      void sendSse(res, [
        STREAM_EVENTS[0]!,
        STREAM_EVENTS[1]!,
        { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } as { type: string },
      ]);
    const client = observeAnthropic(anthropic());
    let thrown: unknown;
    const { events } = await recorded(async () => {
      await readAll(await client.messages.create({ model: MODEL, max_tokens: 256, messages: [{ role: 'user', content: 'x' }], stream: true })).catch(
        (error: unknown) => (thrown = error),
      );
    });
    assert.ok(thrown instanceof Anthropic.APIError);
    assert.deepEqual(types(events), ['session_started', 'llm_call', 'tool_error', 'session_ended']);
    assert.equal(events[2]!.payload.error, thrown.message);
    assert.equal(events[2]!.severity, 'error');
  });

  for (const [status, type] of [
    [429, 'rate_limit_error'],
    [500, 'api_error'],
    [400, 'invalid_request_error'],
  ] as const) {
    test(`an HTTP ${status}: the library's error is rethrown unchanged and stored as tool_error with errorCode ${status}`, async () => {
      answer = (_request, _body, res) => sendJson(res, status, { type: 'error', error: { type, message: `provider said ${status}` } });
      const request = { model: MODEL, max_tokens: 16, messages: [{ role: 'user' as const, content: 'x' }] };
      const plain = await anthropic()
        .messages.create(request)
        .catch((error: unknown) => error);
      const client = observeAnthropic(anthropic());
      let thrown: unknown;
      const { events } = await recorded(() => client.messages.create(request).catch((error: unknown) => (thrown = error)));
      assert.ok(thrown instanceof Anthropic.APIError);
      assert.equal(thrown.constructor, (plain as Error).constructor);
      assert.equal(thrown.status, status);
      assert.deepEqual(types(events), ['session_started', 'llm_call', 'tool_error', 'session_ended']);
      const error = events[2]!;
      assert.equal(error.severity, 'error');
      assert.equal(error.payload.errorCode, status);
      assert.equal(error.payload.error, thrown.message);
      assert.equal(error.payload.toolName, `anthropic:${MODEL}`);
      assert.ok((error.payload.durationMs as number) >= DELAY_MS);
    });
  }

  test('captureContent: false leaves out the system prompt, messages, text and tool input', async () => {
    answer = (_request, _body, res) =>
      sendJson(
        res,
        200,
        message(
          [
            { type: 'text', text: 'secret answer' },
            { type: 'tool_use', id: 'toolu_03', name: 'lookup', input: { ssn: '123' } },
          ],
          'tool_use',
        ),
      );
    const client = observeAnthropic(anthropic(), { captureContent: false });
    const { events } = await recorded(() =>
      client.messages.create({ model: MODEL, max_tokens: 64, system: 'secret prompt', messages: [{ role: 'user', content: 'secret question' }] }),
    );
    const [, call, response] = events;
    assert.deepEqual([call!.payload.messages, call!.payload.systemPrompt, call!.payload.redacted], [[], undefined, true]);
    assert.deepEqual([response!.payload.completion, response!.payload.redacted], [null, true]);
    assert.deepEqual(response!.payload.toolCalls, [{ id: 'toolu_03', name: 'lookup' }]);
    assert.ok(!JSON.stringify(events).includes('secret'), 'no content anywhere in the record');
  });

  test('concurrent ambient sessions each get their own calls', async () => {
    answer = (_request, body, res) => {
      const [first] = body.messages as Array<{ content: string }>;
      sendJson(res, 200, message([{ type: 'text', text: `echo ${first!.content}` }], 'end_turn'));
    };
    const client = observeAnthropic(anthropic());
    const agent = (name: string) =>
      recorded(async () => {
        for (let i = 0; i < 3; i++) {
          await client.messages.create({ model: MODEL, max_tokens: 16, messages: [{ role: 'user', content: `${name} ${i}` }] });
          await sleep(Math.random() * 10);
        }
      });
    const [a, b] = await Promise.all([agent('alpha'), agent('beta')]);
    for (const [name, { events }] of [
      ['alpha', a],
      ['beta', b],
    ] as const) {
      assert.deepEqual(
        events.filter((e) => e.eventType === 'llm_response').map((e) => e.payload.completion),
        [0, 1, 2].map((i) => `echo ${name} ${i}`),
      );
    }
  });
});
