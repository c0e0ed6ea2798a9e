import { resolve } from 'node:path';
import { z } from 'zod';

const booleanFlag = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();
const httpUrl = z.url({ protocol: /^https?$/ });
const postgresUrl = z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL');

/**
 * Every environment variable Vigil reads, in one place. The README's configuration table
 * mirrors this schema.
 */
export const environmentSchema = z.object({
  HOST: z.string().min(1).default('0.0.0.0'),
  OBSERVE_PORT: port.default(3400),
  DATA_DIR: z.string().min(1).default('./data'),
  DATABASE_URL: postgresUrl.optional(),
  /** PostgreSQL only: connections each service instance keeps at most (instances × services × this must stay below max_connections). */
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(1000).default(10),
  /** PostgreSQL only: how long a request waits for a new connection before it is answered 503. */
  DATABASE_CONNECT_TIMEOUT_MS: positiveInt.default(5000),
  OBSERVE_DB_SCHEMA: z.string().regex(/^[a-z_][a-z0-9_]*$/).default('observe'),
  SQLITE_SYNCHRONOUS: z.enum(['NORMAL', 'FULL']).default('NORMAL'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  AUTH_DISABLED: booleanFlag.default(false),
  BODY_LIMIT_BYTES: positiveInt.default(10 * 1024 * 1024),
  SHUTDOWN_TIMEOUT_MS: positiveInt.default(10_000),
  MEMORY_ENABLED: booleanFlag.default(false),
  MEMORY_API_URL: httpUrl.optional(),
  MEMORY_API_KEY: z.string().min(1).optional(),
  MEMORY_TIMEOUT_MS: positiveInt.default(10_000),
  APPROVAL_GATE_WEBHOOK_SECRET: z.string().min(1).optional(),
  FORM_SERVICE_WEBHOOK_SECRET: z.string().min(1).optional(),
  RETENTION_DAYS: z.coerce.number().int().min(0).default(0),
  RETENTION_INTERVAL_MS: positiveInt.default(60 * 60 * 1000),
  /** JSON array of model prices that replace or extend the built-in table; parsed and checked by the observe service at start. */
  MODEL_PRICES: z.string().min(1).optional(),
  ALERT_EVAL_INTERVAL_MS: positiveInt.default(60_000),
  /** Silence after which a session without session_ended counts as over in the figures (durations, completion rate). */
  SESSION_IDLE_TIMEOUT_MS: positiveInt.default(30 * 60 * 1000),
  /** GET /api/stream: a comment line (with the stream's cursor) every this many ms keeps idle connections and proxies open. */
  STREAM_HEARTBEAT_MS: z.coerce.number().int().min(100).max(300_000).default(15_000),
  /** Open event streams one instance serves at most; one more is answered 503. */
  STREAM_MAX_CONNECTIONS: z.coerce.number().int().min(1).max(10_000).default(100),
  /** Base address of an OpenAI-compatible embeddings API (`/v1/embeddings` is appended); unset: the built-in local embedder. */
  EMBEDDINGS_URL: httpUrl.optional(),
  EMBEDDINGS_MODEL: z.string().min(1).max(200).default('text-embedding-3-small'),
  EMBEDDINGS_API_KEY: z.string().min(1).optional(),
  EMBEDDINGS_TIMEOUT_MS: positiveInt.default(10_000),
  /** The LLM judge of compliance evaluations (POST /api/eval/sessions/:id/score): enabled when both LLM_PROVIDER and LLM_API_KEY are set. */
  LLM_PROVIDER: z.enum(['openai', 'anthropic']).optional(),
  LLM_API_KEY: z.string().min(1).optional(),
  /** Overrides the provider's public API address (e.g. an OpenAI-compatible server); `/v1/...` is appended. */
  LLM_BASE_URL: httpUrl.optional(),
  /** Default judge model; unset: gpt-4o-mini (openai) or claude-haiku-4-5-20251001 (anthropic). */
  LLM_MODEL: z.string().trim().min(1).max(200).optional(),
  LLM_TIMEOUT_MS: positiveInt.default(30_000),
  GATE_PORT: port.default(3000),
  /** Where observe forwards the dashboard's `/gate/api/*` calls; unset: this host's gate at GATE_PORT. */
  GATE_URL: httpUrl.optional(),
  GATE_DB_SCHEMA: z.string().regex(/^[a-z_][a-z0-9_]*$/).default('gate'),
  GATE_ADMIN_KEY: z.string().min(16, 'must be at least 16 characters').optional(),
  REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL').optional(),
  WEBHOOK_TIMEOUT_MS: positiveInt.default(5000),
  WEBHOOK_MAX_RETRIES: z.coerce.number().int().min(1).max(20).default(3),
  WEBHOOK_SCAN_INTERVAL_MS: positiveInt.default(30_000),
  EXPIRY_SCAN_INTERVAL_MS: positiveInt.default(5000),
  GATE_CACHE_REFRESH_MS: z.coerce.number().int().min(0).max(60_000).default(1000),
  OBSERVE_URL: httpUrl.optional(),
  OBSERVE_WEBHOOK_SECRET: z.string().min(1).optional(),
  INTERNAL_SERVICE_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
});

export type Environment = z.infer<typeof environmentSchema>;

export type DatabaseConfig =
  | { kind: 'sqlite'; file: string; synchronous: 'NORMAL' | 'FULL' }
  | { kind: 'postgres'; url: string; schema: string; poolMax?: number; connectTimeoutMs?: number };

export interface ObserveConfig {
  host: string;
  port: number;
  dataDir: string;
  database: DatabaseConfig;
  logLevel: Environment['LOG_LEVEL'];
  authDisabled: boolean;
  bodyLimitBytes: number;
  shutdownTimeoutMs: number;
  memory: { enabled: boolean; url?: string; apiKey?: string; timeoutMs: number };
  webhookSecrets: { approvalGate?: string; formService?: string };
  /** 0 keeps data forever. */
  retentionDays: number;
  retentionIntervalMs: number;
  /** Raw MODEL_PRICES (JSON text); the observe service parses it at start and refuses to start when it is invalid. */
  modelPricesJson?: string;
  /** How often alert rules are evaluated (once per interval across all instances). */
  alertEvalIntervalMs: number;
  /**
   * A session that has not ended and has had no event for this long is idle: the figures count it
   * as over at its last event (sessions/figures.ts); its status stays `active`.
   */
  sessionIdleTimeoutMs: number;
  /** The live event stream (GET /api/stream): heartbeat interval and open streams per instance. */
  stream: { heartbeatMs: number; maxConnections: number };
  /** Embedding backend of recall and context: an OpenAI-compatible API when `url` is set, else the built-in local embedder. */
  embeddings: { url?: string; model: string; apiKey?: string; timeoutMs: number };
  /** The LLM judge; provider and apiKey both set enable it (evals/judge.ts). */
  judge: { provider?: 'openai' | 'anthropic'; apiKey?: string; baseUrl?: string; model?: string; timeoutMs: number };
  /** Bearer token of service-to-service calls (the gate's guardrail-breach reports); unset: those calls answer 503. */
  internalServiceToken?: string;
  /** The gate the dashboard reaches through observe's `/gate/api/*` proxy (no trailing slash). */
  gateUrl: string;
}

export interface GateConfig {
  host: string;
  port: number;
  dataDir: string;
  database: DatabaseConfig;
  logLevel: Environment['LOG_LEVEL'];
  shutdownTimeoutMs: number;
  adminKey?: string;
  redisUrl?: string;
  webhooks: { timeoutMs: number; maxAttempts: number; scanIntervalMs: number };
  expiryScanIntervalMs: number;
  /** How long an instance trusts its cached API keys and policy set before re-checking the database (changes made through this instance apply at once). */
  cacheRefreshMs: number;
  /** Forwarding of request events to the observe service, when OBSERVE_URL and OBSERVE_WEBHOOK_SECRET are set. */
  observe?: { url: string; webhookSecret?: string; serviceToken?: string };
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function parseEnvironment(env: NodeJS.ProcessEnv): Environment {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const result = environmentSchema.safeParse(cleaned);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const parsed = result.data;
  if (parsed.MEMORY_ENABLED && !parsed.MEMORY_API_URL) {
    throw new ConfigError('Invalid configuration:\n  MEMORY_API_URL: required when MEMORY_ENABLED=true');
  }
  return parsed;
}

/** PostgreSQL when DATABASE_URL is set (in the service's own schema), else a SQLite file under the data dir. */
function databaseConfig(e: Environment, dataDir: string, sqliteFile: string, schema: string): DatabaseConfig {
  return e.DATABASE_URL
    ? { kind: 'postgres', url: e.DATABASE_URL, schema, poolMax: e.DATABASE_POOL_MAX, connectTimeoutMs: e.DATABASE_CONNECT_TIMEOUT_MS }
    : { kind: 'sqlite', file: resolve(dataDir, sqliteFile), synchronous: e.SQLITE_SYNCHRONOUS };
}

export function observeConfigFromEnvironment(
  env: NodeJS.ProcessEnv,
  overrides: { port?: number; dataDir?: string } = {},
): ObserveConfig {
  const e = parseEnvironment(env);
  const dataDir = resolve(overrides.dataDir ?? e.DATA_DIR);
  return {
    host: e.HOST,
    port: overrides.port ?? e.OBSERVE_PORT,
    dataDir,
    database: databaseConfig(e, dataDir, 'observe.db', e.OBSERVE_DB_SCHEMA),
    logLevel: e.LOG_LEVEL,
    authDisabled: e.AUTH_DISABLED,
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    memory: {
      enabled: e.MEMORY_ENABLED,
      url: e.MEMORY_API_URL,
      apiKey: e.MEMORY_API_KEY,
      timeoutMs: e.MEMORY_TIMEOUT_MS,
    },
    webhookSecrets: {
      approvalGate: e.APPROVAL_GATE_WEBHOOK_SECRET,
      formService: e.FORM_SERVICE_WEBHOOK_SECRET,
    },
    retentionDays: e.RETENTION_DAYS,
    retentionIntervalMs: e.RETENTION_INTERVAL_MS,
    modelPricesJson: e.MODEL_PRICES,
    alertEvalIntervalMs: e.ALERT_EVAL_INTERVAL_MS,
    sessionIdleTimeoutMs: e.SESSION_IDLE_TIMEOUT_MS,
    stream: { heartbeatMs: e.STREAM_HEARTBEAT_MS, maxConnections: e.STREAM_MAX_CONNECTIONS },
    embeddings: {
      url: e.EMBEDDINGS_URL,
      model: e.EMBEDDINGS_MODEL,
      apiKey: e.EMBEDDINGS_API_KEY,
      timeoutMs: e.EMBEDDINGS_TIMEOUT_MS,
    },
    judge: {
      provider: e.LLM_PROVIDER,
      apiKey: e.LLM_API_KEY,
      baseUrl: e.LLM_BASE_URL,
      model: e.LLM_MODEL,
      timeoutMs: e.LLM_TIMEOUT_MS,
    },
    internalServiceToken: e.INTERNAL_SERVICE_TOKEN,
    gateUrl: (e.GATE_URL ?? `http://${localAddress(e.HOST)}:${e.GATE_PORT}`).replace(/\/+$/, ''),
  };
}

/** An address this host's own services answer on: loopback when listening on every interface. */
function localAddress(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}

export function gateConfigFromEnvironment(env: NodeJS.ProcessEnv, overrides: { port?: number; dataDir?: string } = {}): GateConfig {
  const e = parseEnvironment(env);
  const dataDir = resolve(overrides.dataDir ?? e.DATA_DIR);
  return {
    host: e.HOST,
    port: overrides.port ?? e.GATE_PORT,
    dataDir,
    database: databaseConfig(e, dataDir, 'gate.db', e.GATE_DB_SCHEMA),
    logLevel: e.LOG_LEVEL,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
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
