import type { CreateTableBuilder, Kysely } from 'kysely';
import type { Clock } from './clock.ts';
import { epochMsType, tablesOf, type TablesOfRow } from './db.ts';
import { newId } from './ids.ts';
import { fetchWithTimeout } from './outbound.ts';

/**
 * A durable queue of outbound HTTP POSTs (a service's notifications). Each delivery is a row
 * written in the same transaction as the change it reports, so none is lost; an attempt first
 * claims its row (so instances never send the same attempt twice), failures are retried 2^n s
 * after attempt n up to `maxAttempts`, and `deliverDue` picks up whatever is due (after a restart
 * too). The service decides the headers of each delivery and what a settled delivery means.
 */

/** The columns every delivery table has; a service adds its own (what the delivery is about). */
export interface DeliveryColumns {
  id: string;
  url: string;
  body: string;
  /** pending, delivered or failed. */
  status: string;
  attempts: number;
  next_attempt_at: number;
  claimed_until: number | null;
  last_error: string | null;
  response_status: number | null;
  created_at: number;
  delivered_at: number | null;
}

/** Adds the delivery columns to a table being created, plus the index that finds due rows. */
export function withDeliveryColumns<T extends string>(table: CreateTableBuilder<T, never>): CreateTableBuilder<T, never> {
  return table
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', epochMsType, (c) => c.notNull())
    .addColumn('claimed_until', epochMsType)
    .addColumn('last_error', 'text')
    .addColumn('response_status', 'integer')
    .addColumn('created_at', epochMsType, (c) => c.notNull())
    .addColumn('delivered_at', epochMsType);
}

/** A new pending delivery, due now. */
export function newDelivery(url: string, body: string, now: number): DeliveryColumns {
  return {
    id: newId(),
    url,
    body,
    status: 'pending',
    attempts: 0,
    next_attempt_at: now,
    claimed_until: null,
    last_error: null,
    response_status: null,
    created_at: now,
    delivered_at: null,
  };
}

export interface DeliveryOutcome {
  ok: boolean;
  status: number | null;
  error: string | null;
  /** The receiver asked to wait this long before the next attempt (a 429's or 503's Retry-After). */
  retryAfterMs?: number;
}

/** Retry-After in milliseconds (delta-seconds or an HTTP date), or undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now: number): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** The rows of delivery table `Table` of `Schema`. */
export type DeliveryRowOf<Schema extends Record<Table, DeliveryColumns>, Table extends string> = Schema[Table];

export interface DeliveryQueueOptions<Schema extends Record<Table, DeliveryColumns>, Table extends string> {
  /** The service's database, which holds the delivery table `table`. */
  db: Kysely<Schema>;
  table: Table;
  clock: Clock;
  log: { warn(object: object, message: string): void; error(object: object, message: string): void };
  timeoutMs: number;
  /** Attempts before a delivery is given up: one number, or per row (a kind of delivery that should outlast a longer outage). */
  maxAttempts: number | ((row: DeliveryRowOf<Schema, Table>) => number);
  /** Headers of one attempt (signatures are computed per attempt), or a reason not to send it at all. */
  headers(row: DeliveryRowOf<Schema, Table>): Promise<Record<string, string> | { refuse: string }>;
  /**
   * Sends one attempt itself (a chat platform's client), or undefined to POST the row's body to
   * its url with `headers` (the default).
   */
  send?(row: DeliveryRowOf<Schema, Table>): Promise<DeliveryOutcome> | undefined;
  /**
   * Sends several rows' first attempts as one request (`dispatchBatch`): an outcome per row, in
   * order. A row it does not deliver is settled like any failed attempt; its retries go one by one.
   */
  sendBatch?(rows: DeliveryRowOf<Schema, Table>[]): Promise<DeliveryOutcome[]>;
  /** Bodies per batch request, in bytes (a batch holds at least one row whatever its size). */
  batchBytes?: number;
  /** After an attempt settled the row (delivered, failed, or pending again). */
  onSettled?(row: DeliveryRowOf<Schema, Table>, status: string): Promise<void>;
  /** Retry in this process when the delay passes (the scanner picks retries up otherwise). */
  retryTimers?: boolean;
}

const CLAIM_SLACK_MS = 5000;
/** A receiver's Retry-After is honoured up to this long; beyond it the usual backoff applies. */
const MAX_RETRY_AFTER_MS = 15 * 60_000;
const DUE_PER_SCAN = 500;
const CONCURRENCY = 16;
/** Rows claimed per batch round: what accumulates while the previous round is on the wire. */
const BATCH_ROWS = 200;
const DEFAULT_BATCH_BYTES = 1024 * 1024;

export class DeliveryQueue<Schema extends Record<Table, DeliveryColumns>, Table extends string> {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;
  /** Ids given to dispatchBatch not yet claimed, and whether a round of batches is under way. */
  private readonly batchWaiting: string[] = [];
  private batchDraining = false;
  /** The delivery table, named by data: queried through a view that reads any name as delivery rows. */
  private readonly db: Kysely<TablesOfRow<DeliveryColumns>>;
  private readonly table: string;

  constructor(private readonly options: DeliveryQueueOptions<Schema, Table>) {
    this.db = tablesOf<DeliveryColumns, Table, Schema>(options.db, options.table);
    this.table = options.table;
  }

  /** After commit: attempt these deliveries now, in the background. */
  dispatch(ids: readonly string[]): void {
    for (const id of ids) this.track(this.attempt(id));
  }

  /**
   * After commit: attempt these deliveries now, in the background, together with others dispatched
   * meanwhile: one round at a time claims up to BATCH_ROWS rows with one statement and hands them to
   * `sendBatch`, so under load many deliveries share one request and one settling statement.
   */
  dispatchBatch(ids: readonly string[]): void {
    this.batchWaiting.push(...ids);
    if (this.batchDraining) return;
    this.batchDraining = true;
    this.track(this.drainBatches());
  }

  private async drainBatches(): Promise<void> {
    try {
      while (this.batchWaiting.length > 0 && !this.stopped) {
        const ids = this.batchWaiting.splice(0, BATCH_ROWS);
        try {
          await this.attemptBatch(ids);
        } catch (error) {
          // The rows stay pending: their claim lapses and the scanner attempts them one by one.
          this.options.log.error({ err: error, deliveries: ids.length }, 'batch delivery attempt failed');
        }
      }
    } finally {
      this.batchDraining = false;
    }
  }

  /** Claims rows that are due and pending and not held by a live attempt, until this attempt's deadline. */
  private claim(now: number, timeoutMs: number) {
    return this.db
      .updateTable(this.table)
      .set({ claimed_until: now + timeoutMs + CLAIM_SLACK_MS })
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]));
  }

  private async attemptBatch(ids: readonly string[]): Promise<void> {
    const { clock, timeoutMs, sendBatch } = this.options;
    if (sendBatch === undefined) throw new Error('dispatchBatch needs the sendBatch option');
    const { db, table } = this;
    const now = clock.now();
    const claimed = await this.claim(now, timeoutMs).where('id', 'in', ids).returningAll().execute();
    const order = new Map(ids.map((id, i) => [id, i]));
    const rows = (claimed as DeliveryRowOf<Schema, Table>[]).sort((a, b) => order.get(a.id)! - order.get(b.id)!);
    const limit = this.options.batchBytes ?? DEFAULT_BATCH_BYTES;
    for (let start = 0; start < rows.length;) {
      let end = start + 1;
      let bytes = Buffer.byteLength(rows[start]!.body);
      for (; end < rows.length && bytes + Buffer.byteLength(rows[end]!.body) <= limit; end++) bytes += Buffer.byteLength(rows[end]!.body);
      const chunk = rows.slice(start, end);
      start = end;
      let outcomes: DeliveryOutcome[];
      try {
        outcomes = await sendBatch(chunk);
        if (outcomes.length !== chunk.length) throw new Error(`${outcomes.length} outcomes for ${chunk.length} deliveries`);
      } catch (error) {
        outcomes = chunk.map(() => ({ ok: false, status: null, error: (error as Error).message }));
      }
      const delivered = chunk.filter((_, i) => outcomes[i]!.ok);
      if (delivered.length > 0) {
        const finishedAt = clock.now();
        await db
          .updateTable(table)
          .set((eb) => ({
            status: 'delivered',
            attempts: eb('attempts', '+', 1),
            claimed_until: null,
            response_status: outcomes.find((o) => o.ok)!.status,
            last_error: null,
            delivered_at: finishedAt,
          }))
          .where(
            'id',
            'in',
            delivered.map((row) => row.id),
          )
          .execute();
        if (this.options.onSettled) {
          for (const row of delivered) {
            await this.options.onSettled(
              { ...row, status: 'delivered', attempts: row.attempts + 1, claimed_until: null, delivered_at: finishedAt },
              'delivered',
            );
          }
        }
      }
      for (const [i, row] of chunk.entries()) if (!outcomes[i]!.ok) await this.record(row, outcomes[i]!);
    }
  }

  /** Every due, unclaimed delivery, a few at a time; returns how many were due. */
  async deliverDue(): Promise<number> {
    const { clock } = this.options;
    const { db, table } = this;
    const now = clock.now();
    const due = await db
      .selectFrom(table)
      .select('id')
      .where('status', '=', 'pending')
      .where('next_attempt_at', '<=', now)
      .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<', now)]))
      .orderBy('next_attempt_at')
      .orderBy('id')
      .limit(DUE_PER_SCAN)
      .execute();
    const ids = due.map((row) => row.id);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < ids.length) await this.attempt(ids[next++]!);
    };
    await Promise.all(Array.from({ length: Math.min(CONCURRENCY, ids.length) }, worker));
    return ids.length;
  }

  /** Waits for the attempts in flight now (tests and callers that need the outcome). */
  async settle(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  /** Stops retry timers and waits for attempts in flight (graceful shutdown). */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await Promise.allSettled([...this.inFlight]);
  }

  private track(work: Promise<void>): void {
    this.inFlight.add(work);
    void work.finally(() => this.inFlight.delete(work));
  }

  private async attempt(id: string): Promise<void> {
    try {
      await this.attemptOnce(id);
    } catch (error) {
      this.options.log.error({ err: error, delivery: id }, 'delivery attempt failed');
    }
  }

  private async attemptOnce(id: string): Promise<void> {
    const { clock, timeoutMs } = this.options;
    const { db, table } = this;
    const now = clock.now();
    const claim = await this.claim(now, timeoutMs).where('id', '=', id).executeTakeFirst();
    if (Number(claim.numUpdatedRows) !== 1) return;
    const row = (await db.selectFrom(table).selectAll().where('id', '=', id).executeTakeFirstOrThrow()) as DeliveryRowOf<Schema, Table>;

    await this.record(row, await this.send(row));
  }

  /** Records one attempt's outcome: delivered, failed for good, or pending again after the backoff. */
  private async record(row: DeliveryRowOf<Schema, Table>, outcome: DeliveryOutcome): Promise<void> {
    const { clock, maxAttempts } = this.options;
    const { db, table } = this;
    const id = row.id;
    const attempts = row.attempts + 1;
    const finishedAt = clock.now();
    const limit = typeof maxAttempts === 'number' ? maxAttempts : maxAttempts(row);
    const status = outcome.ok ? 'delivered' : attempts >= limit ? 'failed' : 'pending';
    // Attempt n+1 waits 2^n seconds after attempt n (2 s, 4 s, ...), or longer when the receiver asked (Retry-After).
    const retryDelay = Math.max(2 ** attempts * 1000, Math.min(outcome.retryAfterMs ?? 0, MAX_RETRY_AFTER_MS));
    const settled: DeliveryRowOf<Schema, Table> = {
      ...row,
      status,
      attempts,
      claimed_until: null,
      response_status: outcome.status,
      last_error: outcome.error,
      delivered_at: outcome.ok ? finishedAt : null,
      next_attempt_at: status === 'pending' ? finishedAt + retryDelay : row.next_attempt_at,
    };
    const { id: _id, ...changes } = settled;
    await db.updateTable(table).set(changes).where('id', '=', id).execute();
    if (status === 'failed') this.options.log.warn({ delivery: id, url: row.url, error: outcome.error }, 'delivery failed permanently');
    await this.options.onSettled?.(settled, status);
    if (status === 'pending' && this.options.retryTimers && !this.stopped) {
      const timer = setTimeout(() => {
        this.timers.delete(timer);
        this.track(this.attempt(id));
      }, retryDelay);
      timer.unref();
      this.timers.add(timer);
    }
  }

  private async send(row: DeliveryRowOf<Schema, Table>): Promise<DeliveryOutcome> {
    const own = this.options.send?.(row);
    if (own !== undefined) return own;
    const { timeoutMs } = this.options;
    const headers = await this.options.headers(row);
    if ('refuse' in headers) return { ok: false, status: null, error: headers.refuse as string };
    try {
      const response = await fetchWithTimeout(row.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(headers as Record<string, string>) },
        body: row.body,
        timeoutMs,
      });
      await response.arrayBuffer().catch(() => undefined);
      if (response.ok) return { ok: true, status: response.status, error: null };
      const wait = retryAfterMs(response.headers.get('retry-after'), this.options.clock.now());
      return { ok: false, status: response.status, error: `HTTP ${response.status}`, ...(wait !== undefined && { retryAfterMs: wait }) };
    } catch (error) {
      const reason = (error as Error).name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : (error as Error).message;
      return { ok: false, status: null, error: reason };
    }
  }
}
