// The real OpenTelemetry JS SDK and both OTLP/HTTP exporters (protobuf and JSON), and OpenInference's
// instrumentation of the `openai` package calling a local fake OpenAI server, against observe
// listening on a port: the stored sessions, their events, tokens, cost, tree fields and chain.
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, test } from 'node:test';
import { OpenAIInstrumentation } from '@arizeai/openinference-instrumentation-openai';
import { context, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, InMemorySpanExporter, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { describeEachDatabase, sendJson, TestHttpServer } from '@vigil/platform/testing';
import { PriceTable } from '@vigil/pricing';
import * as openaiModule from 'openai';
import { startTestObserve, type TestObserve } from '../testing.ts';

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
// One instrumentation per process (it patches the OpenAI prototypes); each suite gives it its provider.
const openAiInstrumentation = new OpenAIInstrumentation();
openAiInstrumentation.manuallyInstrument(openaiModule as never);

const prices = PriceTable.fromDefaults();

interface StoredEvent {
  seq: number;
  timestamp: string;
  sessionId: string;
  agentId: string;
  eventType: string;
  severity: string;
  payload: Record<string, any>;
  metadata: { otel: Record<string, any>; costUnpriced?: boolean; usageUnknown?: boolean };
}

/** [seconds, nanoseconds]: span times with nanosecond precision. */
const at = (seconds: number, nanos = 0): [number, number] => [seconds, nanos];
const T0 = 1_795_600_000; // 2026-11-25T...

/** A small agent run in GenAI conventions: agent → chat, tool ok, tool failing, chat failing. */
function genAiRun(provider: BasicTracerProvider, conversationId: string): { root: Span; chat: Span; tool: Span } {
  const tracer = provider.getTracer('vigil-test-agent', '1.0.0');
  const root = tracer.startSpan('invoke_agent Researcher', {
    startTime: at(T0),
    attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.agent.name': 'researcher', 'gen_ai.conversation.id': conversationId },
  });
  const inRoot = trace.setSpan(context.active(), root);
  const chat = tracer.startSpan(
    'chat gpt-4o',
    {
      kind: 2,
      startTime: at(T0, 100_000_000),
      attributes: {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-4o',
        'gen_ai.response.model': 'gpt-4o-2024-08-06',
        'gen_ai.usage.input_tokens': 1200,
        'gen_ai.usage.output_tokens': 300,
        'gen_ai.request.temperature': 0.2,
        'gen_ai.input.messages': JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: 'Find the population of Lyon' }] }]),
        'gen_ai.output.messages': JSON.stringify([
          {
            role: 'assistant',
            parts: [{ type: 'tool_call', id: 'call_1', name: 'web_search', arguments: { query: 'Lyon population' } }],
            finish_reason: 'tool_call',
          },
        ]),
      },
    },
    inRoot,
  );
  chat.end(at(T0 + 1, 600_000_123));
  const tool = tracer.startSpan(
    'execute_tool web_search',
    {
      startTime: at(T0 + 2),
      attributes: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'web_search',
        'gen_ai.tool.call.id': 'call_1',
        'gen_ai.tool.call.arguments': '{"query":"Lyon population"}',
        'gen_ai.tool.call.result': '{"population":522250}',
      },
    },
    inRoot,
  );
  tool.end(at(T0 + 2, 250_000_000));
  const failingTool = tracer.startSpan(
    'execute_tool fetch_page',
    { startTime: at(T0 + 3), attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'fetch_page', 'error.type': 'timeout' } },
    inRoot,
  );
  failingTool.setStatus({ code: SpanStatusCode.ERROR, message: 'page did not load in 5 s' });
  failingTool.end(at(T0 + 8));
  const failingChat = tracer.startSpan(
    'chat claude-sonnet-4-5',
    {
      startTime: at(T0 + 9),
      attributes: { 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'anthropic', 'gen_ai.request.model': 'claude-sonnet-4-5', 'error.type': '529' },
    },
    inRoot,
  );
  failingChat.setStatus({ code: SpanStatusCode.ERROR, message: 'overloaded' });
  failingChat.end(at(T0 + 9, 500_000_000));
  root.end(at(T0 + 10));
  return { root, chat, tool };
}

function providerWith(exporter: SpanExporter, captured?: InMemorySpanExporter): BasicTracerProvider {
  return new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'research-service', 'service.version': '2.1.0' }),
    spanProcessors: [new BatchSpanProcessor(exporter), ...(captured ? [new SimpleSpanProcessor(captured)] : [])],
  });
}

/** A streamed chat completion as OpenAI sends it when `stream_options.include_usage` is not asked for: no usage anywhere. */
function streamWithoutUsage(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const chunk = (delta: object, finishReason: string | null) =>
    `data: ${JSON.stringify({
      id: 'chatcmpl-Str3am',
      object: 'chat.completion.chunk',
      created: 1_795_600_000,
      model: 'gpt-4o-mini-2024-07-18',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    })}\n\n`;
  res.write(chunk({ role: 'assistant', content: 'Par' }, null));
  res.write(chunk({ content: 'is.' }, null));
  res.write(chunk({}, 'stop'));
  res.end('data: [DONE]\n\n');
}

/**
 * An OpenLLMetry (Traceloop) run: a workflow with the session as an association property, an
 * agent, a task and a tool under it, and an LLM call without token counts.
 */
function openLlmetryRun(provider: BasicTracerProvider, sessionId: string): void {
  const tracer = provider.getTracer('traceloop.tracer');
  const session = { 'traceloop.association.properties.session_id': sessionId };
  const span = (name: string, attributes: Record<string, string>, parent: Span | undefined, start: number): Span =>
    tracer.startSpan(
      name,
      { startTime: at(T0 + start), attributes: { ...session, ...attributes } },
      parent ? trace.setSpan(context.active(), parent) : undefined,
    );
  const workflow = span('support.workflow', { 'traceloop.span.kind': 'workflow', 'traceloop.entity.name': 'support' }, undefined, 0);
  const agent = span('triage.agent', { 'traceloop.span.kind': 'agent', 'traceloop.entity.name': 'triage' }, workflow, 1);
  const task = span('classify.task', { 'traceloop.span.kind': 'task', 'traceloop.entity.name': 'classify' }, agent, 2);
  task.end(at(T0 + 3));
  const tool = span(
    'lookup_order.tool',
    {
      'traceloop.span.kind': 'tool',
      'traceloop.entity.name': 'lookup_order',
      'traceloop.entity.input': JSON.stringify({ args: [], kwargs: { orderId: 'A-17' } }),
      'traceloop.entity.output': JSON.stringify({ status: 'shipped' }),
    },
    agent,
    4,
  );
  tool.end(at(T0 + 5));
  const chat = span('openai.chat', { 'llm.request.type': 'chat', 'gen_ai.system': 'openai', 'gen_ai.request.model': 'gpt-4o-mini' }, agent, 6);
  chat.end(at(T0 + 7));
  agent.end(at(T0 + 8));
  workflow.end(at(T0 + 9));
}

await describeEachDatabase('OTLP/HTTP from the OpenTelemetry SDK and exporters', (backend) => {
  let observe: TestObserve;
  let base: string;
  let ingestKey: string;
  let fakeOpenAi: TestHttpServer;

  before(async () => {
    observe = await startTestObserve(backend);
    base = await observe.service.app.listen({ port: 0, host: '127.0.0.1' });
    const created = await observe.call({ method: 'POST', url: '/api/keys', payload: { name: 'otel-exporter', scopes: ['ingest'] } });
    assert.equal(created.statusCode, 201, created.body);
    ingestKey = (created.json() as { key: string }).key;
    fakeOpenAi = await new TestHttpServer((request, res) => {
      if ((JSON.parse(request.body) as { stream?: boolean }).stream === true) return streamWithoutUsage(res);
      sendJson(res, 200, {
        id: 'chatcmpl-AbC123',
        object: 'chat.completion',
        created: 1_795_600_000,
        model: 'gpt-4o-mini-2024-07-18',
        system_fingerprint: 'fp_0ba0d124f1',
        choices: [{ index: 0, message: { role: 'assistant', content: 'Paris.', refusal: null }, logprobs: null, finish_reason: 'stop' }],
        usage: { prompt_tokens: 42, completion_tokens: 7, total_tokens: 49 },
      });
    }).start();
  });
  after(async () => {
    await fakeOpenAi.stop();
    await observe.close();
  });

  const headers = () => ({ Authorization: `Bearer ${ingestKey}` });
  const eventsOf = async (sessionId: string): Promise<StoredEvent[]> => {
    const response = await observe.call({ method: 'GET', url: `/api/events?sessionId=${encodeURIComponent(sessionId)}&order=asc&limit=500` });
    assert.equal(response.statusCode, 200, response.body);
    return (response.json() as { events: StoredEvent[] }).events.sort((a, b) => a.seq - b.seq);
  };
  const assertChainValid = async (sessionId: string, eventCount: number): Promise<void> => {
    const verify = await observe.call({ method: 'GET', url: `/api/audit/verify?sessionId=${encodeURIComponent(sessionId)}` });
    assert.equal(verify.statusCode, 200, verify.body);
    assert.deepEqual({ ...(verify.json() as object), headHash: undefined }, { sessionId, valid: true, eventCount, headHash: undefined, brokenAt: null });
  };

  test('protobuf exporter: GenAI spans become the events of the conversation, with tokens, cost, the tree fields and a valid chain; a resend stores nothing', async () => {
    const exporter = new ProtobufExporter({ url: `${base}/v1/traces`, headers: headers() });
    const captured = new InMemorySpanExporter();
    const provider = providerWith(exporter, captured);
    const { root, chat, tool } = genAiRun(provider, 'conv-proto');
    await provider.forceFlush();

    const events = await eventsOf('conv-proto');
    const traceId = root.spanContext().traceId;
    assert.deepEqual(
      events.map((e) => [e.eventType, e.metadata.otel.name]),
      [
        ['llm_call', 'chat gpt-4o'],
        ['llm_response', 'chat gpt-4o'],
        ['tool_call', 'execute_tool web_search'],
        ['tool_response', 'execute_tool web_search'],
        ['tool_call', 'execute_tool fetch_page'],
        ['tool_error', 'execute_tool fetch_page'],
        ['llm_call', 'chat claude-sonnet-4-5'],
        ['tool_error', 'chat claude-sonnet-4-5'],
        ['custom', 'invoke_agent Researcher'],
      ],
    );
    assert.ok(
      events.every((e) => e.agentId === 'researcher' && e.sessionId === 'conv-proto'),
      'agent from gen_ai.agent.name of the parent',
    );

    const [call, response] = events;
    assert.deepEqual(call!.payload.messages, [{ role: 'user', content: 'Find the population of Lyon' }]);
    assert.deepEqual(call!.payload.parameters, { temperature: 0.2 });
    assert.equal(call!.timestamp, new Date((T0 + 0.1) * 1000).toISOString());
    assert.equal(response!.timestamp, new Date(T0 * 1000 + 1600).toISOString(), 'llm_response at the span end');
    assert.equal(response!.payload.model, 'gpt-4o-2024-08-06');
    assert.deepEqual(response!.payload.usage, { inputTokens: 1200, outputTokens: 300, totalTokens: 1500 });
    assert.equal(response!.payload.costUsd, prices.costUsd('gpt-4o-2024-08-06', 'openai', 1200, 300));
    assert.ok((response!.payload.costUsd as number) > 0);
    assert.equal(response!.payload.latencyMs, 1500.000123);
    assert.equal(response!.payload.finishReason, 'tool_call');
    assert.deepEqual(response!.payload.toolCalls, [{ id: 'call_1', name: 'web_search', arguments: { query: 'Lyon population' } }]);

    // The tree contract: the same metadata.otel on both events of a span.
    const expectedOtel = {
      traceId,
      spanId: chat.spanContext().spanId,
      parentSpanId: root.spanContext().spanId,
      name: 'chat gpt-4o',
      kind: 'llm',
      startTime: new Date(T0 * 1000 + 100).toISOString(),
      endTime: new Date(T0 * 1000 + 1600).toISOString(),
      durationMs: 1500.000123,
      resource: { 'service.name': 'research-service', 'service.version': '2.1.0' },
    };
    assert.deepEqual(call!.metadata.otel, expectedOtel);
    assert.deepEqual(response!.metadata.otel, expectedOtel);
    assert.match(traceId, /^[0-9a-f]{32}$/);

    const [toolCall, toolResponse, , toolError, , llmError, agent] = events.slice(2);
    assert.deepEqual(toolCall!.payload, { toolName: 'web_search', callId: 'call_1', arguments: { query: 'Lyon population' } });
    assert.deepEqual(toolResponse!.payload, { toolName: 'web_search', callId: 'call_1', result: { population: 522250 }, durationMs: 250 });
    assert.equal(toolCall!.metadata.otel.spanId, tool.spanContext().spanId);
    assert.deepEqual(
      { ...toolError!.payload, callId: undefined },
      { toolName: 'fetch_page', callId: undefined, error: 'page did not load in 5 s', errorCode: 'timeout', durationMs: 5000 },
    );
    assert.equal(toolError!.severity, 'error');
    assert.equal(llmError!.payload.toolName, 'anthropic:claude-sonnet-4-5', 'a failed LLM call is a tool_error named <provider>:<model>');
    assert.equal(llmError!.payload.errorCode, '529');
    assert.equal(llmError!.severity, 'error');
    assert.equal(agent!.payload.type, 'invoke_agent Researcher');
    assert.equal(agent!.metadata.otel.kind, 'agent');
    assert.equal(agent!.metadata.otel.parentSpanId, null);
    await assertChainValid('conv-proto', 9);

    const session = (await observe.call({ method: 'GET', url: '/api/sessions/conv-proto' })).json() as {
      totalCostUsd: number;
      errorCount: number;
      toolCallCount: number;
    };
    assert.equal(session.totalCostUsd, response!.payload.costUsd);
    assert.equal(session.errorCount, 2);
    assert.equal(session.toolCallCount, 2);

    // An exporter retry: the same spans again are acknowledged and stored once.
    const resent = await new Promise<{ code: number }>((resolve) => exporter.export(captured.getFinishedSpans(), resolve));
    assert.equal(resent.code, 0, 'the resend succeeds');
    assert.equal((await eventsOf('conv-proto')).length, 9);
    const spanRows = await observe.service.context.database.db.selectFrom('otel_spans').selectAll().where('session_id', '=', 'conv-proto').execute();
    assert.equal(spanRows.length, 5);
    await assertChainValid('conv-proto', 9);
    await provider.shutdown();
  });

  test('JSON exporter with gzip: the same run, stored alike', async () => {
    const exporter = new JsonExporter({ url: `${base}/v1/traces`, headers: headers(), compression: 'gzip' as never });
    const provider = providerWith(exporter);
    const { chat } = genAiRun(provider, 'conv-json');
    await provider.forceFlush();
    const events = await eventsOf('conv-json');
    assert.equal(events.length, 9);
    const response = events.find((e) => e.eventType === 'llm_response')!;
    assert.deepEqual(response.payload.usage, { inputTokens: 1200, outputTokens: 300, totalTokens: 1500 });
    assert.equal(response.metadata.otel.spanId, chat.spanContext().spanId);
    assert.equal(response.metadata.otel.durationMs, 1500.000123);
    await assertChainValid('conv-json', 9);
    await provider.shutdown();
  });

  // (A call the API refuses leaves no span: this instrumentation ends its span only on success; failed LLM calls are covered by the GenAI spans above.)
  test('OpenInference instrumentation of the openai package: a chat completion nested under the agent span', async () => {
    const provider = providerWith(new ProtobufExporter({ url: `${base}/v1/traces`, headers: headers() }));
    openAiInstrumentation.setTracerProvider(provider);
    const client = new openaiModule.OpenAI({ apiKey: 'sk-test', baseURL: `${fakeOpenAi.url}/v1`, maxRetries: 0 });
    const tracer = provider.getTracer('vigil-test-agent');
    const root = tracer.startSpan('invoke_agent geographer', {
      attributes: { 'gen_ai.operation.name': 'invoke_agent', 'gen_ai.conversation.id': 'conv-openai' },
    });
    await context.with(trace.setSpan(context.active(), root), async () => {
      const completion = await client.chat.completions.create({
        model: 'gpt-4o-mini',
        messages: [
          { role: 'system', content: 'Answer in one word.' },
          { role: 'user', content: 'Capital of France?' },
        ],
      });
      assert.equal(completion.choices[0]!.message.content, 'Paris.');
    });
    root.end();
    await provider.forceFlush();

    const events = await eventsOf('conv-openai');
    assert.deepEqual(
      events.map((e) => e.eventType),
      ['llm_call', 'llm_response', 'custom'],
    );
    const [call, response, agent] = events;
    assert.equal(call!.metadata.otel.kind, 'llm');
    assert.equal(call!.metadata.otel.parentSpanId, root.spanContext().spanId);
    assert.equal(call!.metadata.otel.traceId, root.spanContext().traceId);
    assert.equal(call!.agentId, 'research-service', 'no gen_ai.agent.name: the service name');
    assert.deepEqual(call!.payload.messages, [
      { role: 'system', content: 'Answer in one word.' },
      { role: 'user', content: 'Capital of France?' },
    ]);
    assert.equal(call!.payload.provider, 'openai');
    assert.equal(response!.payload.model, 'gpt-4o-mini-2024-07-18');
    assert.equal(response!.payload.completion, 'Paris.');
    assert.deepEqual(response!.payload.usage, { inputTokens: 42, outputTokens: 7, totalTokens: 49 });
    const expectedCost = prices.costUsd('gpt-4o-mini-2024-07-18', 'openai', 42, 7);
    assert.ok(expectedCost !== undefined && expectedCost > 0);
    assert.equal(response!.payload.costUsd, expectedCost);
    assert.equal(response!.metadata.costUnpriced, undefined);
    assert.equal(response!.payload.finishReason, 'stop');
    assert.equal(agent!.metadata.otel.spanId, root.spanContext().spanId);
    await assertChainValid('conv-openai', 3);
    await provider.shutdown();
  });

  test('OpenInference instrumentation of a streamed chat completion without usage: 0 tokens and $0, flagged usageUnknown as the SDK flags it', async () => {
    const provider = providerWith(new JsonExporter({ url: `${base}/v1/traces`, headers: headers() }));
    openAiInstrumentation.setTracerProvider(provider);
    const client = new openaiModule.OpenAI({ apiKey: 'sk-test', baseURL: `${fakeOpenAi.url}/v1`, maxRetries: 0 });
    const root = provider.getTracer('vigil-test-agent').startSpan('invoke_agent streamer', { attributes: { 'gen_ai.conversation.id': 'conv-stream' } });
    await context.with(trace.setSpan(context.active(), root), async () => {
      const stream = await client.chat.completions.create({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'Capital of France?' }] });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      assert.equal(text, 'Paris.');
    });
    root.end();
    await provider.forceFlush();

    const response = (await eventsOf('conv-stream')).find((e) => e.eventType === 'llm_response');
    assert.ok(response, 'the streamed call is stored');
    assert.deepEqual(response.payload.usage, { inputTokens: 0, outputTokens: 0, totalTokens: 0 });
    assert.equal(response.payload.costUsd, 0);
    assert.equal(response.metadata.usageUnknown, true);
    assert.equal(response.payload.completion, 'Paris.');
    await provider.shutdown();
  });

  for (const [format, exporter] of [
    ['protobuf', (url: string, headers: Record<string, string>) => new ProtobufExporter({ url, headers })],
    ['JSON', (url: string, headers: Record<string, string>) => new JsonExporter({ url, headers })],
  ] as const) {
    test(`OpenLLMetry spans (${format}): the session_id association property names the session; traceloop.span.kind tool, task, agent, workflow map as their OpenInference kinds`, async () => {
      const sessionId = `traceloop-${format}`;
      const provider = providerWith(exporter(`${base}/v1/traces`, headers()));
      openLlmetryRun(provider, sessionId);
      await provider.forceFlush();

      const events = await eventsOf(sessionId);
      assert.deepEqual(
        events.map((e) => [e.eventType, e.metadata.otel.name, e.metadata.otel.kind]),
        [
          ['custom', 'classify.task', 'chain'],
          ['tool_call', 'lookup_order.tool', 'tool'],
          ['tool_response', 'lookup_order.tool', 'tool'],
          ['llm_call', 'openai.chat', 'llm'],
          ['llm_response', 'openai.chat', 'llm'],
          ['custom', 'triage.agent', 'agent'],
          ['custom', 'support.workflow', 'chain'],
        ],
      );
      const [, toolCall, toolResponse, , llmResponse] = events;
      assert.deepEqual(toolCall!.payload, {
        toolName: 'lookup_order',
        callId: toolCall!.metadata.otel.spanId,
        arguments: { args: [], kwargs: { orderId: 'A-17' } },
      });
      assert.deepEqual(toolResponse!.payload.result, { status: 'shipped' });
      assert.equal(llmResponse!.metadata.usageUnknown, true, 'no token counts on the span');
      assert.equal(llmResponse!.payload.costUsd, 0);
      const session = await observe.call({ method: 'GET', url: `/api/sessions/${sessionId}` });
      assert.equal(session.statusCode, 200, 'the session is the association property, not the trace id');
      await assertChainValid(sessionId, 7);
      await provider.shutdown();
    });
  }
});
