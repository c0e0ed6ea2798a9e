import type { Clock } from '@vigil/platform';
import type { GateConfig } from './config.ts';
import type { KeyCache } from './auth/keys.ts';
import type { PolicyCache } from './policies/cache.ts';
import type { RateLimiter } from './ratelimit/limiter.ts';
import type { GateDatabase } from './schema.ts';
import type { Outbox } from './webhooks/outbox.ts';

/** What every feature of the gate is built from. */
export interface GateContext {
  config: GateConfig;
  database: GateDatabase;
  clock: Clock;
  keys: KeyCache;
  policies: PolicyCache;
  limiter: RateLimiter;
  outbox: Outbox;
}
