// What the event store holds, as one row (`store_totals`) that every write changing it keeps in its
// own transaction: GET /api/stats reads it instead of counting sessions and agents.
import { PreparedQuery, type DialectName } from '@vigil/platform';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { ObserveSchema } from '../schema.ts';
import { SYSTEM_AGENT_ID } from './system-agent.ts';

/** What one write adds to the totals (negative for deletions): events (session event_counts), sessions, agents (the system agent's row apart). */
export interface TotalsChange {
  events: number;
  sessions: number;
  agents: number;
}

const addQuery = new PreparedQuery<ObserveSchema, [number, number, number], never>((db, _dialect, events: number, sessions: number, agents: number) =>
  db
    .updateTable('store_totals')
    .set({
      events: sql`events + ${events}`,
      sessions: sql`sessions + ${sessions}`,
      agents: sql`agents + ${agents}`,
    })
    .where('id', '=', 1),
);

/**
 * Adds `change` to the totals in the write's transaction, so they commit with the rows they count
 * or not at all. On PostgreSQL the row lock is held to the commit: ingest writes it after its
 * commit-ordering lock and retention after the audit-log head, so no transaction waits on it that
 * would not have waited on those locks already.
 */
export async function addToStoreTotals(trx: Transaction<ObserveSchema>, dialect: DialectName, change: TotalsChange): Promise<void> {
  if (change.events === 0 && change.sessions === 0 && change.agents === 0) return;
  await addQuery.execute(trx, dialect, change.events, change.sessions, change.agents);
}

/** Migration 0023: the totals row, counted from the rows stored. */
export async function createStoreTotals(db: Kysely<ObserveSchema>): Promise<void> {
  await db.schema
    .createTable('store_totals')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('events', 'bigint', (c) => c.notNull())
    .addColumn('sessions', 'bigint', (c) => c.notNull())
    .addColumn('agents', 'bigint', (c) => c.notNull())
    .execute();
  await countStoreTotals(db);
}

/** The totals row counted from the rows stored, into an empty table (the derived table's backfill). */
export async function countStoreTotals(db: Kysely<ObserveSchema>): Promise<void> {
  await db
    .insertInto('store_totals')
    .columns(['id', 'events', 'sessions', 'agents'])
    .expression(
      db.selectNoFrom((eb) => [
        eb.lit(1).as('id'),
        eb
          .selectFrom('sessions')
          .select((s) => s.fn.coalesce(s.fn.sum<number>('event_count'), s.lit(0)).as('n'))
          .as('events'),
        eb
          .selectFrom('sessions')
          .select((s) => s.fn.countAll<number>().as('n'))
          .as('sessions'),
        eb
          .selectFrom('agents')
          .select((a) => a.fn.countAll<number>().as('n'))
          .where('id', '<>', SYSTEM_AGENT_ID)
          .as('agents'),
      ]),
    )
    .execute();
}
