// The events feature's migration steps from 0024 on (src/migrations.ts collects every feature's in
// name order after the frozen history). A step imports no other feature's code: what it must run
// again of older code it takes from the frozen history.
import { epochMsType, type MigrationStep } from '@vigil/platform';
import { NANOS_PER_USD } from '@vigil/pricing';
import { sql, type RawBuilder } from 'kysely';
import { backfillRollups, nanosSql, sumNanosSql } from '../migration-history/index.ts';
import { partitionEvents } from './partitions.ts';

export const eventsMigrations: Record<string, MigrationStep> = {
  /** Idempotent ingest: the Idempotency-Key rows of POST /api/events (events/idempotency.ts), kept 24 hours. */
  async '0024_idempotency_keys'(db) {
    await db.schema
      .createTable('idempotency_keys')
      .addColumn('scope', 'text', (c) => c.notNull())
      .addColumn('idempotency_key', 'text', (c) => c.notNull())
      .addColumn('fingerprint', 'text', (c) => c.notNull())
      .addColumn('status', 'integer', (c) => c.notNull())
      .addColumn('body', 'text', (c) => c.notNull())
      .addColumn('created_at', epochMsType, (c) => c.notNull())
      .addPrimaryKeyConstraint('idempotency_keys_pk', ['scope', 'idempotency_key'])
      .execute();
    // The expiry sweep reads the oldest rows first.
    await db.schema.createIndex('idempotency_keys_created').on('idempotency_keys').columns(['created_at']).execute();
  },

  /**
   * Money summed exactly (whole nano-dollars, @vigil/pricing money.ts): the stored totals were sums
   * of doubles (0.1 + 0.2 gave 0.30000000000000004); each is summed again from its rows. Events
   * and their chain are untouched: only totals derived from them change. It lives here, with the
   * definition of spend (the events' cost_usd), though it also rebuilds the rollups (as 0003 built
   * them) and the judge spend.
   */
  async '0025_exact_money'(db) {
    const usdOfNanos = (nanos: RawBuilder<unknown>) => sql`${nanos} / ${sql.lit(NANOS_PER_USD)}`;
    await sql`update sessions set total_cost_usd = ${usdOfNanos(
      sql`coalesce((select sum(${nanosSql(sql.ref('events.cost_usd'))}) from events where events.session_id = sessions.id), 0)`,
    )} where total_cost_usd <> 0`.execute(db);
    await sql`delete from event_rollups`.execute(db);
    await backfillRollups(db);
    await sql`update judge_spend set usd = ${usdOfNanos(sql`(select ${sumNanosSql('cost_usd')} from judge_calls)`)}`.execute(db);
  },

  /**
   * Who wrote each event (events/writer.ts): the `written_by` column (null for the rows stored
   * before, not recorded) and the body of each batch's writer leaf in the audit log, which puts
   * that column under the evidence (docs/audit.md#who-wrote-an-event).
   */
  async '0029_event_writers'(db) {
    await db.schema.alterTable('events').addColumn('written_by', 'text').execute();
    await db.schema
      .createTable('audit_writer_leaves')
      .addColumn('item_id', 'text', (c) => c.primaryKey())
      .addColumn('leaf_idx', 'bigint', (c) => c.notNull())
      .addColumn('body', 'text', (c) => c.notNull())
      .execute();
    // Verification finds an event's writer leaf as the first one after the event's own leaf.
    await db.schema.createIndex('audit_writer_leaves_idx').on('audit_writer_leaves').column('leaf_idx').execute();
  },

  /**
   * Partitioned events on PostgreSQL (events/partitions.ts, docs/scale.md#partitions): the
   * `session_start` column of sessions and events (the session's first stored event time, 0 for
   * what was stored before), and on PostgreSQL the events table partitioned by it, the existing
   * rows kept in place as its legacy partition. SQLite only gains the columns.
   */
  async '0044_event_partitions'(db, dialect) {
    await db.schema
      .alterTable('sessions')
      .addColumn('session_start', epochMsType, (c) => c.notNull().defaultTo(0))
      .execute();
    if (dialect === 'postgres') await partitionEvents(db);
    else
      await db.schema
        .alterTable('events')
        .addColumn('session_start', epochMsType, (c) => c.notNull().defaultTo(0))
        .execute();
    // Retention finds the sessions of a partition by their start.
    await db.schema.createIndex('sessions_session_start').on('sessions').column('session_start').execute();
  },
};
