import type { DialectName, MigrationDb } from '@vigil/platform';
import { sql } from 'kysely';
import { decodeFloatVector, EMBEDDED_EVENT_COLUMNS, encodeVector } from './store.ts';
import { eventDetails, type EmbeddedEventSource } from './text.ts';

/** Rows converted per read. */
const PAGE = 500;

export interface CompactionCounts {
  converted: number;
  dropped: number;
}

/**
 * Migration 0019_compact_embeddings, on both databases, in the migration's transaction: every
 * live vector stored as Float32 becomes int8 (store.ts encodeVector); an event's row loses its
 * copy of the event's text and metadata (results build them from the event); the vectors of
 * events that are no longer embedded (text.ts isEmbeddedEvent) or no longer stored are deleted.
 * Deleting moves `purged_seq` up to `last_seq`, so every in-memory index reloads. Space freed in
 * the file is left to the database to reuse (nothing is vacuumed here).
 */
export async function compactEmbeddings(db: MigrationDb, dialect: DialectName): Promise<CompactionCounts> {
  const counts: CompactionCounts = { converted: 0, dropped: 0 };
  for (const type of ['event', 'session'] as const) {
    let after = '';
    for (;;) {
      const rows = (await db
        .selectFrom('embeddings')
        .select(['source_id', 'dims', 'vector'])
        .where('source_type', '=', type)
        .where('source_id', '>', after)
        .where('deleted', '=', 0)
        .orderBy('source_id')
        .limit(PAGE)
        .execute()) as { source_id: string; dims: number; vector: Uint8Array }[];
      if (rows.length === 0) break;
      after = rows[rows.length - 1]!.source_id;
      const events = new Map<string, EmbeddedEventSource>();
      if (type === 'event') {
        const found = (await db
          .selectFrom('events')
          .select([...EMBEDDED_EVENT_COLUMNS])
          .where(
            'id',
            'in',
            rows.map((r) => r.source_id),
          )
          .execute()) as EmbeddedEventSource[];
        for (const event of found) events.set(event.id, event);
      }
      const dropped: string[] = [];
      const converted: { id: string; vector: Buffer }[] = [];
      for (const row of rows) {
        if (type === 'event') {
          const event = events.get(row.source_id);
          if (event === undefined || eventDetails(event) === null) {
            dropped.push(row.source_id);
            continue;
          }
        }
        // Only Float32 vectors (4 bytes a dimension) are converted; a compact one is left as it is.
        if (row.vector.byteLength !== Number(row.dims) * 4) continue;
        converted.push({ id: row.source_id, vector: encodeVector(decodeFloatVector(row.vector)) });
      }
      if (converted.length > 0) {
        // One statement per page (a row at a time took PostgreSQL ~1 ms a vector).
        const blob = (vector: Buffer) => (dialect === 'postgres' ? sql`cast(${vector} as bytea)` : sql`${vector}`);
        const values = sql.join(converted.map((c) => sql`(${c.id}, ${blob(c.vector)})`));
        const text = type === 'event' ? sql`''` : sql.ref('embeddings.text');
        const metadata = type === 'event' ? sql`''` : sql.ref('embeddings.metadata');
        await sql`with v(source_id, vector) as (values ${values})
          update embeddings set vector = v.vector, text = ${text}, metadata = ${metadata}
          from v where embeddings.source_type = ${type} and embeddings.source_id = v.source_id`.execute(db);
        counts.converted += converted.length;
      }
      if (dropped.length > 0) {
        await db.deleteFrom('embeddings').where('source_type', '=', type).where('source_id', 'in', dropped).execute();
        counts.dropped += dropped.length;
      }
    }
  }
  if (counts.dropped > 0)
    await db
      .updateTable('embedding_meta')
      .set((eb) => ({ purged_seq: eb.ref('last_seq') }))
      .where('id', '=', 1)
      .execute();
  return counts;
}
