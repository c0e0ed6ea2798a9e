// What the event store holds, as one row (`store_totals`) that every write changing it keeps in its
// own transaction: GET /api/stats reads it instead of counting sessions and agents.
import { PreparedQuery, type DialectName } from '@vigil/platform';
import { sql, type Kysely, type Transaction } from 'kysely';
import { SYSTEM_AGENT_ID } from './system-agent.ts';
import type { ObserveSchema } from '../schema.ts';

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
