import {
  ConfigError,
  createFeatureHost,
  createHttpApp,
  databaseFailure,
  LoggedStates,
  openServiceDatabase,
  registerMetricsRoute,
  registerOpenApiRoute,
  serviceHttpOptions,
  ServiceMetrics,
  SubjectHasher,
  systemClock,
} from '@vigil/platform';
import type { Clock, PeriodicJob, ServiceBuildOptions, ServiceError, ZodApp } from '@vigil/platform';
import { parsePriceOverrides, PriceTable } from '@vigil/pricing';
import { agentsFeature } from './agents/index.ts';
import { alertsFeature } from './alerts/index.ts';
import { ANALYTICS_DERIVED_TABLES, analyticsFeature } from './analytics/index.ts';
import { budgetSpendFeature } from './budget-spend/index.ts';
import { auditLogFeature } from './audit-log/index.ts';
import { benchmarksFeature } from './benchmarks/index.ts';
import type { ObserveConfig } from './config.ts';
import { OBSERVE_CHANGE_RESOURCES, type ObserveContext } from './context.ts';
import { contextApiFeature } from './context-api/index.ts';
import { dashboardFeature, type DashboardRouteOptions } from './dashboard/index.ts';
import { observeError, observeErrorSchema, renderObserveError } from './errors.ts';
import { evalsFeature, type EvalRuns } from './evals/index.ts';
import { type DerivedTable, EVENTS_DERIVED_TABLES, EventAppender, eventsFeature } from './events/index.ts';
import { guardrailsFeature, type GuardrailEngine } from './guardrails/index.ts';
import { erasureFeature } from './erasure/index.ts';
import { evidencePackFeature, GATE_AUTHORIZATION_HEADER } from './evidence-pack/index.ts';
import { healthFeature } from './health/index.ts';
import { holdsFeature } from './holds/index.ts';
import { authenticationFeature, keysFeature, OBSERVE_AUTH_MODES, OBSERVE_SCOPES, observeAuthErrorStatuses } from './auth/index.ts';
import { llmCallsFeature } from './llm-calls/index.ts';
import { memoryFeature } from './memory/index.ts';
import { mcpFeature } from './mcp/index.ts';
import { observeMigrations } from './migrations.ts';
import { optimizeFeature } from './optimize/index.ts';
import { otelFeature } from './otel/index.ts';
import { createEmbedder, recallFeature, VectorIndex } from './recall/index.ts';
import { redactionFeature } from './redaction/index.ts';
import { reflectFeature } from './reflect/index.ts';
import { replayFeature } from './replay/index.ts';
import { retentionFeature } from './retention/index.ts';
import type { ObserveSchema } from './schema.ts';
import { sessionsFeature } from './sessions/index.ts';
import { settingsFeature } from './settings/index.ts';
import { streamFeature, type StreamHub } from './stream/index.ts';
import { encryptionFeature, startEventSealer, type DataKeyStore } from './encryption/index.ts';
import { registerObserveMetrics, systemFeature } from './system/index.ts';
import { treeFeature } from './tree/index.ts';
import { WEBHOOK_SIGNATURE_HEADER, webhookIngestFeature } from './webhook-ingest/index.ts';

export interface ObserveService {
  app: ZodApp;
  context: ObserveContext;
  /** Dataset runs (evals/): the worker kicked by new runs and its periodic job (resumes unfinished cases). */
  evalRuns: EvalRuns;
  jobs: {
    retention: PeriodicJob;
    auditCheckpoint: PeriodicJob;
    alerts: PeriodicJob;
    healthSnapshots: PeriodicJob;
    embeddings: PeriodicJob;
    guardrails: PeriodicJob;
    /** Keeps the per-session reflect state (reflect/state.ts). */
    reflectState: PeriodicJob;
    /** Deletes Idempotency-Key rows older than 24 hours (events/idempotency.ts). */
    idempotencyKeys: PeriodicJob;
    /** Creates the events partitions ahead on PostgreSQL (events/partitions.ts). */
    eventPartitions: PeriodicJob;
    /** Indexes the data subjects of events stored before the subject index existed (erasure/backfill.ts). */
    subjectIndexBackfill: PeriodicJob;
    /** Finishes destructions of data keys an erasure committed and did not destroy (the process died in between). */
    dataKeyDestruction: PeriodicJob;
  };
  /** Guardrail evaluation after ingest commits (tests await `guardrails.idle()`). */
  guardrails: GuardrailEngine;
  /** The live event streams of GET /api/stream. */
  streams: StreamHub;
}

export interface ObserveOptions extends ServiceBuildOptions {
  /** Start an embedding drain after each ingest commit (default: runJobs). */
  kickEmbeddings?: boolean;
  /** Start working a dataset run as soon as it is created (default true; the periodic job runs only with runJobs). */
  kickEvalRuns?: boolean;
  /** Evaluate guardrails after each ingest commit (default: runJobs). */
  evaluateGuardrails?: boolean;
  /** The web dashboard served at `/`: its built files (default packages/dashboard/dist) and the gate proxy's deadline. */
  dashboard?: DashboardRouteOptions;
  /**
   * Append each event's leaf to the audit log (default true). Only `npm run bench` turns it off, to
   * measure what the log costs ingest: without leaves every chain verification reports the events
   * as not appended through ingest.
   */
  auditLeaves?: boolean;
  /** false: checkpoints commit no map of session heads (the benchmark of what that costs ingest; docs/audit.md, "Session heads"). */
  auditHeads?: boolean;
  /** Where crypto-shredding keeps its data keys (default: the store DATA_KEY_STORE names); a KMS-backed store implements the same interface. */
  dataKeyStore?: DataKeyStore;
}

/**
 * The tables derived from events, as their features declare them, in the order ingest keeps them
 * (the store totals first, right after the agents rows): what retention subtracts from, what the
 * derived listings page and what `vigil verify --deep` recomputes.
 */
export const OBSERVE_DERIVED_TABLES: readonly DerivedTable[] = [...EVENTS_DERIVED_TABLES, ...ANALYTICS_DERIVED_TABLES];

/**
 * How long a governed row's verdict (a key, the retention setting) is kept while the row is
 * unchanged: a change through another instance sharing the database is seen within it.
 */
const LOGGED_STATE_MAX_AGE_MS = 1000;

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
  const clock = options.clock ?? systemClock;
  const prices = loadPriceTable(config, clock);
  const database = await openServiceDatabase<ObserveSchema>(config, observeMigrations);
  const subjects = new SubjectHasher({ hashKey: config.subjects.hashKey, dataDir: config.dataDir });
  const sealer = await startEventSealer(config, database, subjects, options.dataKeyStore).catch(async (error: unknown) => {
    await database.close();
    throw error;
  });
  const context: ObserveContext = {
    config,
    database,
    clock,
    events: new EventAppender(database, config.sessionIdleTimeoutMs),
    derivedTables: OBSERVE_DERIVED_TABLES,
    prices,
    embedder: createEmbedder(config.embeddings),
    vectorIndex: new VectorIndex(database),
    metrics: new ServiceMetrics(clock, database),
    changeResources: OBSERVE_CHANGE_RESOURCES,
    loggedStates: new LoggedStates(database.db, clock, LOGGED_STATE_MAX_AGE_MS),
    subjects,
    sealer,
  };
  if (sealer.enabled) context.events.sealWith(sealer);
  // Rows every batch of an agent and hour updates: after the commit-ordering lock (WriterPosition).
  for (const table of OBSERVE_DERIVED_TABLES) if (table.apply) context.events.inTransaction(table.apply, { sharedRows: true });

  const app = await createHttpApp({
    title: 'Vigil observe',
    description:
      'Records what AI agents do (events, sessions, LLM and tool calls, OTLP traces) into SHA-256 hash-chained sessions, and answers queries, analytics, alerts, guardrails and evaluations over them.',
    service: 'observe',
    ...serviceHttpOptions(config, database, options),
    bodyLimitBytes: config.bodyLimitBytes,
    credentialHeaders: [WEBHOOK_SIGNATURE_HEADER, GATE_AUTHORIZATION_HEADER],
    errors: observeError,
    renderError: renderObserveError,
    classify: classifyDatabaseError,
    errorSchema: observeErrorSchema,
    authModes: OBSERVE_AUTH_MODES,
    scopes: OBSERVE_SCOPES,
    authErrorStatuses: observeAuthErrorStatuses,
  });
  registerMetricsRoute(app, context.metrics, { ...config.metrics, refuse: () => observeError('unauthorized') });
  registerObserveMetrics(context);

  const runJobs = options.runJobs ?? true;
  const features = createFeatureHost({
    app,
    context,
    db: database.db,
    clock,
    runJobs,
    closeShared: async () => {
      await sealer.close();
      await database.close();
    },
  });
  // In this order: authentication first; the routes (and so the OpenAPI document) follow the list.
  await features.register(authenticationFeature);
  await features.register(systemFeature);
  await features.register(mcpFeature);
  await features.register(keysFeature);
  const { idempotencyKeys, partitions: eventPartitions } = await features.register(eventsFeature);
  await features.register(otelFeature);
  await features.register(webhookIngestFeature);
  await features.register(sessionsFeature);
  await features.register(treeFeature);
  await features.register(replayFeature);
  await features.register(agentsFeature);
  const healthSnapshots = await features.register(healthFeature);
  const alerts = await features.register(alertsFeature);
  await features.register(benchmarksFeature);
  const evalRuns = await features.register(evalsFeature({ kickRuns: options.kickEvalRuns ?? true }));
  const guardrails = await features.register(guardrailsFeature({ evaluateAfterCommit: options.evaluateGuardrails ?? runJobs }));
  await features.register(settingsFeature);
  await features.register(redactionFeature);
  await features.register(holdsFeature);
  await features.register(memoryFeature);
  await features.register(analyticsFeature);
  await features.register(llmCallsFeature);
  await features.register(budgetSpendFeature);
  await features.register(optimizeFeature);
  const reflectState = await features.register(reflectFeature);
  const embeddings = await features.register(recallFeature({ drainAfterCommit: options.kickEmbeddings ?? runJobs }));
  await features.register(contextApiFeature);
  const audit = await features.register(auditLogFeature({ appendLeaves: options.auditLeaves ?? true, commitHeads: options.auditHeads ?? true }));
  const subjectIndexBackfill = await features.register(erasureFeature(audit.log));
  const dataKeyDestruction = await features.register(encryptionFeature);
  await features.register(evidencePackFeature);
  const streams = await features.register(streamFeature);
  registerOpenApiRoute(app);
  await features.register(dashboardFeature(options.dashboard));
  const retention = await features.register(retentionFeature(audit.log));
  await app.ready();
  return {
    app,
    context,
    evalRuns,
    jobs: {
      retention,
      auditCheckpoint: audit.checkpointJob,
      alerts,
      healthSnapshots,
      embeddings,
      guardrails: guardrails.sweep,
      reflectState,
      idempotencyKeys,
      eventPartitions,
      subjectIndexBackfill,
      dataKeyDestruction,
    },
    guardrails: guardrails.engine,
    streams,
  };
}
