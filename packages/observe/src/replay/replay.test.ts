import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ManualClock } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { ingest, insertEventCopy, startTestObserve, type TestObserve } from '../testing.ts';
import { replayCacheOf, type ReplayCache, type ReplayCacheStats } from './cache.ts';
import type { ReplayContext, ReplaySummary } from './state.ts';

const T = Date.parse('2026-11-22T09:00:00.000Z');
const at = (ms: number): string => new Date(T + ms).toISOString();

interface StepEvent {
  id: string;
  seq: number;
  eventType: string;
  timestamp: string;
  payload: Record<string, unknown>;
  writtenBy: string | null;
}

interface Step {
  index: number;
  event: StepEvent;
  pairedEvent: StepEvent | null;
  pairDurationMs: number | null;
  context?: ReplayContext;
}

interface ReplayBody {
  session: { id: string; agentId: string; status: string; startedAt: string; endedAt?: string };
  chainValid: boolean;
  totalSteps: number;
  steps: Step[];
  pagination: { offset: number; limit: number; hasMore: boolean };
  summary: ReplaySummary;
}

type EventInput = Record<string, unknown>;

const AGENT = 'replayer';
const e = (sessionId: string, eventType: string, ms: number, payload: Record<string, unknown>, severity?: string): EventInput => ({
  sessionId,
  agentId: AGENT,
  eventType,
  timestamp: at(ms),
  payload,
  ...(severity ? { severity } : {}),
});

/**
 * The controlled session, in timeline order (index = position). Arrival order differs: the
 * tool_response of c1 is posted before its tool_call, so its seq is smaller.
 */
function mainSession(id: string): EventInput[] {
  return [
    e(id, 'session_started', 0, { agentName: 'Replayer' }), // 0
    e(id, 'tool_call', 1000, { toolName: 'search', callId: 'c1', arguments: { q: 'vigil' } }), // 1
    e(id, 'tool_response', 1400, { toolName: 'search', callId: 'c1', result: { hits: 3 }, durationMs: 400 }), // 2
    e(id, 'llm_call', 2000, { callId: 'l1', provider: 'openai', model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }), // 3
    e(id, 'llm_response', 2750, {
      callId: 'l1',
      provider: 'openai',
      model: 'gpt-4o-mini',
      completion: 'hello',
      finishReason: 'stop',
      usage: { inputTokens: 10, outputTokens: 2 },
      costUsd: 0.002,
      latencyMs: 750,
    }), // 4
    e(id, 'approval_requested', 3000, { requestId: 'r1', action: 'pay', params: { amount: 10 }, urgency: 'high' }), // 5
    e(id, 'cost_tracked', 3500, { provider: 'anthropic', model: 'claude-3-5-haiku', inputTokens: 5, outputTokens: 5, totalTokens: 10, costUsd: 0.0005 }), // 6
    e(id, 'tool_call', 4000, { toolName: 'fetch', callId: 'c2', arguments: {} }), // 7
    e(id, 'tool_error', 4200, { toolName: 'fetch', callId: 'c2', error: 'timeout', durationMs: 200 }), // 8
    e(id, 'approval_granted', 6000, { requestId: 'r1', action: 'pay', decidedBy: 'api:admin' }), // 9
    e(id, 'tool_response', 6100, { toolName: 'search', callId: 'c9', result: null, durationMs: 5 }), // 10: no tool_call
    e(id, 'custom', 6500, { type: 'slow', data: { ms: 900 } }, 'warn'), // 11
    e(id, 'form_submitted', 7000, { submissionId: 's1', formId: 'f', fieldCount: 2 }), // 12
    e(id, 'form_completed', 7300, { submissionId: 's1', formId: 'f', completedBy: 'ann', durationMs: 300 }), // 13
    e(id, 'custom', 7500, { type: 'crash', data: {} }, 'error'), // 14
    e(id, 'session_ended', 8000, { reason: 'completed' }), // 15
  ];
}

const simple = (sessionId: string, i: number, ms: number): EventInput => e(sessionId, 'custom', ms, { type: 'tick', data: { i } });

await describeEachDatabase('GET /api/sessions/:id/replay', (backend) => {
  let observe: TestObserve;
  let cache: ReplayCache;
  let clock: ManualClock;
  before(async () => {
    observe = await startTestObserve(backend);
    cache = replayCacheOf(observe.service.context);
    clock = observe.clock as ManualClock;
    const events = mainSession('main');
    await ingest(observe, [events[0]!, events[2]!, events[1]!, ...events.slice(3)]);
  });
  after(() => observe.close());

  async function replay(sessionId: string, query = ''): Promise<ReplayBody> {
    const response = await observe.call({ method: 'GET', url: `/api/sessions/${encodeURIComponent(sessionId)}/replay${query}` });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as ReplayBody;
  }

  const snapshot = (): ReplayCacheStats => ({ ...cache.stats });
  const delta = (
    before: ReplayCacheStats,
    key: 'hits' | 'misses' | 'evictions' | 'expirations' | 'invalidations' | 'stepsAdvanced' | 'checkpointsSaved',
  ): number => cache.stats[key] - before[key];

  test('answers exactly the documented fields: session, chainValid, totalSteps, steps, pagination, summary', async () => {
    const body = await replay('main');
    assert.deepEqual(Object.keys(body), ['session', 'chainValid', 'totalSteps', 'steps', 'pagination', 'summary']);
    assert.deepEqual(body.session, { id: 'main', agentId: AGENT, status: 'completed', startedAt: at(0), endedAt: at(8000) });
    assert.equal(body.chainValid, true);
    assert.equal(body.totalSteps, 16);
    assert.deepEqual(body.pagination, { offset: 0, limit: 1000, hasMore: false });
    assert.deepEqual(body.summary, {
      totalCost: 0.0025,
      totalDurationMs: 8000,
      totalLlmCalls: 1,
      totalToolCalls: 2,
      totalErrors: 2,
      models: ['claude-3-5-haiku', 'gpt-4o-mini'],
      tools: ['fetch', 'search'],
    });
    const step = body.steps[1]!;
    assert.deepEqual(Object.keys(step), ['index', 'event', 'pairedEvent', 'pairDurationMs', 'context']);
    assert.deepEqual(Object.keys(step.event), ['id', 'seq', 'eventType', 'timestamp', 'payload', 'writtenBy']);
    assert.deepEqual(Object.keys(step.context!), [
      'eventIndex',
      'totalEvents',
      'cumulativeCostUsd',
      'elapsedMs',
      'eventCounts',
      'llmHistory',
      'toolResults',
      'pendingApprovals',
      'errorCount',
      'warnings',
    ]);
  });

  test('steps follow the timeline (timestamp, then seq) with the events as stored', async () => {
    const body = await replay('main');
    const timeline = (await observe.call({ method: 'GET', url: '/api/sessions/main/timeline' })).json() as { events: (StepEvent & { hash: string })[] };
    assert.deepEqual(
      body.steps.map((s) => s.index),
      Array.from({ length: 16 }, (_, i) => i),
    );
    assert.deepEqual(
      body.steps.map((s) => s.event),
      timeline.events.map(({ id, seq, eventType, timestamp, payload, writtenBy }) => ({ id, seq, eventType, timestamp, payload, writtenBy })),
    );
    assert.deepEqual(
      body.steps.map((s) => s.event.eventType),
      mainSession('main').map((x) => x.eventType),
    );
    assert.ok(body.steps[1]!.event.seq > body.steps[2]!.event.seq, 'the response arrived first, yet the call is replayed first');
  });

  test('pairedEvent and pairDurationMs on both sides of every pair; null when unpaired', async () => {
    const { steps } = await replay('main');
    const pairs: [number, number, number][] = [
      [1, 2, 400], // tool_call ↔ tool_response
      [3, 4, 750], // llm_call ↔ llm_response
      [5, 9, 3000], // approval_requested ↔ approval_granted
      [7, 8, 200], // tool_call ↔ tool_error
      [12, 13, 300], // form_submitted ↔ form_completed
    ];
    for (const [request, outcome, ms] of pairs) {
      assert.deepEqual(steps[request]!.pairedEvent, steps[outcome]!.event, `step ${request} → ${outcome}`);
      assert.deepEqual(steps[outcome]!.pairedEvent, steps[request]!.event, `step ${outcome} → ${request}`);
      assert.equal(steps[request]!.pairDurationMs, ms);
      assert.equal(steps[outcome]!.pairDurationMs, ms);
    }
    for (const unpaired of [0, 6, 10, 11, 14, 15]) {
      assert.equal(steps[unpaired]!.pairedEvent, null, `step ${unpaired}`);
      assert.equal(steps[unpaired]!.pairDurationMs, null, `step ${unpaired}`);
    }
  });

  test('context at chosen steps: cost, elapsed time, counts, llmHistory, toolResults, approvals, errors, warnings', async () => {
    const { steps } = await replay('main');
    const ctx = (i: number): ReplayContext => steps[i]!.context!;
    assert.deepEqual(ctx(0), {
      eventIndex: 0,
      totalEvents: 16,
      cumulativeCostUsd: 0,
      elapsedMs: 0,
      eventCounts: { session_started: 1 },
      llmHistory: [],
      toolResults: [],
      pendingApprovals: [],
      errorCount: 0,
      warnings: [],
    });
    const call = { callId: 'l1', provider: 'openai', model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] };
    assert.deepEqual(ctx(3).llmHistory, [{ ...call, response: null, costUsd: null, latencyMs: null }]);
    assert.deepEqual(ctx(4), {
      eventIndex: 4,
      totalEvents: 16,
      cumulativeCostUsd: 0.002,
      elapsedMs: 2750,
      eventCounts: { session_started: 1, tool_call: 1, tool_response: 1, llm_call: 1, llm_response: 1 },
      llmHistory: [{ ...call, response: 'hello', costUsd: 0.002, latencyMs: 750 }],
      toolResults: [{ callId: 'c1', toolName: 'search', ok: true, result: { hits: 3 }, error: null, durationMs: 400 }],
      pendingApprovals: [],
      errorCount: 0,
      warnings: [],
    });
    assert.deepEqual(ctx(5).pendingApprovals, [{ requestId: 'r1', action: 'pay', urgency: 'high', requestedAt: at(3000) }]);
    assert.equal(ctx(6).cumulativeCostUsd, 0.0025, 'cost_tracked counts');
    assert.deepEqual(ctx(8).toolResults.at(-1), { callId: 'c2', toolName: 'fetch', ok: false, result: null, error: 'timeout', durationMs: 200 });
    assert.equal(ctx(7).errorCount, 0);
    assert.equal(ctx(8).errorCount, 1, 'tool_error is an error event');
    assert.equal(ctx(8).pendingApprovals.length, 1);
    assert.deepEqual(ctx(9).pendingApprovals, [], 'cleared by approval_granted');
    assert.deepEqual(ctx(10).warnings, [
      { eventIndex: 10, eventId: steps[10]!.event.id, code: 'unmatched_tool_result', message: ctx(10).warnings[0]!.message },
    ]);
    assert.deepEqual(
      ctx(11).warnings.map((w) => [w.eventIndex, w.code]),
      [
        [10, 'unmatched_tool_result'],
        [11, 'warn_event'],
      ],
    );
    assert.equal(ctx(14).errorCount, 2, 'severity error counts');
    assert.deepEqual(ctx(15), {
      ...ctx(15),
      eventIndex: 15,
      cumulativeCostUsd: 0.0025,
      elapsedMs: 8000,
      errorCount: 2,
      eventCounts: {
        session_started: 1,
        tool_call: 2,
        tool_response: 2,
        llm_call: 1,
        llm_response: 1,
        approval_requested: 1,
        cost_tracked: 1,
        tool_error: 1,
        approval_granted: 1,
        custom: 2,
        form_submitted: 1,
        form_completed: 1,
        session_ended: 1,
      },
    });
  });

  test('llmHistory keeps the last 50 LLM calls', async () => {
    const events: EventInput[] = [];
    for (let i = 0; i < 60; i++) {
      events.push(e('llm-many', 'llm_call', i * 100, { callId: `l${i}`, provider: 'openai', model: 'gpt-4o', messages: [{ role: 'user', content: `q${i}` }] }));
      events.push(
        e('llm-many', 'llm_response', i * 100 + 50, {
          callId: `l${i}`,
          provider: 'openai',
          model: 'gpt-4o',
          completion: `a${i}`,
          finishReason: 'stop',
          usage: { inputTokens: 1, outputTokens: 1 },
          costUsd: 0.001,
          latencyMs: 50,
        }),
      );
    }
    await ingest(observe, events);
    const body = await replay('llm-many');
    assert.equal(body.totalSteps, 120);
    assert.equal(body.session.status, 'active');
    assert.ok(!('endedAt' in body.session), 'endedAt is present once ended');
    assert.equal(body.steps[99]!.context!.llmHistory.length, 50);
    const last = body.steps[119]!.context!.llmHistory;
    assert.equal(last.length, 50);
    assert.deepEqual(
      last.map((h) => h.callId),
      Array.from({ length: 50 }, (_, i) => `l${i + 10}`),
    );
    assert.deepEqual(last[49], {
      callId: 'l59',
      provider: 'openai',
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'q59' }],
      response: 'a59',
      costUsd: 0.001,
      latencyMs: 50,
    });
    assert.equal(body.steps[119]!.context!.cumulativeCostUsd, 0.06);
    assert.equal(body.summary.totalLlmCalls, 60);
    assert.equal(body.summary.totalCost, 0.06);
  });

  test('pagination: offset and limit over the steps, hasMore', async () => {
    const first = await replay('main', '?limit=5');
    assert.deepEqual(
      first.steps.map((s) => s.index),
      [0, 1, 2, 3, 4],
    );
    assert.deepEqual(first.pagination, { offset: 0, limit: 5, hasMore: true });
    assert.equal(first.totalSteps, 16);
    const middle = await replay('main', '?offset=5&limit=5');
    assert.deepEqual(
      middle.steps.map((s) => s.index),
      [5, 6, 7, 8, 9],
    );
    assert.equal(middle.steps[0]!.context!.eventIndex, 5);
    assert.equal(middle.steps[0]!.context!.cumulativeCostUsd, 0.002, 'context of a later page covers the earlier events');
    const last = await replay('main', '?offset=15&limit=5');
    assert.deepEqual(
      last.steps.map((s) => s.index),
      [15],
    );
    assert.deepEqual(last.pagination, { offset: 15, limit: 5, hasMore: false });
    const past = await replay('main', '?offset=16');
    assert.deepEqual(past.steps, []);
    assert.deepEqual(past.pagination, { offset: 16, limit: 1000, hasMore: false });
    assert.equal((await replay('main', '?offset=500')).steps.length, 0);
    assert.equal((await replay('main', '?limit=5000')).steps.length, 16);
  });

  test('eventTypes: every value selects its steps; steps keep their full-replay index; context covers every event', async () => {
    const expected: Record<string, number[]> = {
      session_started: [0],
      session_ended: [15],
      llm_call: [3],
      llm_response: [4],
      tool_call: [1, 7],
      tool_response: [2, 10],
      error: [8, 14],
      decision: [5, 9, 12, 13],
      observation: [6, 11, 14],
      custom: [11, 14],
    };
    for (const [value, indexes] of Object.entries(expected)) {
      const body = await replay('main', `?eventTypes=${value}`);
      assert.deepEqual(
        body.steps.map((s) => s.index),
        indexes,
        value,
      );
      assert.equal(body.totalSteps, indexes.length, value);
      for (const step of body.steps) assert.equal(step.context!.eventIndex, step.index);
    }
    const errors = await replay('main', '?eventTypes=error');
    assert.equal(errors.steps[0]!.context!.cumulativeCostUsd, 0.0025, 'cost of steps filtered out still counts');
    assert.equal(errors.steps[0]!.context!.eventCounts.llm_call, 1);
    assert.deepEqual(errors.steps[0]!.pairedEvent?.eventType, 'tool_call', 'the partner is shown even when filtered out');
    assert.deepEqual(errors.summary, (await replay('main')).summary, 'the summary is the whole session');
    // Several values: union; offset and limit count the filtered steps.
    const union = await replay('main', '?eventTypes=tool_call,error&offset=1&limit=2');
    assert.equal(union.totalSteps, 4);
    assert.deepEqual(
      union.steps.map((s) => s.index),
      [7, 8],
    );
    assert.deepEqual(union.pagination, { offset: 1, limit: 2, hasMore: true });
    const rest = await replay('main', '?eventTypes=error,tool_call&offset=3&limit=2');
    assert.deepEqual(
      rest.steps.map((s) => s.index),
      [14],
    );
    assert.equal(rest.pagination.hasMore, false);
  });

  test('includeContext=false omits the context; true is the default', async () => {
    const without = await replay('main', '?includeContext=false');
    assert.equal(without.steps.length, 16);
    assert.ok(without.steps.every((s) => !('context' in s)));
    assert.equal(without.steps[1]!.pairDurationMs, 400);
    const withContext = await replay('main', '?includeContext=true&limit=2');
    assert.ok(withContext.steps.every((s) => s.context !== undefined));
  });

  test('invalid query parameters are 400 in the observe error body; unknown session is 404', async () => {
    for (const query of [
      'limit=0',
      'limit=5001',
      'limit=abc',
      'limit=1.5',
      'offset=-1',
      'offset=abc',
      'eventTypes=bogus',
      'eventTypes=tool_call,bogus',
      'eventTypes=tool_error',
      'eventTypes=',
      'includeContext=maybe',
      'includeContext=1',
    ]) {
      const response = await observe.call({ method: 'GET', url: `/api/sessions/main/replay?${query}` });
      assert.equal(response.statusCode, 400, query);
      const body = response.json() as { error: string; status: number; details?: { path: string; message: string }[] };
      assert.equal(body.status, 400, query);
      assert.ok(body.error.length > 0, query);
      assert.ok(Array.isArray(body.details) && body.details.length > 0, query);
    }
    const missing = await observe.call({ method: 'GET', url: '/api/sessions/nope/replay' });
    assert.equal(missing.statusCode, 404);
    assert.deepEqual(missing.json(), { error: 'Session not found', code: 'session_not_found', status: 404 });
    const unauthenticated = await observe.service.app.inject({ method: 'GET', url: '/api/sessions/main/replay' });
    assert.equal(unauthenticated.statusCode, 401);
  });

  test('cache: a second identical call is a hit; a new event makes the next call a miss that includes it', async () => {
    await ingest(observe, [simple('cached', 0, 0), simple('cached', 1, 1000)]);
    let before = snapshot();
    const first = await replay('cached');
    assert.equal(delta(before, 'misses'), 1);
    assert.equal(delta(before, 'hits'), 0);
    before = snapshot();
    const second = await replay('cached');
    assert.equal(delta(before, 'hits'), 1);
    assert.equal(delta(before, 'misses'), 0);
    assert.deepEqual(second, first);

    await ingest(observe, [simple('cached', 2, 2000)]);
    before = snapshot();
    const third = await replay('cached');
    assert.equal(delta(before, 'misses'), 1);
    assert.equal(delta(before, 'invalidations'), 1);
    assert.equal(third.totalSteps, 3);
    assert.deepEqual(third.steps[2]!.event.payload, { type: 'tick', data: { i: 2 } });
    assert.equal(third.steps[2]!.context!.eventCounts.custom, 3);
    before = snapshot();
    await replay('cached', '?offset=1&limit=1&eventTypes=custom&includeContext=false');
    assert.equal(delta(before, 'hits'), 1, 'another page or filter of the same session is served from the same entry');
  });

  test('cache: entries expire 10 minutes after they were loaded', async () => {
    await ingest(observe, [simple('ttl', 0, 0)]);
    await replay('ttl');
    clock.advance(10 * 60_000 - 1);
    let before = snapshot();
    await replay('ttl');
    assert.equal(delta(before, 'hits'), 1, 'still fresh 1 ms before the TTL');
    clock.advance(1);
    before = snapshot();
    await replay('ttl');
    assert.equal(delta(before, 'misses'), 1);
    assert.equal(delta(before, 'expirations'), 1);
    before = snapshot();
    await replay('ttl');
    assert.equal(delta(before, 'hits'), 1, 'reloaded entry is cached again');
  });

  test('cache: at most 100 sessions, the least recently used is evicted', async () => {
    const ids = Array.from({ length: 101 }, (_, i) => `lru-${i}`);
    await ingest(
      observe,
      ids.map((id, i) => simple(id, i, i)),
    );
    for (const id of ids) await replay(id, '?includeContext=false');
    assert.equal(cache.size, 100);
    assert.equal(cache.has('lru-0'), false, 'the least recently used went');
    assert.equal(cache.has('lru-1'), true);
    assert.equal(cache.has('lru-100'), true);
    // Using lru-1 makes lru-2 the least recently used.
    let before = snapshot();
    await replay('lru-1', '?includeContext=false');
    assert.equal(delta(before, 'hits'), 1);
    before = snapshot();
    await replay('lru-0', '?includeContext=false');
    assert.equal(delta(before, 'misses'), 1);
    assert.equal(delta(before, 'evictions'), 1);
    assert.equal(cache.has('lru-2'), false);
    assert.equal(cache.has('lru-1'), true);
    assert.equal(cache.size, 100);
  });

  test('chainValid is computed from the stored rows on every request: an edit made in the database shows at once, cached or not', async () => {
    await ingest(observe, mainSession('tampered'));
    assert.equal((await replay('tampered')).chainValid, true);
    let before = snapshot();
    assert.equal((await replay('tampered')).chainValid, true);
    assert.equal(delta(before, 'hits'), 1, 'an intact session is served from the cache');

    const db = observe.service.context.database.db;
    const row = await db.selectFrom('events').select(['id', 'payload']).where('session_id', '=', 'tampered').where('seq', '=', 4).executeTakeFirstOrThrow();
    await db
      .updateTable('events')
      .set({ payload: row.payload.replace('0.002', '0.0001') })
      .where('id', '=', row.id)
      .execute();
    before = snapshot();
    const edited = await replay('tampered');
    assert.equal(edited.chainValid, false, 'no stale verdict from the cache');
    assert.equal(edited.summary.totalCost, 0.0006, 'the steps are the stored events, not the cached ones');
    assert.equal(delta(before, 'invalidations'), 1);
    assert.equal(cache.has('tampered'), false, 'a broken session is not cached');
    assert.equal((await replay('tampered')).chainValid, false);

    await db.updateTable('events').set({ payload: row.payload }).where('id', '=', row.id).execute();
    const restored = await replay('tampered');
    assert.equal(restored.chainValid, true);
    assert.equal(restored.summary.totalCost, 0.0025);
  });

  test('an event stored past the head directly in the database makes chainValid false even when the session was cached', async () => {
    await ingest(observe, mainSession('past-head'));
    assert.equal((await replay('past-head')).chainValid, true);
    assert.equal(cache.has('past-head'), true);
    const db = observe.service.context.database.db;
    const last = await db.selectFrom('events').select('id').where('session_id', '=', 'past-head').where('seq', '=', 15).executeTakeFirstOrThrow();
    await insertEventCopy(observe.service.context.database, last.id, { id: 'ffffffff-ffff-7fff-bfff-ffffffffffff', seq: 16, hash: Buffer.alloc(32, 0xff) });
    const body = await replay('past-head');
    assert.equal(body.chainValid, false);
    assert.equal(body.totalSteps, 17, 'the replay shows every stored event');
  });

  test('paging a 5,000-event session resumes from checkpoints instead of replaying from step 0', async () => {
    for (let batch = 0; batch < 5; batch++) {
      await ingest(
        observe,
        Array.from({ length: 1000 }, (_, i) => simple('big', batch * 1000 + i, (batch * 1000 + i) * 10)),
      );
    }
    let before = snapshot();
    const pages: ReplayBody[] = [];
    for (let offset = 0; offset < 5000; offset += 1000) {
      const step = snapshot();
      pages.push(await replay('big', `?offset=${offset}&limit=1000`));
      assert.equal(delta(step, 'stepsAdvanced'), 1000, `page at ${offset} applies only its own 1,000 steps`);
      assert.deepEqual(cache.stats.lastResume, { from: offset === 0 ? 'start' : 'cursor', position: offset, target: offset });
    }
    assert.equal(delta(before, 'misses'), 1);
    assert.equal(delta(before, 'hits'), 4);
    assert.equal(delta(before, 'stepsAdvanced'), 5000, 'every event applied once for the whole session');
    assert.equal(delta(before, 'checkpointsSaved'), 10);
    assert.equal(pages[4]!.pagination.hasMore, false);
    assert.equal(pages[3]!.pagination.hasMore, true);
    const lastContext = pages[4]!.steps[999]!.context!;
    assert.equal(lastContext.eventIndex, 4999);
    assert.deepEqual(lastContext.eventCounts, { custom: 5000 });
    assert.equal(lastContext.elapsedMs, 49_990);

    // Random access: the nearest checkpoint at or before the page start.
    before = snapshot();
    const again = await replay('big', '?offset=4000&limit=1000');
    assert.deepEqual(cache.stats.lastResume, { from: 'checkpoint', position: 4000, target: 4000 });
    assert.equal(delta(before, 'stepsAdvanced'), 1000);
    assert.deepEqual(again, pages[4]);

    before = snapshot();
    const small = await replay('big', '?offset=2510&limit=10');
    assert.deepEqual(cache.stats.lastResume, { from: 'checkpoint', position: 2500, target: 2510 });
    assert.equal(delta(before, 'stepsAdvanced'), 20);
    assert.deepEqual(small.steps, pages[2]!.steps.slice(510, 520));

    // The state where the last page ended is reused when it is closer than any checkpoint.
    before = snapshot();
    await replay('big', '?offset=2700&limit=10');
    assert.deepEqual(cache.stats.lastResume, { from: 'cursor', position: 2520, target: 2700 });
    assert.equal(delta(before, 'stepsAdvanced'), 190);

    // A filter resumes the same way: the first kept step at or after the checkpoint.
    before = snapshot();
    const filtered = await replay('big', '?eventTypes=custom&offset=4999&limit=1');
    assert.deepEqual(filtered.steps, [pages[4]!.steps[999]]);
    assert.deepEqual(cache.stats.lastResume, { from: 'checkpoint', position: 4500, target: 4999 });
    assert.equal(delta(before, 'stepsAdvanced'), 500);

    // Without context nothing is replayed.
    before = snapshot();
    await replay('big', '?includeContext=false&limit=5000');
    assert.equal(delta(before, 'stepsAdvanced'), 0);
  });
});
