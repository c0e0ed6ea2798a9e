// The requests feature's migration steps (src/migrations.ts collects every feature's in name order).
// A step imports no other feature's code.
import { sql } from 'kysely';
import { jsonText, type MigrationStep } from '@vigil/platform';

export const requestsMigrations: Record<string, MigrationStep> = {
  /**
   * GET /api/requests?agentId= (an evidence pack of one agent): the agent lives in the context's
   * JSON, so the index is on the very expression the list filters with (store.ts listRequests),
   * then the list's order. The period filters (from, to) read requests_created.
   */
  async '0023_requests_agent_created'(db, dialect) {
    await db.schema
      .createIndex('requests_agent_created')
      .on('requests')
      .expression(sql`${jsonText(dialect, 'context', 'agentId')}, created_at, id`)
      .execute();
  },
};
