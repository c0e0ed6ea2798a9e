import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { declaredBulkInserts } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { sql } from 'kysely';
import { startTestObserve, type TestObserve } from '../testing.ts';

/** information_schema's name of each type a BulkInserter may declare. */
const CATALOGUE_NAME: Record<string, string> = { timestamptz: 'timestamp with time zone' };

await describeEachDatabase('bulk inserts: declared columns', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  test("every BulkInserter of observe's tables names their columns, and on PostgreSQL their types as the catalogue has them", async () => {
    const database = observe.service.context.database;
    const checked = new Set<string>();
    for (const { table, columns } of declaredBulkInserts()) {
      const found =
        database.dialect === 'postgres'
          ? await sql<{ name: string; type: string }>`select column_name as name, data_type as type from information_schema.columns
              where table_schema = current_schema() and table_name = ${table}`.execute(database.db)
          : await sql<{ name: string; type: string }>`select name, type from pragma_table_info(${table})`.execute(database.db);
      if (found.rows.length === 0) continue; // another service's table (the gate's)
      checked.add(table);
      const types = new Map(found.rows.map((row) => [row.name, row.type.toLowerCase()]));
      for (const [column, type] of Object.entries(columns)) {
        assert.ok(types.has(column), `${table}.${column} exists`);
        if (database.dialect === 'postgres') assert.equal(types.get(column), CATALOGUE_NAME[type] ?? type, `${table}.${column}'s type`);
      }
    }
    for (const table of ['events', 'embedding_queue', 'stream_log', 'audit_log_leaves', 'audit_log_nodes'])
      assert.ok(checked.has(table), `${table} was checked`);
  });
});
