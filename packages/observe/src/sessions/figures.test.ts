import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hmacSha256Hex, migrateToLatest } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import type { LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { observeMigrations } from '../migrations.ts';
import { clockOf, ingest, startTestObserve, type TestObserve } from '../testing.ts';

const NOW = Date.parse('2026-11-22T10:00:00.000Z');
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const iso = (ms: number): string => new Date(ms).toISOString();
const SERVICE_TOKEN = 'figures-service-token-0123456789';

type EventInput = Record<string, unknown>;
interface Dimension {
  name: string;
  score: number;
  rawValue: number;
  description: string;
}
interface Health {
  agentId: string;
  overallScore: number;
  trend: string;
  trendDelta: number;
  dimensions: Dimension[];
  sessionCount: number;
}
interface AgentFigures {
  agentId: string;
  sessionCount: number;
  totalEvents: number;
  avgDurationMs: number;
}

async function get<T>(observe: TestObserve, url: string): Promise<T> {
  const response = await observe.call({ method: 'GET', url });
  assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
  return response.json() as T;
}

const health = (observe: TestObserve, agentId: string) => get<Health>(observe, `/api/agents/${agentId}/health`);
const dimension = (h: Health, name: string): Dimension => h.dimensions.find((d) => d.name === name)!;

/** The agent's line of /api/analytics/agents over the two days around NOW (a fixed range, whatever the clock says). */
async function agentFigures(observe: TestObserve, agentId: string): Promise<AgentFigures | undefined> {
  const body = await get<{ agents: AgentFigures[] }>(observe, `/api/analytics/agents?from=${iso(NOW - DAY)}&to=${iso(NOW + DAY)}`);
  return body.agents.find((a) => a.agentId === agentId);
}

function assertRejected(response: LightMyRequestResponse, path: string): void {
  assert.equal(response.statusCode, 400, response.body);
  const body = response.json() as { error: string; status: number; details?: { path: string; message: string }[] };
  assert.equal(body.status, 400);
  assert.ok(
    body.details?.some((d) => d.path === path && /reserved/.test(d.message)),
    response.body,
  );
}

/** A completed session of `agentId`: started, one tool call, ended `minutes` later. */
function completedSession(sessionId: string, agentId: string, start: number, minutes: number): EventInput[] {
  return [
    { sessionId, agentId, eventType: 'session_started', timestamp: iso(start), payload: {} },
    { sessionId, agentId, eventType: 'tool_call', timestamp: iso(start + MINUTE), payload: { toolName: 'search', callId: `${sessionId}-c`, arguments: {} } },
    { sessionId, agentId, eventType: 'session_ended', timestamp: iso(start + minutes * MINUTE), payload: { reason: 'completed' } },
  ];
}

async function createRule(observe: TestObserve, body: Record<string, unknown>): Promise<string> {
  const response = await observe.call({ method: 'POST', url: '/api/alerts/rules', payload: body });
  assert.equal(response.statusCode, 201, response.body);
  return (response.json() as { id: string }).id;
}

async function tick(observe: TestObserve): Promise<void> {
  assert.equal(await observe.service.jobs.alerts.tick(), true, 'the alert tick ran');
}

await describeEachDatabase('figures: alert bookkeeping belongs to the system agent', (backend) => {
  test("an alert firing and resolving on an agent leaves the agent's health, completion and session figures unchanged", async () => {
    const observe = await startTestObserve(backend);
    try {
      await ingest(observe, completedSession('run-1', 'bot', NOW - 2 * HOUR, 2));
      const figures = async () => {
        const h = await health(observe, 'bot');
        return {
          health: { overallScore: h.overallScore, trend: h.trend, dimensions: h.dimensions, sessionCount: h.sessionCount },
          analytics: await agentFigures(observe, 'bot'),
          sessionCount: (await get<{ sessionCount: number }>(observe, '/api/agents/bot')).sessionCount,
        };
      };
      const before = await figures();
      assert.equal(before.health.sessionCount, 1);
      assert.equal(dimension(await health(observe, 'bot'), 'completion_rate').rawValue, 1);

      // A rule scoped to bot fires now and resolves three hours later: its alert session spans 3 h.
      const ruleId = await createRule(observe, {
        name: 'Bot busy',
        condition: 'event_count_exceeds',
        threshold: 0,
        windowMinutes: 180,
        scope: { agentId: 'bot' },
      });
      await tick(observe);
      clockOf(observe).advance(3 * HOUR);
      await tick(observe);
      const alertSession = await get<{ agentId: string; eventCount: number; status: string }>(
        observe,
        `/api/sessions/${encodeURIComponent(`alert:${ruleId}`)}`,
      );
      assert.deepEqual(
        [alertSession.agentId, alertSession.eventCount, alertSession.status],
        ['system', 2, 'active'],
        'fired and resolved, under the system agent',
      );

      assert.deepEqual(await figures(), before, "the alert's session counts toward none of bot's figures");
      const sessions = await get<{ sessions: { id: string }[] }>(observe, '/api/sessions?agentId=bot');
      assert.deepEqual(
        sessions.sessions.map((s) => s.id),
        ['run-1'],
      );
    } finally {
      await observe.close();
    }
  });

  test('the system agent is left out of agent and session lists, analytics, health and stats, but its sessions and events stay readable', async () => {
    const observe = await startTestObserve(backend);
    try {
      await ingest(observe, completedSession('run-1', 'bot', NOW - 2 * HOUR, 2));
      const ruleId = await createRule(observe, { name: 'Any event', condition: 'event_count_exceeds', threshold: 0, windowMinutes: 180 });
      await tick(observe);

      assert.deepEqual(
        (await get<{ agents: { id: string }[] }>(observe, '/api/agents')).agents.map((a) => a.id),
        ['bot'],
      );
      assert.equal((await get<{ totalAgents: number }>(observe, '/api/stats')).totalAgents, 1);
      assert.deepEqual(
        (await get<{ agents: { agentId: string }[] }>(observe, '/api/health/overview')).agents.map((a) => a.agentId),
        ['bot'],
      );
      const health404 = await observe.call({ method: 'GET', url: '/api/agents/system/health' });
      assert.equal(health404.statusCode, 404, 'the system agent has no health');
      const range = `from=${iso(NOW - DAY)}&to=${iso(NOW + HOUR)}`;
      assert.deepEqual(
        (await get<{ agents: AgentFigures[] }>(observe, `/api/analytics/agents?${range}`)).agents.map((a) => a.agentId),
        ['bot'],
      );
      assert.equal((await get<{ totals: { eventCount: number } }>(observe, `/api/analytics?${range}`)).totals.eventCount, 3, "bot's events only");
      assert.equal(
        (await get<{ totals: { eventCount: number } }>(observe, `/api/analytics?${range}&agentId=system`)).totals.eventCount,
        1,
        'asked for by name',
      );
      // No snapshot is ever due for it (the hourly job would otherwise recompute every agent's health each time).
      const snapshots = await observe.service.context.database.db.selectFrom('health_snapshots').select('agent_id').execute();
      assert.deepEqual(
        snapshots.map((s) => s.agent_id),
        ['bot'],
      );

      assert.equal((await get<{ id: string }>(observe, '/api/agents/system')).id, 'system');
      const events = await get<{ events: { eventType: string; sessionId: string }[] }>(observe, '/api/events?agentId=system');
      assert.deepEqual(
        events.events.map((e) => [e.eventType, e.sessionId]),
        [['alert_triggered', `alert:${ruleId}`]],
      );
      const everyone = await get<{ sessions: { id: string }[]; total: number }>(observe, '/api/sessions');
      assert.deepEqual([everyone.sessions.map((s) => s.id), everyone.total], [['run-1'], 1], 'the sessions list leaves the alert session out');
      const listed = await get<{ sessions: { id: string; agentId: string }[] }>(observe, '/api/sessions?agentId=system');
      assert.deepEqual(
        listed.sessions.map((s) => [s.id, s.agentId]),
        [[`alert:${ruleId}`, 'system']],
      );
    } finally {
      await observe.close();
    }
  });

  test('clients cannot write as the system agent: 400, nothing stored', async () => {
    const observe = await startTestObserve(backend, { env: { INTERNAL_SERVICE_TOKEN: SERVICE_TOKEN } });
    try {
      const custom = { eventType: 'custom', payload: { type: 'x', data: 1 } };
      assertRejected(
        await observe.call({
          method: 'POST',
          url: '/api/events',
          payload: {
            events: [
              { sessionId: 'ok', agentId: 'bot', ...custom },
              { sessionId: 'mine', agentId: 'system', ...custom },
            ],
          },
        }),
        'events.1.agentId',
      );
      assertRejected(
        await observe.call({
          method: 'POST',
          url: '/api/events/ingest',
          payload: {
            source: 'generic',
            event: 'x',
            data: { eventType: 'custom', type: 'x', data: 1 },
            context: { service_session_id: 'mine', service_agent_id: 'system' },
          },
        }),
        'agentId',
      );
      const breach = await observe.service.app.inject({
        method: 'POST',
        url: '/api/internal/eval/guardrail-breach',
        headers: { authorization: `Bearer ${SERVICE_TOKEN}` },
        payload: { sessionId: 'mine', agentId: 'system', breach: { ruleId: 'p#0', source: 'approval_gate' } },
      });
      assertRejected(breach, 'agentId');
      assert.equal((await get<{ totalEvents: number; totalSessions: number }>(observe, '/api/stats')).totalSessions, 0);
    } finally {
      await observe.close();
    }
  });

  test("migration 0012 moves alert sessions made under the rule's agent to the system agent, leaving their chained events as they are", async () => {
    const observe = await startTestObserve(backend);
    try {
      const { database, events } = observe.service.context;
      await ingest(observe, completedSession('run-1', 'bot', NOW - 2 * HOUR, 2));
      // What the evaluator wrote before 0012: the rule's agent on the history entry and the events.
      const alert = (eventType: string, at: number, payload: Record<string, unknown>) =>
        ({ sessionId: 'alert:R1', agentId: 'bot', eventType, timestamp: at, payload }) as never;
      const [triggered, resolved] = await events.append(
        [
          alert('alert_triggered', NOW, { alertRuleId: 'R1', alertName: 'Old', condition: 'event_count_exceeds', currentValue: 3, threshold: 0, message: 'm' }),
          alert('alert_resolved', NOW + 3 * HOUR, { alertRuleId: 'R1', alertName: 'Old', resolvedBy: 'condition_cleared' }),
        ],
        NOW,
        { writtenBy: 'server' },
      );
      await database.db
        .insertInto('alert_history')
        .values({
          id: 'H1',
          rule_id: 'R1',
          triggered_at: NOW,
          resolved_at: NOW + 3 * HOUR,
          resolved_by: 'condition_cleared',
          current_value: 3,
          threshold: 0,
          notified: 0,
          agent_id: 'bot',
          summary: '{}',
          triggered_event_id: triggered!.id,
          resolved_event_id: resolved!.id,
        })
        .execute();
      // A client's own session that merely looks like one stays where it is.
      await ingest(observe, [{ sessionId: 'alert:mine', agentId: 'bot', eventType: 'custom', timestamp: iso(NOW), payload: { type: 'x', data: 1 } }]);
      assert.equal((await get<{ sessionCount: number }>(observe, '/api/agents/bot')).sessionCount, 3);
      const chainBefore = await get<{ events: { hash: string; agentId: string }[] }>(observe, '/api/sessions/alert%3AR1/timeline');

      // Back to the state before 0012, then the service's migrations again.
      await sql`delete from schema_migrations where name = ${'0012_session_idle'}`.execute(database.db);
      await database.db.schema.alterTable('sessions').dropColumn('idle_at').execute();
      await migrateToLatest(database, observeMigrations);

      const moved = await get<{ agentId: string; agentName: string }>(observe, '/api/sessions/alert%3AR1');
      assert.deepEqual([moved.agentId, moved.agentName], ['system', 'system']);
      assert.equal((await get<{ agentId: string }>(observe, '/api/sessions/alert%3Amine')).agentId, 'bot');
      assert.equal((await get<{ sessionCount: number }>(observe, '/api/agents/bot')).sessionCount, 2);
      assert.equal((await get<{ sessionCount: number }>(observe, '/api/agents/system')).sessionCount, 1);
      const history = await database.db.selectFrom('alert_history').select('agent_id').where('id', '=', 'H1').executeTakeFirstOrThrow();
      assert.equal(history.agent_id, 'system', 'a later repair appends as the system agent');

      const chainAfter = await get<{ events: { hash: string; agentId: string }[]; chainValid: boolean }>(observe, '/api/sessions/alert%3AR1/timeline');
      assert.equal(chainAfter.chainValid, true);
      assert.deepEqual(chainAfter.events, chainBefore.events, 'events untouched: their agentId is part of the hash');
      assert.deepEqual((await health(observe, 'bot')).sessionCount, 2, "bot's own two sessions");
      assert.equal(
        dimension(await health(observe, 'bot'), 'latency').rawValue,
        (2 * MINUTE + 0) / 2,
        'the 3-hour alert session no longer drags the mean duration',
      );
    } finally {
      await observe.close();
    }
  });
});

await describeEachDatabase('figures: the idle rule for sessions that never end', (backend) => {
  /**
   * A session that works for 10 minutes, falls silent for two hours and then sends one more event
   * (no session_ended ever): its agent's mean session duration before and after that event.
   */
  async function idleThenLate(observe: TestObserve): Promise<{ before: number[]; after: number[]; status: string }> {
    const durations = async () => [(await agentFigures(observe, 'idler'))!.avgDurationMs, dimension(await health(observe, 'idler'), 'latency').rawValue];
    await ingest(observe, [
      { sessionId: 's-idle', agentId: 'idler', eventType: 'session_started', timestamp: iso(NOW), payload: {} },
      {
        sessionId: 's-idle',
        agentId: 'idler',
        eventType: 'tool_call',
        timestamp: iso(NOW + 10 * MINUTE),
        payload: { toolName: 't', callId: 'c1', arguments: {} },
      },
    ]);
    clockOf(observe).advance(10 * MINUTE);
    const before = await durations();
    clockOf(observe).advance(2 * HOUR);
    // Stamped by the server with the (test) clock: 2 h 10 min after the session started.
    await ingest(observe, [{ sessionId: 's-idle', agentId: 'idler', eventType: 'custom', payload: { type: 'late', data: 1 } }]);
    const after = await durations();
    const session = await get<{ status: string; endedAt?: string; eventCount: number }>(observe, '/api/sessions/s-idle');
    assert.equal(session.endedAt, undefined);
    assert.equal(session.eventCount, 3);
    return { before, after, status: session.status };
  }

  test("an idle session stops growing its agent's mean session duration after the timeout; its status stays active", async () => {
    const observe = await startTestObserve(backend);
    try {
      const { before, after, status } = await idleThenLate(observe);
      assert.deepEqual(before, [10 * MINUTE, 10 * MINUTE]);
      assert.deepEqual(after, [10 * MINUTE, 10 * MINUTE], 'analytics and health latency: the two silent hours do not count');
      assert.equal(status, 'active', 'no new status value: the session is idle only in the figures');

      // A session that ends after a long silence keeps the time it declared.
      await ingest(observe, [
        { sessionId: 's-declared', agentId: 'declared', eventType: 'session_started', timestamp: iso(NOW), payload: {} },
        { sessionId: 's-declared', agentId: 'declared', eventType: 'session_ended', timestamp: iso(NOW + 3 * HOUR), payload: { reason: 'completed' } },
      ]);
      assert.equal((await agentFigures(observe, 'declared'))!.avgDurationMs, 3 * HOUR);
    } finally {
      await observe.close();
    }
  });

  test('the idle timeout is SESSION_IDLE_TIMEOUT_MS', async () => {
    const observe = await startTestObserve(backend, { env: { SESSION_IDLE_TIMEOUT_MS: String(5 * MINUTE) } });
    try {
      const { before, after } = await idleThenLate(observe);
      assert.deepEqual(before, [0, 0], 'with a 5-minute timeout the first 10-minute silence already ends the measured time');
      assert.deepEqual(after, [0, 0]);
    } finally {
      await observe.close();
    }
  });

  test('completion judges the sessions that are over: a running session is left out until it goes idle, then counts as not completed', async () => {
    const observe = await startTestObserve(backend);
    try {
      await ingest(observe, [
        ...completedSession('done', 'runner', NOW - HOUR, 10),
        { sessionId: 'live', agentId: 'runner', eventType: 'session_started', timestamp: iso(NOW - 5 * MINUTE), payload: {} },
        { sessionId: 'live', agentId: 'runner', eventType: 'tool_call', timestamp: iso(NOW), payload: { toolName: 't', callId: 'c1', arguments: {} } },
      ]);
      const running = dimension(await health(observe, 'runner'), 'completion_rate');
      assert.deepEqual([running.score, running.rawValue], [100, 1], running.description);
      assert.match(running.description, /1 still running/);

      clockOf(observe).advance(30 * MINUTE);
      assert.equal(dimension(await health(observe, 'runner'), 'completion_rate').rawValue, 1, 'exactly the timeout: still running');
      clockOf(observe).advance(1);
      const idle = dimension(await health(observe, 'runner'), 'completion_rate');
      assert.deepEqual([idle.score, idle.rawValue], [50, 0.5], idle.description);
      assert.equal((await health(observe, 'runner')).sessionCount, 2);
      assert.equal((await get<{ status: string }>(observe, '/api/sessions/live')).status, 'active');
    } finally {
      await observe.close();
    }
  });
});

await describeEachDatabase('figures: one session duration, wherever it is shown', (backend) => {
  const SECRET = 'figures-approval-gate-secret-01';

  /** The gate's forwarded copy of an event (POST /api/events/ingest, source approval_gate, signed). */
  async function forwarded(observe: TestObserve, body: Record<string, unknown>): Promise<void> {
    const text = JSON.stringify({ source: 'approval_gate', ...body });
    const response = await observe.call({
      method: 'POST',
      url: '/api/events/ingest',
      headers: { 'content-type': 'application/json', 'x-webhook-signature': hmacSha256Hex(SECRET, text) },
      payload: text,
    });
    assert.equal(response.statusCode, 201, response.body);
  }

  /** Every figure of the session's duration: the session page's (the sessions API), the list's, replay's and the agent's mean. */
  async function durations(observe: TestObserve, sessionId: string, agentId: string) {
    const session = await get<{ durationMs: number }>(observe, `/api/sessions/${sessionId}`);
    const list = await get<{ sessions: { id: string; durationMs: number }[] }>(observe, `/api/sessions?agentId=${agentId}`);
    const replay = await get<{ summary: { totalDurationMs: number } }>(observe, `/api/sessions/${sessionId}/replay`);
    return {
      session: session.durationMs,
      list: list.sessions.find((s) => s.id === sessionId)?.durationMs,
      replay: replay.summary.totalDurationMs,
      analytics: (await agentFigures(observe, agentId))?.avgDurationMs,
    };
  }

  test('a session that ended after 2 min 13 s, with the gate forwarding an expiry 9 min 5 s in, lasted 2 min 13 s everywhere', async () => {
    const observe = await startTestObserve(backend, { env: { APPROVAL_GATE_WEBHOOK_SECRET: SECRET } });
    try {
      const start = NOW - HOUR;
      await ingest(observe, [
        { sessionId: 'refund-1', agentId: 'refunder', eventType: 'session_started', timestamp: iso(start), payload: {} },
        {
          sessionId: 'refund-1',
          agentId: 'refunder',
          eventType: 'approval_requested',
          timestamp: iso(start + 5_000),
          payload: { requestId: 'r1', action: 'refund', params: {}, urgency: 'normal' },
        },
        // The agent stopped waiting for a human and ended its session.
        { sessionId: 'refund-1', agentId: 'refunder', eventType: 'session_ended', timestamp: iso(start + 133_000), payload: { reason: 'error' } },
      ]);
      // Later the request expires at the gate, which forwards the expiry into the session.
      await forwarded(observe, {
        event: 'request.expired',
        data: { requestId: 'r1', action: 'refund', decidedBy: 'system:expiry', reason: 'Expired before a decision' },
        timestamp: iso(start + 545_000),
        context: { service_session_id: 'refund-1', service_agent_id: 'refunder' },
      });
      assert.deepEqual(await durations(observe, 'refund-1', 'refunder'), { session: 133_000, list: 133_000, replay: 133_000, analytics: 133_000 });
    } finally {
      await observe.close();
    }
  });

  test('a session that never ended and went idle measures to its last event before the silence, everywhere', async () => {
    const observe = await startTestObserve(backend);
    try {
      await ingest(observe, [
        { sessionId: 'idle-1', agentId: 'idler', eventType: 'session_started', timestamp: iso(NOW - 3 * HOUR), payload: {} },
        { sessionId: 'idle-1', agentId: 'idler', eventType: 'custom', timestamp: iso(NOW - 3 * HOUR + 4 * MINUTE), payload: { type: 'step', data: 1 } },
      ]);
      await ingest(observe, [{ sessionId: 'idle-1', agentId: 'idler', eventType: 'custom', timestamp: iso(NOW), payload: { type: 'late', data: 2 } }]);
      assert.deepEqual(await durations(observe, 'idle-1', 'idler'), { session: 4 * MINUTE, list: 4 * MINUTE, replay: 4 * MINUTE, analytics: 4 * MINUTE });
    } finally {
      await observe.close();
    }
  });
});
