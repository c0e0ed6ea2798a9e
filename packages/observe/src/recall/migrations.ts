// The recall feature's migration steps from 0024 on (src/migrations.ts collects every feature's in name order).
import { epochMsType, type MigrationStep } from '@vigil/platform';
import { modelKey } from './store.ts';

export const recallMigrations: Record<string, MigrationStep> = {
  /** Each vector's model stored as its key (store.ts modelKey), in the rows and their (model, updated_seq) index: 24 fewer bytes per vector. */
  async '0048_embedding_model_keys'(db) {
    const models = await db.selectFrom('embeddings').select('model').distinct().execute();
    for (const { model } of models) {
      const key = modelKey(String(model));
      if (key !== model) await db.updateTable('embeddings').set({ model: key }).where('model', '=', model).execute();
    }
  },
  /**
   * An event row of the queue carries its session's `session_start`, the events' partition key on
   * PostgreSQL, so the drain reads the events it embeds from their week's partition instead of
   * probing every partition's key index for each id. Rows queued before have none and are read as before.
   */
  async '0051_embedding_queue_session_start'(db) {
    await db.schema.alterTable('embedding_queue').addColumn('session_start', epochMsType).execute();
  },
};
