// The tree builder over events stored by the real ingest (POST /api/events), read with the tree's
// own query and built without HTTP.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { ingest, startTestObserve, type EventInput, type TestObserve } from '../testing.ts';
import { TREE_MAX_DEPTH, type SessionTree, type TreeNode } from './build.ts';
import { sessionTree } from './service.ts';

const T0 = Date.parse('2026-11-22T09:00:00.000Z');
const at = (ms: number): string => new Date(T0 + ms).toISOString();
const traceId = (n: number): string => n.toString(16).padStart(32, '0');
const spanId = (name: string): string => Buffer.from(name).toString('hex').padStart(16, '0').slice(-16);

interface SpanSpec {
  trace: number;
  name: string;
  parent: string | null;
  kind: string;
  start: number;
  end: number;
}

/** metadata.otel as OTLP ingest stores it on every event of a span. */
function otel(span: SpanSpec): Record<string, unknown> {
  return {
    otel: {
      traceId: traceId(span.trace),
      spanId: spanId(span.name),
      parentSpanId: span.parent === null ? null : spanId(span.parent),
      name: span.name,
      kind: span.kind,
      startTime: at(span.start),
      endTime: at(span.end),
      durationMs: span.end - span.start,
      resource: { 'service.name': 'test-agent' },
    },
  };
}

/** The events a span becomes: an LLM or tool pair (call at the start, outcome at the end, same metadata), else one custom event. */
function spanEvents(sessionId: string, span: SpanSpec, options: { fail?: boolean } = {}): EventInput[] {
  const base = { sessionId, agentId: 'agent', metadata: otel(span) };
  const callId = `span-${span.name}`;
  if (span.kind === 'llm') {
    return [
      { ...base, eventType: 'llm_call', timestamp: at(span.start), payload: { callId, provider: 'openai', model: 'gpt-4o-mini', messages: [] } },
      {
        ...base,
        eventType: 'llm_response',
        timestamp: at(span.end),
        payload: {
          callId,
          provider: 'openai',
          model: 'gpt-4o-mini',
          completion: 'ok',
          finishReason: 'stop',
          usage: { inputTokens: 120, outputTokens: 30 },
          costUsd: 0.0004,
          latencyMs: span.end - span.start,
        },
      },
    ];
  }
  if (span.kind === 'tool') {
    const outcome = options.fail
      ? { eventType: 'tool_error', severity: 'error', payload: { callId, toolName: span.name, error: 'upstream timed out', durationMs: span.end - span.start } }
      : { eventType: 'tool_response', payload: { callId, toolName: span.name, result: { ok: true }, durationMs: span.end - span.start } };
    return [
      { ...base, eventType: 'tool_call', timestamp: at(span.start), payload: { callId, toolName: span.name, arguments: {} } },
      { ...base, timestamp: at(span.end), ...outcome },
    ];
  }
  return [{ ...base, eventType: 'custom', timestamp: at(span.start), payload: { type: 'span', data: { name: span.name } } }];
}

const sdk = (sessionId: string, eventType: string, ms: number, payload: Record<string, unknown>, severity?: string): EventInput => ({
  sessionId,
  agentId: 'agent',
  eventType,
  timestamp: at(ms),
  payload,
  ...(severity && { severity }),
});
const llmCall = (s: string, ms: number, callId: string, model = 'gpt-4o') => sdk(s, 'llm_call', ms, { callId, provider: 'openai', model, messages: [] });
const llmResponse = (s: string, ms: number, callId: string, latencyMs: number) =>
  sdk(s, 'llm_response', ms, {
    callId,
    provider: 'openai',
    model: 'gpt-4o',
    completion: 'hi',
    finishReason: 'stop',
    usage: { inputTokens: 10, outputTokens: 5 },
    costUsd: 0.001,
    latencyMs,
  });
const toolCall = (s: string, ms: number, callId: string, toolName = 'search') => sdk(s, 'tool_call', ms, { callId, toolName, arguments: {} });
const toolResponse = (s: string, ms: number, callId: string, durationMs: number, toolName = 'search') =>
  sdk(s, 'tool_response', ms, { callId, toolName, result: 'found', durationMs });
const toolError = (s: string, ms: number, callId: string, durationMs: number, toolName = 'search') =>
  sdk(s, 'tool_error', ms, { callId, toolName, error: { message: 'boom' }, durationMs }, 'error');

/** The tree as names nested like the nodes: `[name, [children]]`. */
type Shape = [string, Shape[]];
const shape = (nodes: TreeNode[]): Shape[] => nodes.map((n) => [n.name, shape(n.children)]);

function find(tree: SessionTree, name: string): TreeNode {
  const stack = [...tree.roots];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node.name === name) return node;
    stack.push(...node.children);
  }
  assert.fail(`no node named ${name}`);
}

await describeEachDatabase('trace tree builder', (backend) => {
  let observe: TestObserve;
  const tree = async (sessionId: string, limit?: number): Promise<SessionTree> => {
    const built = await sessionTree(observe.service.context, sessionId, limit);
    assert.ok(built, `session ${sessionId} exists`);
    return built;
  };
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  test('spans nest by parentSpanId whatever order they arrive in; an orphan and a second trace are roots, ordered by start', async () => {
    const s = 'otel-nested';
    const spans: Record<string, SpanSpec> = {
      agent: { trace: 1, name: 'agent', parent: null, kind: 'agent', start: 0, end: 1000 },
      plan: { trace: 1, name: 'plan', parent: 'agent', kind: 'chain', start: 100, end: 900 },
      chat: { trace: 1, name: 'chat', parent: 'plan', kind: 'llm', start: 150, end: 450 },
      fetch: { trace: 1, name: 'fetch', parent: 'plan', kind: 'tool', start: 500, end: 800 },
      lookup: { trace: 1, name: 'lookup', parent: 'agent', kind: 'retriever', start: 50, end: 90 },
      orphan: { trace: 1, name: 'orphan', parent: 'missing', kind: 'tool', start: 1200, end: 1300 },
      second: { trace: 2, name: 'second', parent: null, kind: 'weird-kind', start: 1100, end: 1500 },
    };
    // Children before parents, in separate batches: the chain order is not the tree's order.
    await ingest(observe, [...spanEvents(s, spans.fetch!, { fail: true }), ...spanEvents(s, spans.orphan!)]);
    await ingest(observe, [...spanEvents(s, spans.chat!), ...spanEvents(s, spans.second!), ...spanEvents(s, spans.lookup!)]);
    await ingest(observe, [...spanEvents(s, spans.plan!), ...spanEvents(s, spans.agent!)]);

    const t = await tree(s);
    assert.deepEqual(shape(t.roots), [
      [
        'agent',
        [
          ['lookup', []],
          [
            'plan',
            [
              ['chat', []],
              ['fetch', []],
            ],
          ],
        ],
      ],
      ['second', []],
      ['orphan', []],
    ]);
    assert.equal(t.startTime, at(0));
    assert.equal(t.endTime, at(1500));
    assert.equal(t.durationMs, 1500);
    assert.equal(t.eventCount, 10);
    assert.equal(t.nodeCount, 7);
    assert.equal(t.truncated, false);

    const chat = find(t, 'chat');
    assert.equal(chat.kind, 'llm');
    assert.equal(chat.status, 'ok');
    assert.deepEqual(chat.eventTypes, ['llm_call', 'llm_response']);
    assert.equal(chat.eventIds.length, 2);
    assert.deepEqual(
      {
        start: chat.startTime,
        end: chat.endTime,
        ms: chat.durationMs,
        model: chat.model,
        provider: chat.provider,
        in: chat.inputTokens,
        out: chat.outputTokens,
        cost: chat.costUsd,
      },
      { start: at(150), end: at(450), ms: 300, model: 'gpt-4o-mini', provider: 'openai', in: 120, out: 30, cost: 0.0004 },
    );
    assert.deepEqual(chat.span, { traceId: traceId(1), spanId: spanId('chat'), parentSpanId: spanId('plan') });
    assert.equal(chat.toolName, undefined);

    const fetch = find(t, 'fetch');
    assert.deepEqual([fetch.kind, fetch.status, fetch.toolName, fetch.error], ['tool', 'error', 'fetch', 'upstream timed out']);
    assert.deepEqual(fetch.eventTypes, ['tool_call', 'tool_error']);
    assert.equal(find(t, 'agent').kind, 'agent');
    assert.deepEqual(find(t, 'agent').eventTypes, ['custom']);
    assert.equal(find(t, 'agent').status, 'ok', "a child's error is not its parent's");
    assert.equal(find(t, 'second').kind, 'other', 'an unknown span kind reads as other');
    assert.equal(find(t, 'orphan').span?.parentSpanId, spanId('missing'));
  });

  test('SDK events pair by callId: tool and llm nodes with their durations, a failed LLM call, an open call, an outcome without call, leaves', async () => {
    const s = 'sdk-pairs';
    await ingest(observe, [
      sdk(s, 'session_started', 0, { agentName: 'Agent' }),
      llmCall(s, 100, 'l1'),
      llmResponse(s, 1100, 'l1', 900), // latencyMs wins over the 1,000 ms between the events
      toolCall(s, 1200, 'same'),
      toolResponse(s, 1650, 'same', 450),
      toolCall(s, 1700, 'same'), // a reused callId pairs call by call
      toolError(s, 1900, 'same', 200),
      llmCall(s, 2000, 'l2', 'gpt-4o'),
      sdk(s, 'tool_error', 2300, { callId: 'l2', toolName: 'openai:gpt-4o', error: 'rate limited', errorCode: 429, durationMs: 300 }, 'error'),
      toolResponse(s, 2500, 'lost-call', 100, 'fetch'),
      sdk(s, 'custom', 2600, { type: 'checkpoint', data: {} }),
      toolCall(s, 2700, 'never', 'wait_for_human'),
      sdk(s, 'session_ended', 3000, { reason: 'completed' }),
    ]);
    const t = await tree(s);
    const summary = t.roots.map((n) => [n.name, n.kind, n.status, n.startTime, n.durationMs, n.eventTypes.join('+')]);
    assert.deepEqual(summary, [
      ['session_started', 'event', 'ok', at(0), 0, 'session_started'],
      ['openai/gpt-4o', 'llm', 'ok', at(100), 900, 'llm_call+llm_response'],
      ['search', 'tool', 'ok', at(1200), 450, 'tool_call+tool_response'],
      ['search', 'tool', 'error', at(1700), 200, 'tool_call+tool_error'],
      ['openai/gpt-4o', 'llm', 'error', at(2000), 300, 'llm_call+tool_error'],
      ['fetch', 'tool', 'ok', at(2400), 100, 'tool_response'],
      ['checkpoint', 'event', 'ok', at(2600), 0, 'custom'],
      ['wait_for_human', 'tool', 'open', at(2700), 300, 'tool_call'],
      ['session_ended', 'event', 'ok', at(3000), 0, 'session_ended'],
    ]);
    const [, llm, firstTool, , failedLlm, , , open] = t.roots;
    assert.deepEqual([llm!.endTime, llm!.model, llm!.inputTokens, llm!.outputTokens, llm!.costUsd], [at(1000), 'gpt-4o', 10, 5, 0.001]);
    assert.equal(llm!.span, null);
    assert.equal(firstTool!.toolName, 'search');
    assert.deepEqual([failedLlm!.error, failedLlm!.toolName, failedLlm!.provider], ['rate limited', undefined, 'openai']);
    assert.equal(open!.endTime, at(3000), 'an open call runs until the last event read');
    assert.ok(t.roots.every((n) => n.children.length === 0));
  });

  test('span and SDK events of one session sit side by side; metadata.otel without ids is no span', async () => {
    const s = 'mixed';
    await ingest(observe, [
      ...spanEvents(s, { trace: 3, name: 'root', parent: null, kind: 'chain', start: 500, end: 900 }),
      toolCall(s, 100, 'c1'),
      { ...toolResponse(s, 300, 'c1', 200), metadata: { otel: { traceId: traceId(3), name: 'no span id' } } },
    ]);
    const t = await tree(s);
    assert.deepEqual(shape(t.roots), [
      ['search', []],
      ['root', []],
    ]);
    assert.equal(t.roots[0]!.status, 'ok');
    assert.equal(t.roots[0]!.span, null);
  });

  test('a parent cycle in hostile metadata loses no node: one span of the cycle becomes a root', async () => {
    const s = 'cycle';
    await ingest(observe, [
      ...spanEvents(s, { trace: 4, name: 'a', parent: 'b', kind: 'chain', start: 0, end: 10 }),
      ...spanEvents(s, { trace: 4, name: 'b', parent: 'a', kind: 'chain', start: 5, end: 10 }),
      ...spanEvents(s, { trace: 4, name: 'self', parent: 'self', kind: 'chain', start: 20, end: 30 }),
    ]);
    const t = await tree(s);
    assert.deepEqual(shape(t.roots), [
      ['a', [['b', []]]],
      ['self', []],
    ]);
    assert.equal(t.nodeCount, 3);
  });

  test(`nesting deeper than ${TREE_MAX_DEPTH} levels hangs from the ancestor at that level, in start order`, async () => {
    const s = 'deep';
    const depth = TREE_MAX_DEPTH + 5;
    const events: EventInput[] = [];
    for (let i = 0; i < depth; i++) {
      events.push(...spanEvents(s, { trace: 5, name: `level-${i + 1}`, parent: i === 0 ? null : `level-${i}`, kind: 'chain', start: i, end: 1000 - i }));
    }
    await ingest(observe, events.reverse());
    const t = await tree(s);
    let node = t.roots[0]!;
    for (let level = 1; level < TREE_MAX_DEPTH; level++) {
      assert.equal(node.name, `level-${level}`);
      assert.equal(node.children.length, 1);
      node = node.children[0]!;
    }
    assert.equal(node.name, `level-${TREE_MAX_DEPTH}`);
    assert.deepEqual(
      shape(node.children),
      [41, 42, 43, 44, 45].map((n) => [`level-${n}`, []]),
    );
    assert.equal(t.nodeCount, depth);
  });

  test('truncated: only the first events in timeline order are read, and a call whose outcome lies beyond is open', async () => {
    const s = 'long';
    await ingest(observe, [
      sdk(s, 'session_started', 0, {}),
      toolCall(s, 10, 'a'),
      toolResponse(s, 20, 'a', 10),
      toolCall(s, 30, 'b'),
      toolResponse(s, 40, 'b', 10),
      sdk(s, 'session_ended', 50, { reason: 'completed' }),
    ]);
    const cut = await tree(s, 4);
    assert.deepEqual([cut.truncated, cut.eventCount, cut.nodeCount], [true, 4, 3]);
    assert.deepEqual(
      cut.roots.map((n) => n.status),
      ['ok', 'ok', 'open'],
    );
    assert.equal(cut.endTime, at(30));
    const whole = await tree(s, 6);
    assert.deepEqual([whole.truncated, whole.eventCount, whole.nodeCount], [false, 6, 4]);
  });

  test('an unknown session has no tree', async () => {
    assert.equal(await sessionTree(observe.service.context, 'nobody'), undefined);
  });
});
