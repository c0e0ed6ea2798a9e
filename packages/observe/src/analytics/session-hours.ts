// Sessions per agent by the hour they started in (agent_session_hours): what the agents report
// counts and averages, so that it reads a row per agent and hour instead of every session of the
// range. A session moves its row when its start moves earlier, and its duration when its measured
// end moves (sessions/figures.ts): ingest applies the difference of each session's span before and
// after the batch, retention subtracts the sessions it deletes.
import { HOUR_MS, sumAsDouble, type DdlTarget } from '@vigil/platform';
import { sql, type Transaction } from 'kysely';
import type { DerivedTable, SessionChange, SessionSpan } from '../events/index.ts';
import type { ObserveSchema } from '../schema.ts';
import { sessionDurationMs, sessionDurationSql } from '../sessions/index.ts';
import type { AgentSessionHourRow } from './tables.ts';

const hourOf = (ms: number): number => Math.floor(ms / HOUR_MS) * HOUR_MS;

/** The rows the batch's sessions change, one per (hour, agent), in key order (a fixed lock order); rows that net to nothing left out. */
export function sessionHourDeltas(changes: readonly Pick<SessionChange, 'before' | 'after'>[]): AgentSessionHourRow[] {
  const byKey = new Map<string, AgentSessionHourRow>();
  const add = (span: SessionSpan, sign: 1 | -1) => {
    const hour = hourOf(Number(span.started_at));
    const key = `${hour}|${span.agent_id}`;
    const row = byKey.get(key) ?? { hour, agent_id: span.agent_id, session_count: 0, duration_sum: 0 };
    row.session_count += sign;
    row.duration_sum += sign * sessionDurationMs(span);
    byKey.set(key, row);
  };
  for (const { before, after } of changes) {
    if (before !== null) add(before, -1);
    add(after, 1);
  }
  return [...byKey.entries()]
    .filter(([, row]) => row.session_count !== 0 || row.duration_sum !== 0)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, row]) => row);
}

/** Adds the deltas in the caller's transaction; a row left with no session is deleted. */
export async function applySessionHourDeltas(trx: Transaction<ObserveSchema>, deltas: readonly AgentSessionHourRow[]): Promise<void> {
  if (deltas.length === 0) return;
  await trx
    .insertInto('agent_session_hours')
    .values([...deltas])
    .onConflict((oc) =>
      oc.columns(['hour', 'agent_id']).doUpdateSet({
        session_count: sql`agent_session_hours.session_count + excluded.session_count`,
        duration_sum: sql`agent_session_hours.duration_sum + excluded.duration_sum`,
      }),
    )
    .execute();
  if (deltas.some((delta) => delta.session_count < 0)) {
    await trx
      .deleteFrom('agent_session_hours')
      .where('hour', 'in', [...new Set(deltas.map((delta) => delta.hour))])
      .where('session_count', '<=', 0)
      .execute();
  }
}

/** The rows of the stored sessions that `where` selects, computed in SQL by the same rule. */
const sessionHoursOf = (where: ReturnType<typeof sql>) => sql<AgentSessionHourRow>`
  select (started_at / ${sql.lit(HOUR_MS)}) * ${sql.lit(HOUR_MS)} as hour, agent_id, count(*) as session_count, ${sumAsDouble(sessionDurationSql())} as duration_sum
  from sessions
  where ${where}
  group by 1, 2
  order by 1, 2`;

/** Takes the expiring sessions out (before they are deleted). */
async function subtractSessions(trx: Transaction<ObserveSchema>, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  const { rows } = await sessionHoursOf(sql`id in (${sql.join(ids)})`).execute(trx);
  await applySessionHourDeltas(
    trx,
    rows.map((row) => ({ hour: Number(row.hour), agent_id: row.agent_id, session_count: -Number(row.session_count), duration_sum: -Number(row.duration_sum) })),
  );
}

/** Counts every stored session into an empty table. */
export async function backfillSessionHours(db: DdlTarget): Promise<void> {
  await sql`insert into agent_session_hours (hour, agent_id, session_count, duration_sum) ${sessionHoursOf(sql`true`)}`.execute(db);
}

export const AGENT_SESSION_HOURS_TABLE: DerivedTable<AgentSessionHourRow> = {
  table: 'agent_session_hours',
  apply: (batch) => applySessionHourDeltas(batch.trx, sessionHourDeltas(batch.sessions)),
  subtract: (trx, _dialect, sessions) => subtractSessions(trx, sessions.ids),
  backfill: backfillSessionHours,
};
