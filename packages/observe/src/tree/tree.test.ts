// GET /api/sessions/:id/tree through HTTP on both databases.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { assertErrorBody, ingest, startTestObserve, type EventInput, type TestObserve } from '../testing.ts';
import { TREE_EVENT_LIMIT } from './build.ts';

interface Node {
  id: string;
  name: string;
  kind: string;
  status: string;
  startTime: string;
  endTime: string;
  durationMs: number;
  eventIds: string[];
  eventTypes: string[];
  span: { traceId: string; spanId: string; parentSpanId: string | null } | null;
  toolName?: string;
  children: Node[];
}

interface TreeBody {
  sessionId: string;
  startTime: string | null;
  endTime: string | null;
  durationMs: number;
  eventCount: number;
  nodeCount: number;
  truncated: boolean;
  eventLimit: number;
  roots: Node[];
}

const T0 = Date.parse('2026-11-22T09:00:00.000Z');
const at = (ms: number): string => new Date(T0 + ms).toISOString();
const TRACE = 'a'.repeat(32);

function spanMeta(spanId: string, parentSpanId: string | null, name: string, kind: string, start: number, end: number) {
  return {
    otel: { traceId: TRACE, spanId, parentSpanId, name, kind, startTime: at(start), endTime: at(end), durationMs: end - start },
  };
}

await describeEachDatabase('GET /api/sessions/:id/tree', (backend) => {
  let observe: TestObserve;
  let ids: string[];
  before(async () => {
    observe = await startTestObserve(backend);
    const s = { sessionId: 'traced', agentId: 'agent' };
    const root = spanMeta('1000000000000001', null, 'handle request', 'agent', 0, 1000);
    const tool = spanMeta('1000000000000002', '1000000000000001', 'lookup_order', 'tool', 200, 700);
    ids = await ingest(observe, [
      { ...s, eventType: 'custom', timestamp: at(0), metadata: root, payload: { type: 'agent', data: {} } },
      { ...s, eventType: 'tool_call', timestamp: at(200), metadata: tool, payload: { callId: 't1', toolName: 'lookup_order', arguments: { id: 7 } } },
      {
        ...s,
        eventType: 'tool_response',
        timestamp: at(700),
        metadata: tool,
        payload: { callId: 't1', toolName: 'lookup_order', result: {}, durationMs: 500 },
      },
      { ...s, eventType: 'tool_call', timestamp: at(1200), payload: { callId: 'sdk-1', toolName: 'send_mail', arguments: {} } },
    ]);
  });
  after(() => observe.close());

  test('answers the nested nodes with timings, in the documented shape', async () => {
    const response = await observe.call({ method: 'GET', url: '/api/sessions/traced/tree' });
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json() as TreeBody;
    assert.deepEqual(
      { ...body, roots: undefined },
      {
        sessionId: 'traced',
        startTime: at(0),
        endTime: at(1200),
        durationMs: 1200,
        eventCount: 4,
        nodeCount: 3,
        truncated: false,
        eventLimit: TREE_EVENT_LIMIT,
        roots: undefined,
      },
    );
    assert.deepEqual(body.roots, [
      {
        id: ids[0],
        name: 'handle request',
        kind: 'agent',
        status: 'ok',
        startTime: at(0),
        endTime: at(1000),
        durationMs: 1000,
        eventIds: [ids[0]],
        eventTypes: ['custom'],
        span: { traceId: TRACE, spanId: '1000000000000001', parentSpanId: null },
        children: [
          {
            id: ids[1],
            name: 'lookup_order',
            kind: 'tool',
            status: 'ok',
            startTime: at(200),
            endTime: at(700),
            durationMs: 500,
            eventIds: [ids[1], ids[2]],
            eventTypes: ['tool_call', 'tool_response'],
            span: { traceId: TRACE, spanId: '1000000000000002', parentSpanId: '1000000000000001' },
            toolName: 'lookup_order',
            children: [],
          },
        ],
      },
      {
        id: ids[3],
        name: 'send_mail',
        kind: 'tool',
        status: 'open',
        startTime: at(1200),
        endTime: at(1200),
        durationMs: 0,
        eventIds: [ids[3]],
        eventTypes: ['tool_call'],
        span: null,
        toolName: 'send_mail',
        children: [],
      },
    ]);
  });

  test('an unknown session is a 404 in the error body', async () => {
    const response = await observe.call({ method: 'GET', url: '/api/sessions/nobody/tree' });
    assertErrorBody(response, 404);
  });

  test('needs a key with the read scope', async () => {
    assertErrorBody(await observe.service.app.inject({ method: 'GET', url: '/api/sessions/traced/tree' }), 401);
    const keyWith = async (scopes: string[]) => {
      const created = await observe.call({ method: 'POST', url: '/api/keys', payload: { name: scopes.join('-'), scopes } });
      assert.equal(created.statusCode, 201, created.body);
      return (created.json() as { key: string }).key;
    };
    const asKey = async (key: string) =>
      observe.service.app.inject({ method: 'GET', url: '/api/sessions/traced/tree', headers: { authorization: `Bearer ${key}` } });
    assertErrorBody(await asKey(await keyWith(['ingest'])), 403);
    assert.equal((await asKey(await keyWith(['read']))).statusCode, 200);
  });

  test(`a session of more than ${TREE_EVENT_LIMIT.toLocaleString('en')} events answers the tree of the first ones with truncated: true`, async () => {
    const events: EventInput[] = [];
    for (let i = 0; i <= TREE_EVENT_LIMIT; i++) {
      events.push({ sessionId: 'long', agentId: 'agent', eventType: 'custom', timestamp: at(i), payload: { type: `step-${i}`, data: {} } });
    }
    await ingest(observe, events);
    const response = await observe.call({ method: 'GET', url: '/api/sessions/long/tree' });
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json() as TreeBody;
    assert.deepEqual([body.truncated, body.eventCount, body.nodeCount, body.roots.length], [true, TREE_EVENT_LIMIT, TREE_EVENT_LIMIT, TREE_EVENT_LIMIT]);
    assert.equal(body.roots.at(-1)!.name, `step-${TREE_EVENT_LIMIT - 1}`);
    assert.equal(body.endTime, at(TREE_EVENT_LIMIT - 1));
  });
});
