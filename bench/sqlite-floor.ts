/**
 * `npm run bench` (part of the ingest rows): the floor of SQLite ingest on this machine, measured in
 * the same run as Vigil's (issue 43 part 8: Vigil's 100-event ingest ≥ 0.9 of the floor with the
 * full-text index).
 *
 * The floor is a bare better-sqlite3 loop writing the rows Vigil just stored: the same `events`
 * table with every index it has (its schema read from Vigil's file), in a new file opened with
 * Vigil's connection settings (openSqliteFile: WAL, synchronous NORMAL, secure_delete, a 16 MiB
 * page cache), 100 rows per transaction, one prepared INSERT per row. With the full-text index each row's words
 * (jsonWords of its payload, as Vigil indexes them) also go into the same contentless FTS5 table.
 * SQLite checkpoints the WAL as it goes (its default, every 1,000 pages), so the floor, like Vigil,
 * pays for getting every row into the file. The rows are Vigil's own, read back in the order it
 * stored them, so both loads write the same bytes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jsonWords, openSqliteFile } from '@vigil/platform';

const BATCH = 100;
/** Vigil's service connection's page cache. */
const CACHE_MIB = 16;

export interface SqliteFloor {
  /** Rows per second with the events' indexes and the FTS5 word index, as Vigil writes them. */
  withFullText: number;
  /** The same without the FTS5 index. */
  withoutFullText: number;
  rows: number;
}

/** The floor over the first `rowCount` events of Vigil's SQLite file at `observeFile` (read while Vigil runs: WAL readers do not block). */
export function sqliteFloor(observeFile: string, rowCount: number): SqliteFloor {
  const source = openSqliteFile({ file: observeFile, synchronous: 'NORMAL' }, CACHE_MIB);
  let rows: Record<string, unknown>[];
  let schema: string[];
  let fullTextSchema: string[];
  try {
    const objects = source.prepare(`select type, name, sql from sqlite_schema where tbl_name = 'events' and sql is not null order by type desc`).all() as {
      type: string;
      name: string;
      sql: string;
    }[];
    schema = objects.filter((object) => object.type !== 'trigger').map((object) => object.sql);
    fullTextSchema = [
      (source.prepare(`select sql from sqlite_schema where name = 'events_fts'`).all()[0] as { sql: string }).sql,
      ...objects.filter((object) => object.type === 'trigger').map((object) => object.sql),
    ];
    rows = source.prepare(`select * from events order by rowid limit ?`).all(rowCount) as Record<string, unknown>[];
  } finally {
    source.close();
  }
  return {
    withFullText: load(schema, fullTextSchema, rows),
    withoutFullText: load(schema, [], rows),
    rows: rows.length,
  };
}

function load(schema: readonly string[], fullTextSchema: readonly string[], rows: readonly Record<string, unknown>[]): number {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-bench-floor-'));
  const db = openSqliteFile({ file: join(dir, 'floor.db'), synchronous: 'NORMAL' }, CACHE_MIB);
  try {
    // SQLite's default: the loop checkpoints as it goes (Vigil's connection leaves that to a thread).
    db.pragma('wal_autocheckpoint = 1000');
    for (const statement of [...schema, ...fullTextSchema]) db.exec(statement);
    const columns = Object.keys(rows[0] ?? {});
    const insert = db.prepare(`insert into events (${columns.map((c) => `"${c}"`).join(', ')}) values (${columns.map(() => '?').join(', ')})`);
    const index = fullTextSchema.length === 0 ? null : db.prepare('insert into events_fts (rowid, body) values (?, ?)');
    const batch = db.transaction((slice: readonly Record<string, unknown>[]) => {
      for (const row of slice) {
        const { lastInsertRowid } = insert.run(...columns.map((c) => row[c]));
        if (index !== null) index.run(lastInsertRowid, jsonWords(JSON.parse(row.payload as string)).join(' '));
      }
    });
    const started = performance.now();
    for (let at = 0; at < rows.length; at += BATCH) batch(rows.slice(at, at + BATCH));
    return rows.length / ((performance.now() - started) / 1000);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
