// Sessions per agent by the hour (agent_session_hours) and the day (agent_session_days) they started
// in: what the agents report counts and averages, so that it reads a row per agent and span instead
// of every session of the range. A session moves its row when its start moves earlier, and its duration when its measured
// end moves (sessions/figures.ts): ingest applies the difference of each session's span before and
// after the batch, retention subtracts the sessions it deletes.
import { sumAsDouble, type DdlTarget } from '@vigil/platform';
import { sql, type Transaction } from 'kysely';
import type { DerivedTable, SessionChange, SessionSpan } from '../events/index.ts';
import type { ObserveSchema } from '../schema.ts';
import { sessionDurationMs, sessionDurationSql } from '../sessions/index.ts';
import type { AgentSessionHourRow } from './tables.ts';
import { DAILY, HOURLY, spanStart, type Span } from './spans.ts';

/** The rows over `span` the batch's sessions change, one per (span start, agent), in key order (a fixed lock order); rows that net to nothing left out. */
export function sessionHourDeltas(changes: readonly Pick<SessionChange, 'before' | 'after'>[], span: Span): AgentSessionHourRow[] {
  const byKey = new Map<string, AgentSessionHourRow>();
  const add = (session: SessionSpan, sign: 1 | -1) => {
    const hour = spanStart(Number(session.started_at), span);
    const key = `${hour}|${session.agent_id}`;
    const row = byKey.get(key) ?? { hour, agent_id: session.agent_id, session_count: 0, duration_sum: 0 };
    row.session_count += sign;
    row.duration_sum += sign * sessionDurationMs(session);
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

/** Adds the deltas to the table over `span` in the caller's transaction; a row left with no session is deleted. */
export async function applySessionHourDeltas(trx: Transaction<ObserveSchema>, deltas: readonly AgentSessionHourRow[], span: Span): Promise<void> {
  if (deltas.length === 0) return;
  const table = span.sessions;
  await trx
    .insertInto(table)
    .values([...deltas])
    .onConflict((oc) =>
      oc.columns(['hour', 'agent_id']).doUpdateSet({
        session_count: sql`${sql.ref(`${table}.session_count`)} + excluded.session_count`,
        duration_sum: sql`${sql.ref(`${table}.duration_sum`)} + excluded.duration_sum`,
      }),
    )
    .execute();
  if (deltas.some((delta) => delta.session_count < 0)) {
    await trx
      .deleteFrom(table)
      .where('hour', 'in', [...new Set(deltas.map((delta) => delta.hour))])
      .where('session_count', '<=', 0)
      .execute();
  }
}

/** The rows over `span` of the stored sessions that `where` selects, computed in SQL by the same rule. */
const sessionHoursOf = (where: ReturnType<typeof sql>, span: Span) => sql<AgentSessionHourRow>`
  select (started_at / ${sql.lit(span.ms)}) * ${sql.lit(span.ms)} as hour, agent_id, count(*) as session_count, ${sumAsDouble(sessionDurationSql())} as duration_sum
  from sessions
  where ${where}
  group by 1, 2
  order by 1, 2`;

/** Takes the expiring sessions out of the table over `span` (before they are deleted). */
async function subtractSessions(trx: Transaction<ObserveSchema>, ids: readonly string[], span: Span): Promise<void> {
  if (ids.length === 0) return;
  const { rows } = await sessionHoursOf(sql`id in (${sql.join(ids)})`, span).execute(trx);
  await applySessionHourDeltas(
    trx,
    rows.map((row) => ({ hour: Number(row.hour), agent_id: row.agent_id, session_count: -Number(row.session_count), duration_sum: -Number(row.duration_sum) })),
    span,
  );
}

/** Counts every stored session into the empty table over `span`. */
export async function backfillSessionHours(db: DdlTarget, span: Span): Promise<void> {
  await sql`insert into ${sql.table(span.sessions)} (hour, agent_id, session_count, duration_sum) ${sessionHoursOf(sql`true`, span)}`.execute(db);
}

/** The sessions table over `span` as a derived table. */
const sessionsTable = (span: Span): DerivedTable<AgentSessionHourRow> => ({
  table: span.sessions,
  apply: (batch) => applySessionHourDeltas(batch.trx, sessionHourDeltas(batch.sessions, span), span),
  subtract: (trx, _dialect, sessions) => subtractSessions(trx, sessions.ids, span),
  backfill: (db) => backfillSessionHours(db, span),
});

export const AGENT_SESSION_HOURS_TABLE = sessionsTable(HOURLY);
export const AGENT_SESSION_DAYS_TABLE = sessionsTable(DAILY);
