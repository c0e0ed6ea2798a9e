// The audit log: every event's hash a leaf of the platform's Merkle log (RFC 9162), appended in the
// ingest transaction in commit order, retention tombstones, and signed checkpoints pushed to
// witnesses (docs/audit.md).
import { AuditLog, defineFeature, registerAuditLogRoutes, startAuditIntegrator, type PeriodicJob } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { observeError } from '../errors.ts';
import { identifier } from '../events/index.ts';
import type { ObserveSchema } from '../schema.ts';
import { registerObserveAuditWalkRoutes } from './walk-routes.ts';
import { registerDerivedDataRoutes } from './derived-routes.ts';
import { appendEventLeaves } from './writer-leaves.ts';

export { auditLogMigrations, keyLeavesByScopeAlone } from './migrations.ts';
export { type ChainedEventFields, DerivedDataRecomputation, type EventDerivedColumns, movedToSystemAgent } from './derived.ts';

/** The log's name in what it signs. */
export const OBSERVE_LOG = 'vigil-observe';

export type ObserveAuditLog = AuditLog<ObserveSchema>;

/**
 * Resolves to the log and its checkpoint job; `appendLeaves: false` and `commitHeads: false` only for
 * the benchmarks of what the log and its map of session heads cost (ObserveOptions.auditLeaves, auditHeads).
 */
export const auditLogFeature = (options: {
  appendLeaves: boolean;
  commitHeads: boolean;
}): ObserveFeature<{ log: ObserveAuditLog; checkpointJob: PeriodicJob }> =>
  defineFeature('audit-log', async ({ app, context, job, onClose, runJobs }) => {
    const { config, database, clock } = context;
    const log = AuditLog.ofService<ObserveSchema>(
      OBSERVE_LOG,
      config,
      database,
      clock,
      app.log,
      options.commitHeads ? { source: { table: 'sessions', headSeq: 'last_seq', headHash: 'last_hash' } } : undefined,
    );
    await log.registerKey();

    // Before the stream log (the last writer): lock order sessions → audit_log_head → stream_head in every ingest transaction.
    if (options.appendLeaves) {
      context.events.inTransaction((batch) => appendEventLeaves(batch.trx, log, batch.rows));
    }

    // A checkpoint every AUDIT_CHECKPOINT_EVENTS events committed through this instance, and every AUDIT_CHECKPOINT_INTERVAL_MS;
    // with the background work on, one instance (the integrator's leader) signs them all, and signs every
    // AUDIT_INTEGRATOR_POLL_MS while the log grows.
    context.events.afterCommit((appended) => log.committed(appended.length));
    const integrator = runJobs
      ? await startAuditIntegrator({ log, database: config.database, db: database.db, pollMs: config.audit.integratorPollMs, logger: app.log })
      : undefined;
    onClose(async () => {
      await integrator?.stop();
      await log.stop();
    });
    const checkpointJob = job({ name: 'observe.audit-checkpoint', intervalMs: config.audit.checkpointIntervalMs, run: () => log.checkpointIfGrown() });

    registerAuditLogRoutes(app, {
      log,
      errors: observeError,
      item: { parameter: 'eventId', schema: identifier, describe: 'an event' },
      scopes: { read: 'read', sign: 'admin' },
    });
    registerObserveAuditWalkRoutes(app, context, log);
    registerDerivedDataRoutes(app, context);
    return { log, checkpointJob };
  });
