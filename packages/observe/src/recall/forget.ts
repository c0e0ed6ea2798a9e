import type { DialectName } from '@vigil/platform';
import type { Transaction } from 'kysely';
import type { ObserveSchema } from '../schema.ts';
import { enqueueEmbeddings } from './queue.ts';
import { tombstoneMany } from './store.ts';

/**
 * An erasure's share of recall, in its transaction: the erased events' vectors and the summaries of
 * their sessions become tombstones (no vector, no text: every index drops them at its next refresh),
 * the events' queued work is dropped, and the sessions are queued to be summarised again from what
 * is left of them.
 */
export async function forgetEmbeddings(
  trx: Transaction<ObserveSchema>,
  dialect: DialectName,
  eventIds: readonly string[],
  sessionIds: readonly string[],
  now: number,
): Promise<void> {
  await tombstoneMany(
    trx,
    [
      ...eventIds.map((id) => ({ source_type: 'event' as const, source_id: id })),
      ...sessionIds.map((id) => ({ source_type: 'session' as const, source_id: id })),
    ],
    now,
  );
  for (let i = 0; i < eventIds.length; i += 500) {
    await trx
      .deleteFrom('embedding_queue')
      .where('source_type', '=', 'event')
      .where('source_id', 'in', eventIds.slice(i, i + 500))
      .execute();
  }
  await enqueueEmbeddings(trx, dialect, [], [...sessionIds].sort(), now);
}
