import { hostname } from 'node:os';
import {
  createHttpApp,
  databaseFailure,
  migrateToLatest,
  newId,
  openDatabase,
  startPeriodicJob,
  systemClock,
  VIGIL_VERSION,
  type Clock,
  type ObserveConfig,
  type PeriodicJob,
  type ServiceError,
  type ZodApp,
} from '@vigil/platform';
import { registerAgentRoutes } from './agents/routes.ts';
import type { ObserveContext } from './context.ts';
import { observeError, renderObserveError } from './errors.ts';
import { EventAppender } from './events/ingest.ts';
import { registerEventRoutes } from './events/routes.ts';
import { registerAuthentication } from './keys/auth.ts';
import { registerKeyRoutes } from './keys/routes.ts';
import { registerMemoryRoutes } from './memory/routes.ts';
import { observeMigrations } from './migrations.ts';
import { applyRetention } from './retention/service.ts';
import type { ObserveSchema } from './schema.ts';
import { registerSessionRoutes } from './sessions/routes.ts';
import { registerSettingsRoutes } from './settings/routes.ts';
import { registerSystemRoutes } from './system/routes.ts';

export interface ObserveService {
  app: ZodApp;
  context: ObserveContext;
  jobs: { retention: PeriodicJob };
}

export interface ObserveOptions {
  clock?: Clock;
  /** Start background timers (default true); tests drive `jobs.*.tick()` themselves. */
  runJobs?: boolean;
}

/** Database down: 503, so clients retry; any other database failure: the spec's 500 storage error. */
function classifyDatabaseError(error: unknown): ServiceError | undefined {
  const failure = databaseFailure(error);
  return failure === undefined ? undefined : observeError(failure);
}

export async function buildObserveService(config: ObserveConfig, options: ObserveOptions = {}): Promise<ObserveService> {
  const database = await openDatabase<ObserveSchema>(config.database);
  await migrateToLatest(database, observeMigrations);
  const context: ObserveContext = {
    config,
    database,
    clock: options.clock ?? systemClock,
    // SQLite has one writer, so one transaction at a time; PostgreSQL takes a few in parallel.
    events: new EventAppender(database, database.dialect === 'sqlite' ? 1 : 4),
  };

  const app = await createHttpApp({
    title: 'Vigil observe',
    version: VIGIL_VERSION,
    logLevel: config.logLevel,
    bodyLimitBytes: config.bodyLimitBytes,
    errors: observeError,
    renderError: renderObserveError,
    classify: classifyDatabaseError,
  });

  registerAuthentication(app, context);
  registerSystemRoutes(app, context);
  registerKeyRoutes(app, context);
  registerEventRoutes(app, context);
  registerSessionRoutes(app, context);
  registerAgentRoutes(app, context);
  registerSettingsRoutes(app, context);
  registerMemoryRoutes(app, context);
  app.get('/api/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  const holder = `${hostname()}:${process.pid}:${newId()}`;
  const runJobs = options.runJobs ?? true;
  const retention = startPeriodicJob(
    {
      name: 'observe.retention',
      intervalMs: config.retentionIntervalMs,
      db: database.db,
      holder,
      clock: context.clock,
      log: app.log,
      run: async (now) => {
        const deleted = await applyRetention(context, now);
        if (deleted > 0) app.log.info({ deleted }, 'retention removed expired sessions');
      },
    },
    runJobs,
  );

  app.addHook('onClose', async () => {
    await retention.stop();
    await database.close();
  });
  await app.ready();
  return { app, context, jobs: { retention } };
}
