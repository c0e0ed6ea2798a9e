// The leaves of a committing batch: its events' and its writers' (events/writer.ts,
// docs/audit.md#who-wrote-an-event).
import { newId, type LeafInput } from '@vigil/platform';
import type { Transaction } from 'kysely';
import { writerLeafBody, type EventRow } from '../events/index.ts';
import type { ObserveSchema } from '../schema.ts';

interface LeafAppender {
  readonly name: string;
  append(trx: Transaction<ObserveSchema>, leaves: readonly LeafInput[]): Promise<number>;
}

/**
 * Per writer (a group commit can hold several), its events' leaves (their 32-byte chain hashes)
 * and then its writer leaf, whose body is stored for verifiers to read. One more leaf and one more
 * row per writer and batch, not per event.
 */
export async function appendEventLeaves(trx: Transaction<ObserveSchema>, log: LeafAppender, rows: readonly EventRow[]): Promise<void> {
  const byWriter = new Map<string, EventRow[]>();
  for (const row of rows) {
    const writer = row.written_by ?? 'none';
    const group = byWriter.get(writer);
    if (group === undefined) byWriter.set(writer, [row]);
    else group.push(row);
  }
  const leaves: LeafInput[] = [];
  const writers: { item_id: string; offset: number; body: string }[] = [];
  for (const [writtenBy, group] of byWriter) {
    for (const row of group) leaves.push({ itemId: row.id, scopeId: row.session_id, data: row.hash });
    const body = writerLeafBody(
      log.name,
      writtenBy,
      group.map((row) => row.hash.toString('hex')),
    );
    const itemId = newId();
    writers.push({ item_id: itemId, offset: leaves.length, body });
    leaves.push({ itemId, scopeId: null, data: Buffer.from(body, 'utf8') });
  }
  const start = await log.append(trx, leaves);
  await trx
    .insertInto('audit_writer_leaves')
    .values(writers.map((writer) => ({ item_id: writer.item_id, leaf_idx: start + writer.offset, body: writer.body })))
    .execute();
}
