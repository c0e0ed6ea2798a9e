import { DAY_MS, forUpdate } from '@vigil/platform';
import type { ObserveAuditLog } from '../audit-log/index.ts';
import type { ObserveContext } from '../context.ts';
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

/**
 * Deletes whole sessions (events, tags, OTLP span rows, the session row and their share of every
 * derived table: rollups, sketches, store totals) together whose last event is older
 * than the retention period; a chain is never cut in the middle. Each deleted session leaves a
 * signed tombstone leaf in the audit log (its head and event count, reason `retention`), in the
 * same transaction, so an audit tells a retention run from tampering. Returns the sessions deleted;
 * none when the stored retention setting is not as its last logged change left it (`warn` says so).
 */
export async function applyRetention(ctx: ObserveContext, log: ObserveAuditLog, now: number, warn: (object: object, message: string) => void): Promise<number> {
  const period = await loggedRetentionPeriod(ctx);
  if ('refused' in period) {
    warn({ reason: period.refused }, `retention does not run: ${period.refused}`);
    return 0;
  }
  const { retentionDays } = period;
  if (retentionDays <= 0) return 0;
  const cutoff = now - retentionDays * DAY_MS;
  let deleted = 0;
  for (;;) {
    const batch = await ctx.database.db.transaction().execute(async (trx) => {
      const expired = await forUpdate(
        trx
          .selectFrom('sessions')
          .select(['id', 'last_seq', 'last_hash', 'event_count'])
          .where('last_event_at', '<', cutoff)
          .orderBy('last_event_at')
          .limit(SESSIONS_PER_TRANSACTION),
        ctx.database.dialect,
      ).execute();
      const sessions: typeof expired = [];
      let events = 0;
      for (const session of expired) {
        if (sessions.length > 0 && events + session.event_count > EVENTS_PER_TRANSACTION) break;
        sessions.push(session);
        events += session.event_count;
      }
      if (sessions.length === 0) return { deleted: 0, more: false };
      const ids = sessions.map((r) => r.id);
      const counts = await trx
        .selectFrom('events')
        .select(['session_id', (eb) => eb.fn.countAll<number>().as('count')])
        .where('session_id', 'in', ids)
        .groupBy('session_id')
        .execute();
      const eventCounts = new Map(counts.map((row) => [row.session_id, Number(row.count)]));
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
      // Their share of the derived tables first, while their events are still there to say what it is.
      for (const table of ctx.derivedTables) await table.subtract?.(trx, ctx.database.dialect, { ids, events });
      await trx.deleteFrom('events').where('session_id', 'in', ids).execute();
      await trx.deleteFrom('session_tags').where('session_id', 'in', ids).execute();
      await deleteSessionSpans(trx, ids);
      await trx.deleteFrom('sessions').where('id', 'in', ids).execute();
      return { deleted: ids.length, more: expired.length === SESSIONS_PER_TRANSACTION || sessions.length < expired.length };
    });
    deleted += batch.deleted;
    if (!batch.more) return deleted;
  }
}
