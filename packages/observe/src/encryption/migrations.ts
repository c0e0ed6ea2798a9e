// The encryption feature's migration steps (src/migrations.ts collects every feature's in name order
// after the frozen history). A step imports no other feature's code.
import { epochMsType, type MigrationStep } from '@vigil/platform';
import { sql } from 'kysely';

export const encryptionMigrations: Record<string, MigrationStep> = {
  /** The wrapped data keys of crypto-shredding, in the events' database until 0043 (they now live in the key store). */
  async '0037_data_keys'(db) {
    await db.schema
      .createTable('data_keys')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('owner', 'text', (c) => c.notNull().unique())
      .addColumn('wrapped', 'text', (c) => c.notNull())
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .execute();
  },
  /** Destructions of data keys an erasure committed and the key store has not done yet. */
  async '0042_data_key_destructions'(db) {
    await db.schema
      .createTable('data_key_destructions')
      .addColumn('key_id', 'text', (c) => c.primaryKey())
      .addColumn('erasure_id', 'text', (c) => c.notNull())
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .execute();
    await db.schema.createIndex('data_key_destructions_erasure').on('data_key_destructions').column('erasure_id').execute();
  },
  /**
   * The data keys leave the events' database for the key store (DATA_KEY_STORE). An empty
   * `data_keys` is dropped here; one holding keys is moved into the store and dropped at the next
   * start with ENCRYPTION_KEY_FILE (EventSealer.start), which needs the store this step cannot reach.
   */
  async '0043_encryption_state'(db) {
    await db.schema
      .createTable('encryption_state')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('key_store_id', 'text', (c) => c.notNull())
      .addColumn('master_check', 'text', (c) => c.notNull())
      .execute();
    const stored = await sql<{ id: string }>`select id from data_keys limit 1`.execute(db);
    if (stored.rows.length === 0) await db.schema.dropTable('data_keys').execute();
  },
};
