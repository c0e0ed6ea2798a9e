// How a writer leaf's body is stored (audit_writer_leaves.body, docs/audit.md#who-wrote-an-event):
// its data is canonical JSON naming each event's hash in hex, 67 bytes per event; stored, it is
// the hashes' 32 bytes and the writer, and its JSON is written again exactly when read.
import type { DialectName, MigrationDb } from '@vigil/platform';
import { sql } from 'kysely';
import { parseWriterLeaf, writerLeafBody } from './writer-leaf.ts';

/** The first byte of the compact form: JSON text never starts with a zero byte, so a body stored as its UTF-8 text reads as itself. */
const COMPACT = 0;
const HASH_BYTES = 32;
/** The zero byte and the hash count (32-bit, big-endian). */
const HEADER_BYTES = 5;

/** The stored form of the writer leaf `writerLeafBody(log, writtenBy, hashes)`: 0x00, the count, the hashes' bytes, the writer's UTF-8. */
export function storedWriterLeaf(writtenBy: string, hashes: readonly Buffer[]): Buffer {
  const writer = Buffer.from(writtenBy, 'utf8');
  const stored = Buffer.allocUnsafe(HEADER_BYTES + hashes.length * HASH_BYTES + writer.length);
  stored[0] = COMPACT;
  stored.writeUInt32BE(hashes.length, 1);
  hashes.forEach((hash, i) => hash.copy(stored, HEADER_BYTES + i * HASH_BYTES));
  writer.copy(stored, HEADER_BYTES + hashes.length * HASH_BYTES);
  return stored;
}

/**
 * The leaf data (text) a stored body holds for the log `log`: the compact form's JSON written
 * again, or the text itself (bodies stored as text by older versions, or by an edit outside
 * Vigil). Bytes that are not the compact form read as their UTF-8 text, so, like any edited body,
 * they are not their leaf's data and verification says so.
 */
export function writerLeafText(stored: Buffer | string, log: string): string {
  if (!Buffer.isBuffer(stored)) return String(stored);
  if (stored.length < HEADER_BYTES || stored[0] !== COMPACT) return stored.toString('utf8');
  const count = stored.readUInt32BE(1);
  const writerAt = HEADER_BYTES + count * HASH_BYTES;
  if (writerAt > stored.length) return stored.toString('utf8');
  const hashes: string[] = new Array(count);
  for (let i = 0; i < count; i++) hashes[i] = stored.toString('hex', HEADER_BYTES + i * HASH_BYTES, HEADER_BYTES + (i + 1) * HASH_BYTES);
  return writerLeafBody(log, stored.toString('utf8', writerAt), hashes);
}

/** Writer leaves converted per statement pair by compactWriterLeaves. */
const CONVERT_PAGE = 500;

/**
 * Migration step body (0045): the writer leaves' bodies in the compact form. PostgreSQL's column
 * becomes bytea (a text body as its UTF-8 bytes, which reads as itself); SQLite's keeps its type
 * (text affinity stores a BLOB as given). Only a body that is exactly the JSON the compact form
 * writes again is converted: anything else (an edit outside Vigil) keeps its bytes, so it is still
 * not its leaf's data after the migration.
 */
export async function compactWriterLeaves(db: MigrationDb, dialect: DialectName, log: string): Promise<void> {
  if (dialect === 'postgres') await sql`alter table audit_writer_leaves alter column body type bytea using convert_to(body, 'UTF8')`.execute(db);
  let after = -1;
  for (;;) {
    const rows = (await db
      .selectFrom('audit_writer_leaves')
      .select(['leaf_idx', 'body'])
      .where('leaf_idx', '>', after)
      .orderBy('leaf_idx')
      .limit(CONVERT_PAGE)
      .execute()) as { leaf_idx: number | string; body: Buffer | string }[];
    if (rows.length === 0) return;
    for (const row of rows) {
      const text = writerLeafText(row.body, log);
      const parsed = parseWriterLeaf(text, log);
      if (parsed === undefined || writerLeafBody(log, parsed.writtenBy, parsed.events) !== text) continue;
      const stored = storedWriterLeaf(
        parsed.writtenBy,
        parsed.events.map((hash) => Buffer.from(hash, 'hex')),
      );
      if (Buffer.isBuffer(row.body) && row.body.equals(stored)) continue;
      await db.updateTable('audit_writer_leaves').set({ body: stored }).where('leaf_idx', '=', row.leaf_idx).execute();
    }
    after = Number(rows[rows.length - 1]!.leaf_idx);
  }
}
