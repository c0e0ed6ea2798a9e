// The subject index's backfill: events stored before the index existed (migration 0035) are read in
// id order, a page per step, up to the newest event stored when it was bounded (migration 0049;
// every later event was indexed at ingest), and their subjects indexed like ingest indexes new
// ones. Its cursor is a row of `subject_index_backfill`, so a restart or another instance resumes
// where it stopped.
import type { ObserveContext } from '../context.ts';
import { subjectIdsOf, type SubjectPath } from './subject-index.ts';
import type { EventSubjectRow } from './tables.ts';

/** The backfill's row of `subject_index_backfill`. */
export const SUBJECT_BACKFILL = 'events';
/** Events read per page. */
const PAGE = 500;

/**
 * Indexes the next page of events after the cursor (up to its bound) and moves it on; true while
 * events are left. Every event up to the bound is read once, those indexed at ingest too (the rows
 * exist already: nothing is written twice). An erased event's marker names no subject; one erased between the read and
 * the write is indexed, and a later erasure of its subject marks it again under its own leaf.
 */
export async function backfillSubjectPage(ctx: ObserveContext, paths: readonly SubjectPath[]): Promise<boolean> {
  const { db } = ctx.database;
  const state = await db.selectFrom('subject_index_backfill').selectAll().where('name', '=', SUBJECT_BACKFILL).executeTakeFirst();
  if (state === undefined || state.done_at !== null) return false;
  const stored = await db
    .selectFrom('events')
    .select(['id', 'session_id', 'payload', 'metadata'])
    .where('id', '>', state.after_id)
    .$if(state.until_id !== null, (query) => query.where('id', '<=', state.until_id!))
    .orderBy('id')
    .limit(PAGE)
    .execute();
  const rows: EventSubjectRow[] = [];
  const parsesPayload = paths.some((path) => path.root === 'payload');
  for (const event of await ctx.sealer.open(stored)) {
    const payload = parsesPayload ? (JSON.parse(event.payload) as Record<string, unknown>) : {};
    for (const id of subjectIdsOf(paths, payload, event.metadata))
      rows.push({ subject_hash: ctx.subjects.hash(id), event_id: event.id, session_id: event.session_id });
  }
  const done = stored.length < PAGE;
  await db.transaction().execute(async (trx) => {
    for (let i = 0; i < rows.length; i += 300)
      await trx
        .insertInto('event_subjects')
        .values(rows.slice(i, i + 300))
        .onConflict((oc) => oc.columns(['subject_hash', 'event_id']).doNothing())
        .execute();
    await trx
      .updateTable('subject_index_backfill')
      .set({ after_id: stored.at(-1)?.id ?? state.after_id, done_at: done ? ctx.clock.now() : null })
      .where('name', '=', SUBJECT_BACKFILL)
      .execute();
  });
  return !done;
}
