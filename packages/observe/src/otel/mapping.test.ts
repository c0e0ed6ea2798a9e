import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PriceTable } from '@vigil/pricing';
import { boundedId, mapSpan, MAX_ID_LENGTH, resolveIdentities, spanKind, type SpanMapping } from './mapping.ts';
import type { Attributes, OtlpSpan } from './spans.ts';

const prices = PriceTable.fromDefaults();
const START = 1_795_600_000_000_000_000n;
const identity = { sessionId: 's1', agentId: 'a1' };

function span(attributes: Attributes, changes: Partial<OtlpSpan> = {}): OtlpSpan {
  return {
    traceId: 'ab'.repeat(16),
    spanId: 'cd'.repeat(8),
    parentSpanId: null,
    name: 'span',
    startNanos: START,
    endNanos: START + 2_500_000n,
    attributes,
    events: [],
    status: { code: 'unset', message: '' },
    resource: {},
    ...changes,
  };
}

function eventsOf(mapping: SpanMapping) {
  assert.ok('events' in mapping, JSON.stringify(mapping));
  return mapping.events;
}

test('the kind comes from openinference.span.kind, else gen_ai.operation.name, else other', () => {
  const kinds = [
    [{ 'openinference.span.kind': 'LLM' }, 'llm'],
    [{ 'openinference.span.kind': 'TOOL' }, 'tool'],
    [{ 'openinference.span.kind': 'AGENT' }, 'agent'],
    [{ 'openinference.span.kind': 'CHAIN' }, 'chain'],
    [{ 'openinference.span.kind': 'RETRIEVER' }, 'retriever'],
    [{ 'openinference.span.kind': 'EMBEDDING' }, 'embedding'],
    [{ 'openinference.span.kind': 'RERANKER' }, 'other'],
    [{ 'gen_ai.operation.name': 'chat' }, 'llm'],
    [{ 'gen_ai.operation.name': 'text_completion' }, 'llm'],
    [{ 'gen_ai.operation.name': 'embeddings' }, 'embedding'],
    [{ 'gen_ai.operation.name': 'execute_tool' }, 'tool'],
    [{ 'gen_ai.operation.name': 'invoke_agent' }, 'agent'],
    [{ 'llm.request.type': 'chat' }, 'llm'],
    [{ 'http.method': 'GET' }, 'other'],
  ] as const;
  for (const [attributes, kind] of kinds) assert.equal(spanKind(span(attributes)), kind, JSON.stringify(attributes));
});

test('an OpenInference LLM span: flattened messages and tool calls, token counts, the cost it carries', () => {
  const [call, response] = eventsOf(
    mapSpan(
      span({
        'openinference.span.kind': 'LLM',
        'llm.provider': 'openai',
        'llm.model_name': 'gpt-4o',
        'llm.invocation_parameters': '{"temperature":0}',
        'llm.input_messages.0.message.role': 'system',
        'llm.input_messages.0.message.content': 'Be brief.',
        'llm.input_messages.1.message.role': 'user',
        'llm.input_messages.1.message.contents.0.message_content.text': 'Weather in Oslo?',
        'llm.output_messages.0.message.role': 'assistant',
        'llm.output_messages.0.message.tool_calls.0.tool_call.id': 'call_9',
        'llm.output_messages.0.message.tool_calls.0.tool_call.function.name': 'weather',
        'llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments': '{"city":"Oslo"}',
        'llm.token_count.prompt': 20,
        'llm.token_count.completion': 5,
        'llm.cost.total': 0.5,
      }),
      identity,
      prices,
    ),
  );
  assert.deepEqual(call!.payload.messages, [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Weather in Oslo?' },
  ]);
  assert.deepEqual(call!.payload.parameters, { temperature: 0 });
  assert.deepEqual(response!.payload.toolCalls, [{ id: 'call_9', name: 'weather', arguments: { city: 'Oslo' } }]);
  assert.equal(response!.payload.finishReason, 'tool_calls');
  assert.deepEqual(response!.payload.usage, { inputTokens: 20, outputTokens: 5, totalTokens: 25 });
  assert.equal(response!.payload.costUsd, 0.5, 'the cost the span carries wins over the price table');
  assert.equal(response!.payload.latencyMs, 2.5);
});

test('OpenLLMetry indexed prompts and completions, and the older GenAI message events', () => {
  const [call, response] = eventsOf(
    mapSpan(
      span({
        'llm.request.type': 'chat',
        'gen_ai.system': 'anthropic',
        'gen_ai.request.model': 'claude-haiku-4-5',
        'gen_ai.prompt.0.role': 'user',
        'gen_ai.prompt.0.content': 'Hello',
        'gen_ai.completion.0.role': 'assistant',
        'gen_ai.completion.0.content': 'Hi!',
        'gen_ai.completion.0.finish_reason': 'end_turn',
        'gen_ai.usage.prompt_tokens': 3,
        'gen_ai.usage.completion_tokens': 2,
      }),
      identity,
      prices,
    ),
  );
  assert.deepEqual(call!.payload.messages, [{ role: 'user', content: 'Hello' }]);
  assert.equal(call!.payload.provider, 'anthropic');
  assert.equal(response!.payload.completion, 'Hi!');
  assert.equal(response!.payload.finishReason, 'end_turn');
  assert.equal(response!.payload.costUsd, prices.costUsd('claude-haiku-4-5', 'anthropic', 3, 2));

  const [eventCall, eventResponse] = eventsOf(
    mapSpan(
      span(
        { 'gen_ai.operation.name': 'chat', 'gen_ai.system': 'openai', 'gen_ai.request.model': 'gpt-4o' },
        {
          events: [
            { name: 'gen_ai.system.message', timeNanos: START, attributes: { content: 'Be kind.' } },
            { name: 'gen_ai.user.message', timeNanos: START, attributes: { content: 'Hi' } },
            { name: 'gen_ai.choice', timeNanos: START, attributes: { finish_reason: 'stop', message: '{"role":"assistant","content":"Hello!"}' } },
          ],
        },
      ),
      identity,
      prices,
    ),
  );
  assert.deepEqual(eventCall!.payload.messages, [
    { role: 'system', content: 'Be kind.' },
    { role: 'user', content: 'Hi' },
  ]);
  assert.equal(eventResponse!.payload.completion, 'Hello!');
  assert.equal(eventResponse!.payload.finishReason, 'stop');
});

test('a model without a price costs 0 and is flagged costUnpriced, as the SDK does', () => {
  const [, response] = eventsOf(
    mapSpan(span({ 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'in-house-7b', 'gen_ai.usage.input_tokens': 10 }), identity, prices),
  );
  assert.equal(response!.payload.costUsd, 0);
  assert.equal(response!.metadata!.costUnpriced, true);
  assert.equal(response!.payload.provider, 'unknown');
});

test('an OpenInference tool span: tool.name, input.value as the arguments, output.value as the result', () => {
  const [call, result] = eventsOf(
    mapSpan(span({ 'openinference.span.kind': 'TOOL', 'tool.name': 'lookup', 'input.value': '{"id":7}', 'output.value': 'found' }), identity, prices),
  );
  assert.deepEqual(call!.payload, { toolName: 'lookup', callId: 'cd'.repeat(8), arguments: { id: 7 } });
  assert.deepEqual(result!.payload, { toolName: 'lookup', callId: 'cd'.repeat(8), result: 'found', durationMs: 2.5 });
  assert.equal(result!.timestamp, Number(START / 1_000_000n) + 2);
});

test('a failed tool span: tool_error with the exception event message and type', () => {
  const [, failure] = eventsOf(
    mapSpan(
      span(
        { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'fetch' },
        {
          status: { code: 'error', message: '' },
          events: [{ name: 'exception', timeNanos: START, attributes: { 'exception.type': 'TimeoutError', 'exception.message': 'timed out' } }],
        },
      ),
      identity,
      prices,
    ),
  );
  assert.equal(failure!.eventType, 'tool_error');
  assert.equal(failure!.severity, 'error');
  assert.deepEqual([failure!.payload.error, failure!.payload.errorCode], ['timed out', 'TimeoutError']);
});

test('any other span is one custom event named after the span, with its attributes; an error span is severity error', () => {
  const events = eventsOf(
    mapSpan(
      span({ 'openinference.span.kind': 'CHAIN', 'input.value': 'q' }, { name: 'plan', status: { code: 'error', message: 'no plan' } }),
      identity,
      prices,
    ),
  );
  assert.equal(events.length, 1);
  assert.equal(events[0]!.eventType, 'custom');
  assert.deepEqual(events[0]!.payload, { type: 'plan', data: { 'openinference.span.kind': 'CHAIN', 'input.value': 'q', 'otel.status_message': 'no plan' } });
  assert.equal(events[0]!.severity, 'error');
  assert.equal((events[0]!.metadata!.otel as { kind: string }).kind, 'chain');
});

test('a span whose events ingest would refuse is refused with the reason', () => {
  const reserved = mapSpan(span({ 'gen_ai.operation.name': 'chat' }), { sessionId: 's', agentId: 'system' }, prices);
  assert.ok('reason' in reserved && /agentId/.test(reserved.reason));
  const nul = mapSpan(span({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'a\u0000b' }), identity, prices);
  assert.ok('reason' in nul && /U\+0000/.test(nul.reason), JSON.stringify(nul));
});

test('sessions and agents: own attributes, else the nearest ancestor in the request, else the trace, else stored, else the trace id; ids stay within bounds', () => {
  const trace = 'ab'.repeat(16);
  const root = span({ 'gen_ai.conversation.id': 'conv', 'gen_ai.agent.name': 'planner' }, { spanId: '1'.repeat(16) });
  const child = span({}, { spanId: '2'.repeat(16), parentSpanId: '1'.repeat(16), resource: { 'service.name': 'svc' } });
  const stray = span({}, { traceId: 'ef'.repeat(16), spanId: '3'.repeat(16), resource: { 'service.name': 'unknown_service:node' } });
  const stored = span({}, { traceId: '12'.repeat(16), spanId: '4'.repeat(16) });
  const identities = resolveIdentities([child, root, stray, stored], new Map([['12'.repeat(16), 'earlier']]));
  assert.deepEqual(identities.get(`${trace}:${'2'.repeat(16)}`), { sessionId: 'conv', agentId: 'planner' });
  assert.deepEqual(identities.get(`${'ef'.repeat(16)}:${'3'.repeat(16)}`), { sessionId: 'ef'.repeat(16), agentId: 'otel' });
  assert.deepEqual(identities.get(`${'12'.repeat(16)}:${'4'.repeat(16)}`), { sessionId: 'earlier', agentId: 'otel' });

  const long = 'x'.repeat(300);
  assert.equal(boundedId(long).length, MAX_ID_LENGTH);
  assert.notEqual(boundedId(long), boundedId(`${long}y`));
  assert.equal(boundedId('short'), 'short');
});
