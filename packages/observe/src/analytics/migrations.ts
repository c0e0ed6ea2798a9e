// The analytics feature's migration steps (src/migrations.ts collects every feature's in name order
// after the frozen history). A step imports no other feature's code.
import { DAY_MS, epochMsType, type MigrationDb, type MigrationStep } from '@vigil/platform';
import { sql } from 'kysely';
import { createLatencySketchTable, createRollupTable, ROLLUP_SUMS, sumNanosSql } from '../migration-history/index.ts';

const ROLLUP_TEXTS = ['agent_id', 'event_type', 'tool_name', 'provider', 'model', 'tier'] as const;
const SKETCH_TEXTS = ['agent_id', 'metric', 'tool_name', 'provider', 'model'] as const;
const dayOf = (column: string) => sql`(${sql.ref(column)} / ${sql.lit(DAY_MS)}) * ${sql.lit(DAY_MS)}`;
/** `group by 1, …, count`. */
const byFirst = (count: number) => sql.raw(Array.from({ length: count }, (_, i) => i + 1).join(', '));

/** The daily rollups: the hourly table's columns and keys, filled with its rows summed by day (spend in whole nano-dollars). */
async function createDailyRollups(db: MigrationDb): Promise<void> {
  await createRollupTable(db, 'event_rollups_daily');
  const sums = ROLLUP_SUMS.map((c) => (c === 'cost_usd' ? sql`${sumNanosSql(c)} / 1000000000.0` : sql`sum(${sql.ref(c)})`));
  await sql`insert into event_rollups_daily (hour, ${sql.raw([...ROLLUP_TEXTS, ...ROLLUP_SUMS].join(', '))})
    select ${dayOf('hour')}, ${sql.raw(ROLLUP_TEXTS.join(', '))}, ${sql.join(sums)}
    from event_rollups group by ${byFirst(1 + ROLLUP_TEXTS.length)}`.execute(db);
}

/** The daily latency sketches: the hourly table's columns and keys, filled with its bin counts summed by day. */
async function createDailySketches(db: MigrationDb): Promise<void> {
  await createLatencySketchTable(db, 'latency_sketches_daily');
  await sql`insert into latency_sketches_daily (hour, ${sql.raw(SKETCH_TEXTS.join(', '))}, bin, count)
    select ${dayOf('hour')}, ${sql.raw(SKETCH_TEXTS.join(', '))}, bin, sum(count)
    from latency_sketches group by ${byFirst(2 + SKETCH_TEXTS.length)}`.execute(db);
}

export const analyticsMigrations: Record<string, MigrationStep> = {
  /**
   * Sessions per agent and start hour (analytics/session-hours.ts), counted from the stored
   * sessions. The duration is the idle rule of sessions/figures.ts as it stands at this step:
   * the first set of ended_at, idle_at, last_event_at, minus started_at. The durations are summed as
   * doubles: timestamps up to year 9999 make sums past BIGINT (bounds.ts).
   */
  async '0031_agent_session_hours'(db) {
    await db.schema
      .createTable('agent_session_hours')
      .addColumn('hour', epochMsType, (c) => c.notNull())
      .addColumn('agent_id', 'text', (c) => c.notNull())
      .addColumn('session_count', 'bigint', (c) => c.notNull())
      .addColumn('duration_sum', 'double precision', (c) => c.notNull())
      .addPrimaryKeyConstraint('agent_session_hours_pk', ['hour', 'agent_id'])
      .execute();
    await sql`insert into agent_session_hours (hour, agent_id, session_count, duration_sum)
      select (started_at / 3600000) * 3600000, agent_id, count(*), sum(cast(coalesce(ended_at, idle_at, last_event_at) - started_at as double precision))
      from sessions group by 1, 2`.execute(db);
  },

  /**
   * Daily rollups, latency sketches and sessions per agent beside the hourly ones (analytics/spans.ts):
   * a report over a long range reads a row per key and day instead of per key and hour. Each is
   * filled from its hourly table, summed by day.
   */
  async '0050_daily_analytics'(db) {
    await createDailyRollups(db);
    await createDailySketches(db);
    await db.schema
      .createTable('agent_session_days')
      .addColumn('hour', epochMsType, (c) => c.notNull())
      .addColumn('agent_id', 'text', (c) => c.notNull())
      .addColumn('session_count', 'bigint', (c) => c.notNull())
      .addColumn('duration_sum', 'double precision', (c) => c.notNull())
      .addPrimaryKeyConstraint('agent_session_days_pk', ['hour', 'agent_id'])
      .execute();
    await sql`insert into agent_session_days (hour, agent_id, session_count, duration_sum)
      select ${dayOf('hour')}, agent_id, sum(session_count), sum(duration_sum) from agent_session_hours group by 1, 2`.execute(db);
  },
};
