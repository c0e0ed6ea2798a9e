// The erasure feature's migration steps (src/migrations.ts collects every feature's in name order
// after the frozen history). A step imports no other feature's code.
import { epochMsType, type MigrationDb, type MigrationStep } from '@vigil/platform';
import { sql } from 'kysely';

export const erasureMigrations: Record<string, MigrationStep> = {
  /** The subject index (events stored before it are not in it: docs/guide/erasure.md) and the erasure leaves. */
  async '0035_event_subjects_and_erasures'(db) {
    await db.schema
      .createTable('event_subjects')
      .addColumn('subject_hash', 'text', (c) => c.notNull())
      .addColumn('event_id', 'text', (c) => c.notNull())
      .addColumn('session_id', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('event_subjects_pk', ['subject_hash', 'event_id'])
      .execute();
    await db.schema.createIndex('event_subjects_session').on('event_subjects').columns(['session_id']).execute();
    await db.schema
      .createTable('audit_erasures')
      .addColumn('erasure_id', 'text', (c) => c.primaryKey())
      .addColumn('leaf_idx', 'bigint', (c) => c.notNull())
      .addColumn('subject_hash', 'text', (c) => c.notNull())
      .addColumn('body', 'text', (c) => c.notNull())
      .addColumn('signature', 'text', (c) => c.notNull())
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .execute();
  },
  /** The cursor of the subject index's backfill (erasure/backfill.ts): events stored before 0035 are indexed from the start. */
  async '0038_subject_index_backfill'(db) {
    await db.schema
      .createTable('subject_index_backfill')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('after_id', 'text', (c) => c.notNull())
      .addColumn('done_at', epochMsType)
      .execute();
    await db.insertInto('subject_index_backfill').values({ name: 'events', after_id: '', done_at: null }).execute();
  },
  /** GET /api/audit/erasures?from&to (an evidence pack's deletion receipts of a period): a range of this index, in the list's order. */
  async '0039_audit_erasures_created'(db) {
    await db.schema.createIndex('audit_erasures_created').on('audit_erasures').columns(['created_at', 'leaf_idx']).execute();
  },
  /** The backfill ends at the events stored now (boundSubjectBackfill): every later one is indexed at ingest. */
  '0049_subject_backfill_bound': boundSubjectBackfill,
};

/**
 * Migration step body (observe 0049): the subject index's backfill reads the events up to the
 * newest stored when it runs (`until_id`), and is done at once where there are none (a new
 * database). Every event stored later was indexed at its ingest; the backfill used to read those
 * too, without end (every 10 s, 10,000 events' payloads parsed, for as long as events came in).
 */
export async function boundSubjectBackfill(db: MigrationDb): Promise<void> {
  await db.schema.alterTable('subject_index_backfill').addColumn('until_id', 'text').execute();
  await sql`update subject_index_backfill set until_id = (select max(id) from events) where done_at is null`.execute(db);
  await sql`update subject_index_backfill set done_at = ${Date.now()} where done_at is null and until_id is null`.execute(db);
}
