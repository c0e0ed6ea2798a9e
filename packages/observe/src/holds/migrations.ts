// The holds feature's migration steps (src/migrations.ts collects every feature's in name order
// after the frozen history). A step imports no other feature's code.
import { epochMsType, type MigrationStep } from '@vigil/platform';

export const holdsMigrations: Record<string, MigrationStep> = {
  async '0034_legal_holds'(db) {
    await db.schema
      .createTable('legal_holds')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('scope', 'text', (c) => c.notNull())
      .addColumn('target_id', 'text', (c) => c.notNull())
      .addColumn('reason', 'text', (c) => c.notNull())
      .addColumn('placed_by', 'text', (c) => c.notNull())
      .addColumn('placed_at', epochMsType, (c) => c.notNull())
      .addColumn('released_at', epochMsType)
      .addColumn('released_by', 'text')
      .addColumn('release_reason', 'text')
      .execute();
    await db.schema.createIndex('legal_holds_target').on('legal_holds').columns(['scope', 'target_id', 'released_at']).execute();
  },
};
