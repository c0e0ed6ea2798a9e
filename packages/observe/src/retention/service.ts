import { DAY_MS, forUpdate, leafHash } from '@vigil/platform';
import { sql, type Transaction } from 'kysely';
import type { ObserveAuditLog } from '../audit-log/index.ts';
import type { ObserveContext } from '../context.ts';
import type { EventSealer } from '../encryption/index.ts';
import { OBSERVE_LOG } from '../audit-log/index.ts';
import {
  chainHashOfCanonical,
  erasureCovers,
  eventPartitions,
  eventsPartitioned,
  leafOfRow,
  markedErasure,
  sessionLoggedRowsQuery,
  toLink,
} from '../events/index.ts';
import type { ObserveSchema } from '../schema.ts';
import { noHeldSubject } from '../erasure/index.ts';
import { heldTargets, holdsInForce, notHeldSession } from '../holds/index.ts';
import { deleteSessionSpans } from '../otel/index.ts';
import { loggedRetentionPeriod } from '../settings/index.ts';

/**
 * A retention transaction deletes up to this many sessions, and stops taking more once it holds
 * EVENTS_PER_TRANSACTION events (a longer session is still deleted whole, alone): bounded
 * transactions keep ingest's wait for the write lock short, and on PostgreSQL let autovacuum
 * reclaim one batch's dead rows while the next runs (docs/deploy.md#disk-space).
 */
const SESSIONS_PER_TRANSACTION = 100;
const EVENTS_PER_TRANSACTION = 20_000;

/** A session retention found by its derived `last_event_at` but did not delete: what its chain says instead. */
export interface UnconfirmedSession {
  sessionId: string;
  reason: string;
}

/**
 * Whether a session retention found expired by its derived `last_event_at` is expired by its chain
 * (null) or why not. The newest chained event (one read of the `(session_id, ts, seq)` index, with
 * its audit-log leaf) must hash to its stored hash, have the leaf the log recorded when it
 * arrived, and carry the timestamp the session row says is its last: the timestamp the hash
 * covers, not a column anyone with database access can set back (issue 36).
 */
async function unconfirmedExpiry(
  trx: Transaction<ObserveSchema>,
  sealer: EventSealer,
  session: { id: string; last_event_at: number; session_start: number },
  cutoff: number,
): Promise<string | null> {
  const stored = await sessionLoggedRowsQuery(trx, session.id, session.session_start)
    .clearOrderBy()
    .orderBy('events.ts', 'desc')
    .orderBy('events.seq', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (stored === undefined) return 'it has no chained event';
  const [row] = (await sealer.open([stored])) as [typeof stored];
  const link = toLink(row);
  if (chainHashOfCanonical(link, link.payloadJson, link.metadataJson) !== link.hash) {
    // An erased event (docs/guide/erasure.md) stands for the hash its signed erasure leaf lists.
    const erasure = markedErasure(link.payloadJson, link.metadataJson);
    const covered = erasure !== null && (await erasureCovers(trx, OBSERVE_LOG, [erasure])).get(erasure)?.get(link.id) === link.hash;
    if (!covered) return `its newest event ${link.id} does not match its chain hash`;
  }
  if (leafOfRow(row) !== leafHash(Buffer.from(link.hash, 'hex')).toString('hex')) return `its newest event ${link.id} does not match its audit-log leaf`;
  if (Number(row.ts) !== Number(session.last_event_at))
    return `its last_event_at (${new Date(Number(session.last_event_at)).toISOString()}) is not the timestamp of its newest chained event (${link.timestamp})`;
  return Number(row.ts) < cutoff ? null : `its newest chained event (${link.timestamp}) is within the retention period`;
}

type ExpiredSession = { id: string; last_seq: number; last_hash: string | null; event_count: number };

/**
 * Removes whole sessions in retention's transaction: a signed tombstone leaf for each (its head and
 * event count, reason `retention`), their share of every derived table (while their events are
 * still there to say what it is), their tags, OTLP span rows and rows; their events too unless the
 * caller drops the partition holding them. Returns their ids.
 */
async function removeSessions(
  ctx: ObserveContext,
  log: ObserveAuditLog,
  trx: Transaction<ObserveSchema>,
  sessions: readonly ExpiredSession[],
  options: { deleteEvents: boolean },
): Promise<string[]> {
  const ids = sessions.map((r) => r.id);
  if (ids.length === 0) return ids;
  const eventCounts = new Map<string, number>();
  for (let i = 0; i < ids.length; i += SESSIONS_PER_TRANSACTION) {
    const counts = await trx
      .selectFrom('events')
      .select(['session_id', (eb) => eb.fn.countAll<number>().as('count')])
      .where('session_id', 'in', ids.slice(i, i + SESSIONS_PER_TRANSACTION))
      .groupBy('session_id')
      .execute();
    for (const row of counts) eventCounts.set(row.session_id, Number(row.count));
  }
  await log.appendTombstones(
    trx,
    sessions.map((session) => ({
      scopeId: session.id,
      body: {
        sessionId: session.id,
        headSeq: session.last_seq,
        headHash: session.last_hash,
        eventCount: eventCounts.get(session.id) ?? 0,
        reason: 'retention',
      },
    })),
  );
  for (let i = 0; i < ids.length; i += SESSIONS_PER_TRANSACTION) {
    const chunk = ids.slice(i, i + SESSIONS_PER_TRANSACTION);
    const events = sessions.slice(i, i + SESSIONS_PER_TRANSACTION).reduce((sum, session) => sum + Number(session.event_count), 0);
    // Their share of the derived tables first, while their events are still there to say what it is.
    for (const table of ctx.derivedTables) await table.subtract?.(trx, ctx.database.dialect, { ids: chunk, events });
    if (options.deleteEvents) await trx.deleteFrom('events').where('session_id', 'in', chunk).execute();
    await trx.deleteFrom('session_tags').where('session_id', 'in', chunk).execute();
    await deleteSessionSpans(trx, chunk);
    await trx.deleteFrom('sessions').where('id', 'in', chunk).execute();
  }
  return ids;
}

/**
 * PostgreSQL: how long dropping a partition waits for its lock on the events table (every reader
 * and writer of events holds a weaker one) before retention gives up on the partition and deletes
 * its sessions row by row instead.
 */
const PARTITION_LOCK_TIMEOUT = '2s';

/**
 * Retention by partition (PostgreSQL, events/partitions.ts): a week partition whose every session
 * started before the cutoff and is expired, under no hold, and confirmed expired by its chain
 * (unconfirmedExpiry), and which holds no event of any other session, is emptied at once: the
 * sessions' tombstones and derived shares are written as for row deletes, their rows deleted, and
 * the partition detached and dropped, one transaction per partition. Any other partition is left
 * to the row deletes. Returns the sessions removed.
 */
async function dropExpiredPartitions(
  ctx: ObserveContext,
  log: ObserveAuditLog,
  cutoff: number,
  warn: (object: object, message: string) => void,
): Promise<number> {
  const { db, dialect } = ctx.database;
  if (!(await eventsPartitioned(db, dialect))) return 0;
  let deleted = 0;
  for (const partition of await eventPartitions(db)) {
    const { from, to, name } = partition;
    if (from === null || to === null || to > cutoff) continue;
    try {
      deleted += await db.transaction().execute(async (trx) => {
        const holds = await holdsInForce(trx);
        const inWeek = trx.selectFrom('sessions').where('session_start', '>=', from).where('session_start', '<', to);
        const sessions = await forUpdate(inWeek.select(['id', 'last_seq', 'last_hash', 'event_count', 'last_event_at', 'session_start']), dialect).execute();
        const expired = await inWeek
          .select('id')
          .where('last_event_at', '<', cutoff)
          .where(notHeldSession(holds))
          .where(noHeldSubject(heldTargets(holds, 'subject')))
          .execute();
        if (expired.length !== sessions.length) return 0;
        for (const session of sessions) if ((await unconfirmedExpiry(trx, ctx.sealer, session, cutoff)) !== null) return 0;
        // An event whose session is not among them (written outside ingest) keeps the partition.
        const stray = await sql`select 1 from ${sql.table(name)} e where not exists
          (select 1 from sessions s where s.id = e.session_id and s.session_start >= ${from} and s.session_start < ${to}) limit 1`.execute(trx);
        if (stray.rows.length > 0) return 0;
        await removeSessions(ctx, log, trx, sessions, { deleteEvents: false });
        await sql`set local lock_timeout = ${sql.lit(PARTITION_LOCK_TIMEOUT)}`.execute(trx);
        await sql`alter table events detach partition ${sql.table(name)}`.execute(trx);
        await sql`drop table ${sql.table(name)}`.execute(trx);
        return sessions.length;
      });
    } catch (error) {
      // Refused (a lock not granted in time, a concurrent change): its sessions go by row deletes.
      warn({ err: error, partition: name }, 'retention could not drop an events partition; its sessions are deleted row by row');
    }
  }
  return deleted;
}

/**
 * Deletes whole sessions (events, tags, OTLP span rows, the session row and their share of every
 * derived table: rollups, sketches, store totals) together whose last event is older
 * than the retention period; a chain is never cut in the middle. Each deleted session leaves a
 * signed tombstone leaf in the audit log (its head and event count, reason `retention`), in the
 * same transaction, so an audit tells a retention run from tampering. Candidates are found by the
 * indexed `last_event_at`, but only a session whose chain confirms its age is deleted
 * (unconfirmedExpiry); the others are kept and answered, and `vigil verify --deep` reports the
 * derived column that disagrees. Nothing is deleted when the stored retention setting is not as its
 * last logged change left it (`warn` says so). Returns the sessions deleted and those kept.
 */
export async function applyRetention(
  ctx: ObserveContext,
  log: ObserveAuditLog,
  now: number,
  warn: (object: object, message: string) => void,
): Promise<{ deleted: number; unconfirmed: UnconfirmedSession[] }> {
  const unconfirmed: UnconfirmedSession[] = [];
  const period = await loggedRetentionPeriod(ctx);
  if ('refused' in period) {
    warn({ reason: period.refused }, `retention does not run: ${period.refused}`);
    return { deleted: 0, unconfirmed };
  }
  const { retentionDays } = period;
  if (retentionDays <= 0) return { deleted: 0, unconfirmed };
  const cutoff = now - retentionDays * DAY_MS;
  let deleted = await dropExpiredPartitions(ctx, log, cutoff, warn);
  for (;;) {
    const batch = await ctx.database.db.transaction().execute(async (trx) => {
      const holds = await holdsInForce(trx);
      let candidates = trx
        .selectFrom('sessions')
        .select(['id', 'last_seq', 'last_hash', 'event_count', 'last_event_at', 'session_start'])
        .where('last_event_at', '<', cutoff)
        // A session under a legal hold in force by the change log (its own, its agent's, a subject's of its events) is kept.
        .where(notHeldSession(holds))
        .where(noHeldSubject(heldTargets(holds, 'subject')))
        .orderBy('last_event_at')
        .limit(SESSIONS_PER_TRANSACTION);
      // Sessions kept earlier in this run stay candidates by their column: not examined again.
      if (unconfirmed.length > 0)
        candidates = candidates.where(
          'id',
          'not in',
          unconfirmed.map((session) => session.sessionId),
        );
      const expired = await forUpdate(candidates, ctx.database.dialect).execute();
      const sessions: typeof expired = [];
      let events = 0;
      for (const session of expired) {
        if (sessions.length > 0 && events + session.event_count > EVENTS_PER_TRANSACTION) break;
        const reason = await unconfirmedExpiry(trx, ctx.sealer, session, cutoff);
        if (reason !== null) {
          unconfirmed.push({ sessionId: session.id, reason });
          continue;
        }
        sessions.push(session);
        events += session.event_count;
      }
      if (sessions.length === 0) return { deleted: 0, more: expired.length === SESSIONS_PER_TRANSACTION };
      const ids = await removeSessions(ctx, log, trx, sessions, { deleteEvents: true });
      return { deleted: ids.length, more: expired.length === SESSIONS_PER_TRANSACTION || sessions.length < expired.length };
    });
    deleted += batch.deleted;
    if (!batch.more) return { deleted, unconfirmed };
  }
}
