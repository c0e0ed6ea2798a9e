// GET /api/audit: the audit entries of all requests, and the index of its filters.
import { defineFeature, type PeriodicJob } from '@vigil/platform';
import type { GateFeature } from '../context.ts';
import { registerAuditRoutes } from './routes.ts';
import { AUDIT_TERMS_INTERVAL_MS, indexAuditTerms } from './terms.ts';

export { auditTrailMigrations } from './migrations.ts';
export { verifyAuditChain, type AuditChainHead, type AuditChainVerdict } from './chain.ts';
export { type AuditEntry, auditChainVerdictSchema, auditEntrySchema, toAuditEntry } from './routes.ts';

export type { AuditTrailTables } from './tables.ts';

/** The audit list's routes, and the job that keeps its filters' terms (terms.ts); resolves to that job. */
export const auditTrailFeature: GateFeature<PeriodicJob> = defineFeature('audit-trail', ({ app, context, job }) => {
  registerAuditRoutes(app, context);
  return job({
    name: 'gate.audit-terms',
    intervalMs: AUDIT_TERMS_INTERVAL_MS,
    run: async () => {
      await indexAuditTerms(context.database);
    },
  });
});
