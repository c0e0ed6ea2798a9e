// Retention: a periodic job removes expired sessions (RETENTION_DAYS, settings), old stream log
// positions and expired stream tokens, then gives the space freed back (SQLite: to the file system).
import { defineFeature, type PeriodicJob } from '@vigil/platform';
import type { ObserveAuditLog } from '../audit-log/index.ts';
import type { ObserveFeature } from '../context.ts';
import { deleteExpiredStreamTokens } from '../auth/index.ts';
import { pruneStreamLog } from '../stream/index.ts';
import { applyRetention } from './service.ts';

/** Resolves to the retention job; deletions are recorded in the audit log. */
export const retentionFeature = (log: ObserveAuditLog): ObserveFeature<PeriodicJob> =>
  defineFeature('retention', ({ app, context, job }) => {
    const kept = context.metrics.counter(
      'vigil_retention_sessions_kept_total',
      'Sessions retention found expired by their last_event_at but kept: their chain does not confirm it (a database edit; vigil verify --deep)',
    );
    return job({
      name: 'observe.retention',
      intervalMs: context.config.retentionIntervalMs,
      run: async (now) => {
        const { deleted, unconfirmed } = await applyRetention(context, log, now, (object, message) => app.log.warn(object, message));
        if (deleted > 0) app.log.info({ deleted }, 'retention removed expired sessions');
        kept.inc(unconfirmed.length);
        for (const session of unconfirmed)
          app.log.warn(
            { sessionId: session.sessionId, reason: session.reason },
            `retention kept session ${session.sessionId}, which its last_event_at shows expired: ${session.reason} (vigil verify --deep names the derived data that differs)`,
          );
        await pruneStreamLog(context.database, now);
        await deleteExpiredStreamTokens(context, now);
        const returned = await context.database.reclaimFreeSpace();
        if (returned > 0) app.log.info({ returnedBytes: returned }, 'retention gave freed space back to the file system');
      },
    });
  });
