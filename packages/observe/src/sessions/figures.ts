import { sql, type RawBuilder } from 'kysely';

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
 * index range already reads: no extra scan.
 */
const column = (alias: string | undefined, name: string) => sql.ref(alias === undefined ? name : `${alias}.${name}`);

/** Milliseconds from start to the session's measured end. */
export function sessionDurationSql(alias?: string): RawBuilder<number> {
  return sql<number>`coalesce(${column(alias, 'ended_at')}, ${column(alias, 'idle_at')}, ${column(alias, 'last_event_at')}) - ${column(alias, 'started_at')}`;
}

/** True for a session that is over at `now`: ended, or active without an event for the idle timeout. */
export function sessionOverSql(now: number, idleTimeoutMs: number, alias?: string): RawBuilder<boolean> {
  return sql<boolean>`(${column(alias, 'status')} <> 'active' or ${column(alias, 'last_event_at')} < ${now - idleTimeoutMs})`;
}
