// The audit log: every event's hash a leaf of one Merkle tree (RFC 9162), appended in the ingest
// transaction in commit order, and signed checkpoints of it (docs/audit.md).
import { defineFeature, type PeriodicJob } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { loadSigningKey, makeCheckpoint, registerSigningKey } from './checkpoints.ts';
import { registerDerivedDataRoutes } from './derived-routes.ts';
import { registerAuditLogRoutes } from './routes.ts';
import { appendLeaves, logSize } from './store.ts';

export { backfillAuditLog, createAuditLogTables } from './store.ts';

/** Resolves to the checkpoint job. */
export const auditLogFeature: ObserveFeature<PeriodicJob> = defineFeature('audit-log', async ({ app, context, job, onClose }) => {
  const key = loadSigningKey(context.config.audit.signingKey, context.config.dataDir);
  await registerSigningKey(context.database.db, key, context.clock.now());

  // Before the stream log (the last writer): lock order sessions → audit_log_head → stream_head in every ingest transaction.
  context.events.inTransaction((batch) => appendLeaves(batch.trx, batch.dialect, batch.events.map(({ row }) => row)));

  // Every AUDIT_CHECKPOINT_EVENTS events committed through this instance (other instances count their own)...
  let sinceCheckpoint = 0;
  let signing: Promise<unknown> | null = null;
  context.events.afterCommit((appended) => {
    sinceCheckpoint += appended.length;
    if (sinceCheckpoint < context.config.audit.checkpointEvents || signing !== null) return;
    sinceCheckpoint = 0;
    signing = makeCheckpoint(context.database.db, key, context.clock.now())
      .catch((error: unknown) => app.log.error({ err: error }, 'audit checkpoint failed'))
      .finally(() => (signing = null));
  });
  onClose(async () => {
    await signing;
  });

  // ...and every AUDIT_CHECKPOINT_INTERVAL_MS across the instances, when the log has grown.
  const checkpointJob = job({
    name: 'observe.audit-checkpoint',
    intervalMs: context.config.audit.checkpointIntervalMs,
    run: async (now) => {
      const latest = await context.database.db.selectFrom('audit_checkpoints').select('tree_size').orderBy('tree_size', 'desc').limit(1).executeTakeFirst();
      if (Number(latest?.tree_size ?? -1) < (await logSize(context.database.db))) await makeCheckpoint(context.database.db, key, now);
    },
  });

  registerAuditLogRoutes(app, context, key);
  registerDerivedDataRoutes(app, context);
  return checkpointJob;
});
