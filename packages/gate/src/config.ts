import {
  environmentSlice,
  httpUrl,
  mergeSlices,
  parseEnvironment,
  positiveInt,
  schemaName,
  serviceBaseConfig,
  sharedEnvironment,
  type ServiceBaseConfig,
  type SharedEnvironment,
} from '@vigil/platform';
import { z } from 'zod';

/** The variables only the gate reads; docs/deploy.md lists them with the shared ones. */
export const gateEnvironment = environmentSlice({
  GATE_DB_SCHEMA: schemaName.default('gate'),
  GATE_ADMIN_KEY: z.string().min(16, 'must be at least 16 characters').optional(),
  REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL').optional(),
  WEBHOOK_TIMEOUT_MS: positiveInt.default(5000),
  WEBHOOK_MAX_RETRIES: z.coerce.number().int().min(1).max(20).default(3),
  WEBHOOK_SCAN_INTERVAL_MS: positiveInt.default(30_000),
  EXPIRY_SCAN_INTERVAL_MS: positiveInt.default(5000),
  GATE_CACHE_REFRESH_MS: z.coerce.number().int().min(0).max(60_000).default(1000),
  OBSERVE_URL: httpUrl.optional(),
  OBSERVE_WEBHOOK_SECRET: z.string().min(1).optional(),
});

export type GateEnvironment = SharedEnvironment & z.output<z.ZodObject<typeof gateEnvironment.shape>>;

export interface GateConfig extends ServiceBaseConfig {
  adminKey?: string;
  redisUrl?: string;
  webhooks: { timeoutMs: number; maxAttempts: number; scanIntervalMs: number };
  expiryScanIntervalMs: number;
  /** How long an instance trusts its cached API keys and policy set before re-checking the database (changes made through this instance apply at once). */
  cacheRefreshMs: number;
  /** Forwarding of request events to the observe service, when OBSERVE_URL and OBSERVE_WEBHOOK_SECRET are set. */
  observe?: { url: string; webhookSecret?: string; serviceToken?: string };
}

/** The gate's configuration from an environment already checked (by the CLI's whole schema or gateConfigFromEnvironment). */
export function gateConfig(e: GateEnvironment, overrides: { port?: number; dataDir?: string } = {}): GateConfig {
  return {
    ...serviceBaseConfig(e, { port: e.GATE_PORT, sqliteFile: 'gate.db', schema: e.GATE_DB_SCHEMA }, overrides),
    adminKey: e.GATE_ADMIN_KEY,
    redisUrl: e.REDIS_URL,
    webhooks: { timeoutMs: e.WEBHOOK_TIMEOUT_MS, maxAttempts: e.WEBHOOK_MAX_RETRIES, scanIntervalMs: e.WEBHOOK_SCAN_INTERVAL_MS },
    expiryScanIntervalMs: e.EXPIRY_SCAN_INTERVAL_MS,
    cacheRefreshMs: e.GATE_CACHE_REFRESH_MS,
    observe: e.OBSERVE_URL
      ? { url: e.OBSERVE_URL, webhookSecret: e.OBSERVE_WEBHOOK_SECRET, serviceToken: e.INTERNAL_SERVICE_TOKEN }
      : undefined,
  };
}

/** The gate's configuration from the shared variables and its own (tests, and embedding the gate without the CLI). */
export function gateConfigFromEnvironment(env: NodeJS.ProcessEnv, overrides: { port?: number; dataDir?: string } = {}): GateConfig {
  return gateConfig(parseEnvironment(mergeSlices(sharedEnvironment, gateEnvironment), env), overrides);
}
