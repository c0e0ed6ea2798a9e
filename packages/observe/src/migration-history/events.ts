// Frozen copies of the events feature's definitions as migrations 0003, 0012, 0023 and 0025 used
// them (events/derive.ts, system-agent.ts, money.ts and totals.ts then).
import type { MigrationDb } from '@vigil/platform';
import { NANOS_PER_USD } from '@vigil/pricing';
import { sql, type RawBuilder } from 'kysely';

/** The agent of the service's own sessions (alerts' sessions among them). */
export const SYSTEM_AGENT_ID = 'system';

/** An llm_response's complexity tier: simple below this many input tokens without tool calls, complex above the other bounds. */
export const SIMPLE_MAX_INPUT_TOKENS = 1_000;
export const COMPLEX_MIN_INPUT_TOKENS = 10_000;
export const COMPLEX_MIN_TOOLS = 6;

/** Whole nano-dollars of a USD amount, ties rounded up, on both databases. */
export const nanosSql = (usd: RawBuilder<unknown>): RawBuilder<number> => sql<number>`floor(${usd} * ${sql.lit(NANOS_PER_USD)} + 0.5)`;

/** The exact sum of a USD column in whole nano-dollars, 0 over no row. */
export const sumNanosSql = (column: string): RawBuilder<number> => sql<number>`coalesce(sum(${nanosSql(sql.ref(column))}), 0)`;

/** The event store's totals row, counted from the rows stored. */
export async function createStoreTotals(db: MigrationDb): Promise<void> {
  await db.schema
    .createTable('store_totals')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('events', 'bigint', (c) => c.notNull())
    .addColumn('sessions', 'bigint', (c) => c.notNull())
    .addColumn('agents', 'bigint', (c) => c.notNull())
    .execute();
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
