// GET /api/audit: the audit entries of all requests.
import { defineFeature } from '@vigil/platform';
import type { GateFeature } from '../context.ts';
import { registerAuditRoutes } from './routes.ts';

export { auditEntryHash, auditEntryText, chainEntryOf, verifyAuditChain, type AuditChainEntry, type AuditChainHead, type AuditChainVerdict } from './chain.ts';
export { type AuditEntry, auditChainVerdictSchema, auditEntrySchema, toAuditEntry } from './routes.ts';

export const auditTrailFeature: GateFeature = defineFeature('audit-trail', ({ app, context }) => registerAuditRoutes(app, context));
