// Sessions per agent and start hour and day (agent_session_hours, agent_session_days): kept by ingest as sessions start, move
// their start earlier and move their measured end (ended, idle), and read by the agents report.
// Every check compares with the same figures computed from the sessions rows themselves.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { sessionDurationSql } from '../sessions/index.ts';
import { SYSTEM_AGENT_ID } from '../events/index.ts';
import { ago, ended, ingestEvents, started, startTestObserve, TEST_NOW, toolCall, type TestObserve } from '../testing.ts';
import { backfillSessionHours } from './session-hours.ts';
import { DAILY, HOURLY, type Span } from './spans.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

interface AgentFigures {
  sessionCount: number;
  avgDurationMs: number;
}

await describeEachDatabase('sessions per agent and hour (agent_session_hours)', (backend) => {
  let observe: TestObserve;
  const db = () => observe.service.context.database.db;

  /** The report's figures per agent. */
  async function reported(query = ''): Promise<Record<string, AgentFigures>> {
    const response = await observe.call({ method: 'GET', url: `/api/analytics/agents${query}` });
    assert.equal(response.statusCode, 200, response.body);
    const { agents } = response.json() as { agents: (AgentFigures & { agentId: string })[] };
    return Object.fromEntries(
      agents.filter((a) => a.sessionCount > 0).map((a) => [a.agentId, { sessionCount: a.sessionCount, avgDurationMs: a.avgDurationMs }]),
    );
  }

  /** The same figures counted from the sessions rows started in [from, to]. */
  async function counted(from: number, to: number): Promise<Record<string, AgentFigures>> {
    const rows = await db()
      .selectFrom('sessions')
      .select((eb) => ['agent_id', eb.fn.countAll<number>().as('n'), eb.fn.sum<number>(sessionDurationSql()).as('d')])
      .where('started_at', '>=', from)
      .where('started_at', '<=', to)
      .where('agent_id', '<>', SYSTEM_AGENT_ID)
      .groupBy('agent_id')
      .execute();
    return Object.fromEntries(rows.map((r) => [r.agent_id, { sessionCount: Number(r.n), avgDurationMs: Number(r.d) / Number(r.n) }]));
  }

  /** The stored rows over `span`, as numbers. */
  const stored = async (span: Span = HOURLY) =>
    (await db().selectFrom(span.sessions).selectAll().orderBy('hour').orderBy('agent_id').execute()).map((r) => ({
      hour: Number(r.hour),
      agent_id: r.agent_id,
      session_count: Number(r.session_count),
      duration_sum: Number(r.duration_sum),
    }));

  before(async () => {
    observe = await startTestObserve(backend, { env: { SESSION_IDLE_TIMEOUT_MS: String(30 * MINUTE) } });
    await ingestEvents(observe, [
      // Two hours back, ended after 20 minutes.
      started('a-ended', 'agent-a', ago(125)),
      ended('a-ended', 'agent-a', ago(105), 'completed'),
      // Started by its first event in the last hour, then an earlier event moves its start to the hour before.
      toolCall('a-moved', 'agent-a', ago(30)),
      // Idle: 50 minutes of silence, then an event; its duration stops at the event before the silence.
      started('b-idle', 'agent-b', ago(180)),
      toolCall('b-idle', 'agent-b', ago(175)),
      // Several in the hour 5 hours back, one of them outside a range that cuts that hour.
      started('b-1', 'agent-b', ago(300)),
      started('b-2', 'agent-b', ago(290)),
      started('c-1', 'agent-c', ago(330)),
    ]);
    await ingestEvents(observe, [toolCall('a-moved', 'agent-a', ago(70)), toolCall('b-idle', 'agent-b', ago(125)), ended('b-1', 'agent-b', ago(280), 'error')]);
  });
  after(() => observe.close());

  test('the rows are what the sessions give: a moved start moves the session to its new hour, an end or an idle gap its duration', async () => {
    for (const span of [HOURLY, DAILY]) {
      const rebuilt = await db()
        .transaction()
        .execute(async (trx) => {
          await trx.deleteFrom(span.sessions).execute();
          await backfillSessionHours(trx, span);
          const result = await trx.selectFrom(span.sessions).selectAll().orderBy('hour').orderBy('agent_id').execute();
          throw Object.assign(new Error('rollback'), { result });
        })
        .catch((error: { result?: unknown }) => error.result as Record<string, unknown>[]);
      assert.deepEqual(
        await stored(span),
        rebuilt.map((r) => ({ hour: Number(r.hour), agent_id: r.agent_id, session_count: Number(r.session_count), duration_sum: Number(r.duration_sum) })),
        span.sessions,
      );
    }
    const rows = await stored();
    const movedHour = Math.floor((TEST_NOW - 70 * MINUTE) / HOUR) * HOUR;
    assert.ok(
      rows.some((r) => r.agent_id === 'agent-a' && r.hour === movedHour && r.session_count === 1),
      'a-moved counts in the hour of its earlier event',
    );
    assert.ok(!rows.some((r) => r.hour === TEST_NOW - HOUR && r.agent_id === 'agent-a'), 'and no longer in the hour it first started in');
    const idle = rows.find((r) => r.agent_id === 'agent-b' && r.hour === Math.floor((TEST_NOW - 180 * MINUTE) / HOUR) * HOUR);
    assert.equal(idle?.duration_sum, 5 * MINUTE, 'b-idle ends at its last event before the silence');
  });

  test('the agents report counts sessions and their mean duration as the sessions rows give, for ranges that cut hours either way', async () => {
    const now = TEST_NOW;
    // The last 24 h; a range starting inside the hour 5 hours back, after c-1 started (so that hour is read from the sessions);
    // one ending inside the hour of b-1 and b-2 before b-2 started; one holding whole hours only.
    const ranges: [number, number][] = [
      [now - 24 * HOUR, now],
      [now - 320 * MINUTE, now],
      [now - 400 * MINUTE, now - 295 * MINUTE],
      [Math.floor((now - 6 * HOUR) / HOUR) * HOUR, Math.floor(now / HOUR) * HOUR - 1],
    ];
    for (const [from, to] of ranges) {
      const query = `?from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`;
      assert.deepEqual(await reported(query), await counted(from, to), query);
    }
    assert.equal((await reported())['agent-b']?.sessionCount, 3);
  });

  test("an agent's report reads that agent's rows only", async () => {
    assert.deepEqual(await reported('?agentId=agent-c'), { 'agent-c': (await counted(TEST_NOW - 24 * HOUR, TEST_NOW))['agent-c']! });
  });
});
