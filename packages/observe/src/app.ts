import { hostname } from 'node:os';
import {
  ConfigError,
  createHttpApp,
  databaseFailure,
  migrateToLatest,
  newId,
  openDatabase,
  registerAdminChangeRoute,
  startPeriodicJob,
  systemClock,
  VIGIL_VERSION,
  type Clock,
  type PeriodicJob,
  type ServiceError,
  type ZodApp,
} from '@vigil/platform';
import type { ObserveConfig } from './config.ts';
import { registerAgentRoutes } from './agents/routes.ts';
import { runAlertTick } from './alerts/evaluator.ts';
import { registerAlertRoutes } from './alerts/routes.ts';
import { registerAnalyticsRoutes } from './analytics/routes.ts';
import { registerBenchmarkRoutes } from './benchmarks/routes.ts';
import { registerDashboardRoutes, type DashboardRouteOptions } from './dashboard/routes.ts';
import { EVAL_RUNS_INTERVAL_MS, EvalRunWorker } from './evals/runs.ts';
import { registerEvalRoutes } from './evals/routes.ts';
import type { ObserveContext } from './context.ts';
import { observeError, observeErrorSchema, renderObserveError } from './errors.ts';
import { GUARDRAIL_SWEEP_INTERVAL_MS, GUARDRAIL_SWEEP_JOB, GuardrailEngine } from './guardrails/engine.ts';
import { registerGuardrailRoutes } from './guardrails/routes.ts';
import { registerHealthRoutes } from './health/routes.ts';
import { ensureSnapshots, HEALTH_SNAPSHOT_INTERVAL_MS, HEALTH_SNAPSHOT_JOB } from './health/service.ts';
import { EventAppender } from './events/ingest.ts';
import { registerEventRoutes } from './events/routes.ts';
import { registerAuthentication } from './keys/auth.ts';
import { observeAuthErrorStatuses } from './keys/scopes.ts';
import { registerKeyRoutes } from './keys/routes.ts';
import { registerMemoryRoutes } from './memory/routes.ts';
import { observeMigrations } from './migrations.ts';
import { OBSERVE_OPERATIONS } from './operations.ts';
import { registerOptimizeRoutes } from './optimize/routes.ts';
import { registerReflectRoutes } from './reflect/routes.ts';
import { registerContextRoutes } from './context-api/routes.ts';
import { createEmbedder } from './recall/embedder.ts';
import { registerRecallRoutes } from './recall/routes.ts';
import { VectorIndex } from './recall/vector-index.ts';
import { EMBEDDINGS_INTERVAL_MS, EmbeddingWorker } from './recall/worker.ts';
import { releaseStaleClaims } from './recall/queue.ts';
import { parsePriceOverrides, PriceTable } from '@vigil/pricing';
import { applyRetention } from './retention/service.ts';
import type { ObserveSchema } from './schema.ts';
import { registerReplayRoutes } from './replay/routes.ts';
import { registerSessionRoutes } from './sessions/routes.ts';
import { registerSettingsRoutes } from './settings/routes.ts';
import { StreamHub } from './stream/hub.ts';
import { pruneStreamLog } from './stream/log.ts';
import { registerStreamRoutes } from './stream/routes.ts';
import { deleteExpiredStreamTokens } from './stream/tokens.ts';
import { registerSystemRoutes } from './system/routes.ts';
import { registerWebhookRoutes } from './webhooks/routes.ts';

export interface ObserveService {
  app: ZodApp;
  context: ObserveContext;
  /** Dataset runs (evals/): the worker kicked by new runs and its periodic job (resumes unfinished cases). */
  evalRuns: { worker: EvalRunWorker; job: PeriodicJob };
  jobs: { retention: PeriodicJob; alerts: PeriodicJob; healthSnapshots: PeriodicJob; embeddings: PeriodicJob; guardrails: PeriodicJob };
  /** Guardrail evaluation after ingest commits (tests await `guardrails.idle()`). */
  guardrails: GuardrailEngine;
  /** The live event streams of GET /api/stream. */
  streams: StreamHub;
}

export interface ObserveOptions {
  clock?: Clock;
  /** Start background timers (default true); tests drive `jobs.*.tick()` themselves. */
  runJobs?: boolean;
  /** Start an embedding drain after each ingest commit (default: runJobs). */
  kickEmbeddings?: boolean;
  /** Start working a dataset run as soon as it is created (default true; the periodic job runs only with runJobs). */
  kickEvalRuns?: boolean;
  /** Evaluate guardrails after each ingest commit (default: runJobs). */
  evaluateGuardrails?: boolean;
  /** The web dashboard served at `/`: its built files (default packages/dashboard/dist) and the gate proxy's deadline. */
  dashboard?: DashboardRouteOptions;
}

/** Database down: 503, so clients retry; any other database failure: the 500 storage error (docs/api.md#errors). */
function classifyDatabaseError(error: unknown): ServiceError | undefined {
  const failure = databaseFailure(error);
  return failure === undefined ? undefined : observeError(failure);
}

/** The price table: built-in prices with MODEL_PRICES applied; a bad value stops the start like any other bad setting. */
function loadPriceTable(config: ObserveConfig, clock: Clock): PriceTable {
  if (config.modelPricesJson === undefined) return PriceTable.fromDefaults();
  try {
    return PriceTable.fromDefaults(parsePriceOverrides(config.modelPricesJson, new Date(clock.now())));
  } catch (error) {
    // parsePriceOverrides names MODEL_PRICES and the path of the bad entry.
    throw new ConfigError(`Invalid configuration:\n  ${(error as Error).message}`);
  }
}

export async function buildObserveService(config: ObserveConfig, options: ObserveOptions = {}): Promise<ObserveService> {
  const prices = loadPriceTable(config, options.clock ?? systemClock);
  const database = await openDatabase<ObserveSchema>(config.database);
  await migrateToLatest(database, observeMigrations);
  await releaseStaleClaims(database);
  const context: ObserveContext = {
    config,
    database,
    clock: options.clock ?? systemClock,
    // SQLite has one writer, so one transaction at a time; PostgreSQL takes a few in parallel.
    events: new EventAppender(database, database.dialect === 'sqlite' ? 1 : 4, config.sessionIdleTimeoutMs),
    prices,
    embedder: createEmbedder(config.embeddings),
    vectorIndex: new VectorIndex(database),
  };

  const app = await createHttpApp({
    title: 'Vigil observe',
    version: VIGIL_VERSION,
    logLevel: config.logLevel,
    bodyLimitBytes: config.bodyLimitBytes,
    errors: observeError,
    renderError: renderObserveError,
    classify: classifyDatabaseError,
    errorSchema: observeErrorSchema,
    operations: OBSERVE_OPERATIONS,
    authErrorStatuses: observeAuthErrorStatuses,
  });

  registerAuthentication(app, context);
  registerSystemRoutes(app, context);
  registerKeyRoutes(app, context);
  // The log of administrative changes that keys, alert rules, guardrails and settings write (platform/change-log.ts).
  registerAdminChangeRoute(app, context.database.db);
  registerEventRoutes(app, context);
  registerWebhookRoutes(app, context);
  registerSessionRoutes(app, context);
  registerReplayRoutes(app, context);
  registerAgentRoutes(app, context);
  registerHealthRoutes(app, context);
  registerAlertRoutes(app, context);
  registerBenchmarkRoutes(app, context);
  const evalRunWorker = new EvalRunWorker(context, app.log, options.kickEvalRuns ?? true);
  registerEvalRoutes(app, context, evalRunWorker);
  registerGuardrailRoutes(app, context);
  registerSettingsRoutes(app, context);
  registerMemoryRoutes(app, context);
  registerAnalyticsRoutes(app, context);
  registerOptimizeRoutes(app, context);
  registerReflectRoutes(app, context);
  registerRecallRoutes(app, context);
  registerContextRoutes(app, context);
  const streams = new StreamHub(context, app.log);
  context.events.afterCommit(() => streams.committed());
  registerStreamRoutes(app, context, streams);
  // Open streams end before the server stops listening (they would keep it open), then the LISTEN connection closes.
  app.addHook('preClose', () => streams.close());
  // Public, like the schemas it describes: clients generate their types from it before holding a key.
  app.get('/api/openapi.json', { config: { auth: 'public' }, schema: { hide: true } }, async () => app.swagger());
  registerDashboardRoutes(app, context, options.dashboard);

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
        await pruneStreamLog(database, now);
        await deleteExpiredStreamTokens(context, now);
      },
    },
    runJobs,
  );
  const alerts = startPeriodicJob(
    {
      name: 'observe.alerts',
      intervalMs: config.alertEvalIntervalMs,
      db: database.db,
      holder,
      clock: context.clock,
      log: app.log,
      run: (now) => runAlertTick(context, now, app.log),
    },
    runJobs,
  );
  const healthSnapshots = startPeriodicJob(
    {
      name: HEALTH_SNAPSHOT_JOB,
      intervalMs: HEALTH_SNAPSHOT_INTERVAL_MS,
      db: database.db,
      holder,
      clock: context.clock,
      log: app.log,
      run: async (now) => {
        const written = await ensureSnapshots(context, now);
        if (written > 0) app.log.info({ written }, 'health snapshots saved');
      },
    },
    runJobs,
  );

  const embeddingWorker = new EmbeddingWorker(context, app.log, options.kickEmbeddings ?? runJobs, config.retentionIntervalMs);
  context.events.afterCommit(() => embeddingWorker.kick());
  const embeddings = startPeriodicJob(
    {
      name: 'observe.embeddings',
      intervalMs: EMBEDDINGS_INTERVAL_MS,
      db: database.db,
      holder,
      clock: context.clock,
      log: app.log,
      run: (now) => embeddingWorker.runJob(now),
    },
    runJobs,
  );

  const guardrailEngine = new GuardrailEngine(context, app.log, options.evaluateGuardrails ?? runJobs);
  context.events.afterCommit((appended) => guardrailEngine.eventsCommitted(appended));
  const guardrails = startPeriodicJob(
    {
      name: GUARDRAIL_SWEEP_JOB,
      intervalMs: GUARDRAIL_SWEEP_INTERVAL_MS,
      db: database.db,
      holder,
      clock: context.clock,
      log: app.log,
      run: async (now) => {
        await guardrailEngine.sweep(now);
      },
    },
    runJobs,
  );

  app.addHook('onClose', async () => {
    await Promise.all([retention.stop(), alerts.stop(), healthSnapshots.stop(), embeddings.stop(), embeddingWorker.stop(), guardrails.stop()]);
    await guardrailEngine.stop();
    await database.close();
  });
  const evalRunsJob = startPeriodicJob(
    {
      name: 'observe.eval-runs',
      intervalMs: EVAL_RUNS_INTERVAL_MS,
      db: database.db,
      holder,
      clock: context.clock,
      log: app.log,
      run: () => evalRunWorker.runJob(),
    },
    runJobs,
  );
  // Registered after the hook that closes the database: onClose hooks run last-registered first.
  app.addHook('onClose', async () => {
    await Promise.all([evalRunsJob.stop(), evalRunWorker.stop()]);
  });
  await app.ready();
  return { app, context, evalRuns: { worker: evalRunWorker, job: evalRunsJob }, jobs: { retention, alerts, healthSnapshots, embeddings, guardrails }, guardrails: guardrailEngine, streams };
}
