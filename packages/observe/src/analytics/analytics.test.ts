import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { startTestObserve, type TestObserve } from '../testing.ts';
import { compareSketches } from './latency.ts';
import { compareRollups } from './rollups.ts';
import { DAILY, HOURLY } from './spans.ts';
import { percentileFieldsOf, recomputedAgents, reportedAgents } from './agents-report-testing.ts';

// The test clock stands at 2026-11-22T10:00:00.000Z, so the default window is
// [2026-11-21T10:00:00.000Z, 2026-11-22T10:00:00.000Z].
const at = (time: string) => `2026-11-22T${time}Z`;
const llm = (callId: string, model: string, costUsd: number, inputTokens: number, outputTokens: number, latencyMs: number) => ({
  eventType: 'llm_response',
  payload: { callId, provider: 'openai', model, completion: 'ok', finishReason: 'stop', usage: { inputTokens, outputTokens }, costUsd, latencyMs },
});

const DATASET = [
  { sessionId: 's1', agentId: 'A', timestamp: at('08:10:00.000'), eventType: 'tool_call', payload: { toolName: 'search', callId: 'c1', arguments: {} } },
  {
    sessionId: 's1',
    agentId: 'A',
    timestamp: at('08:10:01.000'),
    eventType: 'tool_response',
    payload: { toolName: 'search', callId: 'c1', result: 1, durationMs: 100 },
  },
  { sessionId: 's1', agentId: 'A', timestamp: at('08:20:00.000'), eventType: 'tool_call', payload: { toolName: 'search', callId: 'c2', arguments: {} } },
  {
    sessionId: 's1',
    agentId: 'A',
    timestamp: at('08:20:00.000'),
    eventType: 'tool_error',
    payload: { toolName: 'search', callId: 'c2', error: 'x', durationMs: 300 },
  },
  { sessionId: 's1', agentId: 'A', timestamp: at('08:30:00.000'), ...llm('l1', 'gpt-4o', 0.1, 1000, 500, 200) },
  { sessionId: 's1', agentId: 'A', timestamp: at('09:15:00.000'), ...llm('l2', 'gpt-4o-mini', 0.2, 2000, 100, 400) },
  { sessionId: 's1', agentId: 'A', timestamp: at('09:40:00.000'), eventType: 'custom', severity: 'error', payload: { type: 'boom', data: {} } },
  {
    sessionId: 's2',
    agentId: 'B',
    timestamp: at('07:05:00.000'),
    eventType: 'cost_tracked',
    payload: { provider: 'anthropic', model: 'claude-sonnet-4', inputTokens: 10, outputTokens: 20, totalTokens: 30, costUsd: 0.3 },
  },
  { sessionId: 's2', agentId: 'B', timestamp: at('09:59:59.999'), eventType: 'tool_call', payload: { toolName: 'fetch', callId: 'c3', arguments: {} } },
  // A day earlier: outside the default window.
  { sessionId: 's0', agentId: 'A', timestamp: '2026-11-21T09:00:00.000Z', ...llm('l0', 'gpt-4o', 5, 1, 1, 1) },
];

/** p50/p95/p99 fields (with this name) as the sketch reports them for these timed values, or null for none. */
const all = (name: string, ...values: number[]) => percentileFieldsOf(name, values);

interface Overview {
  eventCount: number;
  toolCallCount: number;
  errorCount: number;
  avgLatencyMs: number;
  totalCostUsd: number;
}

await describeEachDatabase('analytics over a controlled data set', (backend) => {
  let observe: TestObserve;
  const get = async <T>(url: string, status = 200): Promise<T> => {
    const response = await observe.call({ method: 'GET', url });
    assert.equal(response.statusCode, status, response.body);
    return response.json() as T;
  };

  before(async () => {
    observe = await startTestObserve(backend);
    const response = await observe.call({ method: 'POST', url: '/api/events', payload: { events: DATASET } });
    assert.equal(response.statusCode, 201, response.body);
  });
  after(() => observe.close());

  test('GET /api/analytics: last 24 h by hour, every bucket in order, exact totals', async () => {
    const body = await get<{ buckets: (Overview & { bucket: string })[]; totals: Overview }>('/api/analytics');
    assert.equal(body.buckets.length, 25, 'hourly buckets from 10:00 yesterday to 10:00 today, inclusive');
    assert.equal(body.buckets[0]!.bucket, '2026-11-21T10:00:00.000Z');
    assert.equal(body.buckets.at(-1)!.bucket, '2026-11-22T10:00:00.000Z');
    // Two tool durations (100 and 300 ms): every percentile's rank ⌊q·(n−1)⌋ is the first.
    assert.deepEqual(body.totals, { eventCount: 9, toolCallCount: 3, errorCount: 2, avgLatencyMs: 200, totalCostUsd: 0.6, ...all('Latency', 100, 300) });
    const byBucket = new Map(body.buckets.map((b) => [b.bucket, b]));
    assert.deepEqual(byBucket.get(at('07:00:00.000')), {
      bucket: at('07:00:00.000'),
      eventCount: 1,
      toolCallCount: 0,
      errorCount: 0,
      avgLatencyMs: 0,
      totalCostUsd: 0.3,
    });
    assert.deepEqual(byBucket.get(at('08:00:00.000')), {
      bucket: at('08:00:00.000'),
      eventCount: 5,
      toolCallCount: 2,
      errorCount: 1,
      avgLatencyMs: 200,
      totalCostUsd: 0.1,
    });
    assert.deepEqual(byBucket.get(at('09:00:00.000')), {
      bucket: at('09:00:00.000'),
      eventCount: 3,
      toolCallCount: 1,
      errorCount: 1,
      avgLatencyMs: 0,
      totalCostUsd: 0.2,
    });
    assert.equal(body.buckets.filter((b) => b.eventCount > 0).length, 3, 'empty buckets are present with zeros');
  });

  test('partial hours at both ends are counted exactly (whole hours from rollups, edges from events)', async () => {
    const mixed = await get<{ totals: Overview }>(`/api/analytics?from=${at('07:30:00.000')}&to=${at('09:50:00.000')}`);
    assert.deepEqual(mixed.totals, { eventCount: 7, toolCallCount: 2, errorCount: 2, avgLatencyMs: 200, totalCostUsd: 0.3, ...all('Latency', 100, 300) });
    const inside = await get<{ totals: Overview; buckets: unknown[] }>(`/api/analytics?from=${at('08:15:00.000')}&to=${at('09:20:00.000')}`);
    assert.deepEqual(inside.totals, { eventCount: 4, toolCallCount: 1, errorCount: 1, avgLatencyMs: 300, totalCostUsd: 0.3, ...all('Latency', 300) });
    assert.equal(inside.buckets.length, 2);
    const exactEdge = await get<{ totals: Overview }>(`/api/analytics?from=${at('09:59:59.999')}&to=${at('09:59:59.999')}`);
    assert.equal(exactEdge.totals.eventCount, 1, 'from and to are inclusive');
  });

  test('a range off the hour merges rollup and event rows of the same group: names and buckets stay intact', async () => {
    const from = at('07:30:00.000');
    const to = at('09:20:00.000');
    const llm = await get<{ byModel: { model: string; calls: number }[] }>(`/api/analytics/llm?from=${from}&to=${to}`);
    assert.deepEqual(
      llm.byModel.map((m) => [m.model, m.calls]),
      [
        ['gpt-4o-mini', 1],
        ['gpt-4o', 1],
      ],
    );
    const days = await get<{ buckets: (Overview & { bucket: string })[] }>(`/api/analytics?granularity=day&from=${from}&to=${to}`);
    assert.deepEqual(
      days.buckets.map((d) => [d.bucket, d.eventCount]),
      [['2026-11-22T00:00:00.000Z', 6]],
    );
    const agents = await get<{ agents: { agentId: string; totalEvents: number }[] }>(`/api/analytics/agents?from=${from}&to=${to}`);
    assert.deepEqual(
      agents.agents.map((a) => [a.agentId, a.totalEvents]),
      [['A', 6]],
    );
  });

  test('agentId filter, day and week granularity (weeks start on Monday, UTC)', async () => {
    const b = await get<{ totals: Overview }>('/api/analytics?agentId=B');
    assert.deepEqual(b.totals, { eventCount: 2, toolCallCount: 1, errorCount: 0, avgLatencyMs: 0, totalCostUsd: 0.3, ...all('Latency') });
    const days = await get<{ buckets: (Overview & { bucket: string })[] }>('/api/analytics?granularity=day');
    assert.deepEqual(
      days.buckets.map((d) => [d.bucket, d.eventCount]),
      [
        ['2026-11-21T00:00:00.000Z', 0],
        ['2026-11-22T00:00:00.000Z', 9],
      ],
    );
    const weeks = await get<{ buckets: (Overview & { bucket: string })[] }>('/api/analytics?granularity=week&from=2026-11-01T00:00:00.000Z');
    for (const week of weeks.buckets) assert.equal(new Date(week.bucket).getUTCDay(), 1, `${week.bucket} is a Monday`);
    assert.equal(weeks.buckets.at(-1)!.bucket, '2026-11-16T00:00:00.000Z');
    assert.equal(weeks.buckets.at(-1)!.eventCount, 10, 'the week holds today and yesterday');
    assert.equal(
      weeks.buckets.reduce((n, w) => n + w.eventCount, 0),
      10,
    );
  });

  test('GET /api/analytics/llm: summary, by model (highest cost first), by time, filters', async () => {
    const body = await get<{
      summary: Record<string, number>;
      byModel: Record<string, unknown>[];
      byTime: { bucket: string; calls: number }[];
    }>('/api/analytics/llm');
    assert.deepEqual(body.summary, {
      totalCalls: 2,
      totalCostUsd: 0.3,
      totalInputTokens: 3000,
      totalOutputTokens: 600,
      avgLatencyMs: 300,
      avgCostPerCall: 0.15,
      ...all('Latency', 200, 400),
    });
    assert.deepEqual(body.byModel, [
      { provider: 'openai', model: 'gpt-4o-mini', calls: 1, costUsd: 0.2, inputTokens: 2000, outputTokens: 100, avgLatencyMs: 400, ...all('Latency', 400) },
      { provider: 'openai', model: 'gpt-4o', calls: 1, costUsd: 0.1, inputTokens: 1000, outputTokens: 500, avgLatencyMs: 200, ...all('Latency', 200) },
    ]);
    assert.equal(body.byTime.length, 25);
    assert.equal(body.byTime.find((b) => b.bucket === at('08:00:00.000'))!.calls, 1);
    assert.equal((await get<{ summary: { totalCalls: number } }>('/api/analytics/llm?model=gpt-4o')).summary.totalCalls, 1);
    assert.equal((await get<{ summary: { totalCalls: number } }>('/api/analytics/llm?provider=anthropic')).summary.totalCalls, 0);
    assert.equal((await get<{ summary: { totalCalls: number } }>('/api/analytics/llm?agentId=B')).summary.totalCalls, 0);
  });

  test('GET /api/analytics/costs: spend events by agent, per day, totals', async () => {
    const body = await get<{ byAgent: unknown[]; overTime: { bucket: string; totalCostUsd: number; eventCount: number }[]; totals: unknown }>(
      '/api/analytics/costs',
    );
    assert.deepEqual(body.byAgent, [
      { agentId: 'A', totalCostUsd: 0.3, totalInputTokens: 3000, totalOutputTokens: 600, totalTokens: 3600, eventCount: 2 },
      { agentId: 'B', totalCostUsd: 0.3, totalInputTokens: 10, totalOutputTokens: 20, totalTokens: 30, eventCount: 1 },
    ]);
    assert.deepEqual(body.overTime, [
      { bucket: '2026-11-21T00:00:00.000Z', totalCostUsd: 0, eventCount: 0 },
      { bucket: '2026-11-22T00:00:00.000Z', totalCostUsd: 0.6, eventCount: 3 },
    ]);
    assert.deepEqual(body.totals, { totalCostUsd: 0.6, totalInputTokens: 3010, totalOutputTokens: 620, totalTokens: 3630 });
  });

  test('GET /api/analytics/agents and /api/analytics/tools', async () => {
    const agents = await get<{ agents: unknown[] }>('/api/analytics/agents');
    // Neither session ended, so the idle rule (30 min) measures them: s1 went idle after 08:30 (45
    // minutes of silence until 09:15), s2 right after its first event (almost 3 hours of silence).
    assert.deepEqual(agents.agents, [
      {
        agentId: 'A',
        sessionCount: 1,
        totalEvents: 7,
        totalErrors: 2,
        errorRate: 2 / 7,
        totalCostUsd: 0.3,
        avgDurationMs: 20 * 60_000,
        ...all('ToolDuration', 100, 300),
        ...all('LlmLatency', 200, 400),
      },
      {
        agentId: 'B',
        sessionCount: 1,
        totalEvents: 2,
        totalErrors: 0,
        errorRate: 0,
        totalCostUsd: 0.3,
        avgDurationMs: 0,
        ...all('ToolDuration'),
        ...all('LlmLatency'),
      },
    ]);
    const tools = await get<{ tools: unknown[] }>('/api/analytics/tools');
    assert.deepEqual(tools.tools, [
      { toolName: 'search', callCount: 2, errorCount: 1, errorRate: 0.5, avgDurationMs: 200, ...all('Duration', 100, 300) },
      { toolName: 'fetch', callCount: 1, errorCount: 0, errorRate: 0, avgDurationMs: 0, ...all('Duration') },
    ]);
  });

  test('an hour the range cuts is read by its shorter part (inside: its rollup row when no event lies outside the range in it, else its events; outside: its row less the events outside): equal to recomputation', async () => {
    const { db } = observe.service.context.database;
    /** Counts, errors and spend straight from the events of [from, to]. */
    const recompute = async (from: string, to: string) => {
      const rows = await db
        .selectFrom('events')
        .select(['event_type', 'is_error', 'cost_usd'])
        .where('ts', '>=', Date.parse(from))
        .where('ts', '<=', Date.parse(to))
        .execute();
      return {
        eventCount: rows.length,
        toolCallCount: rows.filter((r) => r.event_type === 'tool_call').length,
        errorCount: rows.filter((r) => Number(r.is_error) === 1).length,
        totalCostUsd: Math.round(rows.reduce((sum, r) => sum + Number(r.cost_usd ?? 0), 0) * 1e9) / 1e9,
      };
    };
    const totals = async (from: string, to: string) => {
      const { eventCount, toolCallCount, errorCount, totalCostUsd } = (await get<{ totals: Overview }>(`/api/analytics?from=${from}&to=${to}`)).totals;
      return { eventCount, toolCallCount, errorCount, totalCostUsd };
    };
    // [08:05, 09:30]: 08 by its part outside (the rollup of 08 less the events of 08:00–08:05, none); 09 by
    // its part inside, and 09:40 and 09:59 lie after 09:30 (the events of 09:00–09:30).
    const cut = [at('08:05:00.000'), at('09:30:00.000')] as const;
    // [07:01, 08:45]: both hours by their parts outside, which hold no event.
    const both = [at('07:01:00.000'), at('08:45:00.000')] as const;
    // Inside one hour, cut at both ends: its rollup row less its two parts outside.
    const within = [at('07:01:00.000'), at('07:59:00.000')] as const;
    for (const [from, to] of [cut, both, within, [at('09:59:59.999'), at('09:59:59.999')]] as const)
      assert.deepEqual(await totals(from, to), await recompute(from, to), `${from} – ${to}`);
    assert.deepEqual(await totals(...both), { eventCount: 6, toolCallCount: 2, errorCount: 1, totalCostUsd: 0.4 });

    // The rollup row of 08:00 is what [08:05, 09:30] reads for that hour: doubling its count shows.
    const rollup08 = () =>
      db
        .updateTable('event_rollups')
        .where('hour', '=', Date.parse(at('08:00:00.000')))
        .where('event_type', '=', 'tool_call');
    await rollup08()
      .set((eb) => ({ event_count: eb('event_count', '*', 2) }))
      .execute();
    try {
      assert.equal((await totals(...cut)).toolCallCount, (await recompute(...cut)).toolCallCount + 2);
      // By its part outside, which holds 08:10: the row less that event.
      const lessOutside = [at('08:15:00.000'), at('09:30:00.000')] as const;
      assert.equal((await totals(...lessOutside)).toolCallCount, (await recompute(...lessOutside)).toolCallCount + 2);
      // By its part inside, with 08:10–08:30 outside: the events of 08:40–08:59.
      const inside = [at('08:40:00.000'), at('09:30:00.000')] as const;
      assert.deepEqual(await totals(...inside), await recompute(...inside));
    } finally {
      await rollup08()
        .set((eb) => ({ event_count: eb('event_count', '/', 2) }))
        .execute();
    }
  });

  test('a day the range cuts is read by its shorter part (inside: its daily rows when no event lies outside the range in it, else its hours; outside: its rows less its hours outside): equal to recomputation', async () => {
    const { db } = observe.service.context.database;
    const recompute = (from: string, to: string) => recomputedAgents(db, Date.parse(from), Date.parse(to));
    const reported = (from: string, to: string) => reportedAgents(observe, Date.parse(from), Date.parse(to));
    const day21 = '2026-11-21T';
    // The 21st whole (daily rows), the 22nd cut at now with nothing after it (daily rows).
    const wholeAndToday = [`${day21}00:00:00.000Z`, at('10:00:00.000')] as const;
    // The 21st by its part outside, which holds l0 (09:00): its daily rows less its hours 00–09:30; the 22nd daily.
    const afterL0 = [`${day21}09:30:00.000Z`, at('10:00:00.000')] as const;
    // The 21st by its part inside, with l0 outside: its hours from 15:00.
    const lateOn21 = [`${day21}15:00:00.000Z`, at('10:00:00.000')] as const;
    // The 21st by its part outside, which holds nothing; the 22nd by its part inside, cut at 08:15 with
    // events after it: its whole hours 00–07 hourly, 08:00–08:15 from the events.
    const bothCut = [`${day21}08:00:00.000Z`, at('08:15:00.000')] as const;
    // Inside one day, both ends cut.
    const inside = [at('07:00:00.000'), at('09:00:00.000')] as const;
    for (const range of [wholeAndToday, afterL0, lateOn21, bothCut, inside])
      assert.deepEqual(await reported(...range), await recompute(...range), range.join(' – '));

    // The 21st's daily row is what a range holding that day whole, or reading it by its part outside, reads: doubling its count shows.
    const daily21 = () => db.updateTable('event_rollups_daily').where('hour', '=', Date.parse(`${day21}00:00:00.000Z`));
    await daily21()
      .set((eb) => ({ event_count: eb('event_count', '*', 2) }))
      .execute();
    try {
      const events = async (range: readonly [string, string]) => (await reported(...range)).find((a) => a.agentId === 'A')?.totalEvents;
      for (const [from, to] of [wholeAndToday, afterL0, bothCut])
        assert.equal(await events([from, to]), Number((await recompute(from, to)).find((a) => a.agentId === 'A')!.totalEvents) + 1, `${from} – ${to}`);
      assert.deepEqual(await reported(...lateOn21), await recompute(...lateOn21), 'a day read by its part inside, with events outside, reads its hours');
    } finally {
      await daily21()
        .set((eb) => ({ event_count: eb('event_count', '/', 2) }))
        .execute();
    }
  });

  test('the rollups kept by ingest equal the rollups recomputed from the stored events', async () => {
    const { stored, recomputed } = await compareRollups(observe.service.context.database.db);
    assert.ok(stored.length >= 8, `one row per hour, agent, type, tool, provider and model (${stored.length})`);
    assert.deepEqual(stored, recomputed);
    const daily = await compareRollups(observe.service.context.database.db, DAILY);
    assert.ok(daily.stored.length > 0);
    assert.deepEqual(daily.stored, daily.recomputed);
    assert.deepEqual(await compareSketches(observe.service.context.database.db, DAILY).then((d) => d.stored.length), 5);
    const sketches = await compareSketches(observe.service.context.database.db);
    assert.equal(sketches.stored.length, 5, 'one bin each: two tool durations, three LLM latencies');
    assert.deepEqual(sketches.stored, sketches.recomputed);
  });

  test('agentId narrows every report (costs, agents, tools too); range is the window back from to; a misspelt filter is a 400 naming it', async () => {
    const agents = await get<{ agents: { agentId: string }[] }>('/api/analytics/agents');
    assert.deepEqual(await get('/api/analytics/agents?agentId=B'), { agents: agents.agents.filter((a) => a.agentId === 'B') });
    // The same statement (one shape: one agent asked for), each call bound to its own agent.
    assert.deepEqual(await get('/api/analytics/agents?agentId=A'), { agents: agents.agents.filter((a) => a.agentId === 'A') });
    const tools = await get<{ tools: { toolName: string }[] }>('/api/analytics/tools');
    assert.deepEqual(await get('/api/analytics/tools?agentId=B'), { tools: tools.tools.filter((t) => t.toolName === 'fetch') });
    const costs = await get<{ byAgent: { agentId: string }[]; totals: { totalCostUsd: number } }>('/api/analytics/costs?agentId=B');
    assert.deepEqual(
      costs.byAgent.map((a) => a.agentId),
      ['B'],
    );
    assert.equal(costs.totals.totalCostUsd, 0.3);

    // The last hour (09:00 to 10:00): of the spend, only l2 (0.2) at 09:15.
    const lastHour = await get<{ totals: { totalCostUsd: number } }>('/api/analytics/costs?range=1h');
    assert.equal(lastHour.totals.totalCostUsd, 0.2);
    const both = await get<{ error: string }>(`/api/analytics/costs?range=1h&from=${at('08:00:00.000')}`, 400);
    assert.match(both.error, /range or from/);

    for (const url of ['/api/analytics/agents?agnetId=B', '/api/analytics/agents?granularity=day', '/api/events?agnetId=B']) {
      const refused = await get<{ error: string; details: { path: string }[] }>(url, 400);
      const name = url.slice(url.indexOf('?') + 1, url.indexOf('='));
      assert.match(refused.error, new RegExp(`${name}: unknown query parameter`), url);
      assert.deepEqual(
        refused.details.map((d) => d.path),
        [name],
        url,
      );
    }
  });

  test('bad parameters are 400 in the observe error body', async () => {
    for (const query of [`from=${at('09:00:00.000')}&to=${at('08:00:00.000')}`, 'granularity=minute', 'from=yesterday', 'from=2000-01-01T00:00:00.000Z']) {
      const response = await observe.call({ method: 'GET', url: `/api/analytics?${query}` });
      assert.equal(response.statusCode, 400, query);
      const body = response.json() as { error: string; status: number };
      assert.equal(body.status, 400);
      assert.equal(typeof body.error, 'string');
    }
  });

  test('retention subtracts what it deletes from the rollups', async () => {
    const window = 'from=2026-11-21T08:00:00.000Z&to=2026-11-21T10:30:00.000Z';
    assert.equal((await get<{ totals: Overview }>(`/api/analytics?${window}`)).totals.totalCostUsd, 5);
    const put = await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 1 } });
    assert.equal(put.statusCode, 200, put.body);
    await observe.service.jobs.retention.tick();
    assert.deepEqual((await get<{ totals: Overview }>(`/api/analytics?${window}`)).totals, {
      eventCount: 0,
      toolCallCount: 0,
      errorCount: 0,
      avgLatencyMs: 0,
      totalCostUsd: 0,
      ...all('Latency'),
    });
    assert.equal((await get<{ totals: Overview }>('/api/analytics')).totals.eventCount, 9, 'sessions inside the retention period stay');
    for (const span of [HOURLY, DAILY]) {
      const { stored, recomputed } = await compareRollups(observe.service.context.database.db, span);
      assert.deepEqual(stored, recomputed, `no ${span.rollups} row is left for the deleted session`);
      const sketches = await compareSketches(observe.service.context.database.db, span);
      assert.deepEqual(sketches.stored, sketches.recomputed, `nor any ${span.sketches} bin`);
    }
    assert.equal(
      (await get<{ summary: Record<string, unknown> }>('/api/analytics/llm?from=2026-11-21T08:00:00.000Z&to=2026-11-21T10:30:00.000Z')).summary.p50LatencyMs,
      null,
    );
  });
});
