// The escalation feature's migration steps (src/migrations.ts collects every feature's in name order).
import { sql } from 'kysely';
import { epochMsType, type MigrationStep } from '@vigil/platform';

export const escalationMigrations: Record<string, MigrationStep> = {
  /**
   * A request's current deadline, the escalation tier it has reached and its next reminder
   * (requests/tables.ts). Existing requests keep their expiresAt as their deadline, tier 0: they
   * expire as before. The expiry scanner reads the new deadline, the reminder scan its own index.
   */
  async '0018_request_escalation'(db) {
    await db.schema.alterTable('requests').addColumn('deadline_at', epochMsType).execute();
    await db.schema
      .alterTable('requests')
      .addColumn('escalation_tier', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    await db.schema.alterTable('requests').addColumn('remind_at', epochMsType).execute();
    await sql`update requests set deadline_at = expires_at where expires_at is not null`.execute(db);
    await db.schema.dropIndex('requests_deadline').execute();
    await db.schema.createIndex('requests_deadline_at').on('requests').columns(['status', 'deadline_at']).where('deadline_at', 'is not', null).execute();
    await db.schema.createIndex('requests_remind').on('requests').columns(['status', 'remind_at']).where('remind_at', 'is not', null).execute();
  },
};
