/**
 * The embedding queue's session rows are written by two kinds of transaction at once: ingest
 * re-queues the sessions a batch touched (in sorted order), and a drain removes or releases the
 * rows it claimed (in claim order). On PostgreSQL two transactions that lock the same rows in
 * different orders deadlock, and one of them fails: an ingest batch answered 500.
 *
 * A claim reads the due index in order and stops at its limit, whatever the planner's statistics
 * say of the queue: on PostgreSQL a queue filled since they were gathered was sorted whole per claim.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { CompiledQuery, sql, type Kysely } from 'kysely';
import type { ObserveSchema } from '../schema.ts';
import type { EmbeddingQueueRow } from './tables.ts';
import { ago, ingest, planNodes, startTestObserve, TEST_NOW, type TestObserve } from '../testing.ts';
import { embeddedEventsQuery } from './store.ts';
import { drain, queueRows } from './test-fixtures.ts';
import { claimDue, claimStatement, completeRows, enqueueEmbeddings, inIndexOrder } from './queue.ts';

const claimedRow = (sourceId: string): EmbeddingQueueRow => ({
  source_type: 'session',
  source_id: sourceId,
  enqueued_at: TEST_NOW,
  attempts: 0,
  next_attempt_at: TEST_NOW,
  claimed_until: TEST_NOW + 60_000,
  last_error: null,
  generation: 1,
  session_start: null,
});

/** The plan's nodes, each its type and the index it reads (PostgreSQL), or EXPLAIN QUERY PLAN's lines (SQLite). */
async function planOf(db: Kysely<ObserveSchema>, dialect: string, query: CompiledQuery): Promise<string[]> {
  if (dialect === 'sqlite') {
    const result = await db.executeQuery<{ detail: string }>(CompiledQuery.raw(`explain query plan ${query.sql}`, [...query.parameters]));
    return result.rows.map((r) => r.detail);
  }
  return (await planNodes(db, query)).map((node) => [node.type, node.index].filter(Boolean).join(' '));
}

await describeEachDatabase('embedding queue', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  test('both transactions commit (no lock cycle), and the re-queued rows stay for the next drain, unclaimed', async () => {
    const { db, dialect } = observe.service.context.database;
    const [first, second] = ['queue-order-a', 'queue-order-b'];
    // A drain claimed both sessions, the later one first (claims go by due time, not by id).
    const claimed = [claimedRow(second), claimedRow(first)];
    await db.insertInto('embedding_queue').values(claimed).execute();

    let holdsFirst!: () => void;
    const ingestHoldsFirst = new Promise<void>((resolve) => (holdsFirst = resolve));
    // An ingest transaction touches the first session, then (while the drain runs) the second.
    const ingest = db.transaction().execute(async (trx) => {
      await enqueueEmbeddings(trx, dialect, [], [first], TEST_NOW);
      holdsFirst();
      await sleep(400);
      await enqueueEmbeddings(trx, dialect, [], [second], TEST_NOW);
    });
    await ingestHoldsFirst;
    const drain = db.transaction().execute((trx) => completeRows(trx, claimed));

    const outcomes = await Promise.allSettled([ingest, drain]);
    assert.deepEqual(
      outcomes.map((o) => (o.status === 'rejected' ? String(o.reason) : 'committed')),
      ['committed', 'committed'],
    );
    const rows = await db
      .selectFrom('embedding_queue')
      .select(['source_id', 'generation', 'claimed_until'])
      .where('source_type', '=', 'session')
      .orderBy('source_id')
      .execute();
    assert.deepEqual(rows, [
      { source_id: first, generation: 2, claimed_until: null },
      { source_id: second, generation: 2, claimed_until: null },
    ]);
  });

  test('a burst queued since the statistics were gathered is claimed oldest due first, from the index, with no sort', async () => {
    const { db, dialect } = observe.service.context.database;
    const postgres = dialect === 'postgres';
    // A burst fills a queue whose statistics predate it (here: never gathered; autovacuum, which
    // would gather them, held off for the test).
    await db.deleteFrom('embedding_queue').execute();
    if (postgres) await sql`alter table embedding_queue set (autovacuum_enabled = false)`.execute(db);
    const burst = 5_000;
    const rows = Array.from({ length: burst }, (_, i) => ({
      source_type: 'event' as const,
      source_id: `burst-${String(i).padStart(5, '0')}`,
      enqueued_at: TEST_NOW,
      attempts: 0,
      // Every tenth row is a retry due earlier than the new rows (due at 0 … 499).
      next_attempt_at: i % 10 === 0 ? i / 10 : 1_000,
      claimed_until: null,
      last_error: null,
      generation: 0,
      session_start: null,
    }));
    for (let i = 0; i < burst; i += 500)
      await db
        .insertInto('embedding_queue')
        .values(rows.slice(i, i + 500))
        .execute();
    try {
      const statement = (on: Kysely<ObserveSchema>) => claimStatement(on, dialect, TEST_NOW, TEST_NOW + 60_000, 256, 'event').compile();
      if (postgres) {
        // The hazard itself: left to its estimates, the planner sorts every due row to take 256.
        assert.ok((await planOf(db, dialect, statement(db))).includes('Sort'), 'the unguarded claim is planned with a sort');
        const guarded = await db.transaction().execute(async (trx) => {
          await inIndexOrder(trx);
          return planOf(trx, dialect, statement(trx));
        });
        assert.ok(!guarded.includes('Sort'), `claim plan sorts: ${guarded.join(' > ')}`);
        assert.ok(guarded.includes('Index Scan embedding_queue_due'), `claim plan does not read the due index: ${guarded.join(' > ')}`);
      } else {
        const plan = await planOf(db, dialect, statement(db));
        assert.ok(!plan.some((line) => line.includes('TEMP B-TREE')), `claim plan sorts: ${plan.join(' > ')}`);
        assert.ok(
          plan.some((line) => line.includes('embedding_queue_due')),
          `claim plan does not read the due index: ${plan.join(' > ')}`,
        );
      }

      const claimed = await claimDue(observe.service.context.database, TEST_NOW, TEST_NOW + 60_000, 256, 'event');
      const dueOf = (r: { next_attempt_at: number | string }) => Number(r.next_attempt_at);
      assert.equal(claimed.length, 256);
      const retries = claimed
        .filter((r) => dueOf(r) < 1_000)
        .map(dueOf)
        .sort((a, b) => a - b);
      assert.deepEqual(retries, Array.from({ length: 500 }, (_, i) => i).slice(0, 256), 'the 256 earliest due rows are the ones claimed');
      const held = await db
        .selectFrom('embedding_queue')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('claimed_until', '=', TEST_NOW + 60_000)
        .executeTakeFirstOrThrow();
      assert.equal(Number(held.n), 256);
    } finally {
      await db.deleteFrom('embedding_queue').where('source_id', 'like', 'burst-%').execute();
      if (postgres) await sql`alter table embedding_queue reset (autovacuum_enabled)`.execute(db);
    }
  });

  test('an event row carries its session start, the read by it plans one partition, and rows queued without one are still embedded', async () => {
    const { db, dialect } = observe.service.context.database;
    if (dialect === 'postgres') await observe.service.jobs.eventPartitions.tick();
    const threeDaysAgo = 3 * 24 * 60;
    const toolCall = (sessionId: string, minutesAgo: number, q: string) => ({
      sessionId,
      agentId: 'agent-queued',
      eventType: 'tool_call',
      timestamp: ago(minutesAgo),
      payload: { toolName: 'search', callId: `c-${sessionId}`, arguments: { q } },
    });
    const [withStart] = await ingest(observe, [toolCall('queued-start', threeDaysAgo, 'refund policy for damaged parcels')]);
    const [withoutStart] = await ingest(observe, [toolCall('queued-before-0051', 30, 'shipping times to Norway')]);
    // A row queued before migration 0051 has no start.
    await db.updateTable('embedding_queue').set({ session_start: null }).where('source_id', '=', withoutStart!).execute();

    const queued = await db
      .selectFrom('embedding_queue')
      .select(['source_id', 'session_start'])
      .where('source_type', '=', 'event')
      .orderBy('source_id')
      .execute();
    const start = TEST_NOW - threeDaysAgo * 60_000;
    assert.deepEqual(
      queued.map((row) => [row.source_id, row.session_start === null ? null : Number(row.session_start)]),
      [
        [withStart, start],
        [withoutStart, null],
      ].sort(),
    );
    if (dialect === 'postgres') {
      const partitions = async (sessionStart: number | null) =>
        new Set((await planNodes(db, embeddedEventsQuery(db, [withStart!], sessionStart).compile())).flatMap((node) => node.relation ?? []));
      const holding = await sql<{ partition: string }>`select tableoid::regclass::text as partition from events where id = ${withStart}`.execute(db);
      assert.deepEqual([...(await partitions(start))], [holding.rows[0]!.partition]);
      // Without the start every partition's key is probed.
      assert.ok((await partitions(null)).size >= 10);
    }

    await drain(observe);
    assert.deepEqual(await queueRows(observe), []);
    const embedded = await db.selectFrom('embeddings').select('source_id').where('source_type', '=', 'event').orderBy('source_id').execute();
    assert.deepEqual(
      embedded.map((row) => row.source_id),
      [withStart, withoutStart].sort(),
    );
  });
});
