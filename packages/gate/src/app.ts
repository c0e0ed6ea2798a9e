import {
  AuditLog,
  createFeatureHost,
  createHttpApp,
  databaseFailure,
  deliveryQueueProbe,
  openServiceDatabase,
  Masker,
  registerMetricsRoute,
  registerOpenApiRoute,
  serviceHttpOptions,
  ServiceMetrics,
  SubjectHasher,
  LoggedStates,
  systemClock,
  tablesOf,
} from '@vigil/platform';
import type { PeriodicJob, RouteEntry, ServiceBuildOptions, ServiceError, ZodApp } from '@vigil/platform';
import { approversFeature } from './approvers/index.ts';
import { auditTrailFeature } from './audit-trail/index.ts';
import { auditLogFeature, GATE_LOG } from './audit-log/index.ts';
import { chatFeature, chatNotifier } from './chat/index.ts';
import { erasureFeature } from './erasure/index.ts';
import { claudeCodeFeature } from './claude-code/index.ts';
import { authenticationFeature, KeyCache, keysFeature, RATE_LIMIT_HEADERS, SCOPES } from './auth/index.ts';
import type { GateConfig } from './config.ts';
import { GATE_CHANGE_RESOURCES, type GateContext } from './context.ts';
import { gateError, gateErrorSchema, renderGateError } from './errors.ts';
import { gateMigrations } from './migrations.ts';
import { grantsFeature } from './grants/index.ts';
import { budgetsFeature } from './budgets/index.ts';
import { mcpFeature } from './mcp/index.ts';
import { PolicyCache, policiesFeature } from './policies/index.ts';
import { MemoryRateLimiter, RedisRateLimiter, type RateLimiter } from './ratelimit/index.ts';
import { receiptsFeature } from './receipts/index.ts';
import { requestsFeature, type RequestService } from './requests/index.ts';
import type { GateSchema } from './schema.ts';
import { systemFeature } from './system/index.ts';
import { Outbox, webhooksFeature } from './webhooks/index.ts';

/** 1 MiB body limit for every route with a body, not configurable (docs/api.md#limits). */
const BODY_LIMIT_BYTES = 1024 * 1024;
const REDIS_CONNECT_TIMEOUT_MS = 2000;

export interface GateService {
  app: ZodApp;
  context: GateContext;
  requests: RequestService;
  jobs: { expiry: PeriodicJob; webhooks: PeriodicJob; auditCheckpoint: PeriodicJob; budgets: PeriodicJob; auditTerms: PeriodicJob };
  /** The admin key generated at first start (no key existed and GATE_ADMIN_KEY was unset), to print once. */
  generatedAdminKey: string | null;
}

export type GateOptions = ServiceBuildOptions;

/** Database down: 503, so clients retry; other database failures stay the catalogue's 500 internal_error. */
function classifyDatabaseError(error: unknown): ServiceError | undefined {
  return databaseFailure(error) === 'unavailable' ? gateError('unavailable') : undefined;
}

/** What authentication can answer for a route (see auth/auth.ts): nothing without a key; 401 and 429 (a key's rate limit), and 403 where a scope is needed. */
function authErrorStatuses(route: RouteEntry): number[] {
  if (!route.takesKey) return [];
  return route.scope === 'any' ? [401, 429] : [401, 403, 429];
}

export async function buildGateService(config: GateConfig, options: GateOptions = {}): Promise<GateService> {
  const database = await openServiceDatabase<GateSchema>(config, gateMigrations);
  const clock = options.clock ?? systemClock;

  const app = await createHttpApp({
    title: 'Vigil gate',
    description:
      'Decides what AI agents may do: approval requests are auto-approved, denied or routed to a human by policies, every step is audited and pushed to signed webhooks.',
    service: 'gate',
    ...serviceHttpOptions(config, database, options),
    bodyLimitBytes: BODY_LIMIT_BYTES,
    errors: gateError,
    renderError: renderGateError,
    classify: classifyDatabaseError,
    errorSchema: gateErrorSchema,
    scopes: [...SCOPES, 'any'],
    authErrorStatuses,
    rateLimitHeaders: RATE_LIMIT_HEADERS,
  });

  let limiter: RateLimiter;
  if (config.redisUrl) {
    // Loaded only when configured: a gate without Redis does not hold the client.
    const { Redis } = await import('ioredis');
    const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: REDIS_CONNECT_TIMEOUT_MS });
    redis.on('error', (error) => app.log.debug({ err: error }, 'redis connection error'));
    const redisLimiter = new RedisRateLimiter(redis, (error) => app.log.warn({ err: error }, 'Redis unavailable: rate limits fall back to this instance'));
    if (!(await redisLimiter.connected(REDIS_CONNECT_TIMEOUT_MS))) app.log.warn('Redis is not reachable yet: rate limits use this instance until it is');
    limiter = redisLimiter;
  } else {
    limiter = new MemoryRateLimiter();
  }

  const chat = await chatNotifier(config, database, app.log);
  const context: GateContext = {
    config,
    database,
    clock,
    keys: new KeyCache(database, clock, config.cacheRefreshMs, new LoggedStates(database.db, clock, config.cacheRefreshMs), app.log),
    policies: new PolicyCache(database, clock, config.cacheRefreshMs, app.log),
    limiter,
    outbox: new Outbox(database, config, clock, app.log, chat === null ? [] : [chat]),
    auditLog: AuditLog.ofService<GateSchema>(GATE_LOG, config, database, clock, app.log, {
      source: { table: 'requests', headSeq: 'audit_head_seq', headHash: 'audit_head_hash' },
      onThread: true,
    }),
    metrics: new ServiceMetrics(clock, database),
    redactor: new Masker(config.masking),
    subjects: new SubjectHasher({ hashKey: config.subjects.hashKey, dataDir: config.dataDir }),
    changeResources: GATE_CHANGE_RESOURCES,
  };
  registerMetricsRoute(app, context.metrics, { ...config.metrics, refuse: () => gateError('unauthorized') });
  context.metrics.queue(deliveryQueueProbe('webhook_deliveries', tablesOf(database.db) as never, 'deliveries'));
  const features = createFeatureHost({
    app,
    context,
    db: database.db,
    clock,
    runJobs: options.runJobs ?? true,
    // After every feature has stopped (so no job writes to the outbox or the audit log any more).
    closeShared: async () => {
      await context.outbox.stop();
      await context.auditLog.stop();
      await limiter.close();
      await database.close();
    },
  });
  // In this order: authentication first; the routes (and so the OpenAPI document) follow the list.
  await features.register(authenticationFeature);
  await features.register(systemFeature);
  await features.register(mcpFeature);
  const requests = await features.register(requestsFeature);
  await features.register(receiptsFeature(requests.service));
  await features.register(grantsFeature(requests.service));
  const budgets = await features.register(budgetsFeature(requests.service));
  const auditTerms = await features.register(auditTrailFeature);
  await features.register(erasureFeature(requests.service));
  const auditCheckpoint = await features.register(auditLogFeature);
  await features.register(policiesFeature);
  const generatedAdminKey = await features.register(keysFeature);
  const webhooks = await features.register(webhooksFeature);
  const approvers = await features.register(approversFeature(requests.service));
  await features.register(chatFeature(chat, requests.service, approvers));
  await features.register(claudeCodeFeature(requests.service));
  registerOpenApiRoute(app);
  await app.ready();
  return { app, context, requests: requests.service, jobs: { expiry: requests.expiry, webhooks, auditCheckpoint, budgets, auditTerms }, generatedAdminKey };
}
