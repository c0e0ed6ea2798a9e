// The approvers feature's migration steps (src/migrations.ts collects every feature's in name order).
import { epochMsType, type MigrationStep } from '@vigil/platform';

export const approversMigrations: Record<string, MigrationStep> = {
  /** Approver groups, delegations and the votes of requests that need several approvals (approvers/tables.ts). */
  async '0019_approver_groups_delegations_votes'(db) {
    await db.schema
      .createTable('approver_groups')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull().unique())
      .addColumn('members', 'text', (c) => c.notNull())
      .addColumn('description', 'text')
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .addColumn('updated_at', epochMsType, (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('delegations')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('delegator', 'text', (c) => c.notNull())
      .addColumn('delegate', 'text', (c) => c.notNull())
      .addColumn('starts_at', epochMsType, (c) => c.notNull())
      .addColumn('ends_at', epochMsType, (c) => c.notNull())
      .addColumn('reason', 'text')
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .addColumn('revoked_at', epochMsType)
      .execute();
    // A decider's active delegations, looked up on each vote and chat click.
    await db.schema.createIndex('delegations_delegate').on('delegations').columns(['delegate', 'ends_at']).execute();
    await db.schema
      .createTable('request_votes')
      .addColumn('request_id', 'text', (c) => c.notNull())
      .addColumn('principal', 'text', (c) => c.notNull())
      .addColumn('decider', 'text', (c) => c.notNull())
      .addColumn('vote', 'text', (c) => c.notNull())
      .addColumn('at', epochMsType, (c) => c.notNull())
      .addPrimaryKeyConstraint('request_votes_pk', ['request_id', 'principal'])
      .execute();
  },
};
