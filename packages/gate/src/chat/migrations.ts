import { epochMsType, type MigrationStep } from '@vigil/platform';

/** Migration 0007: the requests' chat messages (one per request and platform channel). */
export const createChatMessageTable: MigrationStep = async (db) => {
  await db.schema
    .createTable('chat_messages')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addColumn('platform', 'text', (c) => c.notNull())
    .addColumn('channel', 'text', (c) => c.notNull())
    .addColumn('message_id', 'text')
    .addColumn('created_at', epochMsType, (c) => c.notNull())
    .execute();
  // Every transition of a request looks up its messages to edit them.
  await db.schema.createIndex('chat_messages_request').on('chat_messages').columns(['request_id']).execute();
};
