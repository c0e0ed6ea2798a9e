// Approval requests: create, decide, confirm, expire (a periodic job), with their audit and outbox rows.
import { defineFeature, type PeriodicJob } from '@vigil/platform';
import type { GateFeature } from '../context.ts';
import { registerRequestRoutes } from './routes.ts';
import { RequestService } from './service.ts';

export type { BudgetAssessment, BudgetGuard, GrantApprover, IssuedRedemption, RequestService, SubjectIndexer } from './service.ts';
export { assertLockedRowEvidence, storedRequestState } from './row-check.ts';
export { loggedTrails, storedDecision, type LoggedAuditRow } from './store.ts';
/** A request's row (no expiry on read), checked against its audit trail: the chat notifier renders messages from it. */
export { findVerifiedRequest } from './row-check.ts';
export { requestParties, requestTags } from './parties.ts';
export { requestsMigrations } from './migrations.ts';
export type { AuditRow, RequestRow, RequestsTables } from './tables.ts';

export interface Requests {
  service: RequestService;
  /** Applies passed deadlines (escalation or expiry) and sends due reminders. */
  expiry: PeriodicJob;
}

export const requestsFeature: GateFeature<Requests> = defineFeature('requests', ({ app, context, job }) => {
  const service = new RequestService(context, app.log);
  registerRequestRoutes(app, context, service);
  const expiry = job({
    name: 'gate.expiry',
    intervalMs: context.config.expiryScanIntervalMs,
    run: async () => {
      await service.expireDue();
      await service.remindDue();
    },
  });
  return { service, expiry };
});
