// Prometheus metrics of a service (GET /metrics): HTTP traffic, the database pool, process
// defaults, and whatever the service adds (queues, ingest, refusals), in one registry per service.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { constantTimeEqual, sha256Hex } from './crypto.ts';
import type { Kysely } from 'kysely';
import type { Database } from './db.ts';
import type { DeliveryColumns } from './deliveries.ts';
import type { ServiceError } from './errors.ts';
import { bearerToken, type ZodApp } from './http.ts';

export interface MetricsRouteOptions {
  /** Bearer token admitted from any address (METRICS_TOKEN). */
  token?: string;
  /** Client addresses admitted without a token (METRICS_ALLOW_IPS). */
  allowIps: readonly string[];
  /** The service's 401 for a scrape that is not admitted. */
  refuse(): ServiceError;
}

/** A durable queue measured at scrape time: pending rows and the age of the oldest one that is due. */
export interface QueueProbe {
  name: string;
  measure(now: number): Promise<{ depth: number; oldestDueAt: number | null }>;
}

/**
 * prom-client's default gauges whose names end in `_total`, the suffix Prometheus keeps for
 * counters (`promtool check metrics` fails on them). Each is the sum of the per-type gauge of the
 * same name without the suffix (`sum(nodejs_active_handles)`), so nothing is lost by dropping them.
 */
const TOTAL_NAMED_DEFAULT_GAUGES = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

// Latency buckets in seconds: from a cached read to a slow LLM-backed route.
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The address forms of loopback a client may arrive with (IPv4-mapped IPv6 included). */
function sameAddress(client: string, allowed: string): boolean {
  const plain = (ip: string) => ip.replace(/^::ffff:/, '');
  return plain(client) === plain(allowed);
}

export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly queues: QueueProbe[] = [];

  /** Process defaults, the PostgreSQL pool (where there is one) and the queues the features add. */
  constructor(
    private readonly clock: { now(): number },
    database: Pick<Database<unknown>, 'poolStats'>,
  ) {
    collectDefaultMetrics({ register: this.registry });
    for (const name of TOTAL_NAMED_DEFAULT_GAUGES) this.registry.removeSingleMetric(name);
    const { poolStats } = database;
    if (poolStats) {
      new Gauge({
        name: 'vigil_db_pool_connections',
        help: 'PostgreSQL pool: clients open (total), idle, and requests waiting for a client',
        labelNames: ['state'],
        registers: [this.registry],
        collect() {
          const stats = poolStats();
          for (const state of ['total', 'idle', 'waiting'] as const) this.set({ state }, stats[state]);
        },
      });
    }
    this.registerQueueGauges();
  }

  counter(name: string, help: string, labelNames: readonly string[] = []): Counter {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  /** Queues are measured once per scrape, in parallel (a count and a min on an indexed column each). */
  queue(probe: QueueProbe): void {
    this.queues.push(probe);
  }

  /** The gauges that read the queues at scrape time. */
  private registerQueueGauges(): void {
    const queues = this.queues;
    const clock = this.clock;
    let last: Promise<{ name: string; depth: number; lag: number }[]> | null = null;
    // Both gauges read one measurement per scrape. A queue that cannot be measured (the database
    // down) is left out of this scrape: the rest, the failed-request counter first, still answers.
    const measure = () =>
      (last ??= Promise.all(
        queues.map(async (q) => {
          const now = clock.now();
          const measured = await q.measure(now).catch(() => null);
          if (measured === null) return [];
          const { depth, oldestDueAt } = measured;
          return [{ name: q.name, depth, lag: oldestDueAt === null ? 0 : Math.max(0, (now - oldestDueAt) / 1000) }];
        }),
      )
        .then((measured) => measured.flat())
        .finally(() => setImmediate(() => (last = null))));
    new Gauge({
      name: 'vigil_queue_depth',
      help: 'Pending items in a durable queue, by queue',
      labelNames: ['queue'],
      registers: [this.registry],
      async collect() {
        for (const q of await measure()) this.set({ queue: q.name }, q.depth);
      },
    });
    new Gauge({
      name: 'vigil_queue_lag_seconds',
      help: 'Age of the oldest due item of a durable queue (0 when none is due): how far its worker is behind',
      labelNames: ['queue'],
      registers: [this.registry],
      async collect() {
        for (const q of await measure()) this.set({ queue: q.name }, q.lag);
      },
    });
  }
}

/**
 * GET /metrics in the Prometheus text format, admitted from an allowed client address or with
 * `Authorization: Bearer <METRICS_TOKEN>`; refused 401 otherwise. Every request of the app is
 * counted and timed per route template, method and status class.
 */
export function registerMetricsRoute(app: ZodApp, metrics: ServiceMetrics, options: MetricsRouteOptions): void {
  const { registry } = metrics;
  const labelNames = ['method', 'route', 'status_class'];
  const requests = new Counter({ name: 'http_requests_total', help: 'HTTP requests answered', labelNames, registers: [registry] });
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer an HTTP request',
    labelNames,
    buckets: HTTP_BUCKETS,
    registers: [registry],
  });
  const failed = new Counter({
    name: 'vigil_http_failed_requests_total',
    help: 'HTTP requests answered 5xx, by status and cause (database_unavailable, shutting_down, internal, other)',
    labelNames: ['status', 'cause'],
    registers: [registry],
  });
  app.addHook('onResponse', (request, reply, done) => {
    if (reply.statusCode >= 500) failed.inc({ status: String(reply.statusCode), cause: request.failureCause ?? 'other' });
    // The route template, never the raw URL: ids would make every request a new series.
    const labels = {
      method: request.method,
      route: request.is404 ? '(unmatched)' : (request.routeOptions.url ?? '(unmatched)'),
      status_class: `${Math.floor(reply.statusCode / 100)}xx`,
    };
    requests.inc(labels);
    duration.observe(labels, reply.elapsedTime / 1000);
    done();
  });
  const expected = options.token === undefined ? null : sha256Hex(options.token);
  app.get('/metrics', { config: { auth: 'metrics' }, schema: { hide: true } }, async (request, reply) => {
    const given = bearerToken(request.headers.authorization);
    const byToken = expected !== null && given !== null && constantTimeEqual(sha256Hex(given), expected);
    if (!byToken && !options.allowIps.some((ip) => sameAddress(request.ip, ip))) throw options.refuse();
    return reply.type(registry.contentType).send(await registry.metrics());
  });
}

/** The probe of a delivery outbox (deliveries.ts): its pending rows and the earliest attempt due. */
export function deliveryQueueProbe(name: string, db: Kysely<Record<string, DeliveryColumns>>, table: string): QueueProbe {
  return {
    name,
    async measure() {
      const row = await db
        .selectFrom(table)
        .select((eb) => [eb.fn.countAll<number>().as('depth'), eb.fn.min('next_attempt_at').as('oldest')])
        .where('status', '=', 'pending')
        .executeTakeFirst();
      return { depth: Number(row?.depth ?? 0), oldestDueAt: row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest) };
    },
  };
}
