import { buildGateService } from '@vigil/gate';
import { buildObserveService, type ObserveService } from '@vigil/observe';
import { ConfigError } from '@vigil/platform';
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
    else log.warn(`the dashboard could not be built: ${outcome.reason}. The API works; see README (Dashboard).`);
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

export async function startObserve(options: ServeOptions): Promise<RunningService> {
  const config = loadObserveConfig(options.env ?? process.env, options);
  const service: ObserveService = await buildObserveService(config);
  await service.app.listen({ host: config.host, port: config.port });
  const storage = config.database.kind === 'sqlite' ? config.database.file : `PostgreSQL schema "${config.database.schema}"`;
  service.app.log.info({ storage }, `observe listening on http://${config.host}:${config.port}`);
  buildDashboardInBackground(service.app.log, `http://${config.host === '0.0.0.0' || config.host === '::' ? 'localhost' : config.host}:${config.port}/`);
  if (config.authDisabled) service.app.log.warn('AUTH_DISABLED=true: every route is open; use only for development');
  return { name: 'observe', close: () => service.app.close() };
}

export async function startGate(options: ServeOptions): Promise<RunningService> {
  const config = loadGateConfig(options.env ?? process.env, options);
  const service = await buildGateService(config);
  await service.app.listen({ host: config.host, port: config.port });
  if (service.generatedAdminKey !== null) {
    // Printed once, on stdout, at first start; only its SHA-256 is stored.
    process.stdout.write(
      `\nvigil gate: no API key existed, so an admin key was created. It is shown only this once:\n\n  ${service.generatedAdminKey}\n\n`,
    );
  }
  const storage = config.database.kind === 'sqlite' ? config.database.file : `PostgreSQL schema "${config.database.schema}"`;
  service.app.log.info({ storage, redis: config.redisUrl !== undefined }, `gate listening on http://${config.host}:${config.port}`);
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
