import type { ChangeResources, Clock, Feature, Masker, ServiceMetrics, SubjectHasher } from '@vigil/platform';
import { DELEGATION_CHANGES, GROUP_CHANGES } from './approvers/index.ts';
import type { GateAuditLog } from './audit-log/index.ts';
import type { GateConfig } from './config.ts';
import { API_KEY_CHANGES, type KeyCache } from './auth/index.ts';
import { BUDGET_CHANGES } from './budgets/index.ts';
import { GRANT_CHANGES } from './grants/index.ts';
import { POLICY_CHANGES, type PolicyCache } from './policies/index.ts';
import type { RateLimiter } from './ratelimit/index.ts';
import type { GateDatabase } from './schema.ts';
import { WEBHOOK_CHANGES, type Outbox } from './webhooks/index.ts';

/**
 * What the log of administrative changes records (GET /api/audit/changes): the resource name each
 * feature that records changes declares. The route's `resource` filter is this list, and the
 * schema's change rows are typed by it, so `recordChange` takes no other name.
 */
export const GATE_CHANGE_RESOURCES = [
  POLICY_CHANGES,
  API_KEY_CHANGES,
  WEBHOOK_CHANGES,
  GROUP_CHANGES,
  DELEGATION_CHANGES,
  GRANT_CHANGES,
  BUDGET_CHANGES,
] as const;
export type GateChangeResource = (typeof GATE_CHANGE_RESOURCES)[number];

/** What every feature of the gate is built from. */
export interface GateContext {
  config: GateConfig;
  database: GateDatabase;
  clock: Clock;
  keys: KeyCache;
  policies: PolicyCache;
  limiter: RateLimiter;
  outbox: Outbox;
  /** The audit log every audit entry is a leaf of (audit-log/). */
  auditLog: GateAuditLog;
  /** The Prometheus registry of GET /metrics; features add their counters and queues. */
  metrics: ServiceMetrics;
  /** What new requests' params and context are redacted with (REDACTION_*; redaction/). */
  redactor: Masker;
  /** The keyed hash data subjects' ids are recorded under (SUBJECT_HASH_KEY; erasure/). */
  subjects: SubjectHasher;
  /** GATE_CHANGE_RESOURCES, for the change log's route. */
  changeResources: ChangeResources<GateChangeResource>;
}

/** A feature of the gate (platform/feature.ts): its routes, jobs and shutdown. */
export type GateFeature<Handle = void> = Feature<GateContext, Handle>;
