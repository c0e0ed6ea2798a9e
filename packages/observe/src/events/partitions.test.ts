import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { CompiledQuery, sql, type Kysely } from 'kysely';
import type { ObserveSchema } from '../schema.ts';
import { ago, ingest, planNodes, startTestObserve, TEST_NOW, type TestObserve } from '../testing.ts';
import { eventPartitions, PARTITION_WEEK_MS, PARTITION_WEEKS_AHEAD, weekPartitionName, weekStart } from './partitions.ts';
import { buildObserveService } from '../app.ts';
import { observeConfigFromEnvironment } from '../config.ts';
import { ManualClock } from '@vigil/platform';
import { sessionLoggedRowsQuery } from './store.ts';

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/** A short session of mixed events starting `minutesAgo` before TEST_NOW, one event a minute. */
function session(id: string, minutesAgo: number, count = 6): object[] {
  return Array.from({ length: count }, (_, i) => {
    const base = { sessionId: id, agentId: `agent-${id}`, timestamp: ago(minutesAgo - i) };
    if (i % 3 === 0) return { ...base, eventType: 'tool_call', payload: { toolName: 'search', callId: `c${i}`, arguments: { q: `${id} ${i}` } } };
    if (i % 3 === 1)
      return { ...base, eventType: 'tool_response', payload: { toolName: 'search', callId: `c${i - 1}`, result: { hits: i }, durationMs: 10 + i } };
    return {
      ...base,
      eventType: 'llm_response',
      payload: {
        callId: `l${i}`,
        provider: 'openai',
        model: 'gpt-4o-mini',
        completion: `answer ${i}`,
        finishReason: 'stop',
        usage: { inputTokens: 40, outputTokens: 9 },
        costUsd: 0.001 * i,
        latencyMs: 100 + i,
      },
    };
  });
}

/** The partitions (relations named events_*) a plan reads. */
async function planPartitions(db: Kysely<ObserveSchema>, query: CompiledQuery): Promise<string[]> {
  const relations = (await planNodes(db, query)).flatMap((node) => (node.relation?.startsWith('events') ? [node.relation] : []));
  return [...new Set(relations)].sort();
}

/** Where each event of the session is stored (the partition, on PostgreSQL). */
async function partitionsOf(db: Kysely<ObserveSchema>, sessionId: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`select distinct tableoid::regclass::text as name from events where session_id = ${sessionId}`.execute(db);
  return rows.map((row) => row.name).sort();
}

await describeEachDatabase('events partitioned by session start', (backend) => {
  let observe: TestObserve;
  const db = () => observe.service.context.database.db;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  test('every event of a session carries the time of its first stored event, though an earlier event arrives later', async () => {
    await ingest(observe, session('late-early', 30));
    // An event from before the session's first: started_at moves back, session_start does not.
    await ingest(observe, [
      { sessionId: 'late-early', agentId: 'agent-late-early', eventType: 'custom', timestamp: ago(120), payload: { type: 'x', data: {} } },
    ]);
    const row = await db().selectFrom('sessions').select(['started_at', 'session_start']).where('id', '=', 'late-early').executeTakeFirstOrThrow();
    assert.equal(Number(row.started_at), TEST_NOW - 120 * MINUTE);
    assert.equal(Number(row.session_start), TEST_NOW - 30 * MINUTE);
    const starts = await db().selectFrom('events').select('session_start').distinct().where('session_id', '=', 'late-early').execute();
    assert.deepEqual(
      starts.map((start) => Number(start.session_start)),
      [TEST_NOW - 30 * MINUTE],
    );
  });

  test(
    'the partition job creates the weeks behind and ahead and moves the default partition rows into their week',
    { skip: backend.kind !== 'postgres' },
    async () => {
      await ingest(observe, session('week-now', 60));
      await ingest(observe, session('week-back', 10 * 24 * 60));
      assert.deepEqual(await partitionsOf(db(), 'week-now'), ['events_default']);
      assert.equal(await observe.service.jobs.eventPartitions.tick(), true);
      const partitions = await eventPartitions(db());
      const weeks = partitions.filter((partition) => partition.from !== null);
      // Five weeks behind (no retention period set), the current one and four ahead.
      assert.equal(weeks.length, 10);
      assert.equal(weeks.at(-1)!.from, weekStart(TEST_NOW) + 4 * 7 * DAY);
      assert.deepEqual(
        partitions.filter((partition) => partition.from === null).map((partition) => partition.name),
        ['events_default', 'events_legacy'],
      );
      assert.deepEqual(await partitionsOf(db(), 'week-now'), [weekPartitionName(weekStart(TEST_NOW - 60 * MINUTE))]);
      assert.deepEqual(await partitionsOf(db(), 'week-back'), [weekPartitionName(weekStart(TEST_NOW - 10 * DAY))]);
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from events_default`.execute(db());
      assert.equal(rows[0]!.n, 0);
      // A second tick finds nothing to do; new sessions go straight to their week.
      await observe.service.jobs.eventPartitions.tick();
      assert.equal((await eventPartitions(db())).length, partitions.length);
      await ingest(observe, session('week-direct', 5));
      assert.deepEqual(await partitionsOf(db(), 'week-direct'), [weekPartitionName(weekStart(TEST_NOW - 5 * MINUTE))]);
      const timeline = await observe.call({ method: 'GET', url: '/api/sessions/week-back/timeline' });
      assert.equal(timeline.statusCode, 200);
      assert.equal((timeline.json() as { chainValid: boolean }).chainValid, true);
    },
  );

  test('EXPLAIN: a session read given its start plans only the partition holding it', { skip: backend.kind !== 'postgres' }, async () => {
    await observe.service.jobs.eventPartitions.tick();
    await ingest(observe, session('explain-me', 3 * 24 * 60));
    const { session_start } = await db().selectFrom('sessions').select('session_start').where('id', '=', 'explain-me').executeTakeFirstOrThrow();
    const pruned = await planPartitions(db(), sessionLoggedRowsQuery(db(), 'explain-me', Number(session_start)).compile());
    assert.deepEqual(pruned, [weekPartitionName(weekStart(TEST_NOW - 3 * DAY))]);
    // Without the key every partition's index is probed: what verification does on purpose.
    const unpruned = await planPartitions(db(), sessionLoggedRowsQuery(db(), 'explain-me').compile());
    assert.ok(unpruned.length >= 10, unpruned.join());
    // A query bounded by session start reads only the weeks in its bounds.
    const from = weekStart(TEST_NOW - 7 * DAY);
    const bounded = await planPartitions(
      db(),
      db()
        .selectFrom('events')
        .select((eb) => eb.fn.countAll().as('n'))
        .where('session_start', '>=', from)
        .where('session_start', '<', from + 14 * DAY)
        .compile(),
    );
    assert.deepEqual(bounded, [weekPartitionName(from), weekPartitionName(from + 7 * DAY)]);
  });
});

await describeEachDatabase('partitions made before the service takes writes', (backend) => {
  test('with background work on, the current week and the weeks ahead exist when the service has started', { skip: backend.kind !== 'postgres' }, async () => {
    const { dataDir, ...database } = backend.freshDatabase();
    const config = { ...observeConfigFromEnvironment({ LOG_LEVEL: 'silent' }, { dataDir }), database };
    const service = await buildObserveService(config, { clock: new ManualClock(TEST_NOW), runJobs: true });
    try {
      const names = new Set((await eventPartitions(service.context.database.db)).map((partition) => partition.name));
      for (let week = 0; week <= PARTITION_WEEKS_AHEAD; week += 1)
        assert.ok(names.has(weekPartitionName(weekStart(TEST_NOW) + week * PARTITION_WEEK_MS)), `week ${week} ahead exists`);
    } finally {
      await service.app.close();
    }
  });
});

await describeEachDatabase('retention by partition', (backend) => {
  let observe: TestObserve;
  const db = () => observe.service.context.database.db;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  test('a week whose every session expired is dropped whole with a tombstone each; a week with a live or held session goes by row deletes', async () => {
    // TEST_NOW is Sunday 2026-11-22; with 7 days kept the cutoff is Sunday 2026-11-15 10:00.
    await ingest(observe, [...session('gone-a', 27 * 24 * 60), ...session('gone-b', 27 * 24 * 60 - 90)]);
    await ingest(observe, [...session('row-deleted', 20 * 24 * 60), ...session('long-lived', 20 * 24 * 60 - 30, 3)]);
    await ingest(observe, session('held', 34 * 24 * 60));
    await ingest(observe, session('recent', 60));
    // The long-lived session's newest event is recent: its week cannot be dropped.
    await ingest(observe, [{ sessionId: 'long-lived', agentId: 'agent-long-lived', eventType: 'custom', timestamp: ago(5), payload: { type: 'x', data: {} } }]);
    const hold = await observe.call({ method: 'POST', url: '/api/holds', payload: { scope: 'session', targetId: 'held', reason: 'matter 7' } });
    assert.equal(hold.statusCode, 201, hold.body);
    if (backend.kind === 'postgres') await observe.service.jobs.eventPartitions.tick();
    const before = backend.kind === 'postgres' ? (await eventPartitions(db())).map((partition) => partition.name) : [];
    const heads = new Map<string, { last_seq: number; last_hash: string | null }>();
    for (const row of await db().selectFrom('sessions').select(['id', 'last_seq', 'last_hash']).execute()) heads.set(row.id, row);
    const stats = (await observe.call({ method: 'GET', url: '/api/stats' })).json() as { totalEvents: number; totalSessions: number };

    assert.equal((await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 7 } })).statusCode, 200);
    assert.equal(await observe.service.jobs.retention.tick(), true);

    const remaining = (await db().selectFrom('sessions').select('id').orderBy('id').execute()).map((row) => row.id);
    assert.deepEqual(remaining, ['held', 'long-lived', 'recent']);
    const tombstones = await db().selectFrom('audit_tombstones').select('body').execute();
    const bodies = tombstones.map(
      (row) => JSON.parse(row.body) as { sessionId: string; headSeq: number; headHash: string; eventCount: number; reason: string },
    );
    assert.deepEqual(bodies.map((body) => body.sessionId).sort(), ['gone-a', 'gone-b', 'row-deleted']);
    for (const body of bodies) {
      assert.equal(body.reason, 'retention');
      assert.equal(body.eventCount, 6);
      assert.equal(body.headSeq, heads.get(body.sessionId)!.last_seq);
      assert.equal(body.headHash, heads.get(body.sessionId)!.last_hash);
    }
    assert.equal((await db().selectFrom('events').select('id').where('session_id', 'in', ['gone-a', 'gone-b', 'row-deleted']).execute()).length, 0);
    const after = (await observe.call({ method: 'GET', url: '/api/stats' })).json() as { totalEvents: number; totalSessions: number };
    assert.equal(after.totalEvents, stats.totalEvents - 18);
    assert.equal(after.totalSessions, stats.totalSessions - 3);
    for (const sessionId of remaining) {
      const verify = (await observe.call({ method: 'GET', url: `/api/audit/verify?sessionId=${sessionId}` })).json() as { valid: boolean };
      assert.equal(verify.valid, true, sessionId);
    }
    assert.equal((await observe.call({ method: 'POST', url: '/api/audit/checkpoint' })).statusCode, 201);
    if (backend.kind === 'postgres') {
      const kept = new Set((await eventPartitions(db())).map((partition) => partition.name));
      const dropped = before.filter((name) => !kept.has(name));
      // gone-a's and gone-b's week, and the empty weeks before the cutoff; not the held session's week nor the long-lived one's.
      assert.ok(dropped.includes(weekPartitionName(weekStart(TEST_NOW - 27 * DAY))), dropped.join());
      assert.ok(!dropped.includes(weekPartitionName(weekStart(TEST_NOW - 34 * DAY))), dropped.join());
      assert.ok(!dropped.includes(weekPartitionName(weekStart(TEST_NOW - 20 * DAY))), dropped.join());
      assert.ok(dropped.every((name) => name.startsWith('events_w')));
    }
  });
});
