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
  defineFeature('retention', ({ app, context, job }) =>
    job({
      name: 'observe.retention',
      intervalMs: context.config.retentionIntervalMs,
      run: async (now) => {
        const deleted = await applyRetention(context, log, now, (object, message) => app.log.warn(object, message));
        if (deleted > 0) app.log.info({ deleted }, 'retention removed expired sessions');
        await pruneStreamLog(context.database, now);
        await deleteExpiredStreamTokens(context, now);
        const returned = await context.database.reclaimFreeSpace();
        if (returned > 0) app.log.info({ returnedBytes: returned }, 'retention gave freed space back to the file system');
      },
    }),
  );
