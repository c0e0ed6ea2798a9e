import { readFileSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import { z } from 'zod';
import { maskDetectorList, parseMaskSpecs, type MaskingConfig } from './masking.ts';
import { cosignerKey, isKeyName, NoteFormatError, parseVerifierKey, type NoteKey } from './signed-note.ts';

// The parsing kit every service's configuration is written with.
export const booleanFlag = z.enum(['true', 'false', '1', '0', 'yes', 'no']).transform((v) => v === 'true' || v === '1' || v === 'yes');

export const port = z.coerce.number().int().min(0).max(65535);
export const positiveInt = z.coerce.number().int().positive();
export const httpUrl = z.url({ protocol: /^https?$/ });
export const postgresUrl = z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL');
/** A PostgreSQL schema name a service keeps its tables in. */
export const schemaName = z.string().regex(/^[a-z_][a-z0-9_]*$/);

/** One variable that is wrong only together with others (the slice's own parse accepted each alone). */
export interface ConfigProblem {
  variable: string;
  message: string;
}

/**
 * A part of the environment: its variables and the rules across them. Each service owns its slice;
 * the CLI merges them with the shared one into the one schema it checks at start.
 */
export interface EnvironmentSlice<Shape extends z.ZodRawShape> {
  shape: Shape;
  problems: (env: z.output<z.ZodObject<Shape>>) => ConfigProblem[];
}

export function environmentSlice<Shape extends z.ZodRawShape>(
  shape: Shape,
  problems: (env: z.output<z.ZodObject<Shape>>) => ConfigProblem[] = () => [],
): EnvironmentSlice<Shape> {
  return { shape, problems };
}

/** The variables and rules of both slices. Variable names are one namespace: slices must not share one (cli/config.test.ts checks). */
export function mergeSlices<A extends z.ZodRawShape, B extends z.ZodRawShape>(a: EnvironmentSlice<A>, b: EnvironmentSlice<B>): EnvironmentSlice<A & B> {
  return {
    shape: { ...a.shape, ...b.shape },
    problems: (env) => [...a.problems(env as z.output<z.ZodObject<A>>), ...b.problems(env as z.output<z.ZodObject<B>>)],
  };
}

/**
 * The settings every service reads: where it listens (both ports, as each service finds the other
 * on this host), its data directory, database and limits, its logs and the token services call
 * each other with.
 */
export const sharedEnvironment = environmentSlice(
  {
    /** Loopback unless set: a fresh start is reachable from this machine only (0.0.0.0 in a container or behind a proxy). */
    HOST: z.string().min(1).default('127.0.0.1'),
    OBSERVE_PORT: port.default(3400),
    GATE_PORT: port.default(3000),
    DATA_DIR: z.string().min(1).default('./data'),
    DATABASE_URL: postgresUrl.optional(),
    /** PostgreSQL only: a streaming replica of DATABASE_URL that read routes are served from (docs/scale.md, Read replicas). */
    READ_DATABASE_URL: postgresUrl.optional(),
    /** PostgreSQL only: connections each service instance keeps at most (instances × services × this must stay below max_connections). */
    DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(1000).default(10),
    /** PostgreSQL only: how long a request waits for a new connection before it is answered 503. */
    DATABASE_CONNECT_TIMEOUT_MS: positiveInt.default(5000),
    SQLITE_SYNCHRONOUS: z.enum(['NORMAL', 'FULL']).default('NORMAL'),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    /** `pretty`: short lines for people; `json`: one JSON object per line. Unset: pretty on a terminal, JSON otherwise. */
    LOG_FORMAT: z.enum(['json', 'pretty']).optional(),
    BODY_LIMIT_BYTES: positiveInt.default(10 * 1024 * 1024),
    /** Longest a client may take to send a request's headers: then it is answered 408 and its connection closed (a slow client holds a connection). */
    HTTP_HEADERS_TIMEOUT_MS: positiveInt.default(10_000),
    /** Longest a client may take to send a whole request, headers and body, with or without a key: then 408 and closed. */
    HTTP_REQUEST_TIMEOUT_MS: positiveInt.default(30_000),
    SHUTDOWN_TIMEOUT_MS: positiveInt.default(10_000),
    /** Bearer token of service-to-service calls (the gate's guardrail-breach reports to observe). */
    INTERNAL_SERVICE_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
    /** The key data subjects' ids are hashed under (HMAC-SHA256, subjects.ts) wherever erasure and holds record them, in observe and the gate alike; unset: a key generated into DATA_DIR/subject-hash.key (set it when instances share a database). */
    SUBJECT_HASH_KEY: z.string().min(16, 'must be at least 16 characters').optional(),
    /** Bearer token that admits a Prometheus scrape of GET /metrics from any address (metrics.ts). */
    METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
    /** Client addresses admitted to GET /metrics without the token, comma-separated; `none` for none. */
    METRICS_ALLOW_IPS: z
      .string()
      .default('127.0.0.1,::1')
      .transform((value) =>
        value.trim() === 'none'
          ? []
          : value
              .split(',')
              .map((ip) => ip.trim())
              .filter((ip) => ip !== ''),
      ),
    /** The Ed25519 key that signs audit checkpoints: PEM, or base64 of the PKCS#8 DER; unset: one created in DATA_DIR at first start. */
    AUDIT_SIGNING_KEY: z.string().min(1).optional(),
    /** The key AUDIT_SIGNING_KEY replaces: at the first start with a new key, it certifies the new one in the log (a key-rotation leaf). */
    AUDIT_PREVIOUS_SIGNING_KEY: z.string().min(1).optional(),
    /** A checkpoint is signed once this many items were logged through an instance since its last one... */
    AUDIT_CHECKPOINT_EVENTS: positiveInt.default(1000),
    /** ...and at least this often while the log grows (a leased job). */
    AUDIT_CHECKPOINT_INTERVAL_MS: positiveInt.default(60_000),
    /**
     * How often the audit log's integrator looks at the log: its leader (the one instance that signs
     * checkpoints and builds the log's nodes) signs once the log grew by AUDIT_CHECKPOINT_EVENTS, or
     * at all since a checkpoint AUDIT_CHECKPOINT_INTERVAL_MS old, and the other instances try to
     * take the lead over (PostgreSQL advisory lock).
     */
    AUDIT_INTEGRATOR_POLL_MS: positiveInt.default(500),
    /** Webhooks every checkpoint is pushed to (comma-separated), through the durable delivery queue. */
    AUDIT_WITNESS_URLS: z
      .string()
      .transform((value) =>
        value
          .split(',')
          .map((url) => url.trim())
          .filter((url) => url !== ''),
      )
      .pipe(z.array(httpUrl))
      .default([]),
    /** Signs the witness webhooks: X-Vigil-Signature = sha256=HMAC(secret, "<X-Vigil-Timestamp>.<body>"). */
    AUDIT_WITNESS_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
    /** A file outside DATA_DIR each checkpoint is appended to as one JSON line. */
    AUDIT_WITNESS_FILE: z.string().min(1).optional(),
    AUDIT_WITNESS_TIMEOUT_MS: positiveInt.default(5000),
    /** A JSON array of redaction rules applied to everything ingested (docs/guide/redaction.md), read at start. */
    REDACTION_RULES_FILE: z.string().min(1).optional(),
    /** Built-in redaction detectors: `all` or a comma-separated list of email, phone, card, iban, secret. */
    REDACTION_DETECTORS: maskDetectorList.default([]),
    /** With it, redaction markers carry a keyed hash of the value (HMAC-SHA256), so equal values stay joinable. */
    REDACTION_HMAC_KEY: z.string().min(16, 'must be at least 16 characters').optional(),
    /** The origin line of the log's C2SP checkpoints (tlog-checkpoint); unset: `<log name>/<key id>`, e.g. vigil-observe/3f2a… */
    AUDIT_LOG_ORIGIN: z
      .string()
      .min(1)
      .regex(/^[^\n\r]+$/, 'must be one line')
      .optional(),
    /** The key name of the log's note signature (signed-note: no spaces, no "+"); unset: the origin. */
    AUDIT_NOTE_KEY_NAME: z.string().refine(isKeyName, 'must be a note key name: non-empty, no spaces, no "+"').optional(),
    /**
     * The witnesses that cosign the log's checkpoints (tlog-witness), comma-separated, each its
     * verifier key (`name+hash+base64`, type 4, or type 1 read as the same key's cosignatures) then,
     * after a space, its submission URL (POST <url>/add-checkpoint); a key alone is a witness whose
     * cosignatures are accepted at POST /api/audit/tlog/cosignatures but never asked for.
     */
    AUDIT_COSIGNERS: z
      .string()
      .default('')
      .transform((value, ctx) => {
        const cosigners: AuditCosigner[] = [];
        for (const entry of value
          .split(',')
          .map((item) => item.trim())
          .filter((item) => item !== '')) {
          const [vkey, url, ...rest] = entry.split(/\s+/);
          try {
            if (rest.length > 0) throw new NoteFormatError('an entry is a verifier key, then optionally one URL');
            if (url !== undefined && !/^https?:\/\//.test(url)) throw new NoteFormatError(`${url} is not an http(s) URL`);
            cosigners.push({ key: cosignerKey(parseVerifierKey(vkey!)), ...(url === undefined ? {} : { url: url.replace(/\/+$/, '') }) });
          } catch (error) {
            ctx.addIssue({ code: 'custom', message: `${entry.slice(0, 60)}: ${(error as Error).message}` });
            return z.NEVER;
          }
        }
        return cosigners;
      }),
  },
  (env) => [
    ...(env.HTTP_HEADERS_TIMEOUT_MS > env.HTTP_REQUEST_TIMEOUT_MS
      ? [
          {
            variable: 'HTTP_HEADERS_TIMEOUT_MS',
            message: `must not exceed HTTP_REQUEST_TIMEOUT_MS (${env.HTTP_REQUEST_TIMEOUT_MS}): the headers are part of the request`,
          },
        ]
      : []),
    ...(env.READ_DATABASE_URL !== undefined && env.DATABASE_URL === undefined
      ? [{ variable: 'READ_DATABASE_URL', message: 'is a replica of DATABASE_URL: set DATABASE_URL (PostgreSQL) too' }]
      : []),
  ],
);

export type SharedEnvironment = z.output<z.ZodObject<typeof sharedEnvironment.shape>>;

/** A service's environment: the shared variables and those of its own slice. */
export type ServiceEnvironment<Shape extends z.ZodRawShape> = SharedEnvironment & z.output<z.ZodObject<Shape>>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * Parses `env` with the slice's variables (an empty value counts as unset) and reports every bad
 * variable at once, one per line; the rules across variables are checked once each variable is valid.
 */
export function parseEnvironment<Shape extends z.ZodRawShape>(slice: EnvironmentSlice<Shape>, env: NodeJS.ProcessEnv): z.output<z.ZodObject<Shape>> {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const result = z.object(slice.shape).safeParse(cleaned);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => `  ${issue.path.join('.')}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const problems = slice.problems(result.data);
  if (problems.length > 0) {
    throw new ConfigError(`Invalid configuration:\n${problems.map((p) => `  ${p.variable}: ${p.message}`).join('\n')}`);
  }
  return result.data;
}

/** Parses `env` with the shared variables and one service's own (that service embedded without the CLI, tests). */
export function parseServiceEnvironment<Shape extends z.ZodRawShape>(slice: EnvironmentSlice<Shape>, env: NodeJS.ProcessEnv): ServiceEnvironment<Shape> {
  // The same type: zod cannot see through the merge of a generic shape.
  return parseEnvironment(mergeSlices(sharedEnvironment, slice), env) as ServiceEnvironment<Shape>;
}

export type DatabaseConfig =
  | { kind: 'sqlite'; file: string; synchronous: 'NORMAL' | 'FULL' }
  | {
      kind: 'postgres';
      url: string;
      schema: string;
      poolMax?: number;
      connectTimeoutMs?: number;
      /** A streaming replica that read routes use (ReplicaRouter, read-replica.ts). */
      readUrl?: string;
    };

/** What every service's configuration starts with. */
export interface ServiceBaseConfig {
  host: string;
  port: number;
  dataDir: string;
  database: DatabaseConfig;
  logLevel: SharedEnvironment['LOG_LEVEL'];
  logFormat: 'json' | 'pretty';
  shutdownTimeoutMs: number;
  /** How long a client may take to send a request (HttpTimeouts, http.ts). */
  http: { headersTimeoutMs: number; requestTimeoutMs: number };
  /** Who may scrape GET /metrics: these client addresses, or anyone with the bearer token. */
  metrics: { token?: string; allowIps: string[] };
  /** The service's audit log (audit-log.ts): its key, how often it is checkpointed, where checkpoints are witnessed. */
  audit: AuditLogConfig;
  /** What the service masks in everything it ingests, by configuration (masking.ts; docs/guide/redaction.md). */
  masking: MaskingConfig;
}

export interface AuditLogConfig {
  signingKey?: string;
  /** The key being replaced: certifies the new one at its first start (AuditLog.registerKey). */
  previousSigningKey?: string;
  checkpointEvents: number;
  checkpointIntervalMs: number;
  /** How often the integrator's leader looks at the log and the other instances try for the lead (audit-integrator.ts). */
  integratorPollMs: number;
  witnesses: { urls: string[]; secret?: string; file?: string; timeoutMs: number };
  /** The C2SP checkpoint's origin and note key name (defaults: AuditLog), and the witnesses that cosign it. */
  tlog: { origin?: string; keyName?: string; cosigners: AuditCosigner[] };
}

/** A witness of the log (AUDIT_COSIGNERS): its cosignature key, and where to submit checkpoints, when it is asked. */
export interface AuditCosigner {
  key: NoteKey;
  url?: string;
}

/** What a caller may set over a service's environment: the port (tests take a free one) and the data directory. */
export interface ServiceOverrides {
  port?: number;
  dataDir?: string;
}

/**
 * The shared part of a service's configuration: PostgreSQL when DATABASE_URL is set (in the
 * service's own schema), else a SQLite file under the data dir; `overrides` are command-line options.
 */
export function serviceBaseConfig(
  e: SharedEnvironment,
  service: { port: number; sqliteFile: string; schema: string },
  overrides: ServiceOverrides = {},
): ServiceBaseConfig {
  const dataDir = resolve(overrides.dataDir ?? e.DATA_DIR);
  return {
    host: e.HOST,
    port: overrides.port ?? service.port,
    dataDir,
    database: e.DATABASE_URL
      ? {
          kind: 'postgres',
          url: e.DATABASE_URL,
          schema: service.schema,
          poolMax: e.DATABASE_POOL_MAX,
          connectTimeoutMs: e.DATABASE_CONNECT_TIMEOUT_MS,
          ...(e.READ_DATABASE_URL !== undefined && { readUrl: e.READ_DATABASE_URL }),
        }
      : { kind: 'sqlite', file: resolve(dataDir, service.sqliteFile), synchronous: e.SQLITE_SYNCHRONOUS },
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT ?? (process.stdout.isTTY ? 'pretty' : 'json'),
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    http: { headersTimeoutMs: e.HTTP_HEADERS_TIMEOUT_MS, requestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS },
    metrics: { token: e.METRICS_TOKEN, allowIps: e.METRICS_ALLOW_IPS },
    audit: {
      signingKey: e.AUDIT_SIGNING_KEY,
      previousSigningKey: e.AUDIT_PREVIOUS_SIGNING_KEY,
      checkpointEvents: e.AUDIT_CHECKPOINT_EVENTS,
      checkpointIntervalMs: e.AUDIT_CHECKPOINT_INTERVAL_MS,
      integratorPollMs: e.AUDIT_INTEGRATOR_POLL_MS,
      witnesses: {
        urls: e.AUDIT_WITNESS_URLS,
        secret: e.AUDIT_WITNESS_SECRET,
        file: witnessFile(e.AUDIT_WITNESS_FILE, dataDir),
        timeoutMs: e.AUDIT_WITNESS_TIMEOUT_MS,
      },
      tlog: { origin: e.AUDIT_LOG_ORIGIN, keyName: e.AUDIT_NOTE_KEY_NAME, cosigners: e.AUDIT_COSIGNERS },
    },
    masking: { specs: maskFile(e.REDACTION_RULES_FILE), detectors: e.REDACTION_DETECTORS, hmacKey: e.REDACTION_HMAC_KEY },
  };
}

/** The variable naming the masking file (one token, kept in the kernel's vocabulary). */
const MASK_FILE_VARIABLE = 'REDACTION_RULES_FILE';

/** The entries of the masking file (none without it); a file that cannot be read or holds a bad entry stops the start. */
function maskFile(file: string | undefined): MaskingConfig['specs'] {
  if (file === undefined) return [];
  try {
    return parseMaskSpecs(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ConfigError(`Invalid configuration:\n  ${MASK_FILE_VARIABLE}: ${(error as Error).message}`);
  }
}

/** The witness file, which must live outside the data directory: a copy there falls with the database. */
function witnessFile(file: string | undefined, dataDir: string): string | undefined {
  if (file === undefined) return undefined;
  const path = resolve(file);
  const inside = relative(dataDir, path);
  if (inside === '' || (!inside.startsWith('..') && !isAbsolute(inside))) {
    throw new ConfigError(`Invalid configuration:\n  AUDIT_WITNESS_FILE: must be outside DATA_DIR (${dataDir}), so a copy survives whoever controls the data`);
  }
  return path;
}

/** Whether a listening address is reachable from this machine only. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** An address this host's own services answer on: loopback when listening on every interface. */
export function localAddress(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '') return '127.0.0.1';
  return host.includes(':') ? `[${host}]` : host;
}
