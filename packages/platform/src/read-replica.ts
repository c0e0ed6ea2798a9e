import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import type { PostgresPool, PostgresPoolClient, PostgresQueryResult } from 'kysely';
import type pg from 'pg';

/**
 * Read routes served from a streaming replica (READ_DATABASE_URL; docs/scale.md, "Read replicas").
 *
 * Every query of the service goes through one pool (routingPool). A statement goes to the replica
 * only when it runs inside a read route's handler (readingRoute), is a plain SELECT or belongs to a
 * read-only transaction, the replica answers, and its caller has no write that the replica has not
 * replayed yet: from the start of a caller's write until the replica has replayed the primary's WAL
 * as it stood after that write, the caller reads from the primary (read-your-writes). Everything
 * else — writes, locking reads, transactions that may write, jobs, migrations, authentication, and
 * the routes that must see the latest write (`config.reads: 'primary'`: verification, the audit
 * log) — runs on the primary.
 */

/** How often the primary's WAL position and the replica's replay position are read. */
const POLL_MS = 50;

/** The caller of a read route's handler, while it runs (null: an unauthenticated read). */
const readRoute = new AsyncLocalStorage<{ caller: string | null }>();

/** Runs a read route's handler so that its queries may use the replica (routingPool). */
export function readingRoute<T>(caller: string | null, run: () => T): T {
  return readRoute.run({ caller }, run);
}

/** Who a request is, for read-your-writes: a digest of its credential (bearer token or session cookie), never the credential itself. */
export function callerOf(headers: Record<string, string | string[] | undefined>): string | null {
  const credential = headers.authorization ?? headers.cookie;
  if (credential === undefined) return null;
  return createHash('sha256').update([credential].flat().join('\n')).digest('base64url').slice(0, 22);
}

/** `X/Y` (hex halves of a pg_lsn) as one number. */
function parseLsn(text: string): bigint {
  const [high, low] = text.split('/');
  return (BigInt(`0x${high}`) << 32n) | BigInt(`0x${low}`);
}

/** A statement that only reads: a SELECT without row locks, sequence steps, advisory locks or notifications. */
function isPlainRead(text: string): boolean {
  return (
    /^\s*\(*\s*select\b/i.test(text) &&
    !/\bfor\s+(update|share|no\s+key\s+update|key\s+share)\b|\bnextval\s*\(|\bsetval\s*\(|pg_(try_)?advisory|pg_notify\s*\(/i.test(text)
  );
}

/**
 * Where reads may go: the replica's replay position (polled), and the callers held on the primary
 * by a write of theirs that it has not replayed yet.
 */
export class ReplicaRouter {
  /** The replica's replay position at the last poll; null while it has not answered (reads then use the primary). */
  private replayed: bigint | null = null;
  /** Polls of the primary's WAL position started so far (a pin resolves at the first one started after its write ended). */
  private pollsStarted = 0;
  /** Writes in flight, by caller. */
  private readonly writing = new Map<string, number>();
  /** Callers whose last write ended: the poll after which its WAL position is known, then that position. */
  private readonly pins = new Map<string, { afterPoll: number } | { lsn: bigint }>();
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;

  constructor(
    private readonly primary: pg.Pool,
    private readonly replica: pg.Pool,
    private readonly pollMs = POLL_MS,
  ) {}

  /** Starts polling; resolves once the replica was asked once (answered or not). */
  async start(): Promise<void> {
    await this.poll();
    this.timer = setInterval(() => {
      this.polling ??= this.poll().finally(() => (this.polling = null));
    }, this.pollMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.polling;
  }

  /** A write by `caller` begins: its reads use the primary until the replica has replayed it. */
  writeStarted(caller: string): void {
    this.writing.set(caller, (this.writing.get(caller) ?? 0) + 1);
  }

  writeEnded(caller: string): void {
    const left = (this.writing.get(caller) ?? 1) - 1;
    if (left > 0) this.writing.set(caller, left);
    else this.writing.delete(caller);
    this.pins.set(caller, { afterPoll: this.pollsStarted });
  }

  /** Whether a read by `caller` may use the replica now. */
  mayRead(caller: string | null): boolean {
    const replayed = this.replayed;
    if (replayed === null) return false;
    if (caller === null) return true;
    if (this.writing.has(caller)) return false;
    const pin = this.pins.get(caller);
    if (pin === undefined) return true;
    if (!('lsn' in pin) || replayed < pin.lsn) return false;
    this.pins.delete(caller);
    return true;
  }

  /** The replica failed a connection: reads use the primary until it answers a poll again. */
  replicaFailed(): void {
    this.replayed = null;
  }

  private async poll(): Promise<void> {
    const poll = ++this.pollsStarted;
    try {
      const { rows } = await this.primary.query<{ lsn: string }>('select pg_current_wal_lsn()::text as lsn');
      const lsn = parseLsn(rows[0]!.lsn);
      // This position was read after every write that had ended before the poll started.
      for (const [caller, pin] of this.pins) if ('afterPoll' in pin && pin.afterPoll < poll) this.pins.set(caller, { lsn });
    } catch {
      // The primary is down: its requests fail on their own; the pins wait for the next poll.
    }
    try {
      const { rows } = await this.replica.query<{ lsn: string | null }>('select pg_last_wal_replay_lsn()::text as lsn');
      this.replayed = rows[0]?.lsn ? parseLsn(rows[0].lsn) : null;
    } catch {
      this.replayed = null;
    }
    const replayed = this.replayed;
    if (replayed !== null) for (const [caller, pin] of this.pins) if ('lsn' in pin && pin.lsn <= replayed) this.pins.delete(caller);
  }
}

/** The pool the service's Kysely uses when a replica is configured: each connection routed as the module comment says. */
export function routingPool(primary: pg.Pool, replica: pg.Pool, router: ReplicaRouter, unreachable: (error: unknown) => boolean): PostgresPool {
  return {
    connect: async () => {
      const route = readRoute.getStore();
      if (route === undefined || !router.mayRead(route.caller)) return primary.connect();
      return new RoutingClient(primary, replica, router, unreachable) as unknown as PostgresPoolClient;
    },
    end: async () => {
      await router.stop();
      await Promise.all([primary.end(), replica.end()]);
    },
  };
}

/** A read route's connection: each statement (a transaction as a whole) on the replica or the primary, each server's client taken when first needed. */
class RoutingClient {
  private onReplica: Promise<pg.PoolClient> | undefined;
  private onPrimary: Promise<pg.PoolClient> | undefined;
  /** The server of the open transaction, from its first statement to its commit or rollback. */
  private transaction: 'replica' | 'primary' | null = null;
  /** The replica failed under this connection: its client is destroyed, not pooled again. */
  private replicaLost = false;

  constructor(
    private readonly primary: pg.Pool,
    private readonly replica: pg.Pool,
    private readonly router: ReplicaRouter,
    /** Whether an error means the server is out of reach (db.ts databaseFailure). */
    private readonly unreachable: (error: unknown) => boolean,
  ) {}

  async query<R>(text: string, parameters: ReadonlyArray<unknown>): Promise<PostgresQueryResult<R>> {
    const opensOrStandsAlone = this.transaction === null;
    const target = this.target(text);
    try {
      return (await (await this.client(target)).query(text, parameters as unknown[])) as unknown as PostgresQueryResult<R>;
    } catch (error) {
      // A replica lost under a statement: it is asked again of the primary, unless it was inside a
      // transaction already under way there (that request is answered 503 and retried).
      if (target !== 'replica' || !opensOrStandsAlone || !this.unreachable(error)) throw error;
      this.router.replicaFailed();
      this.replicaLost = true;
      if (this.transaction === 'replica') this.transaction = 'primary';
      return (await (await this.client('primary')).query(text, parameters as unknown[])) as unknown as PostgresQueryResult<R>;
    }
  }

  private target(text: string): 'replica' | 'primary' {
    const open = this.transaction;
    if (open !== null) {
      if (/^\s*(commit|rollback)\b/i.test(text)) this.transaction = null;
      return open;
    }
    if (/^\s*(begin|start\s+transaction)\b/i.test(text)) {
      this.transaction = /\bread\s+only\b/i.test(text) ? 'replica' : 'primary';
      return this.transaction;
    }
    return isPlainRead(text) ? 'replica' : 'primary';
  }

  private async client(target: 'replica' | 'primary'): Promise<pg.PoolClient> {
    if (target === 'primary') return (this.onPrimary ??= this.primary.connect());
    this.onReplica ??= this.replica.connect().catch((error: unknown) => {
      // The replica is gone: this connection, and reads until it answers a poll, use the primary.
      this.router.replicaFailed();
      if (this.transaction === 'replica') this.transaction = 'primary';
      this.onReplica = undefined;
      throw error;
    });
    try {
      return await this.onReplica;
    } catch {
      return this.client('primary');
    }
  }

  release(): void {
    void this.onReplica?.then(
      (client) => client.release(this.replicaLost),
      () => undefined,
    );
    void this.onPrimary?.then(
      (client) => client.release(),
      () => undefined,
    );
  }
}
