// The leaves of a committing batch: its events' and its writers' (events/writer.ts,
// docs/audit.md#who-wrote-an-event).
import { newId, type LeafInput } from '@vigil/platform';
import type { Transaction } from 'kysely';
import { storedWriterLeaf, writerLeafBody, writerOfStored, type EventRow } from '../events/index.ts';
import type { ObserveSchema } from '../schema.ts';

/** The kinds of an event's leaf and of a writer leaf (the leaves' `kind` column). */
export const EVENT_LEAF = 'event';
export const WRITER_LEAF = 'writer';

interface LeafAppender {
  readonly name: string;
  append(trx: Transaction<ObserveSchema>, leaves: readonly LeafInput[]): Promise<number>;
}

/**
 * The events' leaves (their 32-byte chain hashes) in batch order, each run of events one
 * credential wrote (a request's events; a group commit holds several requests) followed by its
 * writer leaf, whose body is stored for verifiers to read (writer-leaf-store.ts). Runs, not one group per writer: the
 * events' leaves stay in commit order, so a session's leaves stay in seq order. One more leaf and
 * one more row per request at most, not per event.
 */
export async function appendEventLeaves(trx: Transaction<ObserveSchema>, log: LeafAppender, rows: readonly EventRow[]): Promise<void> {
  const leaves: LeafInput[] = [];
  const writers: { item_id: string; offset: number; body: Buffer }[] = [];
  let run: EventRow[] = [];
  const closeRun = (): void => {
    const writtenBy = writerOfStored(run[0]!.written_by) ?? 'none';
    const body = writerLeafBody(
      log.name,
      writtenBy,
      run.map((row) => row.hash.toString('hex')),
    );
    const itemId = newId();
    // Stored compact (the hashes' bytes, not their hex in JSON); the leaf's data is the JSON.
    writers.push({
      item_id: itemId,
      offset: leaves.length,
      body: storedWriterLeaf(
        writtenBy,
        run.map((row) => row.hash),
      ),
    });
    leaves.push({ itemId, scopeId: null, kind: WRITER_LEAF, data: Buffer.from(body, 'utf8') });
    run = [];
  };
  for (const row of rows) {
    if (run.length > 0 && run[0]!.written_by !== row.written_by) closeRun();
    run.push(row);
    leaves.push({ itemId: row.id, scopeId: row.session_id, kind: EVENT_LEAF, data: row.hash });
  }
  if (run.length > 0) closeRun();
  if (writers.length === 0) return;
  const start = await log.append(trx, leaves);
  await trx
    .insertInto('audit_writer_leaves')
    .values(writers.map((writer) => ({ item_id: writer.item_id, leaf_idx: start + writer.offset, body: writer.body })))
    .execute();
}
