import { BulkInserter, type DialectName } from '@vigil/platform';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import type { EmbeddingQueueRow } from './tables.ts';
import { sortKey } from './store.ts';
import { isEmbeddedEvent } from './text.ts';

type QueueInsert = EmbeddingQueueRow & Record<string, unknown>;
const COLUMNS = {
  source_type: 'text',
  source_id: 'text',
  enqueued_at: 'bigint',
  attempts: 'integer',
  next_attempt_at: 'bigint',
  claimed_until: 'bigint',
  last_error: 'text',
  generation: 'integer',
  session_start: 'bigint',
} as const;
const eventRows = new BulkInserter<ObserveSchema, 'embedding_queue'>('embedding_queue', COLUMNS);

const queued = (source_type: EmbeddingQueueRow['source_type'], source_id: string, now: number, session_start: number | null = null): QueueInsert => ({
  source_type,
  source_id,
  enqueued_at: now,
  attempts: 0,
  next_attempt_at: 0,
  claimed_until: null,
  last_error: null,
  generation: 0,
  session_start,
});

/** What enqueueing needs from an event being appended. */
export interface EnqueuedEvent {
  row: { id: string; event_type: string; session_start: number };
  payload: Record<string, unknown>;
}

/**
 * In the ingest transaction: one row per event with text (see recall/text.ts) and one row per
 * session of the batch. A session already queued is not queued twice (the row's generation is
 * bumped instead), so a busy session is summarised once per drain, however many batches touch it.
 * `sessionIds` must be sorted (the lock order of the ingest transaction).
 */
export async function enqueueEmbeddings(
  trx: Transaction<ObserveSchema>,
  dialect: DialectName,
  events: readonly EnqueuedEvent[],
  sessionIds: readonly string[],
  now: number,
): Promise<void> {
  const rows = events.filter((e) => isEmbeddedEvent(e.row.event_type, e.payload)).map((e) => queued('event', e.row.id, now, e.row.session_start));
  if (rows.length > 0) await eventRows.insert(trx, dialect, rows);
  if (sessionIds.length === 0) return;
  await trx
    .insertInto('embedding_queue')
    .values(sessionIds.map((id) => queued('session', id, now)))
    .onConflict((oc) => oc.columns(['source_type', 'source_id']).doUpdateSet({ generation: sql`embedding_queue.generation + 1` }))
    .execute();
}

/**
 * Claims up to `limit` due rows of one source type (attempt time reached, not held by a live
 * claim) until `until`, oldest due first, read in order from the (source_type, next_attempt_at)
 * index so that a claim costs the same however long the queue is. One statement; on PostgreSQL
 * rows locked by another claim or an ingest transaction are skipped, so instances sharing the
 * database never take the same row, and the statement runs under `inIndexOrder`.
 */
export async function claimDue(
  database: ObserveDatabase,
  now: number,
  until: number,
  limit: number,
  type: EmbeddingQueueRow['source_type'],
): Promise<EmbeddingQueueRow[]> {
  const { db, dialect } = database;
  if (dialect === 'sqlite') return claimStatement(db, dialect, now, until, limit, type).execute();
  return db.transaction().execute(async (trx) => {
    await inIndexOrder(trx);
    return claimStatement(trx, dialect, now, until, limit, type).execute();
  });
}

/** The claim's UPDATE … RETURNING (`claimDue`). */
export function claimStatement(
  db: Kysely<ObserveSchema>,
  dialect: DialectName,
  now: number,
  until: number,
  limit: number,
  type: EmbeddingQueueRow['source_type'],
) {
  const due = db
    .selectFrom('embedding_queue')
    .select(['source_type', 'source_id'])
    .where('source_type', '=', type)
    .where('next_attempt_at', '<=', now)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
    .orderBy('next_attempt_at')
    .limit(limit);
  const picked = dialect === 'postgres' ? due.forUpdate().skipLocked() : due;
  return db
    .updateTable('embedding_queue')
    .set({ claimed_until: until })
    .where((eb) => eb(eb.refTuple('source_type', 'source_id'), 'in', picked as never))
    .returningAll();
}

/**
 * PostgreSQL, for the rest of the transaction: no plan that sorts, so the claim walks the due index
 * in order and stops at its limit. Its row estimates come from statistics gathered before, which a
 * queue outgrows within seconds: a burst of ingest (every new event row is due at 0) into a queue
 * whose statistics predated it was estimated at about a hundred due rows, and the planner fetched
 * every due row by bitmap and sorted them all (spilling to disk) to take the first 256. Each claim
 * then cost time in proportion to the backlog (43 ms at 80,000 rows, 0.2 ms in index order), the
 * drain fell further behind, and its claims took more of PostgreSQL's statement time than the events' inserts (68 µs an event against 60).
 */
export async function inIndexOrder(trx: Transaction<ObserveSchema>): Promise<void> {
  await sql`set local enable_sort = off`.execute(trx);
}

/**
 * Session rows in the order ingest upserts them (`enqueueEmbeddings`: the batch's sorted session
 * ids). A drain that completes session rows while an ingest transaction re-queues some of
 * the same sessions takes their row locks in that order too, so on PostgreSQL the two cannot
 * deadlock (one waits for the other's commit instead). Event rows need no order: ingest only ever
 * inserts new ones.
 */
function sessionRowsInIngestOrder(rows: readonly EmbeddingQueueRow[]): EmbeddingQueueRow[] {
  return rows.filter((r) => r.source_type === 'session').sort(sortKey);
}

/**
 * Removes finished rows, in the transaction that stored their vectors. A session row whose
 * generation moved on (new events since the claim) stays, unclaimed, for the next drain.
 */
export async function completeRows(trx: Transaction<ObserveSchema>, rows: readonly EmbeddingQueueRow[]): Promise<void> {
  const events = rows.filter((r) => r.source_type === 'event').map((r) => r.source_id);
  for (let i = 0; i < events.length; i += 500) {
    await trx
      .deleteFrom('embedding_queue')
      .where('source_type', '=', 'event')
      .where('source_id', 'in', events.slice(i, i + 500))
      .execute();
  }
  for (const row of sessionRowsInIngestOrder(rows)) {
    const { numDeletedRows } = await trx
      .deleteFrom('embedding_queue')
      .where('source_type', '=', 'session')
      .where('source_id', '=', row.source_id)
      .where('generation', '=', row.generation)
      .executeTakeFirst();
    if (numDeletedRows === 0n) {
      await trx
        .updateTable('embedding_queue')
        .set({ claimed_until: null })
        .where('source_type', '=', 'session')
        .where('source_id', '=', row.source_id)
        .execute();
    }
  }
}

/**
 * At start-up on SQLite (one process per database file): claims still set were left by a process
 * that died mid-drain, so they are released and the restarted worker takes the rows at once
 * instead of waiting out the claim (a minute). On PostgreSQL a claim may belong to a live
 * instance, so it is left to lapse.
 */
export async function releaseStaleClaims(database: ObserveDatabase): Promise<number> {
  if (database.dialect !== 'sqlite') return 0;
  const result = await database.db.updateTable('embedding_queue').set({ claimed_until: null }).where('claimed_until', 'is not', null).executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Longest wait between two attempts of a failing row. */
export const MAX_BACKOFF_MS = 10 * 60_000;

/** Attempt n+1 waits 2^(n−1) s after attempt n (1 s, 2 s, 4 s …), at most MAX_BACKOFF_MS; rows are never dropped. */
export function backoffMs(attempts: number): number {
  return Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.max(0, attempts - 1));
}

/** Records a failed attempt: the rows go back to the queue, due after their backoff. */
export async function failRows(database: ObserveDatabase, rows: readonly EmbeddingQueueRow[], now: number, error: string): Promise<void> {
  const failed = (attempts: number) =>
    database.db
      .updateTable('embedding_queue')
      .set({ attempts, next_attempt_at: now + backoffMs(attempts), claimed_until: null, last_error: error.slice(0, 500) });
  const events = new Map<number, string[]>();
  for (const row of rows) if (row.source_type === 'event') events.set(row.attempts + 1, [...(events.get(row.attempts + 1) ?? []), row.source_id]);
  for (const [attempts, ids] of events) await failed(attempts).where('source_type', '=', 'event').where('source_id', 'in', ids).execute();
  // A statement of its own per session row: it holds one row lock at a time, so an ingest
  // transaction re-queuing the same sessions never waits on it while holding another.
  for (const row of rows) {
    if (row.source_type === 'session')
      await failed(row.attempts + 1)
        .where('source_type', '=', 'session')
        .where('source_id', '=', row.source_id)
        .execute();
  }
}

export interface QueueDepth {
  depth: number;
  retrying: number;
  oldestEnqueuedAt: number | null;
}

export async function queueDepth(database: ObserveDatabase): Promise<QueueDepth> {
  const row = await database.db
    .selectFrom('embedding_queue')
    .select((eb) => [
      eb.fn.countAll<number>().as('depth'),
      sql<number>`coalesce(sum(case when attempts > 0 then 1 else 0 end), 0)`.as('retrying'),
      eb.fn.min<number | null>('enqueued_at').as('oldest'),
    ])
    .executeTakeFirstOrThrow();
  return { depth: Number(row.depth), retrying: Number(row.retrying), oldestEnqueuedAt: row.oldest === null ? null : Number(row.oldest) };
}
