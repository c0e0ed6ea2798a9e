/**
 * Real Vigil processes for the multi-instance and crash tests and `npm run chaos`: each service
 * runs as `node packages/cli/bin/vigil.mjs observe|gate --port N` with its configuration in the
 * environment, exactly as in production, so it can be killed with SIGKILL and started again on
 * the same port and the same database.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer as createNetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { postgresReachable, redisReachable, TEST_POSTGRES_URL } from '@vigil/platform/test-services';

const BIN = resolve(import.meta.dirname, '../bin/vigil.mjs');
/**
 * Preloaded into every service process: it kills itself once its parent is gone (re-parented), so
 * a test run that is itself killed (a timeout, Ctrl-C) leaves no service running behind it.
 */
const ORPHAN_WATCHDOG = `data:text/javascript,${encodeURIComponent(
  "const parent = process.ppid; setInterval(() => { if (process.ppid !== parent) process.kill(process.pid, 'SIGKILL'); }, 500).unref();",
)}`;

/** PostgreSQL and Redis of the test machine (trust auth), overridable like the other suites. */
export const POSTGRES_URL = TEST_POSTGRES_URL;
/** A logical database of its own, so these processes never touch the keys of other suites sharing the server. */
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/7';

export type ServiceKind = 'observe' | 'gate';

/** Every variable a service reads that the test runner's environment could leak in; a test sets what it needs. */
const VIGIL_VARIABLES = [
  'DATABASE_URL',
  'OBSERVE_DB_SCHEMA',
  'GATE_DB_SCHEMA',
  'REDIS_URL',
  'DATA_DIR',
  'OBSERVE_PORT',
  'GATE_PORT',
  'AUTH_DISABLED',
  'EMBEDDINGS_URL',
  'EMBEDDINGS_MODEL',
  'EMBEDDINGS_API_KEY',
  'EMBEDDINGS_TIMEOUT_MS',
  'ALERT_EVAL_INTERVAL_MS',
  'RETENTION_DAYS',
  'WEBHOOK_TIMEOUT_MS',
  'WEBHOOK_MAX_RETRIES',
  'WEBHOOK_SCAN_INTERVAL_MS',
  'EXPIRY_SCAN_INTERVAL_MS',
  'GATE_CACHE_REFRESH_MS',
  'GATE_ADMIN_KEY',
  'OBSERVE_URL',
  'OBSERVE_WEBHOOK_SECRET',
  'INTERNAL_SERVICE_TOKEN',
  'MEMORY_ENABLED',
  'LLM_PROVIDER',
  'LLM_API_KEY',
];

export async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createNetServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

export function tempDir(prefix = 'vigil-chaos-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}

export const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

/** Polls `probe` until it returns a value other than undefined/false, or fails after `timeoutMs` with `what` and the last value seen. */
export async function waitFor<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined | false>, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
      last = value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last instanceof Error ? ` (last error: ${last.message})` : ''}`);
    }
    await sleep(everyMs);
  }
}

/** One Vigil service process: started, killed (SIGKILL) and restarted on the same port, data and configuration. */
export class ServiceProcess {
  child: ChildProcess | null = null;
  /** The tail of the process's output (stdout and stderr), for failure messages. */
  output = '';
  private exited: Promise<number | null> | null = null;
  starts = 0;

  constructor(
    readonly kind: ServiceKind,
    readonly port: number,
    readonly dataDir: string,
    readonly env: Record<string, string>,
    /** Node's own flags, before the CLI entry (e.g. `npm start`'s, startScriptNodeFlags). */
    readonly nodeFlags: readonly string[] = [],
  ) {}

  static async create(kind: ServiceKind, env: Record<string, string>, dataDir: string, nodeFlags: readonly string[] = []): Promise<ServiceProcess> {
    return new ServiceProcess(kind, await freePort(), dataDir, env, nodeFlags);
  }

  get base(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts the process and waits until its health route answers 200. */
  async start(timeoutMs = 90_000): Promise<this> {
    if (this.running) throw new Error(`${this.kind} on ${this.port} is already running`);
    const blanks = Object.fromEntries(VIGIL_VARIABLES.map((name) => [name, '']));
    const child = spawn(
      process.execPath,
      [...this.nodeFlags, '--import', ORPHAN_WATCHDOG, BIN, this.kind, '--port', String(this.port), '--data-dir', this.dataDir],
      {
        env: { ...process.env, ...blanks, HOST: '127.0.0.1', LOG_LEVEL: 'warn', SHUTDOWN_TIMEOUT_MS: '5000', ...this.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    this.child = child;
    this.starts += 1;
    const keep = (chunk: Buffer) => {
      this.output = (this.output + chunk.toString()).slice(-20_000);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    this.exited = new Promise((done) => child.once('exit', (code) => done(code)));
    const health = this.kind === 'observe' ? '/api/health' : '/health';
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (!this.running) throw new Error(`${this.kind} exited during start-up (code ${child.exitCode}):\n${this.output}`);
      try {
        const response = await fetch(`${this.base}${health}`, { signal: AbortSignal.timeout(2000) });
        await response.arrayBuffer();
        if (response.ok) return this;
      } catch {
        // not listening yet
      }
      await sleep(50);
    }
    await this.kill();
    throw new Error(`${this.kind} did not become healthy within ${timeoutMs} ms:\n${this.output}`);
  }

  /** kill -9: no shutdown hook runs; resolves once the process is gone. */
  async kill(): Promise<void> {
    if (!this.child) return;
    if (this.running) this.child.kill('SIGKILL');
    await this.exited;
    this.child = null;
  }

  /** SIGTERM (graceful), falling back to SIGKILL. */
  async stop(): Promise<void> {
    if (!this.child) return;
    if (this.running) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child?.kill('SIGKILL'), 10_000);
      await this.exited;
      clearTimeout(timer);
    }
    this.child = null;
  }

  async restart(): Promise<this> {
    await this.kill();
    return this.start();
  }
}

/** The node flags of the root package.json's `start` script (`node <flags> packages/cli/bin/vigil.mjs up`). */
export function startScriptNodeFlags(): string[] {
  const root = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../../package.json'), 'utf8')) as { scripts: { start: string } };
  const words = root.scripts.start.split(/\s+/);
  const entry = words.findIndex((word) => word.endsWith('/vigil.mjs'));
  if (words[0] !== 'node' || entry === -1) throw new Error(`the start script is not node <flags> …/vigil.mjs: ${root.scripts.start}`);
  return words.slice(1, entry);
}

/** Two processes of one service on the same configuration (one schema), started at once: they race on creating and migrating it. */
export async function startTwoInstances(kind: ServiceKind, env: Record<string, string>, dataDir: string): Promise<[ServiceProcess, ServiceProcess]> {
  const instances = await Promise.all([ServiceProcess.create(kind, env, dataDir), ServiceProcess.create(kind, env, dataDir)]);
  await Promise.all(instances.map((service) => service.start()));
  return instances;
}

/** Stops the instances gracefully, then removes their data directory and PostgreSQL schema. */
export async function stopInstances(instances: ServiceProcess[], dataDir: string, schema: string): Promise<void> {
  await Promise.all(instances.map((service) => service.stop()));
  removeDir(dataDir);
  await dropSchemas(schema);
}

export interface Answer<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

/** One JSON request; network failures throw. */
export async function call<T = any>(
  base: string,
  method: string,
  path: string,
  options: { key?: string; body?: unknown; timeoutMs?: number } = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = {};
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
    signal: AbortSignal.timeout(options.timeoutMs ?? 30_000),
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = text.length > 0 ? JSON.parse(text) : null;
  } catch {
    // not JSON
  }
  return { status: response.status, body: body as T, headers: response.headers };
}

/** Like `call`, but anything other than `expected` is an error naming the route and the answer. */
export async function expectStatus<T = any>(
  expected: number,
  base: string,
  method: string,
  path: string,
  options: { key?: string; body?: unknown } = {},
): Promise<T> {
  const answer = await call<T>(base, method, path, options);
  if (answer.status !== expected) throw new Error(`${method} ${path}: expected ${expected}, got ${answer.status} ${JSON.stringify(answer.body).slice(0, 500)}`);
  return answer.body;
}

/** The first observe key (needs no credentials while none exists). */
export async function firstObserveKey(base: string): Promise<string> {
  return (await expectStatus<{ key: string }>(201, base, 'POST', '/api/keys', { body: { name: 'chaos' } })).key;
}

// ---- PostgreSQL schemas and Redis ----

/** A new schema name (the service creates the schema at start). */
export function newSchemaName(prefix: string): string {
  return `${prefix}_${randomBytes(6).toString('hex')}`;
}

export async function dropSchemas(...schemas: string[]): Promise<void> {
  if (schemas.length === 0) return;
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    for (const schema of schemas) await client.query(`drop schema if exists "${schema}" cascade`);
  } finally {
    await client.end();
  }
}

/**
 * Whether the tests that need PostgreSQL (and Redis) run: they are skipped when a service is
 * unreachable, except with REQUIRE_SERVICES=1 (CI), where that is an error.
 */
export async function servicesSkipReason(needRedis: boolean): Promise<string | false> {
  const missing: string[] = [];
  if (!(await postgresReachable())) missing.push(`PostgreSQL at ${POSTGRES_URL}`);
  if (needRedis && !(await redisReachable(REDIS_URL))) missing.push(`Redis at ${REDIS_URL}`);
  if (missing.length === 0) return false;
  if (process.env.REQUIRE_SERVICES === '1') throw new Error(`REQUIRE_SERVICES=1 but ${missing.join(' and ')} not reachable`);
  return `${missing.join(' and ')} not reachable`;
}
