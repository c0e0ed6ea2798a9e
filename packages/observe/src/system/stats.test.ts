import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { migrateToLatest, newId } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { sql } from 'kysely';
import { roundUsd } from '@vigil/pricing';
import { SYSTEM_AGENT_ID } from '../events/index.ts';
import { observeMigrations } from '../migrations.ts';
import { ago, custom, ingest, startTestObserve, TEST_NOW, type TestObserve } from '../testing.ts';

const DAY = 24 * 60 * 60_000;

interface Stats {
  totalEvents: number;
  totalSessions: number;
  totalAgents: number;
  oldestEvent: string | null;
  newestEvent: string | null;
  judgeSpendUsd: number;
}

async function stats(observe: TestObserve): Promise<Stats> {
  const response = await observe.call({ method: 'GET', url: '/api/stats' });
  assert.equal(response.statusCode, 200, response.body);
  const { storageSizeBytes: _size, ...figures } = response.json() as Stats & { storageSizeBytes: number };
  return figures;
}

/** The same figures counted from the rows themselves: every event, session, agent (the system agent apart) and judge call. */
async function recomputed(observe: TestObserve): Promise<Stats> {
  const { db } = observe.service.context.database;
  const events = await db
    .selectFrom('events')
    .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min('ts').as('oldest'), eb.fn.max('ts').as('newest')])
    .executeTakeFirstOrThrow();
  const sessions = await db
    .selectFrom('sessions')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  const agents = await db
    .selectFrom('agents')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('id', '<>', SYSTEM_AGENT_ID)
    .executeTakeFirstOrThrow();
  const spend = await db
    .selectFrom('judge_calls')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>('cost_usd'), eb.lit(0)).as('usd'))
    .executeTakeFirstOrThrow();
  const iso = (ts: unknown): string | null => (ts === null ? null : new Date(Number(ts)).toISOString());
  return {
    totalEvents: Number(events.n),
    totalSessions: Number(sessions.n),
    totalAgents: Number(agents.n),
    oldestEvent: iso(events.oldest),
    newestEvent: iso(events.newest),
    judgeSpendUsd: roundUsd(Number(spend.usd)),
  };
}

async function assertExact(observe: TestObserve, what: string): Promise<Stats> {
  const figures = await stats(observe);
  assert.deepEqual(figures, await recomputed(observe), what);
  return figures;
}

/** A judge call as evals stores it (the provider billed `costUsd`). */
async function storeJudgeCall(observe: TestObserve, sessionId: string, costUsd: number): Promise<void> {
  await observe.service.context.database.db
    .insertInto('judge_calls')
    .values({
      id: newId(),
      session_id: sessionId,
      evaluator_id: null,
      model: 'gpt-4o-mini',
      input_tokens: 100,
      output_tokens: 10,
      cost_usd: costUsd,
      score: null,
      passed: null,
      event_id: null,
      error: 'billed, no verdict',
      created_at: TEST_NOW,
    })
    .execute();
}

await describeEachDatabase('GET /api/stats: totals kept by every write, exact at every point', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  test('right after each acknowledged batch, and after concurrent batches, the figures equal a count of the rows', async () => {
    await assertExact(observe, 'empty');
    await ingest(observe, [custom('tot-1', 'agent-a', ago(100)), custom('tot-1', 'agent-a', ago(90))]);
    assert.equal((await assertExact(observe, 'one session')).totalEvents, 2);
    // A known agent's new session, a new agent inside an existing session, a second new agent.
    await ingest(observe, [custom('tot-2', 'agent-a', ago(80)), custom('tot-1', 'agent-b', ago(70)), custom('tot-3', 'agent-c', ago(200))]);
    const figures = await assertExact(observe, 'new sessions and agents');
    assert.deepEqual([figures.totalEvents, figures.totalSessions, figures.totalAgents], [5, 3, 3]);
    // Batches committed together (group commit) and apart, new and known agents and sessions mixed.
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        ingest(observe, [custom(`tot-c${i % 5}`, `agent-c${i % 4}`, ago(60 - i)), custom(`tot-c${i % 3}`, `agent-d${i % 2}`, ago(50 - i))]),
      ),
    );
    const concurrent = await assertExact(observe, 'after concurrent batches');
    assert.deepEqual([concurrent.totalEvents, concurrent.totalSessions, concurrent.totalAgents], [29, 8, 9]);
  });

  test('a batch whose transaction fails leaves the totals as they were: they commit with the events or not at all', async () => {
    let fail = false;
    // The last write of the ingest transaction, after the totals row: failing here rolls back everything before it.
    observe.service.context.events.inTransaction(
      async () => {
        if (fail) throw new Error('the transaction fails after the totals were written');
      },
      { sharedRows: true },
    );
    const before = await assertExact(observe, 'before');
    fail = true;
    const refused = await observe.call({ method: 'POST', url: '/api/events', payload: { events: [custom('tot-fail', 'agent-fail', ago(5))] } });
    assert.ok(refused.statusCode >= 500, refused.body);
    assert.deepEqual(await assertExact(observe, 'after the failed batch'), before);
    fail = false;
    await ingest(observe, [custom('tot-fail', 'agent-fail', ago(5))]);
    const afterRetry = await assertExact(observe, 'after the batch went through');
    assert.deepEqual(
      [afterRetry.totalEvents, afterRetry.totalSessions, afterRetry.totalAgents],
      [before.totalEvents + 1, before.totalSessions + 1, before.totalAgents + 1],
    );
  });

  test('retention subtracts the sessions it deletes, in their transaction; a later instance on the same database reads the same totals', async () => {
    await ingest(observe, [
      custom('tot-old', 'agent-old', new Date(TEST_NOW - 3 * DAY).toISOString()),
      custom('tot-old', 'agent-old', new Date(TEST_NOW - 3 * DAY + 1).toISOString()),
    ]);
    const before = await assertExact(observe, 'before retention');
    const put = await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 1 } });
    assert.equal(put.statusCode, 200, put.body);
    assert.equal(await observe.service.jobs.retention.tick(), true);
    const afterRetention = await assertExact(observe, 'after retention');
    assert.deepEqual([afterRetention.totalEvents, afterRetention.totalSessions], [before.totalEvents - 2, before.totalSessions - 1]);
    assert.equal(afterRetention.totalAgents, before.totalAgents, 'agents are kept');

    // Nothing about the totals is left for after the commit: another instance started on the
    // database at this point (as after a crash right after the acknowledgement) reads them as they are.
    const second = await startTestObserve(backend, { database: observe.config.database, createKey: false });
    try {
      const response = await second.service.app.inject({ method: 'GET', url: '/api/stats', headers: { authorization: `Bearer ${observe.key}` } });
      const { storageSizeBytes: _size, ...figures } = response.json() as Stats & { storageSizeBytes: number };
      assert.deepEqual(figures, afterRetention);
    } finally {
      await second.close();
    }
  });

  test('two instances on one database ingesting the same new agents and sessions count each once', async () => {
    const second = await startTestObserve(backend, { database: observe.config.database, createKey: false });
    try {
      const post = (target: TestObserve, i: number) =>
        target.service.app.inject({
          method: 'POST',
          url: '/api/events',
          headers: { authorization: `Bearer ${observe.key}` },
          payload: { events: [custom(`tot-both-${i % 3}`, `agent-both-${i % 4}`, ago(2)), custom(`tot-both-${(i + 1) % 3}`, `agent-both-${i % 5}`, ago(1))] },
        });
      const before = await stats(observe);
      const responses = await Promise.all(Array.from({ length: 16 }, (_, i) => post(i % 2 === 0 ? observe : second, i)));
      for (const response of responses) assert.equal(response.statusCode, 201, response.body);
      const figures = await assertExact(observe, 'after two instances');
      assert.deepEqual(
        [figures.totalEvents - before.totalEvents, figures.totalSessions - before.totalSessions, figures.totalAgents - before.totalAgents],
        [32, 3, 5],
      );
    } finally {
      await second.close();
    }
  });
});

await describeEachDatabase('migration 0023: the totals filled from the rows of an older database', (backend) => {
  test('counts, agents (the system agent apart) and judge spend as stored; ingest and retention keep them from there', async () => {
    const observe = await startTestObserve(backend);
    try {
      await ingest(observe, [
        custom('mig-1', 'agent-a', ago(300)),
        custom('mig-1', 'agent-b', ago(200)),
        custom('mig-2', 'agent-a', ago(100)),
        custom('mig-old', 'agent-c', new Date(TEST_NOW - 3 * DAY).toISOString()),
      ]);
      await storeJudgeCall(observe, 'mig-1', 0.0125);
      await storeJudgeCall(observe, 'mig-2', 0.000_000_3);
      const { database } = observe.service.context;
      const { db } = database;
      // The system agent's row, as alert bookkeeping leaves it, is not a user's agent.
      await db
        .insertInto('agents')
        .values({
          id: SYSTEM_AGENT_ID,
          name: SYSTEM_AGENT_ID,
          first_seen_at: TEST_NOW,
          last_seen_at: TEST_NOW,
          session_count: 0,
          paused_at: null,
          pause_reason: null,
          model_override: null,
          approval_policy_id: null,
        })
        .execute();

      // The database as it was before 0023 (the judge call above went in without a spend row to keep).
      await db.schema.dropTable('store_totals').execute();
      await db.schema.dropTable('judge_spend').execute();
      await sql`delete from schema_migrations where name = '0023_stats_totals'`.execute(db);
      await migrateToLatest(database, observeMigrations);

      const migrated = await assertExact(observe, 'right after the migration');
      assert.deepEqual([migrated.totalEvents, migrated.totalSessions, migrated.totalAgents, migrated.judgeSpendUsd], [4, 3, 3, 0.0125003]);
      await ingest(observe, [custom('mig-2', 'agent-d', ago(50)), custom('mig-3', 'agent-a', ago(40))]);
      await assertExact(observe, 'after ingest');
      const put = await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 1 } });
      assert.equal(put.statusCode, 200, put.body);
      assert.equal(await observe.service.jobs.retention.tick(), true);
      const kept = await assertExact(observe, 'after retention');
      assert.equal(kept.totalSessions, 3);
    } finally {
      await observe.close();
    }
  });
});
