// The grants feature's migration steps (src/migrations.ts collects every feature's in name order).
// A step imports no other feature's code.
import { epochMsType, type MigrationStep } from '@vigil/platform';

export const grantsMigrations: Record<string, MigrationStep> = {
  /** Time-limited grants and their uses (grants/tables.ts). */
  async '0020_grants'(db) {
    await db.schema
      .createTable('grants')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('action', 'text', (c) => c.notNull())
      .addColumn('agent_id', 'text')
      .addColumn('session_id', 'text')
      .addColumn('expires_at', epochMsType)
      .addColumn('max_uses', 'integer')
      .addColumn('uses', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('request_id', 'text')
      .addColumn('note', 'text')
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .addColumn('created_by', 'text', (c) => c.notNull())
      .addColumn('created_by_key_id', 'text')
      .addColumn('revoked_at', epochMsType)
      .addColumn('revoked_by', 'text')
      .execute();
    // The match on every routed request: live grants of its action.
    await db.schema.createIndex('grants_action').on('grants').columns(['action', 'revoked_at']).execute();
    await db.schema.createIndex('grants_created').on('grants').columns(['created_at', 'id']).execute();
    await db.schema
      .createTable('grant_uses')
      .addColumn('grant_id', 'text', (c) => c.notNull())
      .addColumn('use_no', 'integer', (c) => c.notNull())
      .addColumn('request_id', 'text', (c) => c.notNull())
      .addColumn('used_at', epochMsType, (c) => c.notNull())
      .addPrimaryKeyConstraint('grant_uses_pk', ['grant_id', 'use_no'])
      .execute();
  },
};
