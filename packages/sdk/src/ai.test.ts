import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createOpenAI } from '@ai-sdk/openai';
import { APICallError, generateText, jsonSchema, stepCountIs, streamText, tool, wrapLanguageModel, type LanguageModel } from 'ai';
import { startLiveServices, type LiveServices } from '@vigil/cli/testing';
import { observeTools, priceTableModel, vigilMiddleware } from './ai.ts';
import { startFakeOpenAI, type FakeAnswer, type FakeOpenAI } from './fake-openai-harness.ts';
import { ObserveClient, PriceTable, type VigilSession } from './node.ts';

let live: LiveServices;
let fake: FakeOpenAI;
let client: ObserveClient;
const prices = PriceTable.fromDefaults();

before(async () => {
  live = await startLiveServices();
  fake = await startFakeOpenAI();
  client = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey, flushIntervalMs: 60_000 });
});

after(async () => {
  await client?.close();
  await fake?.stop();
  await live?.close();
});

/** The real @ai-sdk/openai chat model, talking to the fake OpenAI server. */
function chatModel(modelId: string) {
  return createOpenAI({ baseURL: fake.url, apiKey: 'sk-test' }).chat(modelId);
}

function captured(model: ReturnType<typeof chatModel>): LanguageModel {
  return wrapLanguageModel({ model, middleware: vigilMiddleware() });
}

async function stored(sessionId: string) {
  return (await client.listEvents({ sessionId, order: 'asc', limit: 500 })).events;
}

/**
 * Runs `call` twice against the same scripted answers: on the plain model, then captured inside
 * a session. Answers both results, what the fake received each time, and what Vigil stored.
 */
async function plainAndCaptured<T>(sessionId: string, answers: FakeAnswer[], call: (model: LanguageModel, observed: boolean) => Promise<T>) {
  const plainRequests = fake.requests.length;
  fake.script(...answers);
  const plain = await call(chatModel('gpt-4o-mini'), false);
  const capturedRequests = fake.requests.length;
  fake.script(...answers);
  const withCapture = await client.withSession({ agentId: 'ai-sdk-agent', sessionId }, () => call(captured(chatModel('gpt-4o-mini')), true));
  const bodies = (from: number, to: number) => fake.requests.slice(from, to).map((r) => r.json);
  return {
    plain,
    captured: withCapture,
    plainBodies: bodies(plainRequests, capturedRequests),
    capturedBodies: bodies(capturedRequests, fake.requests.length),
    events: await stored(sessionId),
  };
}

async function outcome(promise: Promise<unknown>) {
  try {
    return { value: await promise };
  } catch (error) {
    return { error: error instanceof APICallError ? { name: error.name, statusCode: error.statusCode, message: error.message } : String(error) };
  }
}

describe('Vercel AI SDK capture (vigilMiddleware, observeTools)', () => {
  test('provider ids map to the price table: openai.chat → openai, gateway creator/model → creator', () => {
    assert.deepEqual(priceTableModel({ provider: 'openai.chat', modelId: 'gpt-4o' }), { provider: 'openai', model: 'gpt-4o' });
    assert.deepEqual(priceTableModel({ provider: 'anthropic.messages', modelId: 'claude-haiku-4-5-20251001' }), {
      provider: 'anthropic',
      model: 'claude-haiku-4-5-20251001',
    });
    assert.deepEqual(priceTableModel({ provider: 'google.vertex.chat', modelId: 'gemini-2.5-pro' }), { provider: 'google', model: 'gemini-2.5-pro' });
    assert.deepEqual(priceTableModel({ provider: 'gateway', modelId: 'xai/grok-4' }), { provider: 'xai', model: 'grok-4' });
  });

  test('generateText: llm_call then llm_response with text, tokens, price-table cost and latency; the result is unchanged', async () => {
    const answer: FakeAnswer = {
      kind: 'message',
      model: 'gpt-4o-mini-2024-07-18',
      content: 'Hello there, friend.',
      promptTokens: 1200,
      completionTokens: 300,
      delayMs: 60,
    };
    const run = await plainAndCaptured('ai-generate', [answer], (model) =>
      generateText({ model, system: 'Be brief.', prompt: 'Say hello.', temperature: 0.2, maxOutputTokens: 50 }),
    );
    assert.equal(run.captured.text, 'Hello there, friend.');
    assert.deepEqual(
      { text: run.captured.text, usage: run.captured.usage, finishReason: run.captured.finishReason, content: run.captured.content },
      { text: run.plain.text, usage: run.plain.usage, finishReason: run.plain.finishReason, content: run.plain.content },
    );
    assert.deepEqual(run.capturedBodies, run.plainBodies, 'the provider receives the same request');

    assert.deepEqual(
      run.events.map((e) => e.eventType),
      ['session_started', 'llm_call', 'llm_response', 'session_ended'],
    );
    const [, call, response] = run.events;
    assert.equal(call!.payload.provider, 'openai');
    assert.equal(call!.payload.model, 'gpt-4o-mini');
    assert.equal(call!.payload.systemPrompt, 'Be brief.');
    assert.deepEqual(call!.payload.messages, [{ role: 'user', content: [{ type: 'text', text: 'Say hello.' }] }]);
    assert.deepEqual(call!.payload.parameters, { maxOutputTokens: 50, temperature: 0.2 });
    const payload = response!.payload;
    assert.equal(payload.callId, call!.payload.callId);
    assert.equal(payload.provider, 'openai');
    assert.equal(payload.model, 'gpt-4o-mini-2024-07-18', 'the model that answered');
    assert.equal(payload.completion, 'Hello there, friend.');
    assert.equal(payload.finishReason, 'stop');
    assert.deepEqual(payload.usage, { inputTokens: 1200, outputTokens: 300, totalTokens: 1500 });
    const expectedCost = prices.costUsd('gpt-4o-mini', 'openai', 1200, 300)!;
    assert.ok(expectedCost > 0);
    assert.ok(Math.abs((payload.costUsd as number) - expectedCost) < 1e-12, `cost ${payload.costUsd} = ${expectedCost}`);
    assert.ok((payload.latencyMs as number) >= 50, `latency ${payload.latencyMs} includes the provider's 60 ms`);
    assert.equal(response!.metadata.costUnpriced, undefined);
  });

  test('streamText: the streamed text is recorded when the stream finishes, with usage and cost; the stream is unchanged', async () => {
    const answer: FakeAnswer = {
      kind: 'message',
      model: 'gpt-4o-mini',
      content: 'Streams arrive word by word here.',
      promptTokens: 40,
      completionTokens: 9,
      cachedTokens: 16,
      reasoningTokens: 3,
    };
    const consume = async (model: LanguageModel) => {
      const result = streamText({ model, prompt: 'Stream something.' });
      const chunks: string[] = [];
      for await (const chunk of result.textStream) chunks.push(chunk);
      return { chunks, text: await result.text, usage: await result.usage, finishReason: await result.finishReason };
    };
    const run = await plainAndCaptured('ai-stream', [answer], consume);
    assert.deepEqual(run.captured, run.plain);
    assert.equal(run.captured.chunks.join(''), 'Streams arrive word by word here.');
    assert.ok(run.captured.chunks.length > 1, 'it really streamed');
    assert.deepEqual(run.capturedBodies, run.plainBodies);

    assert.deepEqual(
      run.events.map((e) => e.eventType),
      ['session_started', 'llm_call', 'llm_response', 'session_ended'],
    );
    const response = run.events[2]!.payload;
    assert.equal(response.callId, run.events[1]!.payload.callId);
    assert.equal(response.completion, 'Streams arrive word by word here.');
    assert.deepEqual(response.usage, { inputTokens: 40, outputTokens: 9, totalTokens: 49, cacheReadInputTokens: 16, reasoningTokens: 3 });
    assert.equal(response.costUsd, prices.costUsd('gpt-4o-mini', 'openai', 40, 9));
    assert.equal(response.finishReason, 'stop');
    assert.ok((response.latencyMs as number) > 0);
  });

  test('tool calls: the model’s calls on llm_response, the observed tool’s run under the same callId, then the next step', async () => {
    const answers: FakeAnswer[] = [
      {
        kind: 'message',
        model: 'gpt-4o-mini',
        toolCalls: [{ id: 'call_weather_1', name: 'weather', arguments: '{"city":"Oslo"}' }],
        promptTokens: 80,
        completionTokens: 15,
      },
      { kind: 'message', model: 'gpt-4o-mini', content: 'It is 21 degrees in Oslo.', promptTokens: 120, completionTokens: 10 },
    ];
    const tools = {
      weather: tool({
        description: 'Current weather in a city',
        inputSchema: jsonSchema<{ city: string }>({
          type: 'object',
          properties: { city: { type: 'string' } },
          required: ['city'],
          additionalProperties: false,
        }),
        execute: async ({ city }) => ({ city, tempC: 21 }),
      }),
    };
    const run = await plainAndCaptured('ai-tools', answers, (model, observed) =>
      generateText({ model, prompt: 'Weather in Oslo?', tools: observed ? observeTools(tools) : tools, stopWhen: stepCountIs(2) }),
    );
    const visible = (result: typeof run.plain) => ({
      text: result.text,
      steps: result.steps.map((step) => ({ content: step.content, finishReason: step.finishReason, usage: step.usage })),
    });
    assert.deepEqual(visible(run.captured), visible(run.plain));
    assert.equal(run.captured.text, 'It is 21 degrees in Oslo.');
    assert.deepEqual(run.capturedBodies, run.plainBodies);

    assert.deepEqual(
      run.events.map((e) => e.eventType),
      ['session_started', 'llm_call', 'llm_response', 'tool_call', 'tool_response', 'llm_call', 'llm_response', 'session_ended'],
    );
    const [, firstCall, firstResponse, toolCall, toolResponse, secondCall, secondResponse] = run.events.map((e) => e.payload);
    assert.deepEqual(
      (firstCall!.tools as Array<{ name: string }>).map((t) => t.name),
      ['weather'],
    );
    assert.deepEqual(firstResponse!.toolCalls, [{ id: 'call_weather_1', name: 'weather', arguments: { city: 'Oslo' } }]);
    assert.equal(firstResponse!.finishReason, 'tool-calls');
    assert.equal(firstResponse!.completion, '');
    assert.deepEqual({ ...toolCall, callId: toolCall!.callId }, { toolName: 'weather', callId: 'call_weather_1', arguments: { city: 'Oslo' } });
    assert.equal(toolResponse!.callId, 'call_weather_1');
    assert.deepEqual(toolResponse!.result, { city: 'Oslo', tempC: 21 });
    assert.ok(typeof toolResponse!.durationMs === 'number');
    const toolMessage = (secondCall!.messages as Array<{ role: string; content: Array<{ toolCallId?: string }> }>).find((m) => m.role === 'tool');
    assert.equal(toolMessage?.content[0]?.toolCallId, 'call_weather_1', 'the second call carries the tool result');
    assert.equal(secondResponse!.completion, 'It is 21 degrees in Oslo.');
    assert.equal(secondResponse!.costUsd, prices.costUsd('gpt-4o-mini', 'openai', 120, 10));
  });

  test('a failing tool is recorded as tool_error; the model sees the same error either way', async () => {
    const answers: FakeAnswer[] = [
      {
        kind: 'message',
        model: 'gpt-4o-mini',
        toolCalls: [{ id: 'call_pay_1', name: 'pay', arguments: '{"amount":5}' }],
        promptTokens: 30,
        completionTokens: 8,
      },
      { kind: 'message', model: 'gpt-4o-mini', content: 'The payment failed.', promptTokens: 50, completionTokens: 5 },
    ];
    const tools = {
      pay: tool({
        inputSchema: jsonSchema<{ amount: number }>({ type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] }),
        execute: async (): Promise<string> => {
          throw new Error('card declined');
        },
      }),
    };
    const consume = async (model: LanguageModel, observed: boolean) => {
      const result = streamText({ model, prompt: 'Pay 5.', tools: observed ? observeTools(tools) : tools, stopWhen: stepCountIs(2) });
      const parts: unknown[] = [];
      for await (const part of result.fullStream)
        if (part.type === 'tool-error' || part.type === 'text-delta')
          parts.push({ type: part.type, ...(part.type === 'tool-error' ? { error: String(part.error) } : { text: part.text }) });
      return parts;
    };
    fake.script(...answers);
    const plain = await consume(chatModel('gpt-4o-mini'), false);
    fake.script(...answers);
    const withCapture = await client.withSession({ agentId: 'ai-sdk-agent', sessionId: 'ai-tool-error' }, () =>
      consume(captured(chatModel('gpt-4o-mini')), true),
    );
    assert.deepEqual(withCapture, plain);
    assert.deepEqual(plain[0], { type: 'tool-error', error: 'Error: card declined' });

    const events = await stored('ai-tool-error');
    assert.deepEqual(
      events.map((e) => e.eventType),
      ['session_started', 'llm_call', 'llm_response', 'tool_call', 'tool_error', 'llm_call', 'llm_response', 'session_ended'],
    );
    const toolError = events[4]!;
    assert.equal(toolError.severity, 'error');
    assert.deepEqual(
      { toolName: toolError.payload.toolName, callId: toolError.payload.callId, error: toolError.payload.error },
      { toolName: 'pay', callId: 'call_pay_1', error: 'card declined' },
    );
    assert.equal(events[6]!.payload.completion, 'The payment failed.');
  });

  test('a tool that streams its output (async generator) still streams, and is recorded with its last value', async () => {
    const answers: FakeAnswer[] = [
      {
        kind: 'message',
        model: 'gpt-4o-mini',
        toolCalls: [{ id: 'call_count_1', name: 'count', arguments: '{"to":3}' }],
        promptTokens: 20,
        completionTokens: 6,
      },
      { kind: 'message', model: 'gpt-4o-mini', content: 'Counted.', promptTokens: 30, completionTokens: 2 },
    ];
    const tools = {
      count: tool({
        inputSchema: jsonSchema<{ to: number }>({ type: 'object', properties: { to: { type: 'number' } }, required: ['to'] }),
        async *execute({ to }) {
          for (let n = 1; n <= to; n++) yield { n };
        },
      }),
    };
    const run = await plainAndCaptured('ai-streaming-tool', answers, (model, observed) =>
      generateText({ model, prompt: 'Count to 3.', tools: observed ? observeTools(tools) : tools, stopWhen: stepCountIs(2) }),
    );
    assert.deepEqual(
      run.captured.steps[0]!.toolResults.map((r) => r.output),
      [{ n: 3 }],
    );
    assert.deepEqual(
      run.captured.steps[0]!.toolResults.map((r) => r.output),
      run.plain.steps[0]!.toolResults.map((r) => r.output),
    );
    const toolResponse = run.events.find((e) => e.eventType === 'tool_response');
    assert.deepEqual(toolResponse?.payload.result, { n: 3 });
    assert.equal(toolResponse?.payload.callId, 'call_count_1');
  });

  test('provider errors: 500 from generateText and 429 from streamText become error-severity tool_errors with the status; the caller sees the same error', async () => {
    const serverError: FakeAnswer = { kind: 'error', status: 500, message: 'The server had an error' };
    const run = await plainAndCaptured('ai-error-500', [serverError], (model) => outcome(generateText({ model, prompt: 'Hi', maxRetries: 0 })));
    assert.deepEqual(run.captured, run.plain);
    assert.equal((run.plain.error as { statusCode: number }).statusCode, 500);
    assert.deepEqual(
      run.events.map((e) => e.eventType),
      ['session_started', 'llm_call', 'tool_error', 'session_ended'],
    );
    const failure = run.events[2]!;
    assert.equal(failure.severity, 'error');
    assert.equal(failure.payload.errorCode, 500);
    assert.equal(failure.payload.toolName, 'openai:gpt-4o-mini');
    assert.equal(failure.payload.callId, run.events[1]!.payload.callId);
    assert.match(String(failure.payload.error), /The server had an error/);

    const rateLimited: FakeAnswer = { kind: 'error', status: 429, message: 'Rate limit reached' };
    const consume = async (model: LanguageModel) => {
      const errors: unknown[] = [];
      const result = streamText({ model, prompt: 'Hi', maxRetries: 0, onError: ({ error }) => void errors.push((error as APICallError).statusCode) });
      let text = '';
      for await (const chunk of result.textStream) text += chunk;
      return { text, errors };
    };
    const streamed = await plainAndCaptured('ai-error-429', [rateLimited], consume);
    assert.deepEqual(streamed.captured, streamed.plain);
    assert.deepEqual(streamed.plain.errors, [429]);
    assert.deepEqual(
      streamed.events.map((e) => e.eventType),
      ['session_started', 'llm_call', 'tool_error', 'session_ended'],
    );
    assert.equal(streamed.events[2]!.severity, 'error');
    assert.equal(streamed.events[2]!.payload.errorCode, 429);
    assert.match(String(streamed.events[2]!.payload.error), /Rate limit reached/);
  });

  test('a stream that breaks mid-answer is recorded as an error; the caller gets the same partial text and error', async () => {
    const broken: FakeAnswer = { kind: 'broken-stream', model: 'gpt-4o-mini', content: 'This answer never' };
    const consume = async (model: LanguageModel) => {
      const errors: string[] = [];
      const result = streamText({ model, prompt: 'Hi', maxRetries: 0, onError: ({ error }) => void errors.push((error as Error).message) });
      let text = '';
      try {
        for await (const chunk of result.textStream) text += chunk;
      } catch (error) {
        errors.push(`thrown: ${(error as Error).message}`);
      }
      return { text, errors };
    };
    const run = await plainAndCaptured('ai-broken-stream', [broken], consume);
    assert.deepEqual(run.captured, run.plain);
    assert.equal(run.plain.text, 'This answer never');
    assert.ok(run.plain.errors.length > 0, 'the caller sees the break');
    assert.deepEqual(
      run.events.map((e) => e.eventType),
      ['session_started', 'llm_call', 'tool_error', 'session_ended'],
    );
    assert.equal(run.events[2]!.severity, 'error');
    assert.equal(run.events[2]!.payload.errorCode, undefined, 'no error status: the provider answered 200, then the connection broke');
    assert.match(String(run.events[2]!.payload.error), /Failed to process successful response/);
  });

  test('captureContent: false records the calls’ shape without prompt, completion or tool arguments', async () => {
    fake.script(
      {
        kind: 'message',
        model: 'gpt-4o-mini',
        toolCalls: [{ id: 'call_lookup_1', name: 'lookup', arguments: '{"key":"secret-key"}' }],
        promptTokens: 50,
        completionTokens: 7,
      },
      { kind: 'message', model: 'gpt-4o-mini', content: 'The secret answer.', promptTokens: 70, completionTokens: 4 },
    );
    const tools = {
      lookup: tool({
        inputSchema: jsonSchema<{ key: string }>({ type: 'object', properties: { key: { type: 'string' } }, required: ['key'] }),
        execute: async () => 'found',
      }),
    };
    const model = wrapLanguageModel({ model: chatModel('gpt-4o-mini'), middleware: vigilMiddleware({ captureContent: false }) });
    const result = await client.withSession({ agentId: 'ai-sdk-agent', sessionId: 'ai-redacted' }, () =>
      generateText({ model, system: 'secret system prompt', prompt: 'secret question', tools: observeTools(tools), stopWhen: stepCountIs(2) }),
    );
    assert.equal(result.text, 'The secret answer.');
    const events = await stored('ai-redacted');
    const llmEvents = events.filter((e) => e.eventType.startsWith('llm_'));
    assert.equal(llmEvents.length, 4);
    assert.ok(!JSON.stringify(llmEvents).includes('secret'), 'no prompt, completion or tool arguments stored');
    const [call, response] = llmEvents;
    assert.deepEqual(call!.payload.messages, []);
    assert.equal(call!.payload.redacted, true);
    assert.deepEqual(
      (call!.payload.tools as Array<{ name: string }>).map((t) => t.name),
      ['lookup'],
      'tool definitions are shape',
    );
    assert.equal(response!.payload.redacted, true);
    assert.equal(response!.payload.completion, null);
    assert.deepEqual(response!.payload.toolCalls, [{ id: 'call_lookup_1', name: 'lookup' }]);
    assert.deepEqual(response!.payload.usage, { inputTokens: 50, outputTokens: 7, totalTokens: 57 });
    assert.equal(response!.payload.costUsd, prices.costUsd('gpt-4o-mini', 'openai', 50, 7));
  });

  test('a Vigil client that cannot record (closed) never fails the model call or the tool', async () => {
    const closed = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey });
    const session = closed.startSession({ agentId: 'closed-agent' });
    await closed.close();
    fake.script(
      {
        kind: 'message',
        model: 'gpt-4o-mini',
        toolCalls: [{ id: 'call_add_1', name: 'add', arguments: '{"a":2,"b":3}' }],
        promptTokens: 10,
        completionTokens: 5,
      },
      { kind: 'message', model: 'gpt-4o-mini', content: 'Five.', promptTokens: 20, completionTokens: 2 },
    );
    const tools = {
      add: tool({
        inputSchema: jsonSchema<{ a: number; b: number }>({
          type: 'object',
          properties: { a: { type: 'number' }, b: { type: 'number' } },
          required: ['a', 'b'],
        }),
        execute: async ({ a, b }) => a + b,
      }),
    };
    const warnings: string[] = [];
    const warn = console.warn;
    console.warn = (message: string) => void warnings.push(message);
    try {
      const model = wrapLanguageModel({ model: chatModel('gpt-4o-mini'), middleware: vigilMiddleware({ session }) });
      const result = await generateText({ model, prompt: 'Add 2 and 3.', tools: observeTools(tools, { session }), stopWhen: stepCountIs(2) });
      assert.equal(result.text, 'Five.');
      assert.deepEqual(
        result.steps[0]!.toolResults.map((r) => r.output),
        [5],
      );
    } finally {
      console.warn = warn;
    }
    assert.ok(warnings.length > 0 && warnings.every((w) => w.startsWith('vigil: could not record a call: The client is closed')), warnings.join('\n'));
  });

  test('an explicit session records outside any run(); without one, calls outside a session run unrecorded', async () => {
    const session: VigilSession = client.startSession({ agentId: 'ai-sdk-agent', sessionId: 'ai-explicit' });
    fake.script({ kind: 'message', model: 'gpt-4o-mini', content: 'explicit', promptTokens: 3, completionTokens: 1 });
    const explicit = await generateText({
      model: wrapLanguageModel({ model: chatModel('gpt-4o-mini'), middleware: vigilMiddleware({ session }) }),
      prompt: 'Hi',
    });
    assert.equal(explicit.text, 'explicit');
    await session.end();
    assert.deepEqual(
      (await stored('ai-explicit')).map((e) => e.eventType),
      ['session_started', 'llm_call', 'llm_response', 'session_ended'],
    );

    const warnings: string[] = [];
    const warn = console.warn;
    console.warn = (message: string) => void warnings.push(message);
    try {
      fake.script({ kind: 'message', model: 'gpt-4o-mini', content: 'unrecorded', promptTokens: 3, completionTokens: 1 });
      const before = client.pendingEvents;
      const result = await generateText({ model: captured(chatModel('gpt-4o-mini')), prompt: 'Hi' });
      assert.equal(result.text, 'unrecorded');
      assert.equal(client.pendingEvents, before, 'nothing queued');
      assert.equal(warnings.length, 1);
      assert.match(warnings[0]!, /AI SDK model "gpt-4o-mini" ran outside any session/);
    } finally {
      console.warn = warn;
    }
  });
});
