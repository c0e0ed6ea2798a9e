import { createHash } from 'node:crypto';
import { forUpdate, type DialectName } from '@vigil/platform';
import { CompiledQuery, sql, type Kysely, type Transaction } from 'kysely';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import type { EmbeddingRow } from './tables.ts';
import { MAX_EMBED_CHARS } from './embedder.ts';
import { eventDetails, STORED_TEXT_CHARS, truncate } from './text.ts';

let lastModelKey = { model: '', key: '' };

/**
 * What the `model` column holds (migration 0048): 11 base64url characters of the SHA-256 of the
 * model's name instead of the name (23 characters for the local model), in every row and in the
 * (model, updated_seq) index. The column is only compared with the current model's, never shown.
 */
export function modelKey(model: string): string {
  if (lastModelKey.model !== model) lastModelKey = { model, key: createHash('sha256').update(model, 'utf8').digest('base64url').slice(0, 11) };
  return lastModelKey.key;
}

/** An embedding to store (the write assigns updated_seq). */
export type NewEmbedding = Omit<EmbeddingRow, 'updated_seq' | 'deleted'>;

/**
 * Takes `count` positions of the global write order. The counter row stays locked until the
 * transaction commits, so writers are serialised and positions become visible in order: an index
 * that has read up to position p has seen every write numbered ≤ p (also across instances).
 */
async function takeSeq(trx: Transaction<ObserveSchema>, count: number): Promise<number> {
  const row = await trx
    .updateTable('embedding_meta')
    .set((eb) => ({ last_seq: eb('last_seq', '+', count) }))
    .where('id', '=', 1)
    .returning('last_seq')
    .executeTakeFirstOrThrow();
  return Number(row.last_seq) - count + 1;
}

/** Source order (type, then id by UTF-16 code units, as ingest sorts session ids): every writer of these keys takes row locks in it. */
export const sortKey = (a: { source_type: string; source_id: string }, b: { source_type: string; source_id: string }): number =>
  a.source_type < b.source_type ? -1 : a.source_type > b.source_type ? 1 : a.source_id < b.source_id ? -1 : a.source_id > b.source_id ? 1 : 0;

const EMBEDDING_COLUMNS = [
  'source_type',
  'source_id',
  'agent_id',
  'session_id',
  'user_id',
  'ts',
  'last_ts',
  'model',
  'dims',
  'vector',
  'text',
  'metadata',
  'updated_seq',
  'deleted',
] as const satisfies readonly (keyof EmbeddingRow)[];
const UPSERT_CHUNKS = [64, 16, 4, 1];
const upsertStatements = new Map<string, string>();

/**
 * The multi-row upsert for `size` rows, compiled by Kysely once per dialect and size and then
 * reused with new values (a prepared statement on SQLite): the worker writes many rows a second.
 */
function upsertStatement(trx: Kysely<ObserveSchema>, dialect: DialectName, size: number): string {
  const key = `${dialect}:${size}`;
  let text = upsertStatements.get(key);
  if (text === undefined) {
    const template = Object.fromEntries(EMBEDDING_COLUMNS.map((c) => [c, null])) as unknown as EmbeddingRow;
    text = trx
      .insertInto('embeddings')
      .values(Array.from({ length: size }, () => template))
      .onConflict((oc) =>
        oc
          .columns(['source_type', 'source_id'])
          .doUpdateSet((eb) => Object.fromEntries(EMBEDDING_COLUMNS.slice(2).map((c) => [c, eb.ref(`excluded.${c}`)])) as never),
      )
      .compile().sql;
    upsertStatements.set(key, text);
  }
  return text;
}

/** Inserts or replaces vectors, in the caller's transaction. */
export async function writeEmbeddings(trx: Transaction<ObserveSchema>, dialect: DialectName, rows: readonly NewEmbedding[]): Promise<void> {
  if (rows.length === 0) return;
  const sorted = [...rows].sort(sortKey);
  let seq = await takeSeq(trx, sorted.length);
  let offset = 0;
  for (const size of UPSERT_CHUNKS) {
    while (sorted.length - offset >= size) {
      // Filled in place: no chunk copy, no row copy with its updated_seq.
      const parameters: unknown[] = new Array(size * EMBEDDING_COLUMNS.length);
      let p = 0;
      for (let r = offset; r < offset + size; r++) {
        const row = sorted[r]!;
        for (const column of EMBEDDING_COLUMNS) {
          parameters[p++] = column === 'updated_seq' ? seq++ : column === 'deleted' ? 0 : column === 'model' ? modelKey(row.model) : row[column];
        }
      }
      await trx.executeQuery(CompiledQuery.raw(upsertStatement(trx, dialect, size), parameters));
      offset += size;
    }
  }
}

/** How long a tombstone is kept before it is deleted for good (an index that slept longer reloads). */
export const TOMBSTONE_TTL_MS = 24 * 3_600_000;

/** Keys tombstoned per statement by tombstoneMany. */
const TOMBSTONE_CHUNK = 500;

/**
 * tombstone for many keys at once (an erasure's thousands of events): the same rows written, a
 * chunk of keys per statement (each key's write position by a CASE) instead of
 * one statement per key. Returns how many existed.
 */
export async function tombstoneMany(
  trx: Transaction<ObserveSchema>,
  keys: readonly { source_type: EmbeddingRow['source_type']; source_id: string }[],
  now: number,
): Promise<number> {
  const existing: { source_type: EmbeddingRow['source_type']; source_id: string }[] = [];
  for (const type of ['event', 'session'] as const) {
    const ids = keys.filter((k) => k.source_type === type).map((k) => k.source_id);
    for (let i = 0; i < ids.length; i += TOMBSTONE_CHUNK) {
      existing.push(
        ...(await trx
          .selectFrom('embeddings')
          .select(['source_type', 'source_id'])
          .where('source_type', '=', type)
          .where('source_id', 'in', ids.slice(i, i + TOMBSTONE_CHUNK))
          .where('deleted', '=', 0)
          .execute()),
      );
    }
  }
  if (existing.length === 0) return 0;
  let seq = await takeSeq(trx, existing.length);
  const sorted = existing.sort(sortKey);
  // One statement per chunk of one source type: the keys by the primary key's index, each row's write position by a CASE.
  for (const type of ['event', 'session'] as const) {
    const ofType = sorted.filter((key) => key.source_type === type);
    for (let i = 0; i < ofType.length; i += TOMBSTONE_CHUNK) {
      const chunk = ofType.slice(i, i + TOMBSTONE_CHUNK);
      const positions = sql.join(
        chunk.map((key) => sql`when ${key.source_id} then cast(${seq++} as bigint)`),
        sql` `,
      );
      await trx
        .updateTable('embeddings')
        .set({
          deleted: 1,
          vector: new Uint8Array(0),
          text: '',
          metadata: '{}',
          user_id: null,
          last_ts: now,
          updated_seq: sql<number>`case source_id ${positions} end`,
        })
        .where('source_type', '=', type)
        .where(
          'source_id',
          'in',
          chunk.map((key) => key.source_id),
        )
        .execute();
    }
  }
  return existing.length;
}

/**
 * Turns stored vectors into tombstones (source deleted): no vector, no text, a new write position
 * so every index drops them; `last_ts` becomes the time of deletion. Returns how many existed.
 */
export async function tombstone(
  trx: Transaction<ObserveSchema>,
  keys: readonly { source_type: EmbeddingRow['source_type']; source_id: string }[],
  now: number,
): Promise<number> {
  if (keys.length === 0) return 0;
  const existing: { source_type: EmbeddingRow['source_type']; source_id: string }[] = [];
  for (const type of ['event', 'session'] as const) {
    const ids = keys.filter((k) => k.source_type === type).map((k) => k.source_id);
    for (let i = 0; i < ids.length; i += 500) {
      const found = await trx
        .selectFrom('embeddings')
        .select(['source_type', 'source_id'])
        .where('source_type', '=', type)
        .where('source_id', 'in', ids.slice(i, i + 500))
        .where('deleted', '=', 0)
        .execute();
      existing.push(...found);
    }
  }
  if (existing.length === 0) return 0;
  let seq = await takeSeq(trx, existing.length);
  for (const key of existing.sort(sortKey)) {
    await trx
      .updateTable('embeddings')
      .set({ deleted: 1, vector: new Uint8Array(0), text: '', metadata: '{}', user_id: null, last_ts: now, updated_seq: seq++ })
      .where('source_type', '=', key.source_type)
      .where('source_id', '=', key.source_id)
      .execute();
  }
  return existing.length;
}

/**
 * Retention: embeddings whose session no longer exists (retention deletes whole sessions) become
 * tombstones; tombstones older than TOMBSTONE_TTL_MS are deleted for good and `purged_seq`
 * records the newest of them, so an index that had not read them yet reloads instead.
 * Returns the number of new tombstones.
 */
export async function pruneEmbeddings(database: ObserveDatabase, now: number): Promise<number> {
  const { db } = database;
  let tombstoned = 0;
  for (;;) {
    // Sessions that have vectors but no longer exist, from the (session_id, deleted) index alone.
    const orphans = await db
      .selectFrom('embeddings')
      .select('session_id')
      .where('deleted', '=', 0)
      .where((eb) => eb.not(eb.exists(eb.selectFrom('sessions').select('sessions.id').whereRef('sessions.id', '=', 'embeddings.session_id'))))
      .groupBy('session_id')
      .limit(100)
      .execute();
    if (orphans.length === 0) break;
    const keys = await db
      .selectFrom('embeddings')
      .select(['source_type', 'source_id'])
      .where(
        'session_id',
        'in',
        orphans.map((o) => o.session_id),
      )
      .where('deleted', '=', 0)
      .execute();
    for (let i = 0; i < keys.length; i += 1000) {
      tombstoned += await db.transaction().execute((trx) => tombstone(trx, keys.slice(i, i + 1000), now));
    }
    if (orphans.length < 100) break;
  }
  await db.transaction().execute(async (trx) => {
    const cutoff = now - TOMBSTONE_TTL_MS;
    const old = await trx
      .selectFrom('embeddings')
      .select((eb) => eb.fn.max<number | null>('updated_seq').as('max'))
      .where('deleted', '=', 1)
      .where('last_ts', '<', cutoff)
      .executeTakeFirst();
    if (old?.max === null || old?.max === undefined) return;
    // The counter row first: the same lock order as every other embeddings write.
    await forUpdate(trx.selectFrom('embedding_meta').select('id').where('id', '=', 1), database.dialect).execute();
    await trx.deleteFrom('embeddings').where('deleted', '=', 1).where('last_ts', '<', cutoff).execute();
    await trx
      .updateTable('embedding_meta')
      .set((eb) => ({
        purged_seq: sql<number>`case when ${eb.ref('purged_seq')} > ${Number(old.max)} then ${eb.ref('purged_seq')} else ${Number(old.max)} end`,
      }))
      .where('id', '=', 1)
      .execute();
  });
  return tombstoned;
}

/** The write-order counter and purge mark (one cheap read per search). */
export async function readMeta(database: ObserveDatabase): Promise<{ lastSeq: number; purgedSeq: number }> {
  const row = await database.db.selectFrom('embedding_meta').select(['last_seq', 'purged_seq']).where('id', '=', 1).executeTakeFirstOrThrow();
  return { lastSeq: Number(row.last_seq), purgedSeq: Number(row.purged_seq) };
}

export type ChangedRow = Pick<
  EmbeddingRow,
  'source_type' | 'source_id' | 'agent_id' | 'session_id' | 'user_id' | 'ts' | 'last_ts' | 'dims' | 'vector' | 'updated_seq' | 'deleted'
>;

/** Rows of `model` written after `afterSeq`, in write order. */
export async function readChanges(database: ObserveDatabase, model: string, afterSeq: number, limit: number): Promise<ChangedRow[]> {
  return database.db
    .selectFrom('embeddings')
    .select(['source_type', 'source_id', 'agent_id', 'session_id', 'user_id', 'ts', 'last_ts', 'dims', 'vector', 'updated_seq', 'deleted'])
    .where('model', '=', modelKey(model))
    .where('updated_seq', '>', afterSeq)
    .orderBy('updated_seq')
    .limit(limit)
    .execute();
}

/** The columns eventDetails reads. */
export const EMBEDDED_EVENT_COLUMNS = ['id', 'session_id', 'agent_id', 'event_type', 'severity', 'ts', 'payload', 'tool_name', 'model'] as const;

/**
 * The events a drain embeds, by id; given their session's start (the partition key, carried by the
 * queue row), PostgreSQL plans only that week's partition instead of probing every partition's key.
 */
export function embeddedEventsQuery(db: Kysely<ObserveSchema>, ids: readonly string[], sessionStart: number | null) {
  const read = db.selectFrom('events').select(EMBEDDED_EVENT_COLUMNS).where('id', 'in', ids);
  return sessionStart === null ? read : read.where('session_start', '=', sessionStart);
}

export interface SourceDetails {
  /** What a result shows (cut to STORED_TEXT_CHARS). */
  text: string;
  /** What the vector was computed from, as far as it is known (a session's summary is stored cut). */
  embedded: string;
  metadata: Record<string, unknown>;
}

/**
 * Text and metadata of the given sources: a session's as stored with its vector (its summary reads
 * many events); an event's built from the event itself (eventDetails), which is stored once.
 * Sources deleted since (retention) are missing from the answer.
 */
export async function readDetails(
  database: ObserveDatabase,
  keys: readonly { sourceType: EmbeddingRow['source_type']; sourceId: string }[],
): Promise<Map<string, SourceDetails>> {
  const details = new Map<string, SourceDetails>();
  const sessionIds = keys.filter((k) => k.sourceType === 'session').map((k) => k.sourceId);
  if (sessionIds.length > 0) {
    const rows = await database.db
      .selectFrom('embeddings')
      .select(['source_id', 'text', 'metadata'])
      .where('source_type', '=', 'session')
      .where('source_id', 'in', sessionIds)
      .where('deleted', '=', 0)
      .execute();
    for (const row of rows) {
      details.set(`session:${row.source_id}`, { text: row.text, embedded: row.text, metadata: JSON.parse(row.metadata) as Record<string, unknown> });
    }
  }
  const eventIds = keys.filter((k) => k.sourceType === 'event').map((k) => k.sourceId);
  if (eventIds.length > 0) {
    const events = await database.db.selectFrom('events').select(EMBEDDED_EVENT_COLUMNS).where('id', 'in', eventIds).execute();
    for (const event of events) {
      const detail = eventDetails(event);
      if (detail) {
        details.set(`event:${event.id}`, {
          text: truncate(detail.text, STORED_TEXT_CHARS),
          embedded: truncate(detail.text, MAX_EMBED_CHARS),
          metadata: detail.metadata,
        });
      }
    }
  }
  return details;
}

/** Live vectors stored for the model. */
export async function countVectors(database: ObserveDatabase, model: string): Promise<number> {
  const row = await database.db
    .selectFrom('embeddings')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('model', '=', modelKey(model))
    .where('deleted', '=', 0)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
