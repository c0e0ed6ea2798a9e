import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import type { KyselyPlugin } from 'kysely';
import { BulkInserter, openDatabase, type Database } from './db.ts';
import { describeEachDatabase } from './testing.ts';

interface Row {
  id: number;
  name: string;
  body: string | null;
}
interface Tables {
  bulk_rows: Row;
}

const inserter = new BulkInserter<Tables, 'bulk_rows'>('bulk_rows', ['id', 'name', 'body']);

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

await describeEachDatabase('BulkInserter', (backend) => {
  let database: Database<Tables>;
  beforeEach(async () => {
    database = await openDatabase<Tables>(backend.freshDatabase());
    await database.db.schema
      .createTable('bulk_rows')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('body', 'text')
      .execute();
  });
  afterEach(() => database.close());

  test('every row of a batch of any size is stored as given, in chunks of 100 and 32 and one statement for the rest', async () => {
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
      assert.equal(counter.count, statements, `statements for ${size} rows`);
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
