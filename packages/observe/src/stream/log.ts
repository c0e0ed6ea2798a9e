import { BulkInserter, DAY_MS, PreparedQuery, type DialectName } from '@vigil/platform';
import type { Kysely, Transaction } from 'kysely';
import { z } from 'zod';
import type { EventType, SessionAppend } from '../events/index.ts';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import type { EventRow } from '../events/index.ts';

/**
 * The live stream's commit log. Each ingest transaction, as its last writes, takes the next
 * positions from the `stream_head` row (whose row lock it then holds until it commits, so
 * positions are handed out in commit order on PostgreSQL too) and records, per session, which
 * events it appended. A stream's cursor is a position, or a position and a seq within it; reading
 * "every event after the cursor" is then exact: nothing can commit behind a cursor.
 */

/** How long the log keeps a position: a stream resumes from a Last-Event-ID at most this old. */
export const REPLAY_WINDOW_MS = DAY_MS;

const advanceHead = new PreparedQuery((db: Kysely<ObserveSchema>, _dialect: DialectName, count: number) =>
  db
    .updateTable('stream_head')
    .set((eb) => ({ last_pos: eb('last_pos', '+', count) }))
    .where('id', '=', 1)
    .returning('last_pos'),
);

const logInserter = new BulkInserter<ObserveSchema, 'stream_log'>('stream_log', {
  pos: 'bigint',
  session_id: 'text',
  first_seq: 'integer',
  last_seq: 'integer',
  min_ts: 'bigint',
  max_ts: 'bigint',
  created_at: 'bigint',
});

/** Records the transaction's appends at the next positions (returned); called last in the ingest transaction, to hold the head's lock briefly. */
export async function appendToStreamLog(
  trx: Transaction<ObserveSchema>,
  dialect: DialectName,
  appends: readonly SessionAppend[],
  receivedAt: number,
): Promise<{ first: number; last: number }> {
  const head = await advanceHead.first(trx, dialect, appends.length);
  const first = head!.last_pos - appends.length + 1;
  await logInserter.insert(
    trx,
    dialect,
    appends.map((a, i) => ({
      pos: first + i,
      session_id: a.sessionId,
      first_seq: a.firstSeq,
      last_seq: a.lastSeq,
      min_ts: a.minTs,
      max_ts: a.maxTs,
      created_at: receivedAt,
    })),
  );
  return { first, last: head!.last_pos };
}

/** Where a stream stands: every event up to log position `pos` was read, or only up to `seq` within `pos`. */
export interface StreamCursor {
  pos: number;
  seq: number | null;
}

/** `<pos>` or `<pos>-<seq>`: the `id:` of every stream message. */
const CURSOR_PATTERN = /^(0|[1-9]\d{0,14})(?:-(0|[1-9]\d{0,9}))?$/;

export const cursorText = z.string().regex(CURSOR_PATTERN, 'must be an id the stream sent: <position> or <position>-<seq>');

export function parseCursor(text: string): StreamCursor {
  const match = CURSOR_PATTERN.exec(text)!;
  return { pos: Number(match[1]), seq: match[2] === undefined ? null : Number(match[2]) };
}

export function formatCursor(cursor: StreamCursor): string {
  return cursor.seq === null ? String(cursor.pos) : `${cursor.pos}-${cursor.seq}`;
}

/** The last position handed out: every position up to it is committed (they commit in order). */
export async function streamHead(database: ObserveDatabase): Promise<number> {
  const row = await database.db.selectFrom('stream_head').select('last_pos').where('id', '=', 1).executeTakeFirstOrThrow();
  return row.last_pos;
}

/**
 * Whether a stream can continue from `cursor`: `unknown` when it is ahead of the head (not a
 * position of this database), `expired` when positions after it were pruned (older than
 * REPLAY_WINDOW_MS). Pruning removes a prefix of positions, so the oldest one left tells.
 */
export async function resumeVerdict(database: ObserveDatabase, cursor: StreamCursor, head: number): Promise<'ok' | 'expired' | 'unknown'> {
  if (cursor.pos > head) return 'unknown';
  const oldest = await database.db.selectFrom('stream_log').select('pos').orderBy('pos').limit(1).executeTakeFirst();
  const firstKept = oldest?.pos ?? head + 1;
  // A cursor inside a position needs that position; a whole one needs the next.
  const needed = cursor.seq === null ? cursor.pos + 1 : cursor.pos;
  return needed < firstKept ? 'expired' : 'ok';
}

export interface StreamFilters {
  sessionId?: string;
  agentId?: string;
  eventType?: EventType[];
}

export interface StreamEventRow extends EventRow {
  stream_pos: number;
}

/**
 * The events after `cursor` up to position `head` that match the filters, in commit order
 * (position, then seq), at most `limit`.
 */
export async function readStreamPage(
  database: ObserveDatabase,
  cursor: StreamCursor,
  head: number,
  filters: StreamFilters,
  limit: number,
): Promise<StreamEventRow[]> {
  let query = database.db
    .selectFrom('stream_log as l')
    // The timestamp range lets the (session_id, ts, seq) index find the transaction's events.
    .innerJoin('events as e', (join) =>
      join
        .onRef('e.session_id', '=', 'l.session_id')
        .onRef('e.ts', '>=', 'l.min_ts')
        .onRef('e.ts', '<=', 'l.max_ts')
        .onRef('e.seq', '>=', 'l.first_seq')
        .onRef('e.seq', '<=', 'l.last_seq'),
    )
    .selectAll('e')
    .select('l.pos as stream_pos')
    .where('l.pos', '<=', head);
  const { pos, seq } = cursor;
  query = seq === null ? query.where('l.pos', '>', pos) : query.where('l.pos', '>=', pos).where((eb) => eb.or([eb('l.pos', '>', pos), eb('e.seq', '>', seq)]));
  if (filters.sessionId !== undefined) query = query.where('l.session_id', '=', filters.sessionId);
  if (filters.agentId !== undefined) query = query.where('e.agent_id', '=', filters.agentId);
  if (filters.eventType !== undefined) query = query.where('e.event_type', 'in', filters.eventType);
  return query.orderBy('l.pos').orderBy('e.seq').limit(limit).execute();
}

/** Drops positions older than the replay window: always a prefix (instances' clocks may differ a little). */
export async function pruneStreamLog(database: ObserveDatabase, now: number): Promise<void> {
  // The head is read first: a position committed after it is never below it.
  const head = await streamHead(database);
  const firstKept = await database.db
    .selectFrom('stream_log')
    .select('pos')
    .where('created_at', '>=', now - REPLAY_WINDOW_MS)
    .orderBy('pos')
    .limit(1)
    .executeTakeFirst();
  await database.db
    .deleteFrom('stream_log')
    .where('pos', '<', firstKept?.pos ?? head + 1)
    .execute();
}
