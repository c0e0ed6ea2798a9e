import { booleanFlag, environmentSlice, httpUrl, localAddress, parseServiceEnvironment, positiveInt, schemaName, serviceBaseConfig } from '@vigil/platform';
import type { ServiceBaseConfig, ServiceEnvironment, ServiceOverrides } from '@vigil/platform';
import { z } from 'zod';

/** The variables only observe reads; docs/deploy.md lists them with the shared ones. */
export const observeEnvironment = environmentSlice(
  {
    OBSERVE_DB_SCHEMA: schemaName.default('observe'),
    AUTH_DISABLED: booleanFlag.default(false),
    MEMORY_ENABLED: booleanFlag.default(false),
    MEMORY_API_URL: httpUrl.optional(),
    MEMORY_API_KEY: z.string().min(1).optional(),
    MEMORY_TIMEOUT_MS: positiveInt.default(10_000),
    APPROVAL_GATE_WEBHOOK_SECRET: z.string().min(1).optional(),
    FORM_SERVICE_WEBHOOK_SECRET: z.string().min(1).optional(),
    RETENTION_DAYS: z.coerce.number().int().min(0).default(0),
    RETENTION_INTERVAL_MS: positiveInt.default(60 * 60 * 1000),
    /** The shortest retention period the service accepts (RETENTION_DAYS, PUT /api/config); 0: no floor. The EU AI Act (Art. 19, 26(6)) asks for at least six months: 183. */
    RETENTION_FLOOR_DAYS: z.coerce.number().int().min(0).max(36_500).default(0),
    /** Where events name their data subject (erasure, DELETE /api/subjects/:id): comma-separated paths, `payload.` or `metadata.` first. */
    SUBJECT_PATHS: z
      .string()
      .default('metadata.subjectId')
      .transform((value) =>
        value
          .split(',')
          .map((path) => path.trim())
          .filter((path) => path.length > 0),
      )
      .pipe(z.array(z.string().regex(/^(payload|metadata)(\.[^.]+)+$/, 'each path starts with payload. or metadata.'))),
    /** A file holding a 32-byte master key (base64 or hex): events' payload and metadata are then stored encrypted under per-subject data keys that erasure destroys (crypto-shredding, docs/guide/erasure.md). Unset: stored in the clear. */
    ENCRYPTION_KEY_FILE: z.string().min(1).optional(),
    /** Where crypto-shredding's data keys live, apart from the events' database: a SQLite file, or a postgres:// URL of another database (docs/guide/erasure.md#the-key-store). Unset: data-keys.db beside ENCRYPTION_KEY_FILE. */
    DATA_KEY_STORE: z.string().min(1).optional(),
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
    /** Where observe forwards the dashboard's `/gate/api/*` calls; unset: this host's gate at GATE_PORT. */
    GATE_URL: httpUrl.optional(),
  },
  (e) => [
    ...(e.MEMORY_ENABLED && !e.MEMORY_API_URL ? [{ variable: 'MEMORY_API_URL', message: 'required when MEMORY_ENABLED=true' }] : []),
    ...(e.RETENTION_DAYS > 0 && e.RETENTION_DAYS < e.RETENTION_FLOOR_DAYS
      ? [{ variable: 'RETENTION_DAYS', message: `is below RETENTION_FLOOR_DAYS (${e.RETENTION_FLOOR_DAYS}): logs must be kept at least that long` }]
      : []),
  ],
);

export type ObserveEnvironment = ServiceEnvironment<typeof observeEnvironment.shape>;

export interface ObserveConfig extends ServiceBaseConfig {
  authDisabled: boolean;
  bodyLimitBytes: number;
  memory: { enabled: boolean; url?: string; apiKey?: string; timeoutMs: number };
  webhookSecrets: { approvalGate?: string; formService?: string };
  /** 0 keeps data forever. */
  retentionDays: number;
  retentionIntervalMs: number;
  /** The shortest retention period accepted (0: none); a stored setting below it stops the start. */
  retentionFloorDays: number;
  /** Data subjects (erasure): the paths that name an event's subject and the key their ids are hashed under. */
  subjects: { paths: string[]; hashKey?: string };
  /** The master key file of crypto-shredding (encryption/); unset: events are stored in the clear. */
  encryptionKeyFile?: string;
  /** DATA_KEY_STORE: the data key store's file or database URL; unset: beside the master key file (encryption/key-store.ts). */
  dataKeyStore?: string;
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

/** Observe's configuration from an environment already checked (by the CLI's whole schema or observeConfigFromEnvironment). */
export function observeConfig(e: ObserveEnvironment, overrides: ServiceOverrides = {}): ObserveConfig {
  return {
    ...serviceBaseConfig(e, { port: e.OBSERVE_PORT, sqliteFile: 'observe.db', schema: e.OBSERVE_DB_SCHEMA }, overrides),
    authDisabled: e.AUTH_DISABLED,
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
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
    retentionFloorDays: e.RETENTION_FLOOR_DAYS,
    subjects: { paths: e.SUBJECT_PATHS, hashKey: e.SUBJECT_HASH_KEY },
    encryptionKeyFile: e.ENCRYPTION_KEY_FILE,
    dataKeyStore: e.DATA_KEY_STORE,
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

/** Observe's configuration from the shared variables and its own (tests, and embedding observe without the CLI). */
export function observeConfigFromEnvironment(env: NodeJS.ProcessEnv, overrides: ServiceOverrides = {}): ObserveConfig {
  return observeConfig(parseServiceEnvironment(observeEnvironment, env), overrides);
}
