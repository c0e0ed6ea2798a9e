import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { ago, assertErrorBody, custom, ended, ingest, started, startTestObserve, type TestObserve, toolCall } from '../testing.ts';

interface SessionBody {
  id: string;
  agentId: string;
  agentName: string;
  startedAt: string;
  endedAt?: string;
  status: string;
  eventCount: number;
  toolCallCount: number;
  errorCount: number;
  totalCostUsd: number;
  tags: string[];
}

interface SessionList {
  sessions: SessionBody[];
  total: number;
  hasMore: boolean;
}

interface TimelineEvent {
  id: string;
  seq: number;
  timestamp: string;
  eventType: string;
  sessionId: string;
  prevHash: string | null;
  hash: string;
  payload: Record<string, unknown>;
}

async function list(observe: TestObserve, query: string): Promise<SessionList> {
  const response = await observe.call({ method: 'GET', url: `/api/sessions${query}` });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as SessionList;
}

const ids = (body: SessionList): string[] => body.sessions.map((s) => s.id);

async function getSession(observe: TestObserve, id: string): Promise<SessionBody> {
  const response = await observe.call({ method: 'GET', url: `/api/sessions/${encodeURIComponent(id)}` });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as SessionBody;
}

await describeEachDatabase('GET /api/sessions', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
    // Four sessions, started 4h, 3h, 2h and 1h ago (arrival order differs from start order).
    await ingest(observe, [
      started('s-b1', 'beta', ago(120)),
      toolCall('s-b1', 'beta', ago(119)),
      started('s-a1', 'alpha', ago(240), { agentName: 'Alpha', tags: ['prod', 'eu'] }),
      toolCall('s-a1', 'alpha', ago(239)),
      ended('s-a1', 'alpha', ago(238), 'completed'),
    ]);
    await ingest(observe, [
      started('s-a2', 'alpha', ago(180), { tags: ['prod'] }),
      ended('s-a2', 'alpha', ago(170), 'error'),
      started('s-b2', 'beta', ago(60), { tags: ['eu', 'staging', 'prod'] }),
    ]);
  });
  after(() => observe.close());

  test('lists every session newest first (by startedAt) with total and hasMore', async () => {
    const body = await list(observe, '');
    assert.deepEqual(ids(body), ['s-b2', 's-b1', 's-a2', 's-a1']);
    assert.equal(body.total, 4);
    assert.equal(body.hasMore, false);
  });

  test('filters by agentId', async () => {
    const alpha = await list(observe, '?agentId=alpha');
    assert.deepEqual(ids(alpha), ['s-a2', 's-a1']);
    assert.equal(alpha.total, 2);
    assert.ok(alpha.sessions.every((s) => s.agentId === 'alpha'));
    const nobody = await list(observe, '?agentId=nobody');
    assert.deepEqual(nobody, { sessions: [], total: 0, hasMore: false });
  });

  test('filters by one status and by a comma-separated list of statuses', async () => {
    assert.deepEqual(ids(await list(observe, '?status=completed')), ['s-a1']);
    assert.deepEqual(ids(await list(observe, '?status=error')), ['s-a2']);
    assert.deepEqual(ids(await list(observe, '?status=active')), ['s-b2', 's-b1']);
    const several = await list(observe, '?status=active,error');
    assert.deepEqual(ids(several), ['s-b2', 's-b1', 's-a2']);
    assert.equal(several.total, 3);
    assert.deepEqual(ids(await list(observe, '?status=completed,error,active')), ['s-b2', 's-b1', 's-a2', 's-a1']);
  });

  test('filters by from and to on startedAt', async () => {
    const window = await list(observe, `?from=${ago(200)}&to=${ago(90)}`);
    assert.deepEqual(ids(window), ['s-b1', 's-a2']);
    assert.equal(window.total, 2);
    assert.deepEqual(ids(await list(observe, `?from=${ago(150)}`)), ['s-b2', 's-b1']);
    assert.deepEqual(ids(await list(observe, `?to=${ago(150)}`)), ['s-a2', 's-a1']);
    // startedAt, not the time of later events: s-a1 has events 238 minutes ago but started 240 minutes ago.
    assert.deepEqual(ids(await list(observe, `?from=${ago(239)}&to=${ago(200)}`)), []);
  });

  test('tags keeps only sessions carrying every listed tag', async () => {
    assert.deepEqual(ids(await list(observe, '?tags=prod')), ['s-b2', 's-a2', 's-a1']);
    assert.deepEqual(ids(await list(observe, '?tags=eu')), ['s-b2', 's-a1']);
    const both = await list(observe, '?tags=prod,eu');
    assert.deepEqual(ids(both), ['s-b2', 's-a1']);
    assert.equal(both.total, 2);
    assert.deepEqual(ids(await list(observe, '?tags=eu,staging,prod')), ['s-b2']);
    assert.deepEqual(ids(await list(observe, '?tags=prod,missing')), []);
    assert.deepEqual(ids(await list(observe, '?tags=staging&agentId=alpha')), []);
    assert.deepEqual(ids(await list(observe, '?tags=prod&agentId=alpha&status=completed')), ['s-a1']);
  });

  test('limit and offset page through the list; total counts every match', async () => {
    const first = await list(observe, '?limit=2');
    assert.deepEqual(ids(first), ['s-b2', 's-b1']);
    assert.equal(first.total, 4);
    assert.equal(first.hasMore, true);
    const second = await list(observe, '?limit=2&offset=2');
    assert.deepEqual(ids(second), ['s-a2', 's-a1']);
    assert.equal(second.total, 4);
    assert.equal(second.hasMore, false);
    const partial = await list(observe, '?limit=2&offset=3');
    assert.deepEqual(ids(partial), ['s-a1']);
    assert.equal(partial.hasMore, false);
    const beyond = await list(observe, '?offset=10');
    assert.deepEqual(beyond, { sessions: [], total: 4, hasMore: false });
    const filtered = await list(observe, '?tags=prod&limit=1&offset=1');
    assert.deepEqual(ids(filtered), ['s-a2']);
    assert.equal(filtered.total, 3);
    assert.equal(filtered.hasMore, true);
    assert.equal((await list(observe, '?limit=500')).total, 4);
  });

  test('invalid parameters answer 400 in the service error body', async () => {
    for (const query of [
      '?status=bogus',
      '?status=active,bogus',
      '?limit=0',
      '?limit=501',
      '?limit=abc',
      '?offset=-1',
      '?from=yesterday',
      '?from=2026-13-45T00:00:00Z',
      '?to=not-a-date',
    ]) {
      const response = await observe.call({ method: 'GET', url: `/api/sessions${query}` });
      assertErrorBody(response, 400);
    }
  });
});

await describeEachDatabase('GET /api/sessions/:id', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  test('returns every field with counters, cost and tags', async () => {
    await ingest(observe, [
      started('s-detail', 'agent-d', ago(30), { agentName: 'Detail Bot', tags: ['prod', 'prod', 'eu'] }),
      toolCall('s-detail', 'agent-d', ago(29), 'c1'),
      {
        sessionId: 's-detail',
        agentId: 'agent-d',
        eventType: 'tool_error',
        timestamp: ago(28),
        payload: { toolName: 'search', callId: 'c1', error: 'boom', durationMs: 12 },
      },
      toolCall('s-detail', 'agent-d', ago(27), 'c2'),
      {
        sessionId: 's-detail',
        agentId: 'agent-d',
        eventType: 'llm_response',
        timestamp: ago(26),
        payload: {
          callId: 'l1',
          provider: 'openai',
          model: 'gpt-4o',
          completion: 'hi',
          finishReason: 'stop',
          usage: { inputTokens: 10, outputTokens: 5 },
          costUsd: 0.25,
          latencyMs: 100,
        },
      },
      {
        sessionId: 's-detail',
        agentId: 'agent-d',
        eventType: 'cost_tracked',
        timestamp: ago(25),
        payload: { provider: 'openai', model: 'gpt-4o', inputTokens: 1, outputTokens: 1, totalTokens: 2, costUsd: 0.5 },
      },
      { ...custom('s-detail', 'agent-d', ago(24), 'note'), severity: 'critical' },
      { ...custom('s-detail', 'agent-d', ago(23), 'note'), severity: 'warn' },
    ]);
    const session = await getSession(observe, 's-detail');
    assert.equal(session.id, 's-detail');
    assert.equal(session.agentId, 'agent-d');
    assert.equal(session.agentName, 'Detail Bot');
    assert.equal(session.startedAt, ago(30));
    assert.equal(session.status, 'active');
    assert.equal('endedAt' in session, false);
    assert.equal(session.eventCount, 8);
    assert.equal(session.toolCallCount, 2);
    // tool_error and the critical custom event; the warn event is not an error.
    assert.equal(session.errorCount, 2);
    assert.ok(Math.abs(session.totalCostUsd - 0.75) < 1e-9);
    assert.deepEqual([...session.tags].sort(), ['eu', 'prod']);

    await ingest(observe, [ended('s-detail', 'agent-d', ago(20), 'completed')]);
    const closed = await getSession(observe, 's-detail');
    assert.equal(closed.status, 'completed');
    assert.equal(closed.endedAt, ago(20));
    assert.equal(closed.eventCount, 9);
  });

  test('a session started without agentName or tags reports the agentId and []', async () => {
    await ingest(observe, [started('s-plain', 'agent-p', ago(10))]);
    const session = await getSession(observe, 's-plain');
    assert.equal(session.agentName, 'agent-p');
    assert.deepEqual(session.tags, []);
    assert.equal(session.eventCount, 1);
    assert.equal(session.toolCallCount, 0);
    assert.equal(session.errorCount, 0);
    assert.equal(session.totalCostUsd, 0);
  });

  test('an unknown session is 404 in the service error body', async () => {
    const response = await observe.call({ method: 'GET', url: '/api/sessions/no-such-session' });
    assertErrorBody(response, 404);
  });
});

await describeEachDatabase('session status transitions', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  test('the first event of any type creates an active session named after the agent', async () => {
    for (const [sessionId, event] of [
      ['s-first-tool', toolCall('s-first-tool', 'agent-t', ago(50))],
      ['s-first-custom', custom('s-first-custom', 'agent-t', ago(50), 'x')],
      ['s-first-ended', ended('s-first-ended', 'agent-t', ago(50), 'completed')],
    ] as const) {
      await ingest(observe, [event]);
      const session = await getSession(observe, sessionId);
      assert.equal(session.agentId, 'agent-t');
      assert.equal(session.startedAt, ago(50));
      assert.equal(session.eventCount, 1);
      assert.deepEqual(session.tags, []);
      assert.equal(session.agentName, 'agent-t');
      if (sessionId === 's-first-ended') {
        assert.equal(session.status, 'completed');
        assert.equal(session.endedAt, ago(50));
      } else {
        assert.equal(session.status, 'active');
        assert.equal('endedAt' in session, false);
      }
    }
  });

  test('session_started sets agentName and tags on a session created by an earlier event', async () => {
    await ingest(observe, [toolCall('s-late-start', 'agent-l', ago(40))]);
    assert.equal((await getSession(observe, 's-late-start')).agentName, 'agent-l');
    await ingest(observe, [started('s-late-start', 'agent-l', ago(39), { agentName: 'Late Bot', tags: ['a', 'b'] })]);
    const session = await getSession(observe, 's-late-start');
    assert.equal(session.agentName, 'Late Bot');
    assert.deepEqual([...session.tags].sort(), ['a', 'b']);
    assert.equal(session.status, 'active');
    assert.deepEqual(ids(await list(observe, '?tags=a,b')), ['s-late-start']);
  });

  test('a later session_started replaces the tags, and the tags filter follows', async () => {
    await ingest(observe, [started('s-retag', 'agent-r', ago(35), { tags: ['old', 'keep'] })]);
    await ingest(observe, [started('s-retag', 'agent-r', ago(34), { tags: ['new', 'keep'] })]);
    const session = await getSession(observe, 's-retag');
    assert.deepEqual([...session.tags].sort(), ['keep', 'new']);
    assert.deepEqual(ids(await list(observe, '?tags=old')), []);
    assert.deepEqual(ids(await list(observe, '?tags=new,keep')), ['s-retag']);
  });

  test('session_ended with reason error sets status error and endedAt', async () => {
    await ingest(observe, [started('s-err', 'agent-e', ago(30)), ended('s-err', 'agent-e', ago(29), 'error')]);
    const session = await getSession(observe, 's-err');
    assert.equal(session.status, 'error');
    assert.equal(session.endedAt, ago(29));
  });

  test('session_ended with completed, timeout or manual sets status completed', async () => {
    for (const reason of ['completed', 'timeout', 'manual']) {
      const id = `s-end-${reason}`;
      await ingest(observe, [started(id, 'agent-e', ago(28)), ended(id, 'agent-e', ago(27), reason)]);
      const session = await getSession(observe, id);
      assert.equal(session.status, 'completed', reason);
      assert.equal(session.endedAt, ago(27), reason);
    }
  });

  test('session_started re-activates an ended session and removes endedAt', async () => {
    await ingest(observe, [started('s-revive', 'agent-v', ago(20), { agentName: 'First' }), ended('s-revive', 'agent-v', ago(19), 'error')]);
    assert.equal((await getSession(observe, 's-revive')).status, 'error');
    await ingest(observe, [started('s-revive', 'agent-v', ago(18), { agentName: 'Second', tags: ['again'] })]);
    const revived = await getSession(observe, 's-revive');
    assert.equal(revived.status, 'active');
    assert.equal('endedAt' in revived, false);
    assert.equal(revived.agentName, 'Second');
    assert.deepEqual(revived.tags, ['again']);
    assert.equal(revived.eventCount, 3);
    assert.deepEqual(ids(await list(observe, '?status=active&agentId=agent-v')), ['s-revive']);

    await ingest(observe, [ended('s-revive', 'agent-v', ago(17), 'manual')]);
    const endedAgain = await getSession(observe, 's-revive');
    assert.equal(endedAgain.status, 'completed');
    assert.equal(endedAgain.endedAt, ago(17));
    // Tags and name survive a session_ended.
    assert.equal(endedAgain.agentName, 'Second');
    assert.deepEqual(endedAgain.tags, ['again']);
  });

  test('transitions inside one batch are applied in order', async () => {
    await ingest(observe, [
      started('s-batch', 'agent-b', ago(10)),
      ended('s-batch', 'agent-b', ago(9), 'error'),
      started('s-batch', 'agent-b', ago(8)),
      ended('s-batch', 'agent-b', ago(7), 'completed'),
    ]);
    const session = await getSession(observe, 's-batch');
    assert.equal(session.status, 'completed');
    assert.equal(session.endedAt, ago(7));
  });
});

await describeEachDatabase('GET /api/sessions/:id/timeline', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  async function timeline(id: string): Promise<{ events: TimelineEvent[]; chainValid: boolean }> {
    const response = await observe.call({ method: 'GET', url: `/api/sessions/${id}/timeline` });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as { events: TimelineEvent[]; chainValid: boolean };
  }

  test('lists events ascending by timestamp, ties broken by seq, with a valid chain', async () => {
    // Client timestamps arrive out of order, in one batch and across batches.
    await ingest(observe, [
      custom('s-tl', 'agent-1', ago(5), 'e0'), // seq 0
      custom('s-tl', 'agent-1', ago(9), 'e1'), // seq 1
      custom('s-tl', 'agent-1', ago(9), 'e2'), // seq 2, ties with seq 1
      custom('s-tl', 'agent-1', ago(7), 'e3'), // seq 3
    ]);
    await ingest(observe, [
      custom('s-tl', 'agent-1', ago(9), 'e4'), // seq 4, ties with seq 1 and 2
      custom('s-tl', 'agent-1', ago(1), 'e5'), // seq 5
      custom('s-tl', 'agent-1', ago(12), 'e6'), // seq 6, earliest of all
    ]);
    const body = await timeline('s-tl');
    assert.equal(body.chainValid, true);
    assert.deepEqual(
      body.events.map((e) => e.payload.type),
      ['e6', 'e1', 'e2', 'e4', 'e3', 'e0', 'e5'],
    );
    assert.deepEqual(
      body.events.map((e) => e.seq),
      [6, 1, 2, 4, 3, 0, 5],
    );
    const timestamps = body.events.map((e) => Date.parse(e.timestamp));
    assert.deepEqual(
      [...timestamps].sort((a, b) => a - b),
      timestamps,
    );
    assert.ok(body.events.every((e) => e.sessionId === 's-tl'));
    // The chain follows seq, not the timeline order.
    const bySeq = [...body.events].sort((a, b) => a.seq - b.seq);
    assert.equal(bySeq[0]!.prevHash, null);
    for (let i = 1; i < bySeq.length; i += 1) assert.equal(bySeq[i]!.prevHash, bySeq[i - 1]!.hash);

    const session = await getSession(observe, 's-tl');
    assert.equal(session.startedAt, ago(12));
    assert.equal(session.eventCount, 7);
  });

  test('a session with a single event has a valid chain', async () => {
    await ingest(observe, [toolCall('s-one', 'agent-1', ago(3))]);
    const body = await timeline('s-one');
    assert.equal(body.chainValid, true);
    assert.equal(body.events.length, 1);
    assert.equal(body.events[0]!.eventType, 'tool_call');
    assert.equal(body.events[0]!.seq, 0);
    assert.equal(body.events[0]!.prevHash, null);
  });

  test('an unknown session is 404 in the service error body', async () => {
    const response = await observe.call({ method: 'GET', url: '/api/sessions/no-such-session/timeline' });
    assertErrorBody(response, 404);
  });
});

await describeEachDatabase('GET /api/sessions default page size', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
    const events = Array.from({ length: 55 }, (_, i) => custom(`s-page-${String(i).padStart(2, '0')}`, 'agent-p', ago(100 - i), 'x'));
    await ingest(observe, events);
  });
  after(() => observe.close());

  test('limit defaults to 50 and offset to 0', async () => {
    const body = await list(observe, '');
    assert.equal(body.sessions.length, 50);
    assert.equal(body.total, 55);
    assert.equal(body.hasMore, true);
    assert.equal(body.sessions[0]!.id, 's-page-54');
    assert.equal(body.sessions[49]!.id, 's-page-05');
    const rest = await list(observe, '?offset=50');
    assert.deepEqual(ids(rest), ['s-page-04', 's-page-03', 's-page-02', 's-page-01', 's-page-00']);
    assert.equal(rest.hasMore, false);
  });
});

await describeEachDatabase('GET /api/sessions/:id/steps', (backend) => {
  let observe: TestObserve;
  const llm = (timestamp: string, callId: string) => ({
    sessionId: 's-steps',
    agentId: 'agent-s',
    eventType: 'llm_response',
    timestamp,
    payload: {
      callId,
      provider: 'openai',
      model: 'gpt-4o-mini',
      completion: 'ok',
      finishReason: 'stop',
      costUsd: 0.0021,
      latencyMs: 900,
      usage: { inputTokens: 900, outputTokens: 120 },
    },
  });
  before(async () => {
    observe = await startTestObserve(backend);
    await ingest(observe, [
      started('s-steps', 'agent-s', ago(10)),
      llm(ago(9), 'l1'),
      toolCall('s-steps', 'agent-s', ago(8), 't1'),
      {
        sessionId: 's-steps',
        agentId: 'agent-s',
        eventType: 'tool_error',
        timestamp: ago(7),
        payload: { toolName: 'search', callId: 't1', error: 'timeout', durationMs: 1200 },
      },
      ended('s-steps', 'agent-s', ago(6), 'error'),
    ]);
  });
  after(() => observe.close());

  const steps = async (query: string) => {
    const response = await observe.call({ method: 'GET', url: `/api/sessions/s-steps/steps${query}` });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as { steps: Record<string, unknown>[]; nextAfter: number | null };
  };

  test("each event with the figures ingest derives, in seq order, and the timeline's ids", async () => {
    const body = await steps('');
    assert.equal(body.nextAfter, null);
    const timeline = await observe.call({ method: 'GET', url: '/api/sessions/s-steps/timeline' });
    assert.deepEqual(
      body.steps.map((s) => s.id),
      (timeline.json() as { events: { id: string }[] }).events.map((e) => e.id),
    );
    assert.deepEqual(
      body.steps.map((s) => [s.eventType, s.toolName, s.model, s.isError]),
      [
        ['session_started', null, null, false],
        ['llm_response', null, 'gpt-4o-mini', false],
        ['tool_call', 'search', null, false],
        ['tool_error', 'search', null, true],
        ['session_ended', null, null, false],
      ],
    );
    const response = body.steps[1]!;
    assert.deepEqual([response.costUsd, response.latencyMs, response.inputTokens, response.outputTokens], [0.0021, 900, 900, 120]);
    assert.equal(response.timestamp, ago(9));
    assert.equal(body.steps[3]!.latencyMs, 1200, "a tool's latency is its durationMs");
    assert.deepEqual(
      body.steps.map((s) => s.seq),
      [...body.steps.map((s) => s.seq)].sort((x, y) => (x as number) - (y as number)),
    );
  });

  test('pages follow nextAfter to the end', async () => {
    const all = (await steps('')).steps.map((s) => s.id);
    const first = await steps('?limit=2');
    assert.equal(first.steps.length, 2);
    assert.equal(first.nextAfter, first.steps[1]!.seq);
    const second = await steps(`?limit=2&after=${first.nextAfter}`);
    const third = await steps(`?limit=2&after=${second.nextAfter}`);
    assert.equal(third.nextAfter, null);
    assert.deepEqual(
      [...first.steps, ...second.steps, ...third.steps].map((s) => s.id),
      all,
    );
  });

  test('an unknown session is 404 and a bad page is 400, in the service error body', async () => {
    assertErrorBody(await observe.call({ method: 'GET', url: '/api/sessions/no-such-session/steps' }), 404);
    assertErrorBody(await observe.call({ method: 'GET', url: '/api/sessions/s-steps/steps?limit=0' }), 400);
    assertErrorBody(await observe.call({ method: 'GET', url: '/api/sessions/s-steps/steps?limit=5001' }), 400);
    assertErrorBody(await observe.call({ method: 'GET', url: '/api/sessions/s-steps/steps?after=x' }), 400);
  });
});
