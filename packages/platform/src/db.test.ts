import assert from 'node:assert/strict';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { afterEach, beforeEach, describe, test } from 'node:test';
import BetterSqlite3 from 'better-sqlite3';
import { sql, type Kysely, type KyselyPlugin } from 'kysely';
import { BulkInserter, openDatabase, PreparedQuery, PreparedStatementCache, readSnapshot, ShapedQueries, type Database } from './db.ts';
import { describeEachDatabase, sqliteBackend, type TestBackend } from './testing.ts';

interface Row {
  id: number;
  name: string;
  body: string | null;
}
interface Tables {
  bulk_rows: Row;
}

const inserter = new BulkInserter<Tables, 'bulk_rows'>('bulk_rows', { id: 'integer', name: 'text', body: 'text' });

/** Counts the statements run through the Kysely instance it is added to. */
function statementCounter(): KyselyPlugin & { count: number } {
  return {
    count: 0,
    transformQuery(args) {
      return args.node;
    },
    async transformResult(args) {
      this.count += 1;
      return args.result;
    },
  };
}

/** A fresh database of the backend with the empty `bulk_rows` table. */
async function openBulkRows(backend: TestBackend): Promise<Database<Tables>> {
  const database = await openDatabase<Tables>(backend.freshDatabase());
  await database.db.schema
    .createTable('bulk_rows')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('body', 'text')
    .execute();
  return database;
}

await describeEachDatabase('BulkInserter', (backend) => {
  let database: Database<Tables>;
  beforeEach(async () => {
    database = await openBulkRows(backend);
  });
  afterEach(() => database.close());

  test('every row of a batch of any size is stored as given: on PostgreSQL in one statement, on SQLite in chunks of 100 and 32 and one statement for the rest', async () => {
    let next = 0;
    // size → statements: 100s, then 32s, then the remainder in one statement of its own size.
    const cases: [number, number][] = [
      [0, 0],
      [1, 1],
      [6, 1],
      [31, 1],
      [32, 1],
      [33, 2],
      [99, 4],
      [100, 1],
      [137, 3],
      [250, 4],
    ];
    for (const [size, statements] of cases) {
      const rows = Array.from({ length: size }, (): Row => {
        next += 1;
        return { id: next, name: `row ${next} "quoted" ✓`, body: next % 3 === 0 ? null : JSON.stringify({ n: next }) };
      });
      const counter = statementCounter();
      await database.db.transaction().execute((trx) => inserter.insert(trx.withPlugin(counter), database.dialect, rows));
      assert.equal(counter.count, backend.kind === 'postgres' ? Math.min(size, 1) : statements, `statements for ${size} rows`);
      const stored = await database.db
        .selectFrom('bulk_rows')
        .selectAll()
        .where('id', '>', next - size)
        .orderBy('id')
        .execute();
      assert.deepEqual(
        stored.map((row) => ({ ...row, id: Number(row.id) })),
        rows,
        `${size} rows`,
      );
    }
  });
});

interface TypedRow {
  id: number;
  label: string | null;
  small: number | null;
  big: number | null;
  real: number | null;
  bytes: Buffer | null;
  doc: unknown;
  flag: boolean | null;
  at: Date | null;
}

const TYPED_TEXTS = ['', 'NULL', 'null', 'plain', 'ünïcödé ✓ 𝄞 漢字 🙂', 'quote " and \\ backslash', '{braces,commas}', "it's", 'line\nbreak\ttab', ' spaced '];

/** One row per case: every column holds a value that a text array literal must escape or keep exact, or null. */
function typedRows(postgres: boolean): TypedRow[] {
  return Array.from({ length: 130 }, (_, i): TypedRow => {
    const nulls = i % 10 === 9;
    return {
      id: i + 1,
      label: nulls ? null : TYPED_TEXTS[i % TYPED_TEXTS.length]!,
      small: nulls ? null : [0, 1, -1, 2_147_483_647, -2_147_483_648][i % 5]!,
      big: nulls ? null : [Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER, 1_764_460_800_000, 0][i % 4]!,
      real: nulls ? null : [0.1, -1.5e300, 5e-324, 123456.789, 1 / 3][i % 5]!,
      bytes: nulls ? null : [Buffer.alloc(0), Buffer.from([0, 255, 92, 34, 44, 123, 125]), Buffer.from('ünï', 'utf8')][i % 3]!,
      doc: nulls ? null : { text: TYPED_TEXTS[i % TYPED_TEXTS.length], n: i, list: [1, 'two', null], nested: { 'key "q"': '\\' } },
      flag: postgres ? (nulls ? null : i % 2 === 0) : null,
      at: postgres ? (nulls ? null : new Date(1_764_460_800_123 + i * 1000)) : null,
    };
  });
}

await describeEachDatabase('BulkInserter, every column type', (backend) => {
  let database: Database<{ typed_rows: TypedRow }>;
  const postgres = backend.kind === 'postgres';
  // The PostgreSQL types are declared once; SQLite stores the JSON document as text.
  const typed = new BulkInserter<{ typed_rows: TypedRow }, 'typed_rows'>('typed_rows', {
    id: 'integer',
    label: 'text',
    small: 'integer',
    big: 'bigint',
    real: 'double precision',
    bytes: 'bytea',
    doc: 'jsonb',
    flag: 'boolean',
    at: 'timestamptz',
  });
  beforeEach(async () => {
    database = await openDatabase<{ typed_rows: TypedRow }>(backend.freshDatabase());
    await database.db.schema
      .createTable('typed_rows')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('label', 'text')
      .addColumn('small', 'integer')
      .addColumn('big', 'bigint')
      .addColumn('real', 'double precision')
      .addColumn('bytes', postgres ? 'bytea' : 'blob')
      .addColumn('doc', postgres ? 'jsonb' : 'text')
      .addColumn('flag', postgres ? 'boolean' : 'integer')
      .addColumn('at', postgres ? 'timestamptz' : 'text')
      .execute();
  });
  afterEach(() => database.close());

  test('nulls, unicode and escapes, the int32 and safe-integer bounds, doubles, bytes and JSON come back as given', async () => {
    const rows = typedRows(postgres);
    const written = postgres ? rows : rows.map((row) => ({ ...row, doc: row.doc === null ? null : JSON.stringify(row.doc) }));
    await typed.insert(database.db, database.dialect, written);
    const stored = await database.db.selectFrom('typed_rows').selectAll().orderBy('id').execute();
    assert.equal(stored.length, rows.length);
    stored.forEach((row, i) => {
      const expected = rows[i]!;
      assert.deepEqual(
        { ...row, id: Number(row.id), doc: postgres || row.doc === null ? row.doc : JSON.parse(row.doc as string) },
        expected,
        `row ${expected.id}`,
      );
    });
  });

  test('a batch is atomic: one bad row (a null where none may be) stores none of the others', async () => {
    await database.db.schema.dropTable('typed_rows').execute();
    await database.db.schema
      .createTable('typed_rows')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('label', 'text', (c) => c.notNull())
      .addColumn('small', 'integer')
      .addColumn('big', 'bigint')
      .addColumn('real', 'double precision')
      .addColumn('bytes', postgres ? 'bytea' : 'blob')
      .addColumn('doc', postgres ? 'jsonb' : 'text')
      .addColumn('flag', postgres ? 'boolean' : 'integer')
      .addColumn('at', postgres ? 'timestamptz' : 'text')
      .execute();
    // 150 rows: on SQLite a chunk of 100 is written before the bad row's chunk fails.
    const rows = Array.from({ length: 150 }, (_, i): TypedRow => ({
      id: i + 1,
      label: i === 139 ? null : `row ${i}`,
      small: i,
      big: i,
      real: i,
      bytes: null,
      doc: null,
      flag: null,
      at: null,
    }));
    await assert.rejects(typed.insert(database.db, database.dialect, rows));
    await assert.rejects(database.db.transaction().execute((trx) => typed.insert(trx, database.dialect, rows)));
    const { n } = await database.db
      .selectFrom('typed_rows')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    assert.equal(Number(n), 0);
  });

  test('batches of any size in one transaction (PostgreSQL: one statement each, its text prepared once on the connection)', async () => {
    await database.db.transaction().execute(async (trx) => {
      let id = 0;
      for (const size of [1, 7, 100, 250]) {
        const rows = typedRows(postgres)
          .slice(0, size)
          .map((row) => ({ ...row, id: ++id, doc: postgres || row.doc === null ? row.doc : JSON.stringify(row.doc) }));
        const counter = statementCounter();
        await typed.insert(trx.withPlugin(counter), database.dialect, rows);
        if (postgres) assert.equal(counter.count, 1, `one statement for ${size} rows`);
      }
      assert.equal(
        Number(
          (
            await trx
              .selectFrom('typed_rows')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        ),
        id,
      );
      if (!postgres) return;
      const prepared = await sql<{ statement: string }>`select statement from pg_prepared_statements where statement like 'insert into "typed_rows"%'`.execute(
        trx,
      );
      assert.equal(prepared.rows.length, 1, 'one named statement on this connection for every size');
      assert.match(prepared.rows[0]!.statement, /select \* from unnest\(\$1::integer\[\], \$2::text\[\]/);
    });
  });
});

await describeEachDatabase('ShapedQueries and PreparedQuery', (backend) => {
  let database: Database<Tables>;
  beforeEach(async () => {
    database = await openBulkRows(backend);
    await inserter.insert(database.db, database.dialect, [
      { id: 1, name: 'a', body: 'kept' },
      { id: 2, name: 'b', body: 'kept' },
      { id: 3, name: 'c', body: 'other' },
      { id: 4, name: 'a', body: 'other' },
    ]);
  });
  afterEach(() => database.close());

  test('a shape is built once per dialect; each call binds its own values, and constants of the build stay', async () => {
    const queries = new ShapedQueries<Tables>('rows');
    const built: string[] = [];
    // Rows with one of `names` and the constant body 'kept': the shape is how many names.
    const rowsNamed = (names: string[]) =>
      queries.execute<{ id: number }>(database.db, database.dialect, `names ${names.length}`, names, (value) => {
        built.push(`names ${names.length}`);
        return database.db
          .selectFrom('bulk_rows')
          .select('id')
          .where(
            'name',
            'in',
            names.map((_, i) => value(i) as string),
          )
          .where('body', '=', 'kept')
          .orderBy('id');
      });
    const ids = async (names: string[]) => (await rowsNamed(names)).map((row) => Number(row.id));
    assert.deepEqual(await ids(['a']), [1]);
    assert.deepEqual(await ids(['b']), [2]);
    assert.deepEqual(await ids(['c']), []);
    assert.deepEqual(await ids(['a', 'b']), [1, 2]);
    assert.deepEqual(await ids(['c', 'a']), [1]);
    assert.deepEqual(built, ['names 1', 'names 2'], 'each shape built once');
  });

  test('PostgreSQL: a kept shape runs as a named prepared statement, prepared once on the connection', async () => {
    const queries = new ShapedQueries<Tables>('rows');
    await database.db.transaction().execute(async (trx) => {
      for (const name of ['a', 'b', 'c', 'a', 'b', 'c', 'a']) {
        const rows = await queries.execute<{ id: number }>(trx, database.dialect, 'by name', [name], (value) =>
          trx
            .selectFrom('bulk_rows')
            .select('id')
            .where('name', '=', value(0) as string)
            .orderBy('id'),
        );
        assert.deepEqual(
          rows.map((row) => Number(row.id)),
          { a: [1, 4], b: [2], c: [3] }[name],
        );
      }
      if (database.dialect !== 'postgres') return;
      const prepared = await sql<{
        statement: string;
      }>`select statement from pg_prepared_statements where statement like 'select "id" from "bulk_rows"%'`.execute(trx);
      assert.deepEqual(
        prepared.rows.map((row) => row.statement),
        ['select "id" from "bulk_rows" where "name" = $1 order by "id"'],
      );
    });
  });

  test('a value the build does not use as a query value is refused, by ShapedQueries and PreparedQuery alike', async () => {
    const queries = new ShapedQueries<Tables>('rows');
    await assert.rejects(
      queries.execute(database.db, database.dialect, 'one', ['a', 'b'], (value) =>
        database.db
          .selectFrom('bulk_rows')
          .select('id')
          .where('name', '=', value(0) as string),
      ),
      /^Error: rows: 1 value\(s\) are not query values$/,
    );
    // A value read in JavaScript rather than bound: it would have shaped the statement.
    const shaped = new PreparedQuery((db: Kysely<Tables>, _dialect, name: string) =>
      db
        .selectFrom('bulk_rows')
        .select('id')
        .where('body', '=', name.length > 1 ? 'kept' : 'other'),
    );
    await assert.rejects(shaped.execute(database.db, database.dialect, 'a'), /^Error: PreparedQuery: 1 value\(s\) are not query values$/);
    const prepared = new PreparedQuery((db: Kysely<Tables>, _dialect, name: string) =>
      db.selectFrom('bulk_rows').select('id').where('name', '=', name).orderBy('id'),
    );
    assert.deepEqual(
      (await prepared.execute(database.db, database.dialect, 'a')).map((row) => Number(row.id)),
      [1, 4],
    );
    assert.deepEqual(
      (await prepared.execute(database.db, database.dialect, 'c')).map((row) => Number(row.id)),
      [3],
    );
    // A build that takes the database alone (no dialect, no argument).
    const counted = new PreparedQuery((db: Kysely<Tables>) => db.selectFrom('bulk_rows').select((eb) => eb.fn.countAll<number>().as('n')));
    assert.equal(Number((await counted.first(database.db, database.dialect))?.n), 4);
  });
});

await describeEachDatabase('readSnapshot', (backend) => {
  let database: Database<Tables>;
  beforeEach(async () => {
    database = await openBulkRows(backend);
  });
  afterEach(() => database.close());

  test('statements agree on one view; on PostgreSQL they are planned without parallel workers, within the read only', async () => {
    await inserter.insert(database.db, database.dialect, [{ id: 1, name: 'a', body: 'before' }]);
    const workers = async (db: Kysely<Tables>) =>
      (await sql<{ max_parallel_workers_per_gather: string }>`show max_parallel_workers_per_gather`.execute(db)).rows[0]!.max_parallel_workers_per_gather;
    let write: Promise<void> | undefined;
    const seen = await readSnapshot(database, async (db) => {
      const first = await db.selectFrom('bulk_rows').select('body').execute();
      // A write meanwhile: on PostgreSQL committed on another connection; on SQLite it waits for the held connection.
      write = inserter.insert(database.db, database.dialect, [{ id: 2, name: 'b', body: 'during' }]);
      if (database.dialect === 'postgres') await write;
      const second = await db.selectFrom('bulk_rows').select('body').execute();
      return { first, second, planned: database.dialect === 'postgres' ? await workers(db) : null };
    });
    await write;
    assert.deepEqual(seen.second, seen.first);
    assert.equal((await database.db.selectFrom('bulk_rows').select('id').execute()).length, 2);
    if (database.dialect === 'postgres') {
      assert.equal(seen.planned, '0');
      assert.notEqual(await workers(database.db), '0', "the setting ends with the read's transaction");
    }
  });
});

describe('PreparedStatementCache', () => {
  test('keeps the most recently used statements within its budget of SQL characters, and compiles a text again only once it was dropped', () => {
    const raw = new BetterSqlite3(':memory:');
    const compiled: string[] = [];
    const counting = { prepare: (text: string) => (compiled.push(text), raw.prepare(text)), close: () => raw.close() };
    // Statements of 100 characters each (`select 1 as c, …` padded with spaces), a budget of three.
    const text = (n: number): string => `select ${n} as c`.padEnd(100, ' ');
    const cache = new PreparedStatementCache(counting, 300);
    try {
      for (const n of [1, 2, 3]) cache.prepare(text(n));
      assert.deepEqual(cache.held, { statements: 3, chars: 300 });
      // 1 is used again, so 2 is now the least recently used: the fourth statement drops it.
      assert.deepEqual(cache.prepare(text(1)).all([]), [{ c: 1 }]);
      cache.prepare(text(4));
      assert.deepEqual(cache.held, { statements: 3, chars: 300 });
      compiled.length = 0;
      for (const n of [1, 3, 4]) assert.deepEqual(cache.prepare(text(n)).all([]), [{ c: n }]);
      assert.deepEqual(compiled, [], 'the three kept statements are served without compiling');
      assert.deepEqual(cache.prepare(text(2)).all([]), [{ c: 2 }]);
      assert.deepEqual(compiled, [text(2)], 'the dropped one is compiled again');
      // A statement longer than the whole budget is still served, and held alone.
      const long = `select 5 as c`.padEnd(1000, ' ');
      assert.deepEqual(cache.prepare(long).all([]), [{ c: 5 }]);
      assert.deepEqual(cache.held, { statements: 1, chars: 1000 });
      // Transactions take the write lock up front.
      cache.prepare('begin');
      assert.equal(compiled.at(-1), 'begin immediate');
    } finally {
      cache.close();
    }
  });
});

/** Threads of this process (the checkpointer is a worker thread of it). */
function threads(): number {
  return Number(/^Threads:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))![1]);
}

describe('SQLite checkpoints', () => {
  test('no checkpointer thread while the WAL is small; once it passes 4 MiB, a thread copies it into the database file', async () => {
    const config = sqliteBackend.freshDatabase();
    if (config.kind !== 'sqlite') throw new Error('a SQLite database was asked for');
    const database = await openDatabase<Tables>(config);
    const before = threads();
    try {
      await database.db.schema
        .createTable('bulk_rows')
        .addColumn('id', 'integer', (c) => c.primaryKey())
        .addColumn('name', 'text')
        .addColumn('body', 'text')
        .execute();
      await inserter.insert(database.db, 'sqlite', [{ id: 0, name: 'small', body: 'x'.repeat(1000) }]);
      // Longer than the watch interval: a small WAL is still not handed over.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      assert.equal(threads(), before, 'no thread was started for a small WAL');
      const fileBefore = statSync(config.file).size;
      const rows = Array.from({ length: 3000 }, (_, i) => ({ id: i + 1, name: `row ${i}`, body: 'y'.repeat(2000) }));
      await inserter.insert(database.db, 'sqlite', rows);
      assert.ok(statSync(`${config.file}-wal`).size >= 4 * 1024 * 1024, 'the WAL holds the 6 MB written');
      // The thread checkpoints on its own schedule: wait for the pages to reach the database file.
      const deadline = Date.now() + 20_000;
      while (statSync(config.file).size < fileBefore + 4 * 1024 * 1024 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
      assert.ok(statSync(config.file).size >= fileBefore + 4 * 1024 * 1024, 'the written pages were checkpointed into the database file');
      assert.equal(threads(), before + 1, 'one checkpointer thread runs');
      assert.equal(
        (
          await database.db
            .selectFrom('bulk_rows')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
        3001,
      );
    } finally {
      await database.close();
      rmSync(config.dataDir, { recursive: true, force: true });
    }
    assert.equal(threads(), before, 'the thread stops with the last database');
  });
});
