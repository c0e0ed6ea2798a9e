// The budgets feature's migration steps (src/migrations.ts collects every feature's in name order).
// A step imports no other feature's code.
import { epochMsType, type MigrationStep } from '@vigil/platform';

export const budgetsMigrations: Record<string, MigrationStep> = {
  /** Budgets, the spend figures read for them and their breaches (budgets/tables.ts). */
  async '0021_budgets'(db) {
    await db.schema
      .createTable('budgets')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull().unique())
      .addColumn('scope', 'text', (c) => c.notNull())
      .addColumn('scope_value', 'text')
      .addColumn('window', 'text', (c) => c.notNull())
      .addColumn('soft_usd', 'double precision')
      .addColumn('hard_usd', 'double precision')
      .addColumn('pause_on_hard', 'integer', (c) => c.notNull())
      .addColumn('enabled', 'integer', (c) => c.notNull())
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .addColumn('updated_at', epochMsType, (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('budget_figures')
      .addColumn('budget_id', 'text', (c) => c.notNull())
      .addColumn('window_start', epochMsType, (c) => c.notNull())
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('spend_usd', 'double precision', (c) => c.notNull())
      .addColumn('agent_ids', 'text', (c) => c.notNull())
      .addColumn('updated_at', epochMsType, (c) => c.notNull())
      .addPrimaryKeyConstraint('budget_figures_pk', ['budget_id', 'window_start', 'key'])
      .execute();
    await db.schema
      .createTable('budget_breaches')
      .addColumn('budget_id', 'text', (c) => c.notNull())
      .addColumn('window_start', epochMsType, (c) => c.notNull())
      .addColumn('key', 'text', (c) => c.notNull())
      .addColumn('level', 'text', (c) => c.notNull())
      .addColumn('spend_usd', 'double precision', (c) => c.notNull())
      .addColumn('at', epochMsType, (c) => c.notNull())
      .addPrimaryKeyConstraint('budget_breaches_pk', ['budget_id', 'window_start', 'key', 'level'])
      .execute();
  },
};
