import type { Kysely } from 'kysely';
import type { FastifyBaseLogger } from 'fastify';
import type { Clock } from './clock.ts';
import { tablesOf, type DdlTarget } from './db.ts';

/** The table of job leases, in every service's schema. */
export interface LeaseTables {
  leases: { name: string; holder: string; expires_at: number };
}

/** DDL for the lease table every service with background work needs. */
export async function createLeaseTable(db: DdlTarget): Promise<void> {
  await db.schema
    .createTable('leases')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('holder', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .execute();
}

/**
 * Takes the named lease for `ttlMs` if it is free or expired. One conditional UPDATE decides, so
 * among instances sharing a database exactly one wins each period.
 */
export async function acquireLease<Schema extends LeaseTables>(
  database: Kysely<Schema>,
  name: string,
  holder: string,
  now: number,
  ttlMs: number,
): Promise<boolean> {
  const db = tablesOf<LeaseTables, Schema>(database);
  await db
    .insertInto('leases')
    .values({ name, holder: '', expires_at: 0 })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  const result = await db
    .updateTable('leases')
    .set({ holder, expires_at: now + ttlMs })
    .where('name', '=', name)
    .where((eb) => eb.or([eb('expires_at', '<=', now), eb('holder', '=', holder)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

export interface PeriodicJob {
  /** Runs one tick now if this instance takes the lease; resolves to whether it ran. */
  tick(): Promise<boolean>;
  stop(): Promise<void>;
}

export interface PeriodicJobOptions<Schema extends LeaseTables> {
  name: string;
  intervalMs: number;
  db: Kysely<Schema>;
  holder: string;
  clock: Clock;
  log: FastifyBaseLogger;
  run(now: number): Promise<void>;
}

/**
 * How long a tick's lease lasts: a little less than one interval (by a tenth of it, at most a
 * second), so the holder's next tick finds it lapsed or its own and the other instances' ticks
 * within the interval find it taken. (A fixed second less would leave nothing of intervals of a
 * second or less, and every instance would run every tick.)
 */
export function leaseTtlMs(intervalMs: number): number {
  return Math.max(1, intervalMs - Math.min(1000, Math.ceil(intervalMs / 10)));
}

/** A background job that runs once per interval across every instance sharing the database. */
export function startPeriodicJob<Schema extends LeaseTables>(options: PeriodicJobOptions<Schema>, autoStart = true): PeriodicJob {
  let running: Promise<boolean> | null = null;
  const tick = (): Promise<boolean> => {
    running ??= (async () => {
      const now = options.clock.now();
      const ttl = leaseTtlMs(options.intervalMs);
      if (!(await acquireLease(options.db, options.name, options.holder, now, ttl))) return false;
      // A tick that outlasts its lease keeps it (renewed every half lease), so no other instance's
      // tick of the same job overlaps this one.
      const renewal = setInterval(
        () => {
          acquireLease(options.db, options.name, options.holder, options.clock.now(), ttl).catch((error: unknown) =>
            options.log.warn({ err: error, job: options.name }, 'lease renewal failed'),
          );
        },
        Math.max(1, Math.floor(ttl / 2)),
      );
      renewal.unref();
      try {
        await options.run(now);
      } finally {
        clearInterval(renewal);
      }
      return true;
    })()
      .catch((error: unknown) => {
        options.log.error({ err: error, job: options.name }, 'background job failed');
        return false;
      })
      .finally(() => {
        running = null;
      });
    return running;
  };
  const timer = autoStart ? setInterval(() => void tick(), options.intervalMs) : null;
  timer?.unref();
  return {
    tick,
    async stop() {
      if (timer) clearInterval(timer);
      await running;
    },
  };
}
