// The redaction feature's migration steps (src/migrations.ts collects every feature's in name order
// after the frozen history). A step imports no other feature's code.
import { epochMsType, type MigrationStep } from '@vigil/platform';

export const redactionMigrations: Record<string, MigrationStep> = {
  async '0032_redaction_rules'(db) {
    await db.schema
      .createTable('redaction_rules')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('path', 'text')
      .addColumn('pattern', 'text')
      .addColumn('flags', 'text')
      .addColumn('label', 'text', (c) => c.notNull())
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .addColumn('updated_at', epochMsType, (c) => c.notNull())
      .execute();
  },
};
