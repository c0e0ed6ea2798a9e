// How an event's writer is stored (the `written_by` column, events/writer.ts): an API key's
// `key:<id>` (40 characters, most events' writer) as `k` and the id's 16 bytes in base64url (23);
// every other writer as itself. Every API, the writer check and the audit walk show the writer.
import type { MigrationDb } from '@vigil/platform';
import { sql } from 'kysely';

const KEY_WRITER = /^key:([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})$/;
/** No writer's name has this form (`key:`, `webhook:`, `service_token`, `server`, `none`), so a stored value reads back as one writer only. */
const STORED_KEY_WRITER = /^k[A-Za-z0-9_-]{22}$/;

/** The stored form of a writer (migration 0045 converted the rows stored before). */
export function storedWriter(writtenBy: string): string {
  const key = KEY_WRITER.exec(writtenBy);
  return key === null ? writtenBy : `k${Buffer.from(key.slice(1).join(''), 'hex').toString('base64url')}`;
}

/** The writer a stored value names: an API key's written back as `key:<id>`, anything else (a writer of another kind, an edit) as stored. */
export function writerOfStored(stored: string | null): string | null {
  if (stored === null || !STORED_KEY_WRITER.test(stored)) return stored;
  const hex = Buffer.from(stored.slice(1), 'base64url').toString('hex');
  return `key:${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Writers converted per statement by compactKeyWriters. */
const WRITERS_PER_UPDATE = 100;

/** Migration step body (0045): every event's API-key writer in its stored form, one pass over the events per hundred keys. */
export async function compactKeyWriters(db: MigrationDb): Promise<void> {
  const writers = await db.selectFrom('events').select('written_by').distinct().where('written_by', 'like', 'key:%').execute();
  const changes = writers.map((row) => String(row.written_by)).filter((writer) => storedWriter(writer) !== writer);
  for (let i = 0; i < changes.length; i += WRITERS_PER_UPDATE) {
    const chunk = changes.slice(i, i + WRITERS_PER_UPDATE);
    const cases = sql.join(
      chunk.map((writer) => sql`when ${writer} then ${storedWriter(writer)}`),
      sql` `,
    );
    await db
      .updateTable('events')
      .set({ written_by: sql`case written_by ${cases} end` })
      .where('written_by', 'in', chunk)
      .execute();
  }
}
