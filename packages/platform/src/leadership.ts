import { sha256 } from './crypto.ts';
import { sql, type Kysely } from 'kysely';
import type pg from 'pg';
import type { DatabaseConfig } from './config.ts';

/**
 * One leader among the instances sharing a database, for work that must run in exactly one of them
 * at a time (the audit log's integrator, audit-integrator.ts). PostgreSQL: the leader is the
 * instance whose dedicated connection holds a session advisory lock (pg_try_advisory_lock) named
 * after the schema and the role; when its process dies its session ends, the lock frees, and the
 * next `check` of another instance takes it. SQLite: one process owns the file, so it leads.
 */
export interface Leadership {
  /** Whether this instance leads, as the last `check` (or a lost connection since) left it. */
  leading(): boolean;
  /** Tries to take the lead, or proves it is still held (its connection answers); answers whether this instance leads. */
  check(): Promise<boolean>;
  /** Asks the leader, whichever instance it is, to work now (`onWake` runs there). */
  wake(): Promise<void>;
  /** Gives the lead up (ends the dedicated connection, which frees the lock). */
  stop(): Promise<void>;
}

/** How long a query on the dedicated connection may take before the instance stops leading (a silent network). */
const LEADER_QUERY_TIMEOUT_MS = 5000;

/**
 * Server-side TCP keepalive of the dedicated connection (seconds): PostgreSQL ends the session of a
 * leader whose host vanished without closing it after about idle + interval × count = 11 s, which
 * frees the lock. The leader itself stops leading sooner (LEADER_QUERY_TIMEOUT_MS), so two leaders
 * never overlap on that path.
 */
const KEEPALIVE = { idle: 5, interval: 2, count: 3 };

/** The advisory lock's key (a signed 64-bit integer, as text) and the notification channel of a role in a schema. */
export function leadershipNames(schema: string, role: string): { key: string; channel: string } {
  const digest = sha256(`vigil-leader\0${schema}\0${role}`);
  return { key: digest.readBigInt64BE(0).toString(), channel: `vigil_leader_${digest.subarray(8, 20).toString('hex')}` };
}

/**
 * The leadership of `role` among the instances on `database`. `db` is the service's own pool (the
 * followers' wake-up notifications go through it); `onWake` runs on the leader when any instance
 * calls `wake`.
 */
export async function electLeader<Schema>(options: { database: DatabaseConfig; db: Kysely<Schema>; role: string; onWake: () => void }): Promise<Leadership> {
  const { database, db, role, onWake } = options;
  if (database.kind === 'sqlite') {
    return {
      leading: () => true,
      check: async () => true,
      wake: async () => onWake(),
      stop: async () => undefined,
    };
  }
  const { default: driver } = (await import('pg')) as { default: typeof pg };
  const { key, channel } = leadershipNames(database.schema, role);
  let client: pg.Client | null = null;
  let leading = false;
  let stopped = false;
  const drop = async (): Promise<void> => {
    const gone = client;
    client = null;
    leading = false;
    await gone?.end().catch(() => undefined);
  };
  const connect = async (): Promise<pg.Client> => {
    const candidate = new driver.Client({
      connectionString: database.url,
      connectionTimeoutMillis: database.connectTimeoutMs ?? 5000,
      query_timeout: LEADER_QUERY_TIMEOUT_MS,
      keepAlive: true,
      // Names the process, so `select application_name from pg_stat_activity` tells which instance leads.
      application_name: `vigil ${role} pid ${process.pid}`,
    });
    // A lost connection ends the client: the lead is lost with its session (the lock is freed by the server).
    candidate.on('error', () => undefined);
    candidate.on('end', () => {
      if (client === candidate) {
        client = null;
        leading = false;
      }
    });
    candidate.on('notification', (message) => {
      if (message.channel === channel && leading) onWake();
    });
    await candidate.connect();
    await candidate.query(
      `set tcp_keepalives_idle = ${KEEPALIVE.idle}; set tcp_keepalives_interval = ${KEEPALIVE.interval}; set tcp_keepalives_count = ${KEEPALIVE.count}`,
    );
    return candidate;
  };
  const check = async (): Promise<boolean> => {
    if (stopped) return false;
    try {
      client ??= await connect();
      if (leading) {
        await client.query('select 1');
        return true;
      }
      const { rows } = await client.query<{ locked: boolean }>('select pg_try_advisory_lock($1::bigint) as locked', [key]);
      if (rows[0]?.locked === true) {
        await client.query(`listen ${channel}`);
        leading = true;
      }
    } catch {
      // The connection (or the database) is gone: not leading; the next check connects again.
      await drop();
    }
    return leading;
  };
  return {
    leading: () => leading,
    check,
    async wake() {
      if (leading) onWake();
      else await sql`select pg_notify(${channel}, '')`.execute(db);
    },
    async stop() {
      stopped = true;
      await drop();
    },
  };
}
