import { sql, type RawBuilder } from 'kysely';
import type { SessionRow } from '../events/index.ts';

/**
 * How the figures (health, analytics, reflect, benchmarks) measure a session, by the idle rule.
 * A session that never sends session_ended keeps the status `active` (docs/api.md#sessions), but once
 * it has had no event for the idle timeout (SESSION_IDLE_TIMEOUT_MS) it is *idle*: the figures
 * count it as over at its last event before that silence.
 *
 * - Duration: endedAt, else the point where it first went idle (`idle_at`, kept by ingest), else
 *   its last event, minus startedAt. An ended session keeps the time it declared; one that never
 *   ends stops growing at its first long silence, whatever it sends later.
 * - Completion: only sessions that are over count, completed ones against the rest: ended, or idle
 *   now (active with no event for the timeout). A session still running is left out until it ends
 *   or goes idle.
 *
 * Both are expressions over the session row's own columns, evaluated on the rows the caller's
 * index range already reads: no extra scan. The duration is also every other figure of one
 * session (the sessions API's `durationMs`, replay's `totalDurationMs`): `sessionDurationMs`
 * evaluates the same rule on a row already read.
 */
const column = (alias: string | undefined, name: string) => sql.ref(alias === undefined ? name : `${alias}.${name}`);

/** The session's measured end: the first of these columns that is set (last_event_at always is). */
const MEASURED_END = ['ended_at', 'idle_at', 'last_event_at'] as const satisfies readonly (keyof SessionRow)[];

/** Milliseconds from start to the session's measured end. */
export function sessionDurationSql(alias?: string): RawBuilder<number> {
  const end = sql.join(MEASURED_END.map((name) => column(alias, name)));
  return sql<number>`coalesce(${end}) - ${column(alias, 'started_at')}`;
}

/** sessionDurationSql of a session row already read (PostgreSQL answers its BIGINT columns as text). */
export function sessionDurationMs(row: Pick<SessionRow, (typeof MEASURED_END)[number] | 'started_at'>): number {
  const end = MEASURED_END.map((name) => row[name]).find((value) => value !== null);
  return Number(end) - Number(row.started_at);
}

/** True for a session that is over at `now`: ended, or active without an event for the idle timeout. */
export function sessionOverSql(now: number, idleTimeoutMs: number, alias?: string): RawBuilder<boolean> {
  return sql<boolean>`(${column(alias, 'status')} <> 'active' or ${column(alias, 'last_event_at')} < ${now - idleTimeoutMs})`;
}
