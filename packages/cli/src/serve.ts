import type { ObserveService } from '@vigil/observe';
import { ConfigError, isLoopbackHost, localAddress, type ServiceBaseConfig } from '@vigil/platform';
import { loadGateConfig, loadObserveConfig } from './config.ts';
import { dashboardBuildState, ensureDashboardBuilt } from './dashboard-build.ts';

/**
 * The dashboard (served by observe at /) is built after the service starts listening when dist/ is
 * missing or older than its sources: the API is up at once, and the page asks to reload until the
 * build is there (a few seconds on the first start).
 */
function buildDashboardInBackground(log: ObserveService['app']['log'], url: string): void {
  const state = dashboardBuildState();
  if (state === 'fresh') {
    log.info(`dashboard on ${url}`);
    return;
  }
  log.info(state === 'missing' ? 'building the dashboard (first start, a few seconds)…' : 'rebuilding the dashboard (its sources changed)…');
  void ensureDashboardBuilt().then((outcome) => {
    if (outcome.result === 'built') log.info(`dashboard built in ${(outcome.ms / 1000).toFixed(1)} s: ${url}`);
    else if (outcome.result === 'fresh') log.info(`dashboard on ${url}`);
    else log.warn(`the dashboard could not be built: ${outcome.reason}. The API works; see docs/guide/dashboard.md.`);
  });
}

export interface ServeOptions {
  port?: number;
  dataDir?: string;
  /** The environment to configure from (default: the process's). */
  env?: NodeJS.ProcessEnv;
}

export interface RunningService {
  name: string;
  close(): Promise<void>;
}

/** A service that could not start: which one, with what configuration, and the error underneath. */
export class StartupError extends Error {
  override name = 'StartupError';
  constructor(
    readonly service: 'observe' | 'gate',
    readonly config: ServiceBaseConfig,
    readonly failure: unknown,
  ) {
    super(`${service} could not start: ${(failure as Error).message ?? String(failure)}`);
  }
}

const DATA_DIR_CODES = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOTDIR', 'EEXIST', 'ENOSPC', 'EISDIR', 'SQLITE_CANTOPEN', 'SQLITE_READONLY', 'SQLITE_IOERR']);
const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
  '28P01',
  '28000',
  '3D000',
]);

function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'the configured DATABASE_URL';
  }
}

/**
 * One line for a person about why a service did not start: the port taken, the data directory
 * unusable, the database unreachable, or else the error's message — never a stack trace.
 */
export function startupFailureLine(error: StartupError): string {
  const { service, config, failure } = error;
  const { code, syscall, message } = failure as NodeJS.ErrnoException;
  const portVariable = service === 'observe' ? 'OBSERVE_PORT' : 'GATE_PORT';
  if (code === 'EADDRINUSE') return `vigil ${service}: port ${config.port} on ${config.host} is already in use: stop what uses it, or set ${portVariable}`;
  if (syscall === 'listen' || code === 'EADDRNOTAVAIL') return `vigil ${service}: cannot listen on ${config.host}:${config.port}: ${message}`;
  if (config.database.kind === 'postgres' && (UNREACHABLE_CODES.has(String(code)) || /timeout|connect/i.test(message ?? ''))) {
    return `vigil ${service}: cannot reach PostgreSQL at ${withoutPassword(config.database.url)}: ${message}`;
  }
  if (DATA_DIR_CODES.has(String(code))) return `vigil ${service}: cannot use the data directory ${config.dataDir}: ${message}`;
  return `vigil ${service}: could not start: ${message ?? String(failure)}`;
}

async function started<T>(service: 'observe' | 'gate', config: ServiceBaseConfig, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    throw new StartupError(service, config, error);
  }
}

/** Said on stderr, apart from the log lines, while anyone beyond this machine could create the first key. */
function exposedBootstrapWarning(host: string, port: number): string {
  return [
    '',
    `  !! observe listens on ${host}:${port} and has no API key yet: anyone who can reach it can create`,
    `  !! the first (admin) key with POST /api/keys. Create it now (the dashboard's sign-in page, or`,
    `  !! curl -X POST http://${localAddress(host)}:${port}/api/keys -d '{"name":"admin"}' -H 'content-type: application/json'),`,
    '  !! or listen on 127.0.0.1 (unset HOST).',
    '',
  ].join('\n');
}

export async function startObserve(options: ServeOptions): Promise<RunningService> {
  const config = loadObserveConfig(options.env ?? process.env, options);
  const storage = config.database.kind === 'sqlite' ? config.database.file : `PostgreSQL schema "${config.database.schema}"`;
  const service: ObserveService = await started('observe', config, async () => {
    // Each service's code loads only when it starts: `vigil gate` does not hold observe's.
    const { buildObserveService } = await import('@vigil/observe');
    const built = await buildObserveService(config);
    try {
      await built.app.listen({ host: config.host, port: config.port, listenTextResolver: (address) => `listening on ${address} (${storage})` });
    } catch (error) {
      await built.app.close();
      throw error;
    }
    return built;
  });
  buildDashboardInBackground(service.app.log, `http://${config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host}:${config.port}/`);
  if (config.authDisabled) service.app.log.warn('AUTH_DISABLED=true: every route is open; use only for development');
  if (!config.authDisabled && !isLoopbackHost(config.host)) {
    const health = (await service.app.inject({ method: 'GET', url: '/api/health' })).json() as { firstKeyBootstrap?: string };
    if (health.firstKeyBootstrap === 'exposed') {
      service.app.log.warn('the open first-key bootstrap is reachable beyond this machine: create the first API key now');
      process.stderr.write(`${exposedBootstrapWarning(config.host, config.port)}\n`);
    }
  }
  return { name: 'observe', close: () => service.app.close() };
}

/** The once-only admin key, alone on its line between rules, so that it is seen and copied whole. */
function adminKeyBanner(key: string): string {
  const rule = '='.repeat(78);
  return [
    '',
    rule,
    '  vigil gate: no API key existed, so an admin key was created. It is shown only this once:',
    '',
    `    ${key}`,
    '',
    '  Keep it somewhere safe now: only its SHA-256 is stored.',
    rule,
    '',
  ].join('\n');
}

export async function startGate(options: ServeOptions): Promise<RunningService> {
  const config = loadGateConfig(options.env ?? process.env, options);
  const storage = config.database.kind === 'sqlite' ? config.database.file : `PostgreSQL schema "${config.database.schema}"`;
  const service = await started('gate', config, async () => {
    const { buildGateService } = await import('@vigil/gate');
    const built = await buildGateService(config);
    try {
      await built.app.listen({
        host: config.host,
        port: config.port,
        listenTextResolver: (address) => `listening on ${address} (${storage}${config.redisUrl === undefined ? '' : ', Redis'})`,
      });
    } catch (error) {
      await built.app.close();
      throw error;
    }
    return built;
  });
  // Printed once, on stdout, at first start; only its SHA-256 is stored.
  if (service.generatedAdminKey !== null) process.stdout.write(`${adminKeyBanner(service.generatedAdminKey)}\n`);
  return { name: 'gate', close: () => service.app.close() };
}

/**
 * Runs until SIGINT/SIGTERM, then stops accepting connections, lets in-flight requests finish
 * (bounded by SHUTDOWN_TIMEOUT_MS) and closes the databases.
 */
export async function runUntilSignal(start: () => Promise<RunningService[]>, shutdownTimeoutMs = 10_000): Promise<void> {
  let services: RunningService[];
  try {
    services = await start();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(2);
    }
    if (error instanceof StartupError) {
      process.stderr.write(`${startupFailureLine(error)}\n`);
      process.exit(1);
    }
    throw error;
  }
  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`${signal} received: finishing in-flight requests\n`);
    const deadline = setTimeout(() => {
      process.stderr.write('shutdown timed out; exiting\n');
      process.exit(1);
    }, shutdownTimeoutMs);
    deadline.unref();
    await Promise.allSettled(services.map((s) => s.close()));
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}
