/**
 * The embedding queue's session rows are written by two kinds of transaction at once: ingest
 * re-queues the sessions a batch touched (in sorted order), and a drain removes or releases the
 * rows it claimed (in claim order). On PostgreSQL two transactions that lock the same rows in
 * different orders deadlock, and one of them fails: an ingest batch answered 500.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import type { EmbeddingQueueRow } from './tables.ts';
import { startTestObserve, TEST_NOW, type TestObserve } from '../testing.ts';
import { completeRows, enqueueEmbeddings } from './queue.ts';

const claimedRow = (sourceId: string): EmbeddingQueueRow => ({
  source_type: 'session',
  source_id: sourceId,
  enqueued_at: TEST_NOW,
  attempts: 0,
  next_attempt_at: TEST_NOW,
  claimed_until: TEST_NOW + 60_000,
  last_error: null,
  generation: 1,
});

await describeEachDatabase('embedding queue: a drain completing session rows while ingest re-queues them', (backend) => {
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
});
