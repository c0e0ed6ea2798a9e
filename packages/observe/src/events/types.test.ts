import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { assertErrorShape, ingestEvents, startTestObserve, type TestObserve } from '../testing.ts';
import { INGEST_EVENT_TYPES } from './schemas.ts';

interface ErrorBody {
  error: string;
  status: number;
  details?: { path: string; message: string }[];
}

interface EventOut {
  id: string;
  seq: number;
  sessionId: string;
  eventType: string;
  severity: string;
  payload: Record<string, unknown>;
  metadata: Record<string, unknown>;
}

interface SessionOut {
  id: string;
  agentId: string;
  agentName: string;
  status: string;
  startedAt: string;
  endedAt?: string;
  eventCount: number;
  toolCallCount: number;
  errorCount: number;
  totalCostUsd: number;
  tags: string[];
}

/** The 18 ingestible event types, each with a minimal valid payload and its required fields. */
const TYPES: { eventType: string; payload: Record<string, unknown>; required: string[] }[] = [
  { eventType: 'session_started', payload: {}, required: [] },
  { eventType: 'session_ended', payload: { reason: 'completed' }, required: ['reason'] },
  {
    eventType: 'tool_call',
    payload: { toolName: 'search', callId: 'c1', arguments: { q: 'x' } },
    required: ['toolName', 'callId', 'arguments'],
  },
  {
    eventType: 'tool_response',
    payload: { callId: 'c1', toolName: 'search', result: { hits: 1 }, durationMs: 12 },
    required: ['callId', 'toolName', 'result', 'durationMs'],
  },
  {
    eventType: 'tool_error',
    payload: { callId: 'c1', toolName: 'search', error: 'boom', durationMs: 3 },
    required: ['callId', 'toolName', 'error', 'durationMs'],
  },
  {
    eventType: 'approval_requested',
    payload: { requestId: 'r1', action: 'deploy', params: { env: 'prod' }, urgency: 'high' },
    required: ['requestId', 'action', 'params', 'urgency'],
  },
  {
    eventType: 'approval_granted',
    payload: { requestId: 'r1', action: 'deploy', decidedBy: 'api:ops' },
    required: ['requestId', 'action', 'decidedBy'],
  },
  {
    eventType: 'approval_denied',
    payload: { requestId: 'r1', action: 'deploy', decidedBy: 'api:ops' },
    required: ['requestId', 'action', 'decidedBy'],
  },
  {
    eventType: 'approval_expired',
    payload: { requestId: 'r1', action: 'deploy', decidedBy: 'system:expiry' },
    required: ['requestId', 'action', 'decidedBy'],
  },
  {
    eventType: 'form_submitted',
    payload: { submissionId: 's1', formId: 'f1', fieldCount: 3 },
    required: ['submissionId', 'formId', 'fieldCount'],
  },
  {
    eventType: 'form_completed',
    payload: { submissionId: 's1', formId: 'f1', completedBy: 'alice', durationMs: 5000 },
    required: ['submissionId', 'formId', 'completedBy', 'durationMs'],
  },
  {
    eventType: 'form_expired',
    payload: { submissionId: 's1', formId: 'f1', expiredAfterMs: 60000 },
    required: ['submissionId', 'formId', 'expiredAfterMs'],
  },
  {
    eventType: 'llm_call',
    payload: { callId: 'l1', provider: 'openai', model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] },
    required: ['callId', 'provider', 'model', 'messages'],
  },
  {
    eventType: 'llm_response',
    payload: {
      callId: 'l1',
      provider: 'openai',
      model: 'gpt-4o',
      completion: 'hello',
      finishReason: 'stop',
      usage: { inputTokens: 10, outputTokens: 2 },
      costUsd: 0.001,
      latencyMs: 250,
    },
    required: ['callId', 'provider', 'model', 'completion', 'finishReason', 'usage', 'costUsd', 'latencyMs'],
  },
  {
    eventType: 'cost_tracked',
    payload: { provider: 'openai', model: 'gpt-4o', inputTokens: 10, outputTokens: 2, totalTokens: 12, costUsd: 0.001 },
    required: ['provider', 'model', 'inputTokens', 'outputTokens', 'totalTokens', 'costUsd'],
  },
  {
    eventType: 'alert_triggered',
    payload: { alertRuleId: 'a1', alertName: 'errors', condition: 'error_rate_exceeds', currentValue: 0.5, threshold: 0.1, message: 'too many errors' },
    required: ['alertRuleId', 'alertName', 'condition', 'currentValue', 'threshold', 'message'],
  },
  {
    eventType: 'alert_resolved',
    payload: { alertRuleId: 'a1', alertName: 'errors' },
    required: ['alertRuleId', 'alertName'],
  },
  { eventType: 'custom', payload: { type: 'note', data: { anything: [1, 2] } }, required: ['type', 'data'] },
];

const withoutField = (payload: Record<string, unknown>, field: string) => Object.fromEntries(Object.entries(payload).filter(([key]) => key !== field));

let sessionCounter = 0;
const freshSession = (prefix: string) => `${prefix}-${++sessionCounter}`;

function event(sessionId: string, eventType: string, payload: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return { sessionId, agentId: 'agent-t', eventType, payload, ...extra };
}

await describeEachDatabase('POST /api/events: event types and validation', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  async function storedCounts(): Promise<{ stats: number; rows: number; sessions: number }> {
    const response = await observe.call({ method: 'GET', url: '/api/stats' });
    assert.equal(response.statusCode, 200);
    const stats = response.json() as { totalEvents: number; totalSessions: number };
    const { db } = observe.service.context.database;
    const rows = await db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return { stats: stats.totalEvents, rows: Number(rows.n), sessions: stats.totalSessions };
  }

  /** Sends the request and asserts it is rejected with `status` in the error body and nothing is stored. */
  async function expectRejected(request: { payload: unknown; headers?: Record<string, string> }, status: number): Promise<ErrorBody> {
    const before = await storedCounts();
    const response = await observe.call({
      method: 'POST',
      url: '/api/events',
      ...(typeof request.payload === 'string'
        ? { payload: request.payload, headers: { 'content-type': 'application/json', ...request.headers } }
        : { payload: request.payload as object, ...(request.headers ? { headers: request.headers } : {}) }),
    });
    assert.equal(response.statusCode, status, response.body);
    assert.match(String(response.headers['content-type']), /application\/json/);
    const body = response.json() as ErrorBody;
    assertErrorShape(body, status);
    assert.deepEqual(await storedCounts(), before, 'nothing stored');
    return body;
  }

  async function getEvent(id: string): Promise<EventOut> {
    const response = await observe.call({ method: 'GET', url: `/api/events/${id}` });
    assert.equal(response.statusCode, 200);
    return response.json() as EventOut;
  }

  async function getSession(id: string): Promise<SessionOut> {
    const response = await observe.call({ method: 'GET', url: `/api/sessions/${encodeURIComponent(id)}` });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as SessionOut;
  }

  test('the ingestion schema accepts exactly the 18 event types of docs/api.md', () => {
    assert.equal(TYPES.length, 18);
    assert.deepEqual([...INGEST_EVENT_TYPES].sort(), TYPES.map((t) => t.eventType).sort());
  });

  for (const type of TYPES) {
    test(`${type.eventType} is accepted with a minimal payload and returned as sent`, async () => {
      const sessionId = freshSession(`ok-${type.eventType}`);
      const [ack] = await ingestEvents(observe, [event(sessionId, type.eventType, type.payload)]);
      const stored = await getEvent(ack!.id);
      assert.equal(stored.eventType, type.eventType);
      assert.equal(stored.sessionId, sessionId);
      assert.deepEqual(stored.payload, type.payload);
      assert.equal(stored.severity, 'info');
      assert.deepEqual(stored.metadata, {});
    });
  }

  for (const type of TYPES) {
    for (const field of type.required) {
      test(`${type.eventType} without ${field} is a 400 naming events.0.payload.${field}`, async () => {
        const sessionId = freshSession(`missing-${type.eventType}`);
        const body = await expectRejected({ payload: { events: [event(sessionId, type.eventType, withoutField(type.payload, field))] } }, 400);
        assert.ok(
          body.details?.some((d) => d.path === `events.0.payload.${field}`),
          `details name events.0.payload.${field}: ${JSON.stringify(body.details)}`,
        );
        assert.equal((await observe.call({ method: 'GET', url: `/api/sessions/${sessionId}` })).statusCode, 404);
      });
    }
  }

  test('session_started (no required field) rejects a wrongly typed field, naming its path', async () => {
    const body = await expectRejected({ payload: { events: [event(freshSession('bad-start'), 'session_started', { tags: 'prod' })] } }, 400);
    assert.ok(
      body.details?.some((d) => d.path === 'events.0.payload.tags'),
      JSON.stringify(body.details),
    );
  });

  test('the path names the index of the offending event in the batch', async () => {
    const sessionId = freshSession('index');
    const ok = event(sessionId, 'custom', { type: 't', data: 1 });
    const body = await expectRejected({ payload: { events: [ok, ok, event(sessionId, 'tool_call', { toolName: 'x', arguments: {} })] } }, 400);
    assert.ok(
      body.details?.some((d) => d.path === 'events.2.payload.callId'),
      JSON.stringify(body.details),
    );
  });

  test('a missing payload is a 400 naming events.0.payload', async () => {
    const body = await expectRejected({ payload: { events: [{ sessionId: freshSession('nopayload'), agentId: 'a', eventType: 'custom' }] } }, 400);
    assert.ok(
      body.details?.some((d) => d.path.startsWith('events.0.payload')),
      JSON.stringify(body.details),
    );
  });

  test('eval_result is rejected with 400 (produced only by the service)', async () => {
    await expectRejected({ payload: { events: [event(freshSession('eval'), 'eval_result', { method: 'compliance', score: 1, passed: true })] } }, 400);
  });

  test('an unknown eventType is rejected with 400', async () => {
    await expectRejected({ payload: { events: [event(freshSession('unknown'), 'tool_called', { toolName: 'x' })] } }, 400);
  });

  test('missing sessionId or agentId is rejected with 400', async () => {
    const { sessionId: _s, ...noSession } = event('x', 'custom', { type: 't', data: 1 });
    const { agentId: _a, ...noAgent } = event(freshSession('noagent'), 'custom', { type: 't', data: 1 });
    const first = await expectRejected({ payload: { events: [noSession] } }, 400);
    assert.ok(
      first.details?.some((d) => d.path === 'events.0.sessionId'),
      JSON.stringify(first.details),
    );
    const second = await expectRejected({ payload: { events: [noAgent] } }, 400);
    assert.ok(
      second.details?.some((d) => d.path === 'events.0.agentId'),
      JSON.stringify(second.details),
    );
  });

  test('0 events is a 400', async () => {
    await expectRejected({ payload: { events: [] } }, 400);
  });

  test('a body without events is a 400', async () => {
    await expectRejected({ payload: {} }, 400);
    await expectRejected({ payload: { events: 'many' } }, 400);
  });

  test('1000 events in one batch are accepted (201)', async () => {
    const sessionId = freshSession('thousand');
    const before = await storedCounts();
    const events = Array.from({ length: 1000 }, (_, i) => event(sessionId, 'custom', { type: 'n', data: i }));
    const acks = await ingestEvents(observe, events);
    assert.equal(acks.length, 1000);
    assert.equal(new Set(acks.map((a) => a.id)).size, 1000);
    const after = await storedCounts();
    assert.equal(after.stats, before.stats + 1000);
    assert.equal(after.rows, before.rows + 1000);
    assert.equal((await getSession(sessionId)).eventCount, 1000);
  });

  test('1001 events in one batch are rejected (400) and nothing is stored', async () => {
    const sessionId = freshSession('thousand-one');
    const events = Array.from({ length: 1001 }, (_, i) => event(sessionId, 'custom', { type: 'n', data: i }));
    await expectRejected({ payload: { events } }, 400);
    assert.equal((await observe.call({ method: 'GET', url: `/api/sessions/${sessionId}` })).statusCode, 404);
  });

  test('malformed JSON is a 400 in the error body', async () => {
    await expectRejected({ payload: '{"events": [{"sessionId": "s", ' }, 400);
    await expectRejected({ payload: "{'events': []}" }, 400);
  });

  test('an unknown severity is a 400 naming events.0.severity', async () => {
    const body = await expectRejected({ payload: { events: [event(freshSession('sev'), 'custom', { type: 't', data: 1 }, { severity: 'fatal' })] } }, 400);
    assert.ok(
      body.details?.some((d) => d.path === 'events.0.severity'),
      JSON.stringify(body.details),
    );
  });

  test('metadata that is not an object is a 400', async () => {
    await expectRejected({ payload: { events: [event(freshSession('meta'), 'custom', { type: 't', data: 1 }, { metadata: ['x'] })] } }, 400);
  });

  test('a __proto__ key at the top of the body is a 400 in the error body', async () => {
    const sessionId = freshSession('proto-top');
    await expectRejected(
      {
        payload: `{"events":[{"sessionId":"${sessionId}","agentId":"a","eventType":"custom","payload":{"type":"t","data":1}}],"__proto__":{"polluted":true}}`,
      },
      400,
    );
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
  });

  test('a __proto__ key inside an event payload is a 400 in the error body', async () => {
    const sessionId = freshSession('proto-nested');
    await expectRejected(
      {
        payload: `{"events":[{"sessionId":"${sessionId}","agentId":"a","eventType":"custom","payload":{"type":"t","data":{"__proto__":{"isAdmin":true}}}}]}`,
      },
      400,
    );
    assert.equal((await observe.call({ method: 'GET', url: `/api/sessions/${sessionId}` })).statusCode, 404);
  });

  test('text that no database can store as-is (U+0000, a lone surrogate) is stored and returned or a 400, never a 500', async () => {
    for (const [name, json] of [
      ['nul', String.raw`"a\u0000b"`],
      ['lone-surrogate', String.raw`"a\ud800b"`],
    ] as const) {
      const sessionId = freshSession(`text-${name}`);
      const raw = `{"events":[{"sessionId":"${sessionId}","agentId":"a","eventType":"custom","payload":{"type":"t","data":${json}}}]}`;
      const before = await storedCounts();
      const response = await observe.call({ method: 'POST', url: '/api/events', payload: raw, headers: { 'content-type': 'application/json' } });
      if (response.statusCode === 201) {
        const [ack] = (response.json() as { events: { id: string }[] }).events;
        assert.equal((await getEvent(ack!.id)).payload.data, JSON.parse(json) as string, name);
      } else {
        assert.equal(response.statusCode, 400, `${name}: ${response.body}`);
        assertErrorShape(response.json() as ErrorBody, 400);
        assert.deepEqual(await storedCounts(), before, 'nothing stored');
      }
    }
  });

  test('an invalid event anywhere in a batch over several sessions stores nothing', async () => {
    const a = freshSession('atomic-a');
    const b = freshSession('atomic-b');
    const batch = [
      ...Array.from({ length: 10 }, (_, i) => event(i % 2 ? a : b, 'custom', { type: 't', data: i })),
      event(b, 'tool_response', { callId: 'c', toolName: 't', result: 1, durationMs: -5 }),
    ];
    const body = await expectRejected({ payload: { events: batch } }, 400);
    assert.ok(
      body.details?.some((d) => d.path === 'events.10.payload.durationMs'),
      JSON.stringify(body.details),
    );
    for (const id of [a, b]) assert.equal((await observe.call({ method: 'GET', url: `/api/sessions/${id}` })).statusCode, 404);
  });

  test('extra payload fields are kept and returned unchanged', async () => {
    const payload = {
      toolName: 'search',
      callId: 'c-extra',
      arguments: { q: 'x' },
      serverName: 'mcp-1',
      traceparent: '00-abc-def-01',
      nested: { list: [1, 'two', { three: 3 }], empty: {}, nothing: null, flag: false },
      unicode: 'café ☕ 日本語',
    };
    const [ack] = await ingestEvents(observe, [event(freshSession('extra'), 'tool_call', payload, { metadata: { team: 'core', depth: { n: 1 } } })]);
    const stored = await getEvent(ack!.id);
    assert.deepEqual(stored.payload, payload);
    assert.deepEqual(stored.metadata, { team: 'core', depth: { n: 1 } });
  });

  test('extra fields inside a nested payload object (llm_response usage) are kept', async () => {
    const payload = {
      ...TYPES.find((t) => t.eventType === 'llm_response')!.payload,
      usage: { inputTokens: 10, outputTokens: 2, totalTokens: 12, cachedTokens: 4 },
    };
    const [ack] = await ingestEvents(observe, [event(freshSession('extra-usage'), 'llm_response', payload)]);
    assert.deepEqual((await getEvent(ack!.id)).payload, payload);
  });

  test('the first event of any type creates an active session named after the agent', async () => {
    const sessionId = freshSession('first');
    await ingestEvents(observe, [{ ...event(sessionId, 'tool_call', TYPES[2]!.payload), agentId: 'agent-first', timestamp: '2026-11-22T09:00:00.000Z' }]);
    const session = await getSession(sessionId);
    assert.equal(session.status, 'active');
    assert.equal(session.agentId, 'agent-first');
    assert.equal(session.agentName, 'agent-first');
    assert.equal(session.startedAt, '2026-11-22T09:00:00.000Z');
    assert.equal(session.endedAt, undefined);
    assert.deepEqual(session.tags, []);
  });

  test('session_started sets agentName and tags', async () => {
    const sessionId = freshSession('started');
    await ingestEvents(observe, [
      event(sessionId, 'custom', { type: 't', data: 1 }),
      event(sessionId, 'session_started', { agentName: 'Research Bot', agentVersion: '1.2.0', tags: ['prod', 'eu'] }),
    ]);
    const session = await getSession(sessionId);
    assert.equal(session.agentName, 'Research Bot');
    assert.deepEqual([...session.tags].sort(), ['eu', 'prod']);
    assert.equal(session.status, 'active');
    const tagged = (await observe.call({ method: 'GET', url: '/api/sessions?tags=prod,eu' })).json() as { sessions: SessionOut[] };
    assert.ok(tagged.sessions.some((s) => s.id === sessionId));
  });

  test('session_ended with reason error: status error with endedAt', async () => {
    const sessionId = freshSession('ended-error');
    await ingestEvents(observe, [
      event(sessionId, 'session_started', {}, { timestamp: '2026-11-22T09:00:00.000Z' }),
      event(sessionId, 'session_ended', { reason: 'error' }, { timestamp: '2026-11-22T09:05:00.000Z' }),
    ]);
    const session = await getSession(sessionId);
    assert.equal(session.status, 'error');
    assert.equal(session.endedAt, '2026-11-22T09:05:00.000Z');
  });

  for (const reason of ['completed', 'timeout', 'manual']) {
    test(`session_ended with reason ${reason}: status completed with endedAt`, async () => {
      const sessionId = freshSession(`ended-${reason}`);
      await ingestEvents(observe, [
        event(sessionId, 'session_started', {}, { timestamp: '2026-11-22T09:00:00.000Z' }),
        event(sessionId, 'session_ended', { reason }, { timestamp: '2026-11-22T09:10:00.250Z' }),
      ]);
      const session = await getSession(sessionId);
      assert.equal(session.status, 'completed');
      assert.equal(session.endedAt, '2026-11-22T09:10:00.250Z');
    });
  }

  test('session_started after session_ended re-activates the session', async () => {
    const sessionId = freshSession('reactivated');
    await ingestEvents(observe, [event(sessionId, 'session_started', {}), event(sessionId, 'session_ended', { reason: 'completed' })]);
    assert.equal((await getSession(sessionId)).status, 'completed');
    await ingestEvents(observe, [event(sessionId, 'session_started', { agentName: 'Again' })]);
    const session = await getSession(sessionId);
    assert.equal(session.status, 'active');
    assert.equal(session.agentName, 'Again');
  });

  test('toolCallCount counts tool_call events only', async () => {
    const sessionId = freshSession('tools');
    const call = TYPES.find((t) => t.eventType === 'tool_call')!.payload;
    const response = TYPES.find((t) => t.eventType === 'tool_response')!.payload;
    const error = TYPES.find((t) => t.eventType === 'tool_error')!.payload;
    await ingestEvents(observe, [
      event(sessionId, 'tool_call', call),
      event(sessionId, 'tool_response', response),
      event(sessionId, 'tool_call', { ...call, callId: 'c2' }),
      event(sessionId, 'tool_error', { ...error, callId: 'c2' }),
      event(sessionId, 'tool_call', { ...call, callId: 'c3' }),
      event(sessionId, 'custom', { type: 'tool_call', data: { toolName: 'x' } }),
    ]);
    await ingestEvents(observe, [event(sessionId, 'tool_call', { ...call, callId: 'c4' })]);
    const session = await getSession(sessionId);
    assert.equal(session.toolCallCount, 4);
    assert.equal(session.eventCount, 7);
  });

  test('errorCount counts severity error/critical and tool_error, each event once', async () => {
    const sessionId = freshSession('errors');
    const custom = { type: 't', data: 1 };
    const toolError = TYPES.find((t) => t.eventType === 'tool_error')!.payload;
    await ingestEvents(observe, [
      event(sessionId, 'custom', custom, { severity: 'debug' }),
      event(sessionId, 'custom', custom, { severity: 'info' }),
      event(sessionId, 'custom', custom, { severity: 'warn' }),
      event(sessionId, 'custom', custom, { severity: 'error' }), // 1
      event(sessionId, 'custom', custom, { severity: 'critical' }), // 2
      event(sessionId, 'tool_error', toolError), // 3 (severity info)
      event(sessionId, 'tool_error', toolError, { severity: 'critical' }), // 4, counted once
      event(sessionId, 'session_ended', { reason: 'error' }), // a reason is not a severity
    ]);
    const session = await getSession(sessionId);
    assert.equal(session.errorCount, 4);
  });

  test('totalCostUsd sums costUsd of llm_response and cost_tracked only', async () => {
    const sessionId = freshSession('cost');
    const llm = TYPES.find((t) => t.eventType === 'llm_response')!.payload;
    const tracked = TYPES.find((t) => t.eventType === 'cost_tracked')!.payload;
    await ingestEvents(observe, [
      event(sessionId, 'llm_response', { ...llm, costUsd: 0.25 }),
      event(sessionId, 'cost_tracked', { ...tracked, costUsd: 0.125 }),
      event(sessionId, 'llm_call', { ...TYPES.find((t) => t.eventType === 'llm_call')!.payload, costUsd: 100 }),
      event(sessionId, 'tool_call', { ...TYPES[2]!.payload, costUsd: 100 }),
      event(sessionId, 'custom', { type: 'cost', data: { costUsd: 100 }, costUsd: 100 }),
    ]);
    await ingestEvents(observe, [event(sessionId, 'llm_response', { ...llm, callId: 'l2', costUsd: 0.5 })]);
    const session = await getSession(sessionId);
    assert.ok(Math.abs(session.totalCostUsd - 0.875) < 1e-9, `totalCostUsd ${session.totalCostUsd}`);
  });

  test('a session with no spend reports totalCostUsd 0, and counters start at 0', async () => {
    const sessionId = freshSession('zero');
    await ingestEvents(observe, [event(sessionId, 'custom', { type: 't', data: 1 })]);
    const session = await getSession(sessionId);
    assert.equal(session.totalCostUsd, 0);
    assert.equal(session.toolCallCount, 0);
    assert.equal(session.errorCount, 0);
    assert.equal(session.eventCount, 1);
  });
});

await describeEachDatabase('POST /api/events: body size limit', (backend) => {
  let observe: TestObserve | undefined;
  let startError: unknown;
  before(async () => {
    // A second fresh database in this file: reported per test, so a start-up failure is named.
    try {
      observe = await startTestObserve(backend, { env: { BODY_LIMIT_BYTES: '2048' } });
    } catch (error) {
      startError = error;
    }
  });
  after(() => observe?.close());

  const app = (): TestObserve => {
    if (!observe) assert.fail(`the app on a second fresh ${backend.kind} database did not start: ${String(startError)}`);
    return observe;
  };
  const totalEvents = async () => ((await app().call({ method: 'GET', url: '/api/stats' })).json() as { totalEvents: number }).totalEvents;

  test('a body over BODY_LIMIT_BYTES is a 413 in the error body and stores nothing', async () => {
    const before = await totalEvents();
    const payload = JSON.stringify({
      events: [{ sessionId: 'big', agentId: 'a', eventType: 'custom', payload: { type: 't', data: 'x'.repeat(3000) } }],
    });
    assert.ok(Buffer.byteLength(payload) > 2048);
    const response = await app().call({ method: 'POST', url: '/api/events', payload, headers: { 'content-type': 'application/json' } });
    assert.equal(response.statusCode, 413, response.body);
    assertErrorShape(response.json() as ErrorBody, 413);
    assert.equal(await totalEvents(), before);
    assert.equal((await app().call({ method: 'GET', url: '/api/sessions/big' })).statusCode, 404);
  });

  test('a body under the limit is accepted by the same app', async () => {
    const payload = JSON.stringify({
      events: [{ sessionId: 'small', agentId: 'a', eventType: 'custom', payload: { type: 't', data: 'x'.repeat(1500) } }],
    });
    assert.ok(Buffer.byteLength(payload) < 2048);
    const response = await app().call({ method: 'POST', url: '/api/events', payload, headers: { 'content-type': 'application/json' } });
    assert.equal(response.statusCode, 201, response.body);
  });
});
