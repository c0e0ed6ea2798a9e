// The gate's audit log: every audit entry's hash a leaf of the platform's Merkle log (RFC 9162),
// appended in the transaction that writes the entry, in commit order, with signed checkpoints
// pushed to witnesses (docs/audit.md, "The gate's audit log").
import { defineFeature, registerAuditLogRoutes, type PeriodicJob } from '@vigil/platform';
import { z } from 'zod';
import type { GateFeature } from '../context.ts';
import { gateError } from '../errors.ts';
import { registerGateAuditWalkRoutes } from './walk-routes.ts';

export { auditEntryLeaf, GATE_LOG, GateAuditLog } from './log.ts';

/** Registers the log's key and routes; resolves to its checkpoint job. (The log itself, shared by the requests feature, is stopped with the context.) */
export const auditLogFeature: GateFeature<PeriodicJob> = defineFeature('audit-log', async ({ app, context, job }) => {
  const { auditLog, config } = context;
  const { log } = auditLog;
  await log.registerKey();

  // Every AUDIT_CHECKPOINT_INTERVAL_MS across the instances, when the log has grown; witness deliveries left due are retried.
  const checkpointJob = job({
    name: 'gate.audit-checkpoint',
    intervalMs: config.audit.checkpointIntervalMs,
    run: async () => {
      const latest = await log.findCheckpoint();
      if ((latest?.treeSize ?? -1) < (await log.size())) await log.checkpoint();
      await log.deliverDue();
    },
  });

  registerAuditLogRoutes(app, { log, errors: gateError, item: { parameter: 'entryId', schema: z.string().min(1).max(100), describe: 'an audit entry' } });
  registerGateAuditWalkRoutes(app, context, log);
  return checkpointJob;
});
