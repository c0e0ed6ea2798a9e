// The chat feature's migration steps after the frozen history (src/migrations.ts collects every
// feature's in name order).
import { epochMsType, type MigrationStep } from '@vigil/platform';

export const chatMigrations: Record<string, MigrationStep> = {
  /** The chat interactions already received (chat/seen.ts), so a captured click replayed within its signature window is refused. */
  async '0011_chat_seen_interactions'(db) {
    await db.schema
      .createTable('chat_seen_interactions')
      .addColumn('digest', 'text', (c) => c.primaryKey())
      .addColumn('expires_at', epochMsType, (c) => c.notNull())
      .execute();
    // The sweep deletes the expired rows, oldest first.
    await db.schema.createIndex('chat_seen_interactions_expires').on('chat_seen_interactions').columns(['expires_at']).execute();
  },
};
