import { hostname } from 'node:os';
import type { Clock } from './clock.ts';
import type { ZodApp } from './http.ts';
import { newId } from './ids.ts';
import { startPeriodicJob, type LeaseTables, type PeriodicJob } from './jobs.ts';
import type { Kysely } from 'kysely';

/** A periodic job a feature runs: once per interval across the instances sharing the database. */
export interface FeatureJob {
  name: string;
  intervalMs: number;
  run(now: number): Promise<void>;
}

/** What a feature is given while it registers itself. */
export interface FeatureSetup<Context> {
  /**
   * The feature's own scope of the service's app: it inherits the app's hooks, error handling and
   * the shared features' hooks and decorators; its own stay inside it unless it is shared.
   */
  app: ZodApp;
  context: Context;
  /** Whether background timers run (tests turn them off and call `tick()` themselves). */
  runJobs: boolean;
  /** Starts a periodic job with the service's holder, clock and log; it is stopped at shutdown before the feature's onClose. */
  job(job: FeatureJob): PeriodicJob;
  /** Work to stop at shutdown: after this feature's jobs, before the service's shared resources (the database) close. */
  onClose(stop: () => Promise<void>): void;
}

/**
 * A feature of a service: its routes, periodic jobs, subscriptions and shutdown, registered as one
 * Fastify plugin. `setup` returns what the service hands out of the feature (a worker, a job), if anything.
 */
export interface Feature<Context, Handle = void> {
  name: string;
  setup(feature: FeatureSetup<Context>): Handle | Promise<Handle>;
  /** Whether the feature's hooks and decorators apply to the whole app (FeatureOptions). */
  shared: boolean;
}

export interface FeatureOptions {
  /**
   * Registers the feature without encapsulation (Fastify's skip-override, what fastify-plugin sets),
   * so its hooks and decorators reach every route of the app, those of features registered before
   * it included. Only for what every route must pass, such as authentication; by default a
   * feature is encapsulated and its hooks, decorators and parsers stay with its own routes.
   */
  shared?: boolean;
}

export function defineFeature<Context, Handle = void>(
  name: string,
  setup: Feature<Context, Handle>['setup'],
  options: FeatureOptions = {},
): Feature<Context, Handle> {
  return { name, setup, shared: options.shared ?? false };
}

export interface FeatureHostOptions<Context, Schema extends LeaseTables> {
  app: ZodApp;
  context: Context;
  /** The service's database, which holds the lease table (platform/jobs.ts). */
  db: Kysely<Schema>;
  clock: Clock;
  runJobs: boolean;
  /** Closes what the service built before its features (the database, caches, connections): runs after every feature has stopped. */
  closeShared(): Promise<void>;
}

export interface FeatureHost<Context> {
  /** Registers the feature as a plugin of the app, now (so routes keep the order of the register calls); resolves to its handle. */
  register<Handle>(feature: Feature<Context, Handle>): Promise<Handle>;
}

/**
 * Builds a service from features. Shutdown order holds by construction: Fastify runs onClose
 * hooks last-registered first (feature.test.ts pins it), so the shared resources' hook, added
 * here before any feature, runs after every feature's, and features stop in reverse order of
 * registration, each one's jobs before its own onClose work.
 */
export function createFeatureHost<Context, Schema extends LeaseTables>(options: FeatureHostOptions<Context, Schema>): FeatureHost<Context> {
  const { app } = options;
  const holder = `${hostname()}:${process.pid}:${newId()}`;
  app.addHook('onClose', async () => {
    await options.closeShared();
  });
  return {
    async register<Handle>(feature: Feature<Context, Handle>): Promise<Handle> {
      let handle: Handle | undefined;
      const plugin = async (instance: ZodApp): Promise<void> => {
        const jobs: PeriodicJob[] = [];
        const stops: (() => Promise<void>)[] = [];
        handle = await feature.setup({
          app: instance,
          context: options.context,
          runJobs: options.runJobs,
          job: (job) => {
            const started = startPeriodicJob({ ...job, db: options.db, holder, clock: options.clock, log: instance.log }, options.runJobs);
            jobs.push(started);
            return started;
          },
          onClose: (stop) => {
            stops.push(stop);
          },
        });
        if (jobs.length > 0 || stops.length > 0) {
          instance.addHook('onClose', async () => {
            await Promise.all(jobs.map((job) => job.stop()));
            for (const stop of stops) await stop();
          });
        }
      };
      Object.assign(plugin, { [Symbol.for('fastify.display-name')]: feature.name, ...(feature.shared && { [Symbol.for('skip-override')]: true }) });
      await app.register(plugin);
      return handle as Handle;
    },
  };
}
