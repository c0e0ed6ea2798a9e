// The gate's audit log: every audit entry's hash a leaf of the platform's Merkle log (RFC 9162),
// appended in the transaction that writes the entry, in commit order, with signed checkpoints
// pushed to witnesses (docs/audit.md, "The gate's audit log").
import { defineFeature, registerAuditLogRoutes, startAuditIntegrator, type PeriodicJob } from '@vigil/platform';
import { z } from 'zod';
import type { GateFeature } from '../context.ts';
import { gateError } from '../errors.ts';
import { registerGateAuditWalkRoutes } from './walk-routes.ts';

export { auditEntryLeaf, GATE_LOG, type GateAuditLog } from './log.ts';
export { auditLogMigrations } from './migrations.ts';

/** Registers the log's key and routes; resolves to its checkpoint job. (The log itself, shared by the requests feature, is stopped with the context.) */
export const auditLogFeature: GateFeature<PeriodicJob> = defineFeature('audit-log', async ({ app, context, job, onClose, runJobs }) => {
  const { auditLog: log, config } = context;
  await log.registerKey();

  // With the background work on, one instance (the integrator's leader) signs the checkpoints and builds the
  // log's nodes, every AUDIT_INTEGRATOR_POLL_MS while the log grows (docs/audit.md, "The integrator").
  if (runJobs) {
    const integrator = await startAuditIntegrator({
      log,
      database: config.database,
      db: context.database.db,
      pollMs: config.audit.integratorPollMs,
      logger: app.log,
    });
    onClose(() => integrator.stop());
  }

  // A checkpoint every AUDIT_CHECKPOINT_INTERVAL_MS when the log grew (and every AUDIT_CHECKPOINT_EVENTS entries: AuditLog.committed).
  const checkpointJob = job({ name: 'gate.audit-checkpoint', intervalMs: config.audit.checkpointIntervalMs, run: () => log.checkpointIfGrown() });

  registerAuditLogRoutes(app, {
    log,
    errors: gateError,
    item: { parameter: 'entryId', schema: z.string().min(1).max(100), describe: 'an audit entry' },
    // Proofs and checkpoints are read like the entries; signing one on demand is for administrators.
    scopes: { read: 'request:read', sign: 'admin' },
  });
  registerGateAuditWalkRoutes(app, context, log);
  return checkpointJob;
});
