import type { DialectName } from '@vigil/platform';
import { sql, type RawBuilder, type SelectQueryBuilder } from 'kysely';
import type { ObserveDatabase } from '../schema.ts';

/** Rows handed to the callback at a time; the whole result is never held at once. */
export const STREAM_BATCH = 5000;

/**
 * Runs a select and hands its rows to `onBatch` in order, `batchSize` at a time, through a
 * database cursor: SQLite steps one prepared statement (Kysely's stream), PostgreSQL declares a
 * cursor in a read-only transaction and fetches from it. Memory stays bounded by one batch
 * whatever the number of rows; the database does any sorting the query asks for.
 */
export async function forEachBatch<Row>(
  database: ObserveDatabase,
  query: SelectQueryBuilder<any, any, Row>,
  onBatch: (rows: Row[]) => void | Promise<void>,
  batchSize = STREAM_BATCH,
): Promise<void> {
  if (database.dialect === 'sqlite') {
    let batch: Row[] = [];
    // Stepping the statement on the connection directly: SelectQueryBuilder.stream() adds two
    // async-generator layers per row, which cost more than the query over a few hundred thousand
    // rows. Kysely runs no result plugins on this database, so the rows are the same.
    const executor = database.db.getExecutor();
    const compiled = query.compile();
    await executor.provideConnection(async (connection) => {
      for await (const result of connection.streamQuery<Row>(compiled, batchSize)) {
        for (const row of result.rows) batch.push(row);
        if (batch.length >= batchSize) {
          await onBatch(batch);
          batch = [];
        }
      }
    });
    if (batch.length > 0) await onBatch(batch);
    return;
  }
  const { db } = database;
  await db
    .transaction()
    .setAccessMode('read only')
    .execute(async (trx) => {
      // The cursor closes with the transaction.
      await sql`declare reflect_cursor no scroll cursor for ${query}`.execute(trx);
      for (;;) {
        const { rows } = await sql<Row>`fetch forward ${sql.lit(batchSize)} from reflect_cursor`.execute(trx);
        if (rows.length === 0) break;
        await onBatch(rows);
        if (rows.length < batchSize) break;
      }
    });
}

const JSON_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The string at a JSON path of a text column (`['error', 'message']` is payload.error.message);
 * null when absent or not a string. Keys are spliced into the SQL as literals, so they are checked.
 */
export function jsonString(dialect: DialectName, column: string, path: readonly string[]): RawBuilder<string | null> {
  for (const key of path) if (!JSON_KEY.test(key)) throw new Error(`invalid JSON key ${JSON.stringify(key)}`);
  if (dialect === 'sqlite') {
    const jsonPath = sql.lit(`$.${path.join('.')}`);
    return sql<string | null>`(case when json_type(${sql.ref(column)}, ${jsonPath}) = 'text' then json_extract(${sql.ref(column)}, ${jsonPath}) end)`;
  }
  const pgPath = sql.lit(`{${path.join(',')}}`);
  return sql<string | null>`(case when jsonb_typeof(${sql.ref(column)}::jsonb #> ${pgPath}) = 'string' then ${sql.ref(column)}::jsonb #>> ${pgPath} end)`;
}
