// The erasure feature's migration steps (src/migrations.ts collects every feature's in name order
// after the frozen history). A step imports no other feature's code.
import { epochMsType, type MigrationStep } from '@vigil/platform';

export const erasureMigrations: Record<string, MigrationStep> = {
  /** The subject index (requests created before it are not in it: docs/guide/erasure.md) and the erasure leaves. */
  async '0025_request_subjects_and_erasures'(db) {
    await db.schema
      .createTable('request_subjects')
      .addColumn('subject_hash', 'text', (c) => c.notNull())
      .addColumn('request_id', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('request_subjects_pk', ['subject_hash', 'request_id'])
      .execute();
    await db.schema
      .createTable('audit_erasures')
      .addColumn('erasure_id', 'text', (c) => c.primaryKey())
      .addColumn('leaf_idx', 'bigint', (c) => c.notNull())
      .addColumn('subject_hash', 'text', (c) => c.notNull())
      .addColumn('body', 'text', (c) => c.notNull())
      .addColumn('signature', 'text', (c) => c.notNull())
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .execute();
    // GET /api/audit/erasures?from&to (an evidence pack's deletion receipts of a period): a range of this index, in the list's order.
    await db.schema.createIndex('audit_erasures_created').on('audit_erasures').columns(['created_at', 'leaf_idx']).execute();
  },
};
