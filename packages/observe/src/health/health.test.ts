import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ManualClock } from '@vigil/platform';
import { describeEachDatabase, type TestBackend } from '@vigil/platform/testing';
import { assertErrorBody, ingest, startTestObserve, type TestObserve } from '../testing.ts';
import { HEALTH_WEIGHTS } from './scores.ts';
import type { HealthSnapshot } from './service.ts';

const NOW = Date.parse('2026-11-22T10:00:00.000Z');
const SECOND = 1000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const iso = (ms: number): string => new Date(ms).toISOString();

type EventInput = Record<string, unknown>;

interface SessionPlan {
  start: number;
  durationMs: number;
  /** How the session ends; undefined leaves it active. */
  end?: 'completed' | 'error';
  cost?: number;
  calls?: number;
  responses?: number;
  toolErrors?: number;
  /** A custom event with severity `error`. */
  errorEvent?: boolean;
}

/** The events of one session, all with explicit timestamps inside [start, start + duration]. */
function sessionEvents(id: string, agentId: string, plan: SessionPlan): EventInput[] {
  const at = (offset: number): string => iso(plan.start + offset);
  const base = { sessionId: id, agentId };
  const events: EventInput[] = [{ ...base, eventType: 'session_started', timestamp: at(0), payload: {} }];
  for (let i = 0; i < (plan.calls ?? 0); i++) {
    events.push({ ...base, eventType: 'tool_call', timestamp: at(1000 + i), payload: { toolName: 'search', callId: `${id}-c${i}`, arguments: {} } });
  }
  for (let i = 0; i < (plan.responses ?? 0); i++) {
    events.push({
      ...base,
      eventType: 'tool_response',
      timestamp: at(2000 + i),
      payload: { toolName: 'search', callId: `${id}-c${i}`, result: 'ok', durationMs: 100 },
    });
  }
  for (let i = 0; i < (plan.toolErrors ?? 0); i++) {
    events.push({
      ...base,
      eventType: 'tool_error',
      timestamp: at(3000 + i),
      payload: { toolName: 'search', callId: `${id}-e${i}`, error: 'boom', durationMs: 100 },
    });
  }
  if (plan.cost) {
    events.push({
      ...base,
      eventType: 'cost_tracked',
      timestamp: at(4000),
      payload: { provider: 'openai', model: 'gpt-4o', inputTokens: 10, outputTokens: 10, totalTokens: 20, costUsd: plan.cost },
    });
  }
  if (plan.errorEvent) {
    events.push({ ...base, eventType: 'custom', severity: 'error', timestamp: at(5000), payload: { type: 'failure', data: {} } });
  }
  events.push(
    plan.end
      ? { ...base, eventType: 'session_ended', timestamp: at(plan.durationMs), payload: { reason: plan.end } }
      : { ...base, eventType: 'custom', timestamp: at(plan.durationMs), payload: { type: 'heartbeat', data: {} } },
  );
  return events;
}

/**
 * The controlled data set (window 7 days ending at NOW; baseline = the 30 days before; previous
 * window = the 7 days before the window, with its own 30-day baseline):
 *
 * alpha: window a1–a4, baseline p1 p2 o1 (p1 p2 are also the previous window), o2 only in the
 *   previous window's baseline. Improving from 35 to 64.
 * beta: window c1 (5× the baseline cost and duration: both clamp at 0), previous window q1 with no
 *   baseline at all (100-when-zero). Degrading from 100 to 20.
 * gamma: window g1 spends nothing (100-when-zero) and takes half the baseline duration (clamped at
 *   100), no previous window: stable, 0.
 * newbie: window n1, no baseline at all. old: sessions 20 days ago only.
 */
const DATA: Record<string, Record<string, SessionPlan>> = {
  alpha: {
    a1: { start: NOW - 1 * DAY, durationMs: 60 * SECOND, end: 'completed', cost: 0.02, calls: 3, responses: 3 },
    a2: { start: NOW - 2 * DAY, durationMs: 120 * SECOND, end: 'completed', cost: 0.04, calls: 2, responses: 1, toolErrors: 1 },
    a3: { start: NOW - 3 * DAY, durationMs: 60 * SECOND, end: 'error' },
    a4: { start: NOW - 4 * DAY, durationMs: 60 * SECOND, errorEvent: true },
    p1: { start: NOW - 10 * DAY, durationMs: 60 * SECOND, cost: 0.0125, errorEvent: true },
    p2: { start: NOW - 9 * DAY, durationMs: 67.5 * SECOND, end: 'error', cost: 0.0125, calls: 1, toolErrors: 1 },
    o1: { start: NOW - 20 * DAY, durationMs: 60 * SECOND, end: 'completed', cost: 0.0125 },
    o2: { start: NOW - 40 * DAY, durationMs: 67.5 * SECOND, end: 'completed', cost: 0.0125 },
  },
  beta: {
    c1: { start: NOW - 3 * DAY, durationMs: 300 * SECOND, cost: 0.05, errorEvent: true },
    q1: { start: NOW - 10 * DAY, durationMs: 60 * SECOND, end: 'completed', cost: 0.01 },
  },
  gamma: {
    g1: { start: NOW - 1 * HOUR, durationMs: 15 * SECOND, end: 'completed' },
    g0: { start: NOW - 20 * DAY, durationMs: 30 * SECOND, end: 'completed', cost: 0.02 },
  },
  newbie: {
    n1: { start: NOW - 2 * DAY, durationMs: 90 * SECOND, end: 'completed', cost: 0.5, calls: 2, responses: 2 },
  },
  old: {
    x1: { start: NOW - 20 * DAY, durationMs: 60 * SECOND, end: 'completed' },
  },
};

/** A fresh observe holding the sessions of DATA. */
async function startSeeded(backend: TestBackend): Promise<TestObserve> {
  const observe = await startTestObserve(backend);
  const events: EventInput[] = [];
  for (const [agentId, sessions] of Object.entries(DATA)) {
    for (const [id, plan] of Object.entries(sessions)) events.push(...sessionEvents(`${agentId}-${id}`, agentId, plan));
  }
  await ingest(observe, events);
  return observe;
}

interface Dimension {
  name: string;
  score: number;
  weight: number;
  rawValue: number;
  description: string;
}

interface Health {
  agentId: string;
  overallScore: number;
  trend: string;
  trendDelta: number;
  dimensions: Dimension[];
  window: { from: string; to: string };
  sessionCount: number;
  computedAt: string;
}

async function health(observe: TestObserve, agentId: string, window?: number): Promise<Health> {
  const url = `/api/agents/${agentId}/health${window === undefined ? '' : `?window=${window}`}`;
  const response = await observe.call({ method: 'GET', url });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as Health;
}

const scores = (h: Health): Record<string, number> => Object.fromEntries(h.dimensions.map((d) => [d.name, d.score]));
const raws = (h: Health): Record<string, number> => Object.fromEntries(h.dimensions.map((d) => [d.name, d.rawValue]));
const approx = (actual: number, expected: number, what: string): void => assert.ok(Math.abs(actual - expected) < 1e-9, `${what}: ${actual} ≠ ${expected}`);
/** Each named dimension's raw value, to within rounding. */
function assertRaws(h: Health, expected: Record<string, number>): void {
  const raw = raws(h);
  for (const [name, value] of Object.entries(expected)) approx(raw[name]!, value, `${name} raw`);
}

async function snapshotRows(
  observe: TestObserve,
): Promise<{ agent_id: string; date: string; overall_score: number; session_count: number; created_at: number }[]> {
  const rows = await observe.service.context.database.db
    .selectFrom('health_snapshots')
    .select(['agent_id', 'date', 'overall_score', 'session_count', 'created_at'])
    .orderBy('agent_id')
    .orderBy('date')
    .execute();
  return rows.map((r) => ({ ...r, overall_score: Number(r.overall_score), session_count: Number(r.session_count), created_at: Number(r.created_at) }));
}

await describeEachDatabase('GET /api/agents/:id/health', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startSeeded(backend);
  });
  after(() => observe.close());

  test('answers the documented shape: window, session count, dimensions in order with the weights in use', async () => {
    const alpha = await health(observe, 'alpha');
    assert.deepEqual(Object.keys(alpha).sort(), ['agentId', 'computedAt', 'dimensions', 'overallScore', 'sessionCount', 'trend', 'trendDelta', 'window']);
    assert.equal(alpha.agentId, 'alpha');
    assert.deepEqual(alpha.window, { from: iso(NOW - 7 * DAY), to: iso(NOW) });
    assert.equal(alpha.computedAt, iso(NOW));
    assert.equal(alpha.sessionCount, 4);
    assert.deepEqual(
      alpha.dimensions.map((d) => d.name),
      ['error_rate', 'cost_efficiency', 'tool_success', 'latency', 'completion_rate'],
    );
    assert.deepEqual(
      alpha.dimensions.map((d) => d.weight),
      [HEALTH_WEIGHTS.errorRate, HEALTH_WEIGHTS.costEfficiency, HEALTH_WEIGHTS.toolSuccess, HEALTH_WEIGHTS.latency, HEALTH_WEIGHTS.completionRate],
    );
    for (const d of alpha.dimensions) {
      assert.deepEqual(Object.keys(d).sort(), ['description', 'name', 'rawValue', 'score', 'weight']);
      assert.ok(d.description.length > 0);
    }
  });

  test('alpha: every dimension, the weighted overall and an improving trend', async () => {
    const alpha = await health(observe, 'alpha');
    // 2 of 4 sessions with an error event; 2 of 4 completed; (4 responses − 1 error) / 5 calls;
    // avg cost 0.015 vs baseline 0.0125 (1.2×); avg duration 75 s vs baseline 62.5 s (1.2×).
    assert.deepEqual(scores(alpha), { error_rate: 50, cost_efficiency: 80, tool_success: 60, latency: 90, completion_rate: 50 });
    assertRaws(alpha, { error_rate: 0.5, cost_efficiency: 0.015, tool_success: 0.6, latency: 75_000, completion_rate: 0.5 });
    // 0.3×50 + 0.2×80 + 0.2×60 + 0.15×90 + 0.15×50
    assert.equal(alpha.overallScore, 64);
    // Previous window (p1, p2): error 0, cost 100, tool 0 (clamped from −1), latency 100, completion 0 → 35.
    assert.equal(alpha.trend, 'improving');
    assert.equal(alpha.trendDelta, 29);
    const byName = Object.fromEntries(alpha.dimensions.map((d) => [d.name, d.description]));
    assert.match(byName.error_rate!, /2 of 4 sessions/);
    assert.match(byName.tool_success!, /5 tool calls, 4 responses, 1 errors/);
    assert.match(byName.completion_rate!, /2 of 4 sessions \(50%\) completed/);
  });

  test('beta: clamping at 0, 100 with no tool calls, and a degrading trend', async () => {
    const beta = await health(observe, 'beta');
    // 5× the baseline cost: 100 − 400 → 0; 5× the baseline duration: 100 − 200 → 0.
    assert.deepEqual(scores(beta), { error_rate: 0, cost_efficiency: 0, tool_success: 100, latency: 0, completion_rate: 0 });
    assertRaws(beta, { error_rate: 1, cost_efficiency: 0.05, tool_success: 1, latency: 300_000, completion_rate: 0 });
    assert.equal(beta.overallScore, 20);
    assert.equal(beta.sessionCount, 1);
    // Previous window (q1) has no baseline: cost and latency 100 by the zero rule; all else 100 → 100.
    assert.equal(beta.trend, 'degrading');
    assert.equal(beta.trendDelta, -80);
  });

  test('gamma: no spend is 100, half the baseline duration clamps at 100, no previous window is stable with delta 0', async () => {
    const gamma = await health(observe, 'gamma');
    assert.deepEqual(scores(gamma), { error_rate: 100, cost_efficiency: 100, tool_success: 100, latency: 100, completion_rate: 100 });
    // 15 s vs 30 s: 100 − 50 × (0.5 − 1) = 125 → 100.
    assertRaws(gamma, { cost_efficiency: 0, latency: 15_000 });
    assert.equal(gamma.overallScore, 100);
    assert.equal(gamma.trend, 'stable');
    assert.equal(gamma.trendDelta, 0);
  });

  test('newbie: no baseline at all is 100 for cost and latency; clamping at 100', async () => {
    const newbie = await health(observe, 'newbie');
    assert.deepEqual(scores(newbie), { error_rate: 100, cost_efficiency: 100, tool_success: 100, latency: 100, completion_rate: 100 });
    assertRaws(newbie, { cost_efficiency: 0.5, latency: 90_000, tool_success: 1 });
  });

  test('a wider window takes the older sessions in and moves the baseline', async () => {
    const alpha = await health(observe, 'alpha', 30);
    assert.deepEqual(alpha.window, { from: iso(NOW - 30 * DAY), to: iso(NOW) });
    // a1–a4, p1, p2, o1; baseline (30–60 days ago) holds o2 only.
    assert.equal(alpha.sessionCount, 7);
    // 4 errored of 7; 3 completed of 7.
    approx(raws(alpha).error_rate!, 4 / 7, 'error raw');
    assert.equal(scores(alpha).error_rate, 42.86);
    assert.equal(scores(alpha).completion_rate, 42.86);
    // Events by timestamp in the window: 6 calls, 4 responses, 2 errors → 2/6.
    assert.equal(scores(alpha).tool_success, 33.33);
    // avg cost 0.0975 / 7 ≈ 0.013929 vs 0.0125 → 1.1143× → 88.57.
    assert.equal(scores(alpha).cost_efficiency, 88.57);
    // avg duration 487.5 s / 7 ≈ 69.64 s vs 67.5 s → 1.0317× → 98.41.
    assert.equal(scores(alpha).latency, 98.41);
    const old = await health(observe, 'old', 30);
    assert.equal(old.sessionCount, 1);
    assert.equal(old.trend, 'stable');
  });

  test('404 in the observe error body for an agent without sessions in the window', async () => {
    assertErrorBody(await observe.call({ method: 'GET', url: '/api/agents/old/health' }), 404, 'old, 7 days');
    assertErrorBody(await observe.call({ method: 'GET', url: '/api/agents/old/health?window=19' }), 404, 'old, 19 days');
    assertErrorBody(await observe.call({ method: 'GET', url: '/api/agents/nobody/health' }), 404, 'unknown agent');
  });

  test('400 for an invalid window', async () => {
    for (const window of ['0', '91', 'abc', '1.5', '-3', '']) {
      assertErrorBody(await observe.call({ method: 'GET', url: `/api/agents/alpha/health?window=${window}` }), 400, `window=${window}`);
    }
    for (const window of [1, 90]) assert.equal((await health(observe, 'alpha', window)).agentId, 'alpha');
  });

  test('needs a key', async () => {
    assertErrorBody(await observe.service.app.inject({ method: 'GET', url: '/api/agents/alpha/health' }), 401);
  });
});

await describeEachDatabase('GET /api/health/overview', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startSeeded(backend);
  });
  after(() => observe.close());

  test('every agent with a session in the window, sickest first, each the same object as its own health', async () => {
    const response = await observe.call({ method: 'GET', url: '/api/health/overview' });
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json() as { agents: Health[]; computedAt: string };
    assert.deepEqual(Object.keys(body).sort(), ['agents', 'computedAt']);
    assert.equal(body.computedAt, iso(NOW));
    // Ties (gamma, newbie at 100) by agentId; old has no session in the last 7 days.
    assert.deepEqual(
      body.agents.map((a) => [a.agentId, a.overallScore]),
      [
        ['beta', 20],
        ['alpha', 64],
        ['gamma', 100],
        ['newbie', 100],
      ],
    );
    for (const agent of body.agents) assert.deepEqual(agent, await health(observe, agent.agentId));
  });

  test('the window parameter widens the set', async () => {
    const response = await observe.call({ method: 'GET', url: '/api/health/overview?window=30' });
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json() as { agents: Health[] };
    assert.deepEqual(body.agents.map((a) => a.agentId).sort(), ['alpha', 'beta', 'gamma', 'newbie', 'old']);
    const scoresInOrder = body.agents.map((a) => a.overallScore);
    assert.deepEqual(
      scoresInOrder,
      [...scoresInOrder].sort((a, b) => a - b),
    );
    for (const agent of body.agents) assert.deepEqual(agent, await health(observe, agent.agentId, 30));
  });

  test('an empty database answers no agents', async () => {
    const fresh = await startTestObserve(backend);
    try {
      const response = await fresh.call({ method: 'GET', url: '/api/health/overview' });
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.json(), { agents: [], computedAt: iso(NOW) });
    } finally {
      await fresh.close();
    }
  });

  test('400 for an invalid window; a key is required (unlike GET /api/health)', async () => {
    for (const window of ['0', '91', 'abc']) {
      assertErrorBody(await observe.call({ method: 'GET', url: `/api/health/overview?window=${window}` }), 400, `window=${window}`);
    }
    assertErrorBody(await observe.service.app.inject({ method: 'GET', url: '/api/health/overview' }), 401);
    assert.equal((await observe.service.app.inject({ method: 'GET', url: '/api/health' })).statusCode, 200);
  });
});

await describeEachDatabase('health snapshots and GET /api/health/history', (backend) => {
  let observe: TestObserve;
  let clock: ManualClock;
  before(async () => {
    observe = await startSeeded(backend);
    clock = observe.clock as ManualClock;
  });
  after(() => observe.close());

  const history = async (query: string): Promise<{ snapshots: HealthSnapshot[]; agentId: string; days: number }> => {
    const response = await observe.call({ method: 'GET', url: `/api/health/history?${query}` });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as { snapshots: HealthSnapshot[]; agentId: string; days: number };
  };

  test('the first query of the day saves a snapshot; later queries of the day do not duplicate or change it', async () => {
    assert.deepEqual(await snapshotRows(observe), []);
    const alpha = await health(observe, 'alpha');
    let rows = await snapshotRows(observe);
    assert.deepEqual(rows, [{ agent_id: 'alpha', date: '2026-11-22', overall_score: 64, session_count: 4, created_at: NOW }]);
    clock.advance(HOUR);
    await health(observe, 'alpha');
    await health(observe, 'alpha', 30);
    rows = await snapshotRows(observe);
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.created_at, NOW);
    const [snapshot] = (await history('agentId=alpha')).snapshots;
    assert.deepEqual(snapshot, {
      agentId: 'alpha',
      date: '2026-11-22',
      overallScore: alpha.overallScore,
      errorRateScore: 50,
      costEfficiencyScore: 80,
      toolSuccessScore: 60,
      latencyScore: 90,
      completionRateScore: 50,
      sessionCount: 4,
    });
  });

  test('the snapshot holds the 7-day values whatever window was asked for', async () => {
    const wide = await health(observe, 'beta', 30);
    const [snapshot] = (await history('agentId=beta')).snapshots;
    assert.equal(snapshot!.overallScore, 20);
    assert.equal(snapshot!.sessionCount, 1);
    assert.notEqual(wide.sessionCount, snapshot!.sessionCount);
  });

  test('concurrent first queries save one snapshot', async () => {
    const responses = await Promise.all(Array.from({ length: 6 }, () => observe.call({ method: 'GET', url: '/api/agents/gamma/health' })));
    for (const response of responses) assert.equal(response.statusCode, 200, response.body);
    assert.equal((await snapshotRows(observe)).filter((r) => r.agent_id === 'gamma').length, 1);
  });

  test('no snapshot for an agent without sessions in the last 7 days, nor for a 404', async () => {
    await health(observe, 'old', 30);
    assertErrorBody(await observe.call({ method: 'GET', url: '/api/agents/nobody/health' }), 404);
    const agents = new Set((await snapshotRows(observe)).map((r) => r.agent_id));
    assert.ok(!agents.has('old'));
    assert.ok(!agents.has('nobody'));
  });

  test('history: one snapshot per queried day, oldest first, within the last `days` days', async () => {
    clock.set(NOW + DAY);
    await health(observe, 'alpha');
    clock.set(NOW + 3 * DAY);
    await health(observe, 'alpha', 14);
    const all = await history('agentId=alpha');
    assert.equal(all.agentId, 'alpha');
    assert.equal(all.days, 30);
    assert.deepEqual(
      all.snapshots.map((s) => s.date),
      ['2026-11-22', '2026-11-23', '2026-11-25'],
    );
    for (const s of all.snapshots) assert.equal(s.agentId, 'alpha');
    assert.deepEqual(
      (await history('agentId=alpha&days=1')).snapshots.map((s) => s.date),
      ['2026-11-25'],
    );
    assert.deepEqual(
      (await history('agentId=alpha&days=3')).snapshots.map((s) => s.date),
      ['2026-11-23', '2026-11-25'],
    );
    assert.deepEqual(
      (await history('agentId=alpha&days=4')).snapshots.map((s) => s.date),
      ['2026-11-22', '2026-11-23', '2026-11-25'],
    );
    assert.equal((await history('agentId=alpha&days=365')).snapshots.length, 3);
    // Each day's snapshot is that day's 7-day health.
    const today = await health(observe, 'alpha');
    const last = all.snapshots.at(-1)!;
    assert.equal(last.overallScore, today.overallScore);
    assert.equal(last.sessionCount, today.sessionCount);
    // Far in the future the old snapshots fall out of the range.
    clock.set(NOW + 100 * DAY);
    assert.deepEqual((await history('agentId=alpha')).snapshots, []);
    clock.set(NOW);
  });

  test('history of an agent without snapshots is empty', async () => {
    assert.deepEqual(await history('agentId=nobody&days=7'), { snapshots: [], agentId: 'nobody', days: 7 });
  });

  test('history: 400 for a missing agentId or invalid days; a key is required', async () => {
    for (const query of ['', 'days=7', 'agentId=', 'agentId=alpha&days=0', 'agentId=alpha&days=366', 'agentId=alpha&days=abc', 'agentId=alpha&days=2.5']) {
      assertErrorBody(await observe.call({ method: 'GET', url: `/api/health/history?${query}` }), 400, query);
    }
    assertErrorBody(await observe.service.app.inject({ method: 'GET', url: '/api/health/history?agentId=alpha' }), 401);
  });
});

await describeEachDatabase('health snapshot job', (backend) => {
  let observe: TestObserve;
  let clock: ManualClock;
  before(async () => {
    observe = await startSeeded(backend);
    clock = observe.clock as ManualClock;
  });
  after(() => observe.close());

  test('a tick snapshots every agent with sessions in the last 7 days that has none today, once', async () => {
    // alpha is queried first: its snapshot is the first query's, and a tick never replaces it.
    const alpha = await health(observe, 'alpha');
    await ingest(observe, sessionEvents('alpha-a5', 'alpha', { start: NOW - 2 * HOUR, durationMs: 60 * SECOND, end: 'completed' }));
    assert.notEqual((await health(observe, 'alpha')).overallScore, alpha.overallScore);

    assert.equal(await observe.service.jobs.healthSnapshots.tick(), true);
    let rows = await snapshotRows(observe);
    assert.deepEqual(
      rows.map((r) => [r.agent_id, r.date]),
      [
        ['alpha', '2026-11-22'],
        ['beta', '2026-11-22'],
        ['gamma', '2026-11-22'],
        ['newbie', '2026-11-22'],
      ],
    );
    assert.equal(rows[0]!.overall_score, alpha.overallScore);
    for (const row of rows.slice(1)) {
      const current = await health(observe, row.agent_id);
      assert.equal(row.overall_score, current.overallScore, row.agent_id);
      assert.equal(row.session_count, current.sessionCount, row.agent_id);
    }

    await observe.service.jobs.healthSnapshots.tick();
    assert.equal((await snapshotRows(observe)).length, 4);

    clock.advance(DAY);
    await observe.service.jobs.healthSnapshots.tick();
    rows = await snapshotRows(observe);
    assert.equal(rows.length, 8);
    assert.deepEqual(
      rows.filter((r) => r.date === '2026-11-23').map((r) => r.agent_id),
      ['alpha', 'beta', 'gamma', 'newbie'],
    );
    clock.set(NOW);
  });

  test('the 7-day overview saves the snapshots of the agents it covers', async () => {
    const fresh = await startSeeded(backend);
    try {
      const response = await fresh.call({ method: 'GET', url: '/api/health/overview?window=30' });
      assert.equal(response.statusCode, 200);
      const rows = await snapshotRows(fresh);
      assert.deepEqual(
        rows.map((r) => [r.agent_id, r.overall_score]),
        [
          ['alpha', 64],
          ['beta', 20],
          ['gamma', 100],
          ['newbie', 100],
        ],
      );
    } finally {
      await fresh.close();
    }
  });
});

await describeEachDatabase('health weights', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startSeeded(backend);
  });
  after(() => observe.close());

  test('GET /api/config/health-weights answers the weights the scores use', async () => {
    const response = await observe.call({ method: 'GET', url: '/api/config/health-weights' });
    assert.equal(response.statusCode, 200);
    const weights = response.json() as Record<string, number>;
    assert.deepEqual(weights, { ...HEALTH_WEIGHTS });
    const alpha = await health(observe, 'alpha');
    const byName = Object.fromEntries(alpha.dimensions.map((d) => [d.name, d.weight]));
    assert.deepEqual(byName, {
      error_rate: weights.errorRate,
      cost_efficiency: weights.costEfficiency,
      tool_success: weights.toolSuccess,
      latency: weights.latency,
      completion_rate: weights.completionRate,
    });
    const weighted = alpha.dimensions.reduce((sum, d) => sum + d.weight * d.score, 0);
    assert.equal(Math.round(weighted * 100) / 100, alpha.overallScore);
  });

  test('PUT /api/config/health-weights answers 501 { error, status: 501 } and changes nothing', async () => {
    const response = await observe.call({
      method: 'PUT',
      url: '/api/config/health-weights',
      payload: { errorRate: 0.2, costEfficiency: 0.2, toolSuccess: 0.2, latency: 0.2, completionRate: 0.2 },
    });
    assertErrorBody(response, 501);
    assert.deepEqual(Object.keys(response.json() as object).sort(), ['code', 'error', 'status']);
    assert.equal((await health(observe, 'alpha')).overallScore, 64);
  });
});
