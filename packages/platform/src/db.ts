import { mkdirSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { Worker } from 'node:worker_threads';
import BetterSqlite3 from 'better-sqlite3';
import {
  Kysely,
  PostgresDialect,
  SqliteDialect,
  sql,
  CompiledQuery,
  type Compilable,
  type PostgresPool,
  type QueryExecutorProvider,
  type RawBuilder,
  type SqliteDatabase,
  type SqliteStatement,
} from 'kysely';
import type pg from 'pg';
import type { DatabaseConfig } from './config.ts';
import { ReplicaRouter, routingPool } from './read-replica.ts';

type SqliteSynchronous = Extract<DatabaseConfig, { kind: 'sqlite' }>['synchronous'];

/** A service's SQLite file and its `synchronous` setting: what a thread needs to open a connection of its own (sqliteConnection). */
export interface SqliteFile {
  file: string;
  synchronous: SqliteSynchronous;
}

export type DialectName = 'sqlite' | 'postgres';

let pgModule: Promise<typeof pg> | undefined;

/** The PostgreSQL driver, loaded with the first PostgreSQL database: a service on SQLite never holds it. */
function loadPg(): Promise<typeof pg> {
  pgModule ??= import('pg').then(({ default: driver }) => {
    // BIGINT columns hold epoch milliseconds and counters, well inside 2^53.
    driver.types.setTypeParser(driver.types.builtins.INT8, (value: string) => Number(value));
    return driver;
  });
  return pgModule;
}

export interface Database<Schema> {
  db: Kysely<Schema>;
  dialect: DialectName;
  /** PostgreSQL schema holding the service's tables (undefined on SQLite). */
  schema?: string;
  /** SQLite only: its file, for a thread that opens a connection of its own (sqliteConnection). */
  sqlite?: SqliteFile;
  /**
   * Bytes the service's data occupies on disk. SQLite: the database file plus its WAL, as the file
   * system has them. PostgreSQL: every table of the service's schema with its indexes and TOAST
   * (pg_total_relation_size; not pg_database_size, which would count the other service's schema
   * when both share a database).
   */
  sizeBytes(): Promise<number>;
  /** Bytes of each table and index (the full-text index as one), for footprint measurements: see `StoredObject`. */
  storageBreakdown(): Promise<StoredObject[]>;
  /**
   * Gives space freed by large deletes back (retention): SQLite returns free pages to the file
   * system (incremental vacuum, on databases created with auto_vacuum=INCREMENTAL) and truncates
   * the WAL; PostgreSQL leaves it to autovacuum (a no-op here). Resolves to the bytes returned.
   */
  reclaimFreeSpace(): Promise<number>;
  /**
   * PostgreSQL only (undefined on SQLite, where one process owns the file): LISTEN on `channel`
   * over a dedicated connection, calling `onNotify` for each notification (`notify`). A lost
   * connection is re-established with backoff, and `onNotify` is called once it is back, since
   * notifications sent meanwhile are gone. Resolves to a function that stops listening.
   */
  listen?(channel: string, onNotify: () => void): Promise<() => Promise<void>>;
  /** PostgreSQL with READ_DATABASE_URL: where read routes' queries go (read-replica.ts). */
  replica?: ReplicaRouter;
  /** PostgreSQL only: the connection pool's clients (open, idle) and the requests waiting for one. */
  poolStats?(): { total: number; idle: number; waiting: number };
  close(): Promise<void>;
}

/** One table or index and the bytes it occupies; `table` is the table it belongs to (itself for a table). */
export interface StoredObject {
  name: string;
  table: string;
  kind: 'table' | 'index';
  bytes: number;
}

/**
 * What the prepared statements of one SQLite connection may hold, counted in characters of their
 * SQL: a compiled statement costs SQLite ~50 bytes of native memory per character (measured for
 * multi-row inserts; `in (…)` lists cost more), which V8 does not see. Statements whose text varies
 * with a batch's size (bulk inserts, `in` lists) once filled a 2,000-statement cache with ~800,000
 * characters, ~40 MiB (docs/architecture.md, Memory after load). 256 Ki characters is ~12 MiB,
 * about twice what the ingest path's hot statements use, so those stay and rarer sizes come and go.
 */
const STATEMENT_CACHE_CHARS = 256 * 1024;

/** The WAL is cut back to this size after a checkpoint empties it, so a burst of writes does not keep its high-water mark on disk. */
const WAL_SIZE_LIMIT_BYTES = 64 * 1024 * 1024;

/** Pages one step of reclaimFreeSpace returns to the file system (8 MiB of 4 KiB pages). */
const VACUUM_PAGES_PER_STEP = 2048;

/** Tries of the WAL truncation in reclaimFreeSpace, 20 ms apart. */
const CHECKPOINT_ATTEMPTS = 50;

/** FTS5 keeps an index in shadow tables `<name>_data`, `_idx`, `_docsize`, `_config`, `_content`: counted as the virtual table. */
const FTS_SHADOW = /^(.+_fts)_(data|idx|docsize|config|content)$/;

function fileBytes(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/**
 * Wraps better-sqlite3 so Kysely reuses prepared statements (the hot path compiles each SQL text
 * once) and so every transaction takes the write lock up front (`BEGIN IMMEDIATE`): a transaction
 * that reads the chain head and then appends can never fail on lock upgrade. The cache keeps the
 * most recently used statements within `maxChars` characters of SQL (STATEMENT_CACHE_CHARS); a
 * statement dropped from it is finalised by SQLite when V8 collects it.
 */
export class PreparedStatementCache implements SqliteDatabase {
  private readonly statements = new Map<string, SqliteStatement>();
  private chars = 0;

  constructor(
    private readonly raw: { prepare(text: string): unknown; close(): unknown },
    private readonly maxChars = STATEMENT_CACHE_CHARS,
  ) {}

  /** Statements cached and the characters of their SQL. */
  get held(): { statements: number; chars: number } {
    return { statements: this.statements.size, chars: this.chars };
  }

  close(): void {
    this.raw.close();
  }

  prepare(text: string): SqliteStatement {
    const effective = text === 'begin' ? 'begin immediate' : text;
    let statement = this.statements.get(effective);
    if (statement !== undefined) {
      // Most recently used last: eviction takes from the front.
      this.statements.delete(effective);
      this.statements.set(effective, statement);
      return statement;
    }
    statement = this.raw.prepare(effective) as unknown as SqliteStatement;
    this.statements.set(effective, statement);
    this.chars += effective.length;
    for (const cached of this.statements.keys()) {
      if (this.chars <= this.maxChars || cached === effective) break;
      this.statements.delete(cached);
      this.chars -= cached.length;
    }
    return statement;
  }
}

/**
 * The WAL size at which a database is handed to the checkpointer thread. Until then nothing
 * checkpoints it (its frames are as durable in the WAL as in the file), so a service that has not
 * yet taken writes does not pay for the thread (~12 MiB, docs/architecture.md, Compiled services
 * and memory); a start's migrations leave well under 1 MiB.
 */
const CHECKPOINT_FROM_WAL_BYTES = 4 * 1024 * 1024;

/** How often the WAL size of a database not yet handed to the thread is read (one stat). */
const WAL_WATCH_MS = 250;

/**
 * The worker thread that checkpoints every SQLite database of the process (sqlite-checkpointer.mjs):
 * started when the first database's WAL reaches CHECKPOINT_FROM_WAL_BYTES, stopped when the last
 * one closes, so `vigil up` runs at most one for both services' files.
 */
class SqliteCheckpointer {
  private worker: Worker | null = null;
  private nextId = 0;
  /** Databases whose WAL is still below the threshold, by id: their file. */
  private readonly watched = new Map<number, string>();
  private watchTimer: NodeJS.Timeout | null = null;
  /** Databases the thread checkpoints. */
  private readonly handedOver = new Set<number>();

  /** Starts checkpointing `file` once its WAL grows; resolves the returned function once it no longer is. */
  add(file: string): () => Promise<void> {
    const id = this.nextId++;
    this.watched.set(id, file);
    this.watchTimer ??= setInterval(() => this.handOverGrownWals(), WAL_WATCH_MS).unref();
    return async () => {
      if (this.watched.delete(id)) {
        this.stopWatchingIfIdle();
        return;
      }
      if (!this.handedOver.delete(id) || this.worker === null) return;
      const worker = this.worker;
      await new Promise<void>((resolve) => {
        const done = (): void => {
          worker.off('message', removed).off('exit', done);
          resolve();
        };
        const removed = (message: { type: string; id: number }): void => {
          if (message.type === 'removed' && message.id === id) done();
        };
        worker.on('message', removed).on('exit', done);
        worker.postMessage({ type: 'remove', id });
      });
      if (this.handedOver.size === 0 && this.worker === worker) {
        this.worker = null;
        await worker.terminate();
      }
    };
  }

  private handOverGrownWals(): void {
    for (const [id, file] of this.watched) {
      if (fileBytes(`${file}-wal`) < CHECKPOINT_FROM_WAL_BYTES) continue;
      this.watched.delete(id);
      if (this.worker === null) {
        this.worker = new Worker(new URL('./sqlite-checkpointer.mjs', import.meta.url), { workerData: { intervalMs: 250 } });
        this.worker.unref();
      }
      this.handedOver.add(id);
      this.worker.postMessage({ type: 'add', id, file });
    }
    this.stopWatchingIfIdle();
  }

  private stopWatchingIfIdle(): void {
    if (this.watched.size > 0 || this.watchTimer === null) return;
    clearInterval(this.watchTimer);
    this.watchTimer = null;
  }
}

const checkpointer = new SqliteCheckpointer();

/** The page cache of a service's own connection (configureConnection). */
const SERVICE_CACHE_MIB = 16;

/** What every connection to a service's SQLite file sets (the service's own, and a thread's: sqliteConnection). */
function configureConnection(raw: BetterSqlite3.Database, synchronous: SqliteSynchronous, cacheMiB: number): void {
  raw.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
  raw.pragma(`synchronous = ${synchronous}`);
  raw.pragma('busy_timeout = 10000');
  // Deleted and overwritten content is zeroed where it lay (cells, freed pages), so a row's old
  // bytes do not outlive it in the file: an erasure leaves no copy (docs/guide/erasure.md).
  raw.pragma('secure_delete = ON');
  // Memory a database may hold, whatever its size (docs/architecture.md, Memory): a page cache of
  // `cacheMiB`, and no memory map, whose touched pages would count in the process's RSS up to the
  // map's size; pages beyond the cache are read from the OS's file cache.
  raw.pragma(`cache_size = -${cacheMiB * 1024}`);
  raw.pragma('temp_store = MEMORY');
  raw.pragma('mmap_size = 0');
  // Checkpoints run in a worker (see sqlite-checkpointer.mjs) once the WAL has grown; the request
  // thread checkpoints only as a backstop, if the WAL ever reaches this many pages.
  raw.pragma('wal_autocheckpoint = 20000');
}

/**
 * A better-sqlite3 connection to `sqlite.file` with every setting a service's connection has
 * (configureConnection), in WAL mode; a new file is made with incremental auto-vacuum. Its page
 * cache holds `cacheMiB`. The one place those settings are made: the service's connection, a
 * thread's (sqliteConnection) and the bench's bare floor loop open their files here.
 */
export function openSqliteFile({ file, synchronous }: SqliteFile, cacheMiB: number): BetterSqlite3.Database {
  const raw = new BetterSqlite3(file);
  // A new file frees pages to the file system on `incremental_vacuum` (reclaimFreeSpace, after
  // retention); auto_vacuum can only be chosen before the first table exists. An older file keeps
  // its mode until converted by a one-time VACUUM (docs/deploy.md#disk-space); its freed pages are
  // still reused by later writes.
  if ((raw.pragma('page_count', { simple: true }) as number) === 0) raw.pragma('auto_vacuum = INCREMENTAL');
  raw.pragma('journal_mode = WAL');
  configureConnection(raw, synchronous, cacheMiB);
  return raw;
}

/**
 * A connection of its own to a service's SQLite file (Database.sqlite), for a worker thread: the
 * service's settings, prepared statements reused and transactions begun `IMMEDIATE`, as on the
 * service's connection. WAL readers never wait for the writer; a write waits for the lock. Its page
 * cache holds `cacheMiB` (pages beyond it come from the OS's file cache): a thread's few reads need
 * less than the service's 16 MiB, which would count in the process's RSS a second time.
 */
export function sqliteConnection<Schema>(sqlite: SqliteFile, cacheMiB: number): Kysely<Schema> {
  return new Kysely<Schema>({ dialect: new SqliteDialect({ database: new PreparedStatementCache(openSqliteFile(sqlite, cacheMiB)) }) });
}

function openSqlite<Schema>(config: Extract<DatabaseConfig, { kind: 'sqlite' }>): Database<Schema> {
  mkdirSync(dirname(config.file), { recursive: true });
  const raw = openSqliteFile(config, SERVICE_CACHE_MIB);
  const stopCheckpoints = checkpointer.add(config.file);
  const db = new Kysely<Schema>({ dialect: new SqliteDialect({ database: new PreparedStatementCache(raw) }) });
  return {
    db,
    dialect: 'sqlite',
    sqlite: { file: config.file, synchronous: config.synchronous },
    async sizeBytes() {
      return fileBytes(config.file) + fileBytes(`${config.file}-wal`);
    },
    async storageBreakdown() {
      const rows = raw
        .prepare(
          `select s.name as name, coalesce(m.tbl_name, s.name) as tbl, coalesce(m.type, 'table') as type, sum(s.pgsize) as bytes
           from dbstat s left join sqlite_schema m on m.name = s.name group by s.name`,
        )
        .all() as { name: string; tbl: string; type: string; bytes: number }[];
      const objects = new Map<string, StoredObject>();
      for (const row of rows) {
        const fts = FTS_SHADOW.exec(row.name)?.[1];
        const name = fts ?? row.name;
        const object = objects.get(name) ?? { name, table: fts ?? row.tbl, kind: row.type === 'index' ? 'index' : 'table', bytes: 0 };
        object.bytes += row.bytes;
        objects.set(name, object);
      }
      return [...objects.values()].sort((a, b) => b.bytes - a.bytes);
    },
    async reclaimFreeSpace() {
      const size = (): number => fileBytes(config.file) + fileBytes(`${config.file}-wal`);
      const before = size();
      // Each step holds Kysely's connection, so no transaction of the service is open meanwhile,
      // and frees a bounded number of pages, so requests are served between steps. raw.pragma
      // steps the statement to the end: incremental_vacuum frees one page per step of its
      // statement, and Kysely's single step would free one page only.
      const incremental = (raw.pragma('auto_vacuum', { simple: true }) as number) === 2;
      while (incremental && (raw.pragma('freelist_count', { simple: true }) as number) > 0) {
        await db.connection().execute(async () => raw.pragma(`incremental_vacuum(${VACUUM_PAGES_PER_STEP})`));
        await new Promise((resolve) => setImmediate(resolve));
      }
      // Copies the WAL into the file and cuts it to zero bytes. It answers busy at once while the
      // checkpointer thread runs a checkpoint of its own (a few milliseconds), hence the retries;
      // a WAL still busy after them is left for the next run.
      for (let attempt = 0; attempt < CHECKPOINT_ATTEMPTS; attempt += 1) {
        const [result] = await db.connection().execute(async () => raw.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[]);
        if (result?.busy === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return Math.max(0, before - size());
    },
    async close() {
      await stopCheckpoints();
      await db.destroy();
    },
  };
}

async function openPostgres<Schema>(config: Extract<DatabaseConfig, { kind: 'postgres' }>): Promise<Database<Schema>> {
  const driver = await loadPg();
  const connectTimeoutMs = config.connectTimeoutMs ?? 5000;
  const bootstrap = new driver.Client({ connectionString: config.url, connectionTimeoutMillis: connectTimeoutMs });
  await bootstrap.connect();
  try {
    await bootstrap.query(`CREATE SCHEMA IF NOT EXISTS "${config.schema}"`);
  } catch (error) {
    // Two instances starting together race on CREATE SCHEMA; the loser sees a duplicate.
    if ((error as { code?: string }).code !== '23505') throw error;
  } finally {
    await bootstrap.end();
  }
  const newPool = (url: string): pg.Pool => {
    const made = new driver.Pool({
      connectionString: url,
      max: config.poolMax ?? 10,
      // A request waits at most this long for a connection (database down or unreachable: then 503).
      connectionTimeoutMillis: connectTimeoutMs,
      options: `-c search_path="${config.schema}"`,
    });
    // An idle client losing its server (restart, failover) must not crash the process.
    made.on('error', () => undefined);
    // Nor may a client in use: pg-pool listens for errors only on idle clients, and a socket reset
    // during a query would otherwise be an unhandled 'error' event. The query itself is rejected
    // (and answered 503); the broken client is dropped when it is released.
    made.on('connect', (client) => {
      client.on('error', () => undefined);
      namePreparedStatements(client);
    });
    return made;
  };
  const pool = newPool(config.url);
  let replica: ReplicaRouter | undefined;
  let dialectPool: PostgresPool = pool;
  if (config.readUrl !== undefined) {
    const replicaPool = newPool(config.readUrl);
    replica = new ReplicaRouter(pool, replicaPool);
    await replica.start();
    dialectPool = routingPool(pool, replicaPool, replica, (error) => databaseFailure(error) === 'unavailable');
  }
  const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool: dialectPool }) });
  return {
    db,
    dialect: 'postgres',
    schema: config.schema,
    ...(replica !== undefined && { replica }),
    async sizeBytes() {
      const result = await sql<{ size: number }>`
        select coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint as size
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where n.nspname = ${config.schema} and c.relkind in ('r', 'm')`.execute(db);
      return result.rows[0]?.size ?? 0;
    },
    async storageBreakdown() {
      // pg_table_size: the heap with its TOAST, free-space and visibility maps; each index apart.
      const result = await sql<{ name: string; tbl: string; kind: 'table' | 'index'; bytes: number }>`
        select c.relname as name, coalesce(t.relname, c.relname) as tbl,
          case when c.relkind = 'i' then 'index' else 'table' end as kind,
          (case when c.relkind = 'i' then pg_relation_size(c.oid) else pg_table_size(c.oid) end)::bigint as bytes
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
        left join pg_index i on i.indexrelid = c.oid left join pg_class t on t.oid = i.indrelid
        where n.nspname = ${config.schema} and c.relkind in ('r', 'm', 'i')`.execute(db);
      return result.rows.map((row) => ({ name: row.name, table: row.tbl, kind: row.kind, bytes: Number(row.bytes) })).sort((a, b) => b.bytes - a.bytes);
    },
    // Autovacuum reuses the space of deleted rows (retention deletes in bounded transactions so that it can).
    reclaimFreeSpace: async () => 0,
    listen: (channel, onNotify) => listenPostgres(config, channel, onNotify),
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    close: () => db.destroy(),
  };
}

const LISTEN_RETRY_MAX_MS = 30_000;

async function listenPostgres(config: Extract<DatabaseConfig, { kind: 'postgres' }>, channel: string, onNotify: () => void): Promise<() => Promise<void>> {
  const driver = await loadPg();
  let client: pg.Client | null = null;
  let stopped = false;
  let retryMs = 500;
  let retryTimer: NodeJS.Timeout | undefined;
  const connect = async (): Promise<void> => {
    const candidate = new driver.Client({ connectionString: config.url, connectionTimeoutMillis: config.connectTimeoutMs ?? 5000 });
    // A lost connection ends the client ('end'), which schedules the reconnect; the error itself needs no handling.
    candidate.on('error', () => undefined);
    candidate.on('notification', (message) => {
      if (message.channel === channel) onNotify();
    });
    try {
      await candidate.connect();
      await candidate.query(`LISTEN "${channel.replaceAll('"', '""')}"`);
    } catch {
      await candidate.end().catch(() => undefined);
      scheduleReconnect();
      return;
    }
    if (stopped) {
      await candidate.end().catch(() => undefined);
      return;
    }
    candidate.on('end', () => {
      if (client === candidate) client = null;
      scheduleReconnect();
    });
    client = candidate;
    retryMs = 500;
    onNotify();
  };
  const scheduleReconnect = (): void => {
    if (stopped) return;
    retryTimer = setTimeout(() => void connect(), retryMs);
    retryTimer.unref();
    retryMs = Math.min(retryMs * 2, LISTEN_RETRY_MAX_MS);
  };
  await connect();
  return async () => {
    stopped = true;
    clearTimeout(retryTimer);
    await client?.end().catch(() => undefined);
    client = null;
  };
}

/** PostgreSQL: wakes every `listen`er of `channel` (on any instance) once the calling transaction, if any, commits. */
export async function notifyListeners(database: RawSqlTarget, channel: string): Promise<void> {
  if (database.dialect === 'postgres') await sql`select pg_notify(${channel}, '')`.execute(database.db);
}

/** What raw SQL needs of a database of any schema: its dialect and something that runs queries. */
export interface RawSqlTarget {
  dialect: DialectName;
  db: QueryExecutorProvider;
}

export async function openDatabase<Schema>(config: DatabaseConfig): Promise<Database<Schema>> {
  return config.kind === 'sqlite' ? openSqlite<Schema>(config) : openPostgres<Schema>(config);
}

/**
 * A database of any schema seen through tables that platform code owns (the job leases, the change
 * log): `Schema extends Tables` checks that the service's schema holds those tables with those
 * columns, so a schema without them fails to compile. Kysely's types are invariant in the schema
 * (a `Kysely<GateSchema>` is no `Kysely<LeaseTables>`), hence this cast, the only one: the view is
 * the same object.
 */
export function tablesOf<Tables, Schema extends Tables>(db: Kysely<Schema>): Kysely<Tables>;
/**
 * The same for a table whose name is data (a delivery table, a bulk-inserted table): the schema
 * must hold `table` with rows `Row`; the view reads any table name as rows of `Row`, which is what
 * code querying `table` by name needs (Kysely cannot type a query on a generic table name).
 */
export function tablesOf<Row, Table extends string, Schema extends Record<Table, Row>>(db: Kysely<Schema>, table: Table): Kysely<TablesOfRow<Row>>;
export function tablesOf(db: unknown): unknown {
  return db;
}

/** Tables whose name is data: every name reads as a table of `Row` (see `tablesOf`). */
export type TablesOfRow<Row> = Record<string, Row>;

/**
 * The database a migration step runs on: the schema as it was at that step, which no type of
 * today describes (a later step may rename what an earlier one reads), so the query builder is
 * untyped here and only here, as Kysely's migration docs advise.
 */
export type MigrationDb = Kysely<any>;

/** What DDL needs of a database of any schema: the schema builder and something that runs raw SQL. */
export type DdlTarget = Pick<Kysely<unknown>, 'schema'> & QueryExecutorProvider;

/** A schema migration; DDL that differs between the two databases branches on `dialect`. */
export type MigrationStep = (db: MigrationDb, dialect: DialectName) => Promise<void>;

/**
 * Applies the steps not yet recorded in `schema_migrations`, in name order, in one transaction.
 * Instances starting together serialise on an advisory lock (PostgreSQL) or the write lock
 * (SQLite). The bookkeeping reads only this schema's own table, never the catalogue of others.
 */
export async function migrateToLatest<Schema>(database: Database<Schema>, steps: Record<string, MigrationStep>): Promise<void> {
  const { dialect } = database;
  const db: MigrationDb = database.db;
  await db.transaction().execute(async (trx) => {
    if (dialect === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(${`migrate:${database.schema}`}))`.execute(trx);
    await trx.schema
      .createTable('schema_migrations')
      .ifNotExists()
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('applied_at', 'bigint', (c) => c.notNull())
      .execute();
    const applied = new Set((await trx.selectFrom('schema_migrations').select('name').execute()).map((r) => r.name as string));
    for (const name of Object.keys(steps).sort()) {
      if (applied.has(name)) continue;
      await steps[name]!(trx, dialect);
      await trx.insertInto('schema_migrations').values({ name, applied_at: Date.now() }).execute();
    }
  });
}

/** A step's name: four digits, then words (`0024_idempotency_keys`). */
const STEP_NAME = /^(\d{4})_[a-z0-9_]+$/;

/**
 * A service's migration steps, collected from its frozen history and its features' step files,
 * in name order. Steps run in name order and an applied name is never run again, so names are
 * numbered 0001, 0002, … without a repeat or a gap: a duplicate name or number (two branches took
 * the same one) or a missing number (a step lost in a merge) fails here, at startup, before any
 * step runs.
 */
export function collectMigrations(...sources: readonly Readonly<Record<string, MigrationStep>>[]): Record<string, MigrationStep> {
  return collectMigrationsAround([], ...sources);
}

/**
 * collectMigrations, leaving as gaps the numbers `pending`: steps another branch has taken and not
 * merged yet (each worktree is given its own numbers). A pending number that has a step fails, so
 * the merge that brings the step empties the list.
 */
export function collectMigrationsAround(
  pending: readonly string[],
  ...sources: readonly Readonly<Record<string, MigrationStep>>[]
): Record<string, MigrationStep> {
  const steps = new Map<string, MigrationStep>();
  for (const source of sources) {
    for (const [name, step] of Object.entries(source)) {
      if (!STEP_NAME.test(name)) throw new Error(`migration step ${name}: a step's name is four digits, an underscore and words (0024_idempotency_keys)`);
      if (steps.has(name)) throw new Error(`migration step ${name} is declared twice`);
      if (pending.includes(name.slice(0, 4))) throw new Error(`migration step ${name} has arrived: take ${name.slice(0, 4)} off the pending numbers`);
      steps.set(name, step);
    }
  }
  const names = [...steps.keys()].sort();
  let number = 1;
  names.forEach((name, i) => {
    while (pending.includes(String(number).padStart(4, '0'))) number += 1;
    const expected = String(number).padStart(4, '0');
    number += 1;
    if (!name.startsWith(`${expected}_`)) {
      const previous = names[i - 1];
      throw new Error(
        previous !== undefined && name.slice(0, 4) === previous.slice(0, 4)
          ? `migration steps ${previous} and ${name} share the number ${name.slice(0, 4)}`
          : `migration step ${name} comes after ${previous ?? 'nothing'}: step ${expected} is missing`,
      );
    }
  });
  return Object.fromEntries(names.map((name) => [name, steps.get(name)!]));
}

/** Epoch milliseconds type for DDL: both databases store times as 64-bit integers. */
export const epochMsType = 'bigint' as const;
export const floatType = 'double precision' as const;

/**
 * `expression in (values)` with the list as one parameter (a JSON array read by `json_each` on
 * SQLite, an array on PostgreSQL), so that the statement's text is the same for every list and is
 * prepared once, where `in (?, ?, …)` is a new statement for each length.
 */
export function inList(
  dialect: DialectName,
  expression: RawBuilder<unknown>,
  values: readonly (string | number)[],
  pgType: 'text' | 'integer' | 'bigint',
): RawBuilder<boolean> {
  return dialect === 'sqlite'
    ? sql<boolean>`${expression} in (select value from json_each(${JSON.stringify(values)}))`
    : sql<boolean>`${expression} = any(${values}::${sql.raw(pgType)}[])`;
}

/**
 * sum() of an integer expression (token counts, durations between timestamps) as double
 * precision: SQLite's sum() of integers fails with "integer overflow" past 9.2e18 (PostgreSQL's
 * answers numeric); as doubles both databases stay finite. Exact below 2^53.
 */
export function sumAsDouble(expression: RawBuilder<unknown>): RawBuilder<number | null> {
  return sql<number | null>`sum(cast(${expression} as ${sql.raw(floatType)}))`;
}

/**
 * Full-text index over the string values of a JSON text column (keys and numbers are not words).
 * PostgreSQL: a GIN index on `to_tsvector('simple', column::jsonb)`, which reads string values
 * only. SQLite: an FTS5 contentless table fed by `BulkInserter` with the same words, computed in JS
 * (cheaper than a trigger walking the JSON). Queried with `fullTextMatch`.
 */
export async function createFullTextIndex(db: DdlTarget, dialect: DialectName, table: string, column: string): Promise<void> {
  if (dialect === 'sqlite') {
    const fts = `${table}_fts`;
    await sql.raw(`create virtual table ${fts} using fts5(body, content='', contentless_delete=1)`).execute(db);
    await sql.raw(`create trigger ${fts}_delete after delete on ${table} begin delete from ${fts} where rowid = old.rowid; end`).execute(db);
  } else {
    await sql.raw(`create index ${table}_${column}_fts on ${table} using gin (to_tsvector('simple', ${column}::jsonb))`).execute(db);
  }
}

/**
 * Takes rows out of the full-text index of `table` (createFullTextIndex) while they stay in the
 * table, before their column is rewritten (an erasure): SQLite deletes their FTS5 rows (they are
 * then found by no word) and merges the index's segments, so no token of the old text is left in
 * its pages; PostgreSQL's index follows the rewritten column by itself.
 */
export async function dropFromFullTextIndex(db: MigrationDb, dialect: DialectName, table: string, ids: readonly string[]): Promise<void> {
  if (dialect !== 'sqlite' || ids.length === 0) return;
  const fts = sql.table(`${table}_fts`);
  await sql`delete from ${fts} where rowid in (select rowid from ${sql.table(table)} where id in (${sql.join(ids)}))`.execute(db);
}

/** SQLite: merges the FTS5 index of `table` into one segment, dropping the tokens of deleted rows (dropFromFullTextIndex). */
export async function compactFullTextIndex(db: MigrationDb, dialect: DialectName, table: string): Promise<void> {
  if (dialect !== 'sqlite') return;
  const name = `${table}_fts`;
  await sql`insert into ${sql.table(name)} (${sql.raw(name)}) values ('optimize')`.execute(db);
}

/** Condition: the string values of the JSON column contain the words of `phrase`, in order. */
export function fullTextMatch(dialect: DialectName, table: string, column: string, phrase: string): RawBuilder<boolean> {
  if (dialect === 'sqlite') {
    const quoted = `"${phrase.replaceAll('"', '""')}"`;
    return sql<boolean>`${sql.ref(`${table}.rowid`)} in (select rowid from ${sql.table(`${table}_fts`)} where ${sql.table(`${table}_fts`)} match ${quoted})`;
  }
  return sql<boolean>`to_tsvector('simple', ${sql.ref(`${table}.${column}`)}::jsonb) @@ phraseto_tsquery('simple', ${phrase})`;
}

const JSON_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A top-level JSON key, checked because it is spliced into SQL as a literal (a bound parameter would make every use a different expression to PostgreSQL's GROUP BY). */
function jsonKey(key: string): string {
  if (!JSON_KEY.test(key)) throw new Error(`invalid JSON key ${JSON.stringify(key)}: must match ${JSON_KEY}`);
  return key;
}

/**
 * The top-level `key` of a JSON text column, as SQL text; null when absent. Meant for string
 * values (numbers and booleans read differently on the two databases).
 */
export function jsonText(dialect: DialectName, column: string, key: string): RawBuilder<string | null> {
  const checked = jsonKey(key);
  return dialect === 'sqlite'
    ? sql<string | null>`json_extract(${sql.ref(column)}, ${sql.lit(`$.${checked}`)})`
    : sql<string | null>`(${sql.ref(column)}::jsonb ->> ${sql.lit(checked)})`;
}

/** Number of entries of the array at top-level `key` of a JSON text column; 0 when absent or not an array. */
export function jsonArrayLength(dialect: DialectName, column: string, key: string): RawBuilder<number> {
  const checked = jsonKey(key);
  if (dialect === 'sqlite') {
    const path = sql.lit(`$.${checked}`);
    return sql<number>`(case when json_type(${sql.ref(column)}, ${path}) = 'array' then json_array_length(${sql.ref(column)}, ${path}) else 0 end)`;
  }
  const value = sql`(${sql.ref(column)}::jsonb -> ${sql.lit(checked)})`;
  return sql<number>`(case when jsonb_typeof(${value}) = 'array' then jsonb_array_length(${value}) else 0 end)`;
}

/**
 * The number at `path` (keys from the top level down) of a JSON text column; null when the path
 * is absent or holds anything but a number.
 */
export function jsonNumberAt(dialect: DialectName, column: string, path: readonly string[]): RawBuilder<number | null> {
  const keys = path.map(jsonKey);
  if (dialect === 'sqlite') {
    const literal = sql.lit(`$.${keys.join('.')}`);
    return sql<
      number | null
    >`(case when json_type(${sql.ref(column)}, ${literal}) in ('integer', 'real') then json_extract(${sql.ref(column)}, ${literal}) end)`;
  }
  const literal = sql.lit(`{${keys.join(',')}}`);
  return sql<
    number | null
  >`(case when jsonb_typeof(${sql.ref(column)}::jsonb #> ${literal}) = 'number' then (${sql.ref(column)}::jsonb #>> ${literal})::double precision end)`;
}

/** The words of a JSON value: its string leaves, space-separated. */
export function jsonWords(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const item of value) jsonWords(item, out);
  else if (value !== null && typeof value === 'object') for (const item of Object.values(value)) jsonWords(item, out);
  return out;
}

/** A column's PostgreSQL type, as a BulkInserter declares it (its array parameter is cast to this type's array). */
export type PgColumnType = 'text' | 'integer' | 'bigint' | 'double precision' | 'bytea' | 'jsonb' | 'boolean' | 'timestamptz';

/** The columns a BulkInserter writes, in order, each with its PostgreSQL type. */
export type InsertColumns<Row> = { readonly [Column in keyof Row & string]?: PgColumnType };

/**
 * SQL texts run as named prepared statements on PostgreSQL (BulkInserter's and ShapedQueries'):
 * parsed once per connection, then bound and executed; after five runs the server keeps a generic
 * plan when it costs no more than the custom ones, so planning stops too (an analytics statement
 * over the partitioned events planned in 15–30 ms a call). Their texts name their columns: a
 * prepared `select *` would fail once a migration adds a column under a running instance. Kysely's driver hands node-postgres a text and
 * its values only, so the pool's clients look the text up here to name it (openPostgres).
 */
const serverPrepared = new Map<string, string>();

/** Registers `text` as a named prepared statement on every PostgreSQL connection that runs it. */
function prepareOnServer(text: string): string {
  if (!serverPrepared.has(text)) serverPrepared.set(text, `vigil_prepared_${serverPrepared.size + 1}`);
  return text;
}

/** A pool client's query, naming the statements registered with prepareOnServer. */
function namePreparedStatements(client: pg.PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = (config: unknown, values?: unknown, callback?: unknown) => {
    const name = typeof config === 'string' ? serverPrepared.get(config) : undefined;
    return name === undefined ? query(config, values, callback) : query({ name, text: config, values }, callback);
  };
}

/**
 * Bulk INSERT for a hot table `Table` of `Schema`, its columns declared with their PostgreSQL types
 * (checked against the table's catalogue by the services' tests). A batch is atomic: stored whole
 * or not at all (called outside a transaction, its statements get one of their own).
 *
 * PostgreSQL: one statement per batch whatever its size, `insert into t (columns) select * from
 * unnest($1::type[], $2::type[], …)` with one array parameter per column (node-postgres sends a JS
 * array as a PostgreSQL array literal: nulls, bytea as hex, strings escaped), prepared once per
 * connection. Its text is the same for every batch, so the server parses and plans it once, where a
 * multi-row VALUES statement had a parameter per value to bind and a plan per size.
 *
 * SQLite: multi-row VALUES; the SQL text for each chunk size is compiled once and then reused (a
 * prepared statement), so a batch pays only for binding values. Rows go in chunks of 100, then 32,
 * then the rest in one statement of its own size, so a batch of n rows is at most n/100 + 3
 * statements and a table has at most 33 distinct ones (a group commit of a few rows is one
 * statement, not one per row).
 *
 * The statements are built from the column list (Kysely cannot type an insert into a table whose
 * name is a type parameter); the columns and rows are checked against the table's row type.
 */
const declaredInserts: { table: string; columns: Readonly<Record<string, PgColumnType>> }[] = [];

/** Every BulkInserter constructed in this process: its table and declared columns, for tests to check against the catalogue. */
export function declaredBulkInserts(): readonly { table: string; columns: Readonly<Record<string, PgColumnType>> }[] {
  return declaredInserts;
}

export class BulkInserter<Schema extends Record<Table, object>, Table extends string> {
  private static readonly CHUNKS = [100, 32];
  private readonly statements = new Map<string, string>();
  private readonly columns: readonly (keyof Schema[Table] & string)[];

  constructor(
    private readonly table: Table,
    /** The columns written, in order, with their PostgreSQL types. */
    readonly columnTypes: InsertColumns<Schema[Table]>,
    /** For a table with `createFullTextIndex`: its unique key column, to match rows to rowids. */
    private readonly fullTextKey?: keyof Schema[Table] & string,
    /** A row whose `replaceOn` key exists replaces that row's other columns in place (an upsert, not a delete and insert). */
    private readonly replaceOn?: keyof Schema[Table] & string,
  ) {
    this.columns = Object.keys(columnTypes) as (keyof Schema[Table] & string)[];
    declaredInserts.push({ table, columns: columnTypes as Readonly<Record<string, PgColumnType>> });
  }

  private statement(db: Kysely<Schema>, dialect: DialectName, size: number): string {
    let text = this.statements.get(`${dialect}:${size}`);
    if (text === undefined) {
      const row = sql`(${sql.join(this.columns.map(() => null))})`;
      const values = sql.join(Array.from({ length: size }, () => row));
      const returning = this.fullTextKey && dialect === 'sqlite' ? sql` returning rowid as "rowid", ${sql.ref(this.fullTextKey)}` : sql``;
      text = sql`insert into ${sql.table(this.table)} (${sql.join(this.columns.map((c) => sql.ref(c)))}) values ${values}${this.upsert()}${returning}`.compile(
        db,
      ).sql;
      this.statements.set(`${dialect}:${size}`, text);
    }
    return text;
  }

  /** The statements' conflict clause (`replaceOn`). */
  private upsert(): RawBuilder<unknown> {
    if (this.replaceOn === undefined) return sql``;
    const others = this.columns.filter((column) => column !== this.replaceOn);
    return sql` on conflict (${sql.ref(this.replaceOn)}) do update set ${sql.join(others.map((column) => sql`${sql.ref(column)} = excluded.${sql.ref(column)}`))}`;
  }

  /** PostgreSQL's one statement for any number of rows (see the class). */
  private unnestStatement(db: Kysely<Schema>): string {
    let text = this.statements.get('unnest');
    if (text === undefined) {
      const arrays = this.columns.map((c) => sql`${null}::${sql.raw(this.columnTypes[c]!)}[]`);
      text = prepareOnServer(
        sql`insert into ${sql.table(this.table)} (${sql.join(this.columns.map((c) => sql.ref(c)))}) select * from unnest(${sql.join(arrays)})${this.upsert()}`.compile(
          db,
        ).sql,
      );
      this.statements.set('unnest', text);
    }
    return text;
  }

  /**
   * Inserts the rows; `words(i)` gives the full-text words of `rows[i]` (used on SQLite only, where
   * the index is fed here; PostgreSQL's index reads the column itself).
   */
  async insert(db: Kysely<Schema>, dialect: DialectName, rows: readonly Schema[Table][], words?: (index: number) => string): Promise<void> {
    if (rows.length === 0) return;
    const columns = this.columns;
    if (dialect === 'postgres') {
      // Column-major: one array per column, sized once and filled in place.
      const parameters = columns.map((column) => {
        const values: unknown[] = new Array(rows.length);
        for (let r = 0; r < rows.length; r++) values[r] = rows[r]![column];
        return values;
      });
      await db.executeQuery(CompiledQuery.raw(this.unnestStatement(db), parameters));
      return;
    }
    if (!db.isTransaction && (rows.length > BulkInserter.CHUNKS[0]! || (this.fullTextKey !== undefined && words !== undefined))) {
      await db.transaction().execute((trx) => this.insert(trx, dialect, rows, words));
      return;
    }
    for (let offset = 0; offset < rows.length;) {
      const left = rows.length - offset;
      const size = BulkInserter.CHUNKS.find((chunk) => left >= chunk) ?? left;
      // Sized once and filled in place (no chunk copy, no growth by push): the parameters of a
      // 100-row chunk are a few thousand values.
      const parameters: unknown[] = new Array(size * columns.length);
      let p = 0;
      for (let r = offset; r < offset + size; r++) {
        const row = rows[r]!;
        for (let c = 0; c < columns.length; c++) parameters[p++] = row[columns[c]!];
      }
      const result = await db.executeQuery<Record<string, unknown>>(CompiledQuery.raw(this.statement(db, dialect, size), parameters));
      if (this.fullTextKey && words) await this.indexWords(db, rows, offset, size, result.rows, words);
      offset += size;
    }
  }

  /** RETURNING order is unspecified, so rows are matched to their rowids by key. */
  private async indexWords(
    db: Kysely<Schema>,
    rows: readonly Schema[Table][],
    offset: number,
    size: number,
    inserted: readonly Record<string, unknown>[],
    words: (index: number) => string,
  ): Promise<void> {
    const key = this.fullTextKey!;
    const rowids = new Map<unknown, number>();
    for (const r of inserted) rowids.set(r[key], r.rowid as number);
    const parameters: unknown[] = new Array(size * 2);
    for (let i = 0; i < size; i++) {
      parameters[2 * i] = rowids.get(rows[offset + i]![key])!;
      parameters[2 * i + 1] = words(offset + i);
    }
    await db.executeQuery(CompiledQuery.raw(this.fullTextStatement(db, size), parameters));
  }

  /** The full-text insert of `size` rows, compiled once per size like the row insert. */
  private fullTextStatement(db: Kysely<Schema>, size: number): string {
    let text = this.statements.get(`fts:${size}`);
    if (text === undefined) {
      const values = sql.join(Array.from({ length: size }, () => sql`(${null}, ${null})`));
      text = sql`insert into ${sql.table(`${this.table}_fts`)} ("rowid", "body") values ${values}`.compile(db).sql;
      this.statements.set(`fts:${size}`, text);
    }
    return text;
  }
}

/** Round-trip time of a trivial query, in milliseconds. */
export async function pingDatabase(database: RawSqlTarget): Promise<number> {
  const started = performance.now();
  await sql`select 1`.execute(database.db);
  return performance.now() - started;
}

/**
 * Row locks for a read-then-write transaction. PostgreSQL locks the selected rows; SQLite already
 * holds the database write lock from `BEGIN IMMEDIATE`, and has no FOR UPDATE.
 */
export function forUpdate<Query extends { forUpdate(): Query }>(query: Query, dialect: DialectName): Query {
  return dialect === 'postgres' ? query.forUpdate() : query;
}

/** forUpdate locking only `table`'s rows: PostgreSQL locks no row of a query's outer joins. */
export function forUpdateOf<Table extends string, Query extends { forUpdate(of?: Table): Query }>(query: Query, dialect: DialectName, table: Table): Query {
  return dialect === 'postgres' ? query.forUpdate(table) : query;
}

/**
 * Runs `read` on one consistent view of the database, for a read of several statements that must
 * agree with each other (a session's chain head and its events). PostgreSQL: a read-only
 * REPEATABLE READ transaction, one snapshot for every statement, planned without parallel workers
 * (`NO_PARALLEL_WORKERS`). SQLite (one process, one connection): the connection is held for the whole
 * read, so no write lands between its statements.
 */
export async function readSnapshot<Schema, T>(database: Database<Schema>, read: (db: Kysely<Schema>) => Promise<T>): Promise<T> {
  if (database.dialect === 'sqlite') return database.db.connection().execute(read);
  return database.db
    .transaction()
    .setIsolationLevel('repeatable read')
    .setAccessMode('read only')
    .execute(async (trx) => {
      await sql.raw(NO_PARALLEL_WORKERS).execute(trx);
      return read(trx);
    });
}

/**
 * A snapshot read's statements are index ranges of one session, request or page. PostgreSQL plans
 * a long session's (thousands of events across the week partitions) with two parallel workers,
 * whose start cost more than they saved: a 5,000-event session's writer check took 91 ms so and
 * 38 ms without, its stored-text comparison 105 and 46 ms (2 cores, docs/scale.md).
 */
const NO_PARALLEL_WORKERS = 'set local max_parallel_workers_per_gather = 0';

const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  '57P01',
  '57P02',
  '57P03',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  'SQLITE_BUSY',
]);
/** node-postgres reports a lost or unobtainable connection with these messages and no code. */
const UNREACHABLE_MESSAGE =
  /^(Connection terminated|Client has encountered a connection error and is not queryable|Client was closed and is not queryable|timeout exceeded when trying to connect|Query read timeout)/;

/**
 * What a thrown database error means for the client: `unavailable` (down, restarting, locked:
 * retry) or `storage` (any other database failure); undefined when it is not a database error.
 */
export function databaseFailure(error: unknown): 'unavailable' | 'storage' | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return error instanceof Error && UNREACHABLE_MESSAGE.test(error.message) ? 'unavailable' : undefined;
  if (UNREACHABLE_CODES.has(code)) return 'unavailable';
  if (code.startsWith('SQLITE_') || /^[0-9A-Z]{5}$/.test(code)) return 'storage';
  return undefined;
}

const PLACEHOLDER = '\u0000vigil-prepared-parameter:';

/** A compiled statement and how a call's values become its parameters. */
interface CompiledStatement {
  sql: string;
  bind: (values: readonly unknown[]) => unknown[];
}

/**
 * Builds and compiles a query once with a placeholder for each of `count` values: the statement,
 * and where each value goes among its parameters (a parameter that is no placeholder is a constant
 * of the statement). Every value must be used as a query value, so that none can have shaped it.
 */
function compileWithPlaceholders(count: number, build: (value: (index: number) => unknown) => Compilable<unknown>, what: string): CompiledStatement {
  const query = build((index) => `${PLACEHOLDER}${index}`).compile();
  const slots = query.parameters.map((value) =>
    typeof value === 'string' && value.startsWith(PLACEHOLDER) ? Number(value.slice(PLACEHOLDER.length)) : { constant: value },
  );
  const used = new Set(slots.filter((slot) => typeof slot === 'number'));
  if (used.size !== count) throw new Error(`${what}: ${count - used.size} value(s) are not query values`);
  return { sql: query.sql, bind: (values) => slots.map((slot) => (typeof slot === 'number' ? values[slot] : slot.constant)) };
}

/**
 * A hot-path query that Kysely builds and compiles once per dialect; each call only binds values
 * (and reuses the prepared statement on SQLite). `build` receives a placeholder for every argument
 * and may use them only as query values, never in JavaScript logic.
 */
export class PreparedQuery<Schema, Args extends unknown[], Row> {
  private readonly compiled = new Map<DialectName, CompiledStatement>();

  constructor(private readonly build: (db: Kysely<Schema>, dialect: DialectName, ...args: Args) => Compilable<Row>) {}

  /** Runs on `executor` (the database or a transaction of it). */
  async execute(executor: Kysely<Schema>, dialect: DialectName, ...args: Args): Promise<Row[]> {
    let entry = this.compiled.get(dialect);
    if (!entry) {
      // A build that takes neither the dialect nor an argument declares fewer parameters.
      const count = Math.max(0, this.build.length - 2);
      entry = compileWithPlaceholders(
        count,
        (value) => this.build(executor, dialect, ...(Array.from({ length: count }, (_, i) => value(i)) as Args)),
        'PreparedQuery',
      );
      this.compiled.set(dialect, entry);
    }
    return (await executor.executeQuery<Row>(CompiledQuery.raw(entry.sql, entry.bind(args)))).rows;
  }

  async first(executor: Kysely<Schema>, dialect: DialectName, ...args: Args): Promise<Row | undefined> {
    return (await this.execute(executor, dialect, ...args))[0];
  }
}

/** Shapes a ShapedQueries keeps compiled; past this many, a new shape is compiled for its call alone. */
const SHAPES_KEPT = 512;

/**
 * Hot-path queries whose statement depends on a few facts (the shape: which filters are set, the
 * grouping, how a time range falls on hours) and whose values vary from call to call. Each shape
 * is built and compiled once per dialect; a call binds its values. The caller names the shape and
 * lists the values; `build` gets a placeholder for each value, in that order, and must use every
 * one as a query value and nothing else of the call: whatever else it reads must be in the shape.
 * On PostgreSQL a kept shape runs as a named prepared statement (prepareOnServer).
 */
export class ShapedQueries<Schema> {
  private readonly compiled = new Map<string, CompiledStatement>();

  constructor(private readonly name: string) {}

  async execute<Row>(
    executor: Kysely<Schema>,
    dialect: DialectName,
    shape: string,
    values: readonly unknown[],
    build: (value: (index: number) => unknown) => Compilable<Row>,
  ): Promise<Row[]> {
    const key = `${dialect} ${shape}`;
    let entry = this.compiled.get(key);
    if (!entry) {
      entry = compileWithPlaceholders(values.length, build, this.name);
      if (this.compiled.size < SHAPES_KEPT) {
        // Only a kept shape is named: the names, like the shapes, stay bounded.
        if (dialect === 'postgres') prepareOnServer(entry.sql);
        this.compiled.set(key, entry);
      }
    }
    return (await executor.executeQuery<Row>(CompiledQuery.raw(entry.sql, entry.bind(values)))).rows;
  }
}
