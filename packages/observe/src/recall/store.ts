import { forUpdate, type DialectName } from '@vigil/platform';
import { CompiledQuery, sql, type Kysely, type Transaction } from 'kysely';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import type { EmbeddingRow } from './tables.ts';
import { MAX_EMBED_CHARS } from './embedder.ts';
import { eventDetails, STORED_TEXT_CHARS, truncate } from './text.ts';

/** Bytes before the codes of a stored vector: the Float32 scale, little-endian. */
const SCALE_BYTES = 4;
const bitmapBytes = (dims: number): number => Math.ceil(dims / 8);

/**
 * A vector as stored: int8 scalar quantisation with one scale per vector, value ≈ code × scale
 * with scale = max |value| / 127. On unit vectors a cosine computed from the codes differs from
 * the exact one by a few thousandths (search re-scores its best candidates exactly:
 * search.ts rescore). Two layouts, whichever is shorter:
 * - dense: the scale (Float32 little-endian), then one signed byte per dimension (4 + dims bytes);
 * - sparse: the scale, a bitmap of the non-zero codes (bit i of byte i/8, dims/8 bytes), then the
 *   non-zero codes in dimension order. The local embedder hashes a short text's features into
 *   few of its 512 buckets (a one-line tool call or answer: about 80), so a short text's vector
 *   takes ~150 bytes instead of 516.
 * Either decodes to the same values; a dense vector is exactly 4 + dims bytes long.
 */
export function encodeVector(vector: Float32Array): Buffer {
  const dims = vector.length;
  let max = 0;
  for (let i = 0; i < dims; i++) max = Math.max(max, Math.abs(vector[i]!));
  // The scale as stored (Float32): codes are rounded against it, so decoding reproduces what was quantised.
  const scale = Math.fround(max / 127);
  if (codeScratch.length < dims) codeScratch = new Int8Array(dims);
  const codes = codeScratch;
  let nonZero = 0;
  for (let i = 0; i < dims; i++) {
    const code = scale > 0 ? Math.max(-127, Math.min(127, Math.round(vector[i]! / scale))) : 0;
    codes[i] = code;
    if (code !== 0) nonZero += 1;
  }
  if (bitmapBytes(dims) + nonZero >= dims) {
    const stored = Buffer.alloc(SCALE_BYTES + dims);
    stored.writeFloatLE(scale, 0);
    stored.set(codes.subarray(0, dims), SCALE_BYTES);
    return stored;
  }
  const stored = Buffer.alloc(SCALE_BYTES + bitmapBytes(dims) + nonZero);
  stored.writeFloatLE(scale, 0);
  let at = SCALE_BYTES + bitmapBytes(dims);
  for (let i = 0; i < dims; i++) {
    if (codes[i] === 0) continue;
    stored[SCALE_BYTES + (i >> 3)]! |= 1 << (i & 7);
    stored[at++] = codes[i]! & 0xff;
  }
  return stored;
}

/** encodeVector's codes before they are laid out (it never awaits, so one buffer serves every call). */
let codeScratch = new Int8Array(512);

/** Whether `stored` is a vector of `dims` dimensions in one of encodeVector's layouts. */
export function isStoredVector(stored: Uint8Array, dims: number): boolean {
  if (stored.byteLength === SCALE_BYTES + dims) return true;
  const codes = stored.byteLength - SCALE_BYTES - bitmapBytes(dims);
  if (codes < 0 || codes >= dims) return false;
  let set = 0;
  for (let i = SCALE_BYTES; i < SCALE_BYTES + bitmapBytes(dims); i++) for (let byte = stored[i]!; byte !== 0; byte &= byte - 1) set += 1;
  return set === codes;
}

/**
 * Copies the int8 codes of a stored vector of `dims` dimensions into `target` (at `offset`; a
 * sparse vector's zeros are written too) and returns its scale: value ≈ code × scale.
 */
export function readCodesInto(stored: Uint8Array, dims: number, target: Int8Array, offset: number): number {
  const scale = new DataView(stored.buffer, stored.byteOffset, SCALE_BYTES).getFloat32(0, true);
  const codes = new Int8Array(stored.buffer, stored.byteOffset, stored.byteLength);
  if (stored.byteLength === SCALE_BYTES + dims) {
    target.set(codes.subarray(SCALE_BYTES), offset);
    return scale;
  }
  // Only the set bits are visited, lowest first (dimension order), so a short text's ~80 codes cost ~80 steps.
  target.fill(0, offset, offset + dims);
  let at = SCALE_BYTES + bitmapBytes(dims);
  for (let byte = 0; byte < bitmapBytes(dims); byte++) {
    for (let bits = stored[SCALE_BYTES + byte]!; bits !== 0; bits &= bits - 1) {
      target[offset + byte * 8 + 31 - Math.clz32(bits & -bits)] = codes[at++]!;
    }
  }
  return scale;
}

/** Dequantises a stored vector of `dims` dimensions. */
export function decodeVector(stored: Uint8Array, dims: number): Float32Array {
  const codes = new Int8Array(dims);
  const scale = readCodesInto(stored, dims, codes, 0);
  return Float32Array.from(codes, (code) => code * scale);
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
          parameters[p++] = column === 'updated_seq' ? seq++ : column === 'deleted' ? 0 : row[column];
        }
      }
      await trx.executeQuery(CompiledQuery.raw(upsertStatement(trx, dialect, size), parameters));
      offset += size;
    }
  }
}

/** How long a tombstone is kept before it is deleted for good (an index that slept longer reloads). */
export const TOMBSTONE_TTL_MS = 24 * 3_600_000;

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
    .where('model', '=', model)
    .where('updated_seq', '>', afterSeq)
    .orderBy('updated_seq')
    .limit(limit)
    .execute();
}

/** The columns eventDetails reads. */
export const EMBEDDED_EVENT_COLUMNS = ['id', 'session_id', 'agent_id', 'event_type', 'severity', 'ts', 'payload', 'tool_name', 'model'] as const;

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
    .where('model', '=', model)
    .where('deleted', '=', 0)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
