// The encryption feature's migration steps (src/migrations.ts collects every feature's in name order
// after the frozen history). A step imports no other feature's code.
import { epochMsType, type MigrationStep } from '@vigil/platform';

export const encryptionMigrations: Record<string, MigrationStep> = {
  /** The wrapped data keys of crypto-shredding (docs/guide/erasure.md#crypto-shredding). */
  async '0037_data_keys'(db) {
    await db.schema
      .createTable('data_keys')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('owner', 'text', (c) => c.notNull().unique())
      .addColumn('wrapped', 'text', (c) => c.notNull())
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .execute();
  },
};
