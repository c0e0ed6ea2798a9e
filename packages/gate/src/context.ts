import type { Clock, Feature, ServiceMetrics } from '@vigil/platform';
import type { GateAuditLog } from './audit-log/index.ts';
import type { GateConfig } from './config.ts';
import type { KeyCache } from './auth/index.ts';
import type { PolicyCache } from './policies/index.ts';
import type { RateLimiter } from './ratelimit/index.ts';
import type { GateDatabase } from './schema.ts';
import type { Outbox } from './webhooks/index.ts';

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
}

/** A feature of the gate (platform/feature.ts): its routes, jobs and shutdown. */
export type GateFeature<Handle = void> = Feature<GateContext, Handle>;
