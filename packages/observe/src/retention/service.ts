import { DAY_MS, forUpdate } from '@vigil/platform';
import { subtractSessionsFromRollups, subtractSessionsFromSketches } from '../analytics/index.ts';
import type { ObserveContext } from '../context.ts';
import { deleteSessionSpans } from '../otel/index.ts';
import { readSettings } from '../settings/index.ts';

const SESSIONS_PER_TRANSACTION = 100;

/**
 * Deletes whole sessions (events, tags, OTLP span rows, the session row and their share of the
 * analytics rollups together) whose last event is older
 * than the retention period; a chain is never cut in the middle. Returns the sessions deleted.
 */
export async function applyRetention(ctx: ObserveContext, now: number): Promise<number> {
  const { retentionDays } = await readSettings(ctx);
  if (retentionDays <= 0) return 0;
  const cutoff = now - retentionDays * DAY_MS;
  let deleted = 0;
  for (;;) {
    const batch = await ctx.database.db.transaction().execute(async (trx) => {
      const ids = (
        await forUpdate(
          trx.selectFrom('sessions').select('id').where('last_event_at', '<', cutoff).orderBy('last_event_at').limit(SESSIONS_PER_TRANSACTION),
          ctx.database.dialect,
        ).execute()
      ).map((r) => r.id);
      if (ids.length === 0) return 0;
      await subtractSessionsFromRollups(trx, ids);
      await subtractSessionsFromSketches(trx, ids);
      await trx.deleteFrom('events').where('session_id', 'in', ids).execute();
      await trx.deleteFrom('session_tags').where('session_id', 'in', ids).execute();
      await deleteSessionSpans(trx, ids);
      await trx.deleteFrom('sessions').where('id', 'in', ids).execute();
      return ids.length;
    });
    deleted += batch;
    if (batch < SESSIONS_PER_TRANSACTION) return deleted;
  }
}
