import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Callbacks } from '@langchain/core/callbacks/manager';
import type { BaseMessage } from '@langchain/core/messages';
import { StringOutputParser } from '@langchain/core/output_parsers';
import { ChatPromptTemplate } from '@langchain/core/prompts';
import { RunnableLambda } from '@langchain/core/runnables';
import { tool, type DynamicStructuredTool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { startLiveServices, type LiveServices } from '@vigil/cli/testing';
import { startFakeOpenAI, type FakeAnswer, type FakeOpenAI } from './fake-openai-harness.ts';
import { VigilCallbackHandler } from './langchain.ts';
import { ObserveClient, PriceTable } from './node.ts';

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

/** The real @langchain/openai chat model, talking to the fake OpenAI server (no retries: each failure is one request). */
function chatModel(): ChatOpenAI {
  return new ChatOpenAI({ model: 'gpt-4o-mini', apiKey: 'sk-test', configuration: { baseURL: fake.url }, maxRetries: 0 });
}

async function stored(sessionId: string) {
  return (await client.listEvents({ sessionId, order: 'asc', limit: 500 })).events;
}

/** An event's shape for order assertions: its type, or the custom type and the run's name. */
function kind(event: { eventType: string; payload: Record<string, unknown> }): string {
  if (event.eventType !== 'custom') return event.eventType;
  return `${event.payload.type as string}:${(event.payload.data as { name: string }).name}`;
}

async function outcome<T>(promise: Promise<T>) {
  try {
    return { value: await promise };
  } catch (error) {
    return { error: { message: (error as Error).message, status: (error as { status?: number }).status } };
  }
}

/**
 * Runs `call` twice against the same scripted answers: without callbacks, then with a
 * VigilCallbackHandler inside a session. Answers both results, the request bodies the fake got
 * each time, and what Vigil stored.
 */
async function plainAndCaptured<T>(sessionId: string, answers: FakeAnswer[], call: (callbacks: Callbacks | undefined) => Promise<T>) {
  const plainFrom = fake.requests.length;
  fake.script(...answers);
  const plain = await call(undefined);
  const capturedFrom = fake.requests.length;
  fake.script(...answers);
  const captured = await client
    .withSession({ agentId: 'langchain-agent', sessionId }, () => call([new VigilCallbackHandler()]))
    .catch((error: unknown) => ({ thrown: error }));
  const bodies = (from: number, to: number) => fake.requests.slice(from, to).map((r) => r.json);
  return {
    plain,
    captured,
    plainBodies: bodies(plainFrom, capturedFrom),
    capturedBodies: bodies(capturedFrom, fake.requests.length),
    events: await stored(sessionId),
  };
}

const weather = tool(async ({ city }: { city: string }) => `21C in ${city}`, {
  name: 'weather',
  description: 'Current weather in a city',
  schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  // With a JSON schema tool() is typed as a union of two tool classes; it builds a DynamicStructuredTool.
}) as DynamicStructuredTool;

describe('LangChain.js capture (VigilCallbackHandler)', () => {
  test('a prompt | model | parser sequence: chain runs as custom events, the model run as llm_call/llm_response with cost; nested under the sequence', async () => {
    const chain = ChatPromptTemplate.fromMessages([
      ['system', 'You are terse.'],
      ['human', '{question}'],
    ])
      .pipe(chatModel())
      .pipe(new StringOutputParser());
    const answer: FakeAnswer = { kind: 'message', model: 'gpt-4o-mini-2024-07-18', content: 'Paris.', promptTokens: 2000, completionTokens: 400, delayMs: 60 };
    const run = await plainAndCaptured('lc-sequence', [answer], (callbacks) => chain.invoke({ question: 'Capital of France?' }, { callbacks }));
    assert.equal(run.plain, 'Paris.');
    assert.equal(run.captured, run.plain);
    assert.deepEqual(run.capturedBodies, run.plainBodies, 'the provider receives the same request');

    assert.deepEqual(run.events.map(kind), [
      'session_started',
      'chain_start:RunnableSequence',
      'chain_start:ChatPromptTemplate',
      'chain_end:ChatPromptTemplate',
      'llm_call',
      'llm_response',
      'chain_start:StrOutputParser',
      'chain_end:StrOutputParser',
      'chain_end:RunnableSequence',
      'session_ended',
    ]);
    const sequenceRun = run.events[1]!.metadata.langchainRunId;
    assert.equal(typeof sequenceRun, 'string');
    assert.equal(run.events[1]!.metadata.langchainParentRunId, undefined, 'the sequence is the root run');
    for (const nested of run.events.slice(2, 8)) assert.equal(nested.metadata.langchainParentRunId, sequenceRun, `${kind(nested)} is nested in the sequence`);
    assert.equal(run.events[8]!.metadata.langchainRunId, sequenceRun);
    assert.deepEqual((run.events[1]!.payload.data as { inputs: unknown }).inputs, { question: 'Capital of France?' });
    assert.ok((run.events[8]!.payload.data as { durationMs: number }).durationMs >= 50, 'the sequence lasted as long as the model call');

    const call = run.events[4]!.payload;
    assert.equal(call.provider, 'openai');
    assert.equal(call.model, 'gpt-4o-mini');
    assert.equal(call.systemPrompt, 'You are terse.');
    assert.deepEqual(call.messages, [{ role: 'user', content: 'Capital of France?' }]);
    const response = run.events[5]!.payload;
    assert.equal(response.callId, call.callId);
    assert.equal(response.completion, 'Paris.');
    assert.equal(response.model, 'gpt-4o-mini-2024-07-18', 'the model that answered');
    assert.equal(response.finishReason, 'stop');
    assert.deepEqual(response.usage, { inputTokens: 2000, outputTokens: 400, totalTokens: 2400 });
    const expectedCost = prices.costUsd('gpt-4o-mini', 'openai', 2000, 400)!;
    assert.ok(expectedCost > 0);
    assert.ok(Math.abs((response.costUsd as number) - expectedCost) < 1e-12, `cost ${response.costUsd} = ${expectedCost}`);
    assert.ok((response.latencyMs as number) >= 50, `latency ${response.latencyMs} includes the provider's 60 ms`);
    assert.equal(run.events[5]!.metadata.costUnpriced, undefined);
  });

  test('an agent loop with a real tool(): the model’s tool calls, the tool run under the same callId, the next model call; all nested in the agent run', async () => {
    const model = chatModel();
    const agent = RunnableLambda.from(async (question: string, config) => {
      const messages: BaseMessage[] = [];
      const asked = await model.bindTools([weather]).invoke(question, config);
      messages.push(asked);
      for (const toolCall of asked.tool_calls ?? []) messages.push(await weather.invoke(toolCall, config));
      const final = await model.invoke([['human', question], ...messages], config);
      return { toolResults: messages.slice(1).map((m) => m.content), answer: final.content };
    }).withConfig({ runName: 'agent' });
    const answers: FakeAnswer[] = [
      {
        kind: 'message',
        model: 'gpt-4o-mini',
        toolCalls: [{ id: 'call_weather_1', name: 'weather', arguments: '{"city":"Oslo"}' }],
        promptTokens: 80,
        completionTokens: 15,
      },
      { kind: 'message', model: 'gpt-4o-mini', content: 'It is 21C in Oslo.', promptTokens: 120, completionTokens: 9 },
    ];
    const run = await plainAndCaptured('lc-agent', answers, (callbacks) => agent.invoke('Weather in Oslo?', { callbacks }));
    assert.deepEqual(run.plain, { toolResults: ['21C in Oslo'], answer: 'It is 21C in Oslo.' });
    assert.deepEqual(run.captured, run.plain);
    assert.deepEqual(run.capturedBodies, run.plainBodies);

    assert.deepEqual(run.events.map(kind), [
      'session_started',
      'chain_start:agent',
      'llm_call',
      'llm_response',
      'tool_call',
      'tool_response',
      'llm_call',
      'llm_response',
      'chain_end:agent',
      'session_ended',
    ]);
    const agentRun = run.events[1]!.metadata.langchainRunId;
    for (const nested of run.events.slice(2, 8)) assert.equal(nested.metadata.langchainParentRunId, agentRun, `${kind(nested)} is nested in the agent run`);
    const [, , firstCall, firstResponse, toolCall, toolResponse, secondCall, secondResponse, , ended] = run.events.map((e) => e.payload);
    assert.deepEqual(
      (firstCall!.tools as Array<{ function: { name: string } }>).map((t) => t.function.name),
      ['weather'],
    );
    assert.deepEqual(firstResponse!.toolCalls, [{ id: 'call_weather_1', name: 'weather', arguments: { city: 'Oslo' } }]);
    assert.equal(firstResponse!.finishReason, 'tool_calls');
    assert.deepEqual(
      { toolName: toolCall!.toolName, callId: toolCall!.callId, arguments: toolCall!.arguments },
      { toolName: 'weather', callId: 'call_weather_1', arguments: { city: 'Oslo' } },
    );
    assert.equal(toolResponse!.callId, 'call_weather_1');
    assert.equal(toolResponse!.result, '21C in Oslo');
    assert.ok(typeof toolResponse!.durationMs === 'number' && toolResponse!.durationMs >= 0);
    const toolMessage = (secondCall!.messages as Array<{ role: string; toolCallId?: string; content: unknown }>).find((m) => m.role === 'tool');
    assert.deepEqual(toolMessage, { role: 'tool', content: '21C in Oslo', name: 'weather', toolCallId: 'call_weather_1' });
    assert.equal(secondResponse!.completion, 'It is 21C in Oslo.');
    assert.equal(secondResponse!.costUsd, prices.costUsd('gpt-4o-mini', 'openai', 120, 9));
    assert.equal(ended!.totalToolCalls, 1, 'the tool run counts as the session’s tool call');
  });

  test('a failing tool: tool_error with the message, then chain_error; the caller gets the same error', async () => {
    const refund = tool(
      async ({ amount }: { amount: number }): Promise<string> => {
        throw new Error(`refund of ${amount} refused`);
      },
      { name: 'refund', description: 'Refund an amount', schema: { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] } },
    ) as DynamicStructuredTool;
    const flow = RunnableLambda.from(async (amount: number, config) => refund.invoke({ amount }, config)).withConfig({ runName: 'refund-flow' });
    const run = await plainAndCaptured('lc-tool-error', [], (callbacks) => outcome(flow.invoke(12, { callbacks })));
    assert.deepEqual(run.plain, { error: { message: 'refund of 12 refused', status: undefined } });
    assert.deepEqual(run.captured, run.plain);

    assert.deepEqual(run.events.map(kind), [
      'session_started',
      'chain_start:refund-flow',
      'tool_call',
      'tool_error',
      'chain_error:refund-flow',
      'session_ended',
    ]);
    const failure = run.events[3]!;
    assert.equal(failure.severity, 'error');
    assert.equal(failure.payload.toolName, 'refund');
    assert.equal(failure.payload.callId, run.events[2]!.payload.callId);
    assert.deepEqual(run.events[2]!.payload.arguments, { amount: 12 });
    assert.equal(failure.payload.error, 'refund of 12 refused');
    assert.equal(run.events[4]!.severity, 'error');
    assert.equal((run.events[4]!.payload.data as { error: string }).error, 'refund of 12 refused');
  });

  test('streaming: the chunks reach the caller unchanged; the assembled text and the streamed usage are recorded', async () => {
    const answer: FakeAnswer = {
      kind: 'message',
      model: 'gpt-4o-mini',
      content: 'Tokens arrive one word at a time.',
      promptTokens: 30,
      completionTokens: 8,
      cachedTokens: 12,
      reasoningTokens: 2,
    };
    const run = await plainAndCaptured('lc-stream', [answer], async (callbacks) => {
      const chunks: string[] = [];
      for await (const chunk of await chatModel().stream('Stream please.', { callbacks })) chunks.push(chunk.content as string);
      return chunks;
    });
    assert.deepEqual(run.captured, run.plain);
    assert.ok(run.plain.length > 3, 'it really streamed');
    assert.equal(run.plain.join(''), 'Tokens arrive one word at a time.');
    assert.equal(run.capturedBodies[0]!.stream, true);

    assert.deepEqual(run.events.map(kind), ['session_started', 'llm_call', 'llm_response', 'session_ended']);
    const response = run.events[2]!.payload;
    assert.equal(response.completion, 'Tokens arrive one word at a time.');
    assert.deepEqual(response.usage, { inputTokens: 30, outputTokens: 8, totalTokens: 38, cacheReadInputTokens: 12, reasoningTokens: 2 });
    assert.equal(response.costUsd, prices.costUsd('gpt-4o-mini', 'openai', 30, 8));
  });

  test('provider errors: 500 in a chain and 429 from the model become error-severity tool_errors with the status; the caller sees the same error', async () => {
    const chain = ChatPromptTemplate.fromMessages([['human', '{question}']]).pipe(chatModel());
    const serverError: FakeAnswer = { kind: 'error', status: 500, message: 'The server had an error' };
    const run = await plainAndCaptured('lc-error-500', [serverError], (callbacks) => outcome(chain.invoke({ question: 'Hi' }, { callbacks })));
    assert.deepEqual(run.plain, { error: { message: '500 The server had an error', status: 500 } });
    assert.deepEqual(run.captured, run.plain);
    assert.deepEqual(run.events.map(kind), [
      'session_started',
      'chain_start:RunnableSequence',
      'chain_start:ChatPromptTemplate',
      'chain_end:ChatPromptTemplate',
      'llm_call',
      'tool_error',
      'chain_error:RunnableSequence',
      'session_ended',
    ]);
    const failure = run.events[5]!;
    assert.equal(failure.severity, 'error');
    assert.equal(failure.payload.errorCode, 500);
    assert.equal(failure.payload.toolName, 'openai:gpt-4o-mini');
    assert.equal(failure.payload.callId, run.events[4]!.payload.callId);
    assert.match(String(failure.payload.error), /The server had an error/);

    const rateLimited: FakeAnswer = { kind: 'error', status: 429, message: 'Rate limit reached' };
    const limited = await plainAndCaptured('lc-error-429', [rateLimited], (callbacks) => outcome(chatModel().invoke('Hi', { callbacks })));
    assert.equal(limited.plain.error?.status, 429);
    assert.deepEqual(limited.captured, limited.plain);
    assert.deepEqual(limited.events.map(kind), ['session_started', 'llm_call', 'tool_error', 'session_ended']);
    assert.equal(limited.events[2]!.severity, 'error');
    assert.equal(limited.events[2]!.payload.errorCode, 429);
  });

  test('runs tagged langsmith:hidden are left out; their siblings are recorded', async () => {
    const hidden = RunnableLambda.from((text: string) => text.toUpperCase()).withConfig({ runName: 'internal-step', tags: ['langsmith:hidden'] });
    const shown = RunnableLambda.from((text: string) => `${text}!`).withConfig({ runName: 'visible-step' });
    const flow = hidden.pipe(shown);
    const result = await client.withSession({ agentId: 'langchain-agent', sessionId: 'lc-hidden' }, () =>
      flow.invoke('hi', { callbacks: [new VigilCallbackHandler()] }),
    );
    assert.equal(result, 'HI!');
    assert.deepEqual((await stored('lc-hidden')).map(kind), [
      'session_started',
      'chain_start:RunnableSequence',
      'chain_start:visible-step',
      'chain_end:visible-step',
      'chain_end:RunnableSequence',
      'session_ended',
    ]);
  });

  test('captureContent: false records the runs’ shape without prompts, completions, tool-call arguments or chain inputs and outputs', async () => {
    const chain = ChatPromptTemplate.fromMessages([
      ['system', 'secret system prompt'],
      ['human', '{question}'],
    ]).pipe(chatModel().bindTools([weather]));
    fake.script({
      kind: 'message',
      model: 'gpt-4o-mini',
      content: 'secret completion',
      toolCalls: [{ id: 'call_weather_9', name: 'weather', arguments: '{"city":"SecretCity"}' }],
      promptTokens: 60,
      completionTokens: 12,
    });
    const answer = await client.withSession({ agentId: 'langchain-agent', sessionId: 'lc-redacted' }, () =>
      chain.invoke({ question: 'secret question' }, { callbacks: [new VigilCallbackHandler({ captureContent: false })] }),
    );
    assert.equal(answer.content, 'secret completion');
    const events = await stored('lc-redacted');
    assert.deepEqual(events.map(kind), [
      'session_started',
      'chain_start:RunnableSequence',
      'chain_start:ChatPromptTemplate',
      'chain_end:ChatPromptTemplate',
      'llm_call',
      'llm_response',
      'chain_end:RunnableSequence',
      'session_ended',
    ]);
    assert.ok(!JSON.stringify(events).includes('ecret'), 'nothing of the prompt, the answer or the tool arguments is stored');
    const call = events[4]!.payload;
    assert.deepEqual(call.messages, []);
    assert.equal(call.systemPrompt, undefined);
    assert.equal(call.redacted, true);
    assert.deepEqual(
      (call.tools as Array<{ function: { name: string } }>).map((t) => t.function.name),
      ['weather'],
    );
    const response = events[5]!.payload;
    assert.equal(response.completion, null);
    assert.equal(response.redacted, true);
    assert.deepEqual(response.toolCalls, [{ id: 'call_weather_9', name: 'weather' }]);
    assert.equal(response.costUsd, prices.costUsd('gpt-4o-mini', 'openai', 60, 12));
    assert.deepEqual(Object.keys(events[1]!.payload.data as object), ['name']);
  });

  test('a Vigil client that cannot record (closed) never fails the chain, the model or the tool', async () => {
    const closed = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey });
    const session = closed.startSession({ agentId: 'closed-agent' });
    await closed.close();
    const callbacks = [new VigilCallbackHandler({ session })];
    const chain = ChatPromptTemplate.fromMessages([['human', '{question}']])
      .pipe(chatModel())
      .pipe(new StringOutputParser());
    fake.script({ kind: 'message', model: 'gpt-4o-mini', content: 'Still answered.', promptTokens: 5, completionTokens: 3 });
    const warnings: string[] = [];
    const warn = console.warn;
    console.warn = (message: string) => void warnings.push(message);
    try {
      assert.equal(await chain.invoke({ question: 'Hi' }, { callbacks }), 'Still answered.');
      assert.equal(await weather.invoke({ city: 'Oslo' }, { callbacks }), '21C in Oslo');
    } finally {
      console.warn = warn;
    }
    assert.ok(warnings.length > 0 && warnings.every((w) => w.startsWith('vigil: could not record a call: The client is closed')), warnings.join('\n'));
  });

  test('an explicit session records outside any run(); without one, runs outside a session are not recorded', async () => {
    const session = client.startSession({ agentId: 'langchain-agent', sessionId: 'lc-explicit' });
    fake.script({ kind: 'message', model: 'gpt-4o-mini', content: 'explicit', promptTokens: 3, completionTokens: 1 });
    const explicit = await chatModel().invoke('Hi', { callbacks: [new VigilCallbackHandler({ session })] });
    assert.equal(explicit.content, 'explicit');
    await session.end();
    assert.deepEqual((await stored('lc-explicit')).map(kind), ['session_started', 'llm_call', 'llm_response', 'session_ended']);

    const warnings: string[] = [];
    const warn = console.warn;
    console.warn = (message: string) => void warnings.push(message);
    try {
      fake.script({ kind: 'message', model: 'gpt-4o-mini', content: 'unrecorded', promptTokens: 3, completionTokens: 1 });
      const before = client.pendingEvents;
      const result = await chatModel().invoke('Hi', { callbacks: [new VigilCallbackHandler()] });
      assert.equal(result.content, 'unrecorded');
      assert.equal(client.pendingEvents, before, 'nothing queued');
      assert.equal(warnings.length, 1);
      assert.match(warnings[0]!, /LangChain model "ChatOpenAI" ran outside any session/);
    } finally {
      console.warn = warn;
    }
  });
});
