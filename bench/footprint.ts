/**
 * Storage footprint of a loaded observe database: the bytes on disk per event, in total and per
 * table (its rows and each of its indexes, the full-text index as one), read from the database
 * itself (SQLite: dbstat; PostgreSQL: pg_table_size / pg_relation_size). Called once the server's
 * background work has caught up; the WAL is checkpointed first, so the file holds everything.
 */
import { openDatabase, type DatabaseConfig, type StoredObject } from '@vigil/platform';
import { checked, type Row } from './table.ts';

/** Recall's tables (the vectors and their work queue): what the footprint is without the embedder. */
const isRecallTable = (table: string): boolean => table.startsWith('embedding');

/** Tables under this share of the total are summed into one row. */
const SMALL_SHARE = 0.01;

export async function footprintRows(config: DatabaseConfig, events: number): Promise<Row[]> {
  const database = await openDatabase(config);
  try {
    await database.reclaimFreeSpace();
    const total = await database.sizeBytes();
    const objects = await database.storageBreakdown();
    const perEvent = (bytes: number): number => bytes / events;
    const recall = objects.filter((o) => isRecallTable(o.table)).reduce((sum, o) => sum + o.bytes, 0);
    const on = perEvent(total);
    const off = perEvent(total - recall);
    const rows: Row[] = [
      [
        `database on disk at ${events.toLocaleString('en-US')} events, background work caught up, WAL checkpointed`,
        '',
        `${(total / 1024 / 1024).toFixed(0)} MiB`,
      ],
      ['bytes on disk per event, embedder on', '≤ 850 (issue 43; ≤ 1,000 before)', checked(Math.round(on).toLocaleString('en-US'), on <= 850)],
      ["bytes on disk per event, embedder off (all but recall's tables)", '≤ 700', checked(Math.round(off).toLocaleString('en-US'), off <= 700)],
    ];
    const byTable = new Map<string, StoredObject[]>();
    for (const object of objects) byTable.set(object.table, [...(byTable.get(object.table) ?? []), object]);
    const tables = [...byTable.entries()]
      .map(([table, parts]) => ({ table, parts, bytes: parts.reduce((sum, o) => sum + o.bytes, 0) }))
      .sort((a, b) => b.bytes - a.bytes);
    let small = 0;
    for (const { table, parts, bytes } of tables) {
      if (bytes < SMALL_SHARE * total) {
        small += bytes;
        continue;
      }
      const detail = parts
        .sort((a, b) => b.bytes - a.bytes)
        .map((o) => `${o.kind === 'table' ? 'rows' : o.name} ${perEvent(o.bytes).toFixed(0)}`)
        .join(' · ');
      rows.push([`  bytes per event: ${table}`, '', `${perEvent(bytes).toFixed(0)} (${detail})`]);
    }
    const unused = total - objects.reduce((sum, o) => sum + o.bytes, 0);
    rows.push([`  bytes per event: smaller tables; free pages and file overhead`, '', `${perEvent(small).toFixed(0)}; ${perEvent(unused).toFixed(0)}`]);
    return rows;
  } finally {
    await database.close();
  }
}
