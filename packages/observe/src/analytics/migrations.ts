// The analytics feature's migration steps (src/migrations.ts collects every feature's in name order
// after the frozen history). A step imports no other feature's code.
import { epochMsType, type MigrationStep } from '@vigil/platform';
import { sql } from 'kysely';

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
};
