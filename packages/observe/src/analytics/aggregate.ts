import { DAY_MS, HOUR_MS, sumAsDouble } from '@vigil/platform';
import { sql, type Kysely, type RawBuilder, type SelectQueryBuilder, type SqlBool } from 'kysely';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import { sumNanosSql, SYSTEM_AGENT_ID } from '../events/index.ts';
import { sessionDurationSql } from '../sessions/index.ts';

export const GRANULARITIES = ['hour', 'day', 'week'] as const;
export type Granularity = (typeof GRANULARITIES)[number];

// Weeks start on Monday 00:00 UTC (ISO 8601); 1970-01-05 was the first Monday after the epoch.
const WEEK_OFFSET_MS = 4 * DAY_MS;
const BUCKET: Record<Granularity, { size: number; offset: number }> = {
  hour: { size: HOUR_MS, offset: 0 },
  day: { size: DAY_MS, offset: 0 },
  week: { size: 7 * DAY_MS, offset: WEEK_OFFSET_MS },
};

/** Start of the bucket holding `ms`. */
export function bucketStart(ms: number, granularity: Granularity): number {
  const { size, offset } = BUCKET[granularity];
  return Math.floor((ms - offset) / size) * size + offset;
}

/** Every bucket start from the one holding `from` to the one holding `to`, in order. */
export function bucketStarts(from: number, to: number, granularity: Granularity): number[] {
  const starts: number[] = [];
  for (let start = bucketStart(from, granularity); start <= to; start += BUCKET[granularity].size) starts.push(start);
  return starts;
}

export type Dimension = 'bucket' | 'agent_id' | 'event_type' | 'tool_name' | 'provider' | 'model' | 'tier';

export interface AggregateQuery {
  /** Inclusive bounds, epoch ms. */
  from: number;
  to: number;
  granularity?: Granularity;
  dimensions: readonly Dimension[];
  agentId?: string;
  /** Leaves this agent's events out (the system agent's bookkeeping, when no agentId is asked for). */
  excludeAgentId?: string;
  eventTypes?: readonly string[];
  provider?: string;
  model?: string;
}

export interface Sums {
  eventCount: number;
  errorCount: number;
  toolCallCount: number;
  /** Spend in whole nano-dollars (exact; usdOf answers it). */
  costNanos: number;
  durationSum: number;
  durationCount: number;
  latencySum: number;
  latencyCount: number;
  inputTokens: number;
  outputTokens: number;
  failureCount: number;
}

export type AggregateRow = Sums & Partial<Record<Dimension, string | number>>;

export const emptySums = (): Sums => ({
  eventCount: 0,
  errorCount: 0,
  toolCallCount: 0,
  costNanos: 0,
  durationSum: 0,
  durationCount: 0,
  latencySum: 0,
  latencyCount: 0,
  inputTokens: 0,
  outputTokens: 0,
  failureCount: 0,
});

/** Adds the sums only: a row's dimension values (model, bucket, …) are never added. */
export function addSums(target: Sums, source: Sums): Sums {
  for (const key of SUM_KEYS) target[key] += source[key];
  return target;
}

const SUM_KEYS = Object.keys(emptySums()) as (keyof Sums)[];

/** Token totals over long ranges may pass BIGINT (bounds.ts): summed as doubles. */
const tokenSum = (column: string): RawBuilder<unknown> => sumAsDouble(sql.ref(column));

/** The sums whose column has the same name and meaning in both sources. */
const SAME_ON_BOTH = {
  costNanos: sumNanosSql('cost_usd') as RawBuilder<unknown>,
  inputTokens: tokenSum('input_tokens'),
  outputTokens: tokenSum('output_tokens'),
};

/** Per-row contributions in each source: a rollup row carries sums, an event row counts one. */
const SOURCES = {
  rollup: {
    table: 'event_rollups' as const,
    time: 'hour',
    text: (column: string) => sql.ref(column),
    sums: {
      ...SAME_ON_BOTH,
      eventCount: sql`sum(event_count)`,
      errorCount: sql`sum(error_count)`,
      toolCallCount: sql`sum(case when event_type = 'tool_call' then event_count else 0 end)`,
      durationSum: sql`sum(duration_sum)`,
      durationCount: sql`sum(duration_count)`,
      latencySum: sql`sum(latency_sum)`,
      latencyCount: sql`sum(latency_count)`,
      failureCount: sql`sum(failure_count)`,
    },
  },
  events: {
    table: 'events' as const,
    time: 'ts',
    // The rollups' `tier` is the events' `complexity_tier`.
    text: (column: string) => sql`coalesce(${sql.ref(column === 'tier' ? 'complexity_tier' : column)}, '')`,
    sums: {
      ...SAME_ON_BOTH,
      eventCount: sql`count(*)`,
      errorCount: sql`sum(is_error)`,
      toolCallCount: sql`sum(case when event_type = 'tool_call' then 1 else 0 end)`,
      durationSum: sql`sum(duration_ms)`,
      durationCount: sql`count(duration_ms)`,
      latencySum: sql`sum(latency_ms)`,
      latencyCount: sql`count(latency_ms)`,
      failureCount: sql`sum(case when finish_reason = 'error' then 1 else 0 end)`,
    },
  },
} satisfies Record<string, { table: string; time: string; text: (c: string) => RawBuilder<unknown>; sums: Record<keyof Sums, RawBuilder<unknown>> }>;

/** Rows of one source for the query: the hourly table's rows where `hourly` holds, or the events where `raw` holds. */
function aggregateSource(db: Kysely<ObserveSchema>, source: (typeof SOURCES)[keyof typeof SOURCES], query: AggregateQuery, condition: RawBuilder<SqlBool>) {
  const time = sql.ref(source.time);
  const selections: RawBuilder<unknown>[] = [];
  for (const dimension of query.dimensions) {
    if (dimension === 'bucket') {
      const { size, offset } = BUCKET[query.granularity ?? 'hour'];
      selections.push(sql`((${time} - ${sql.lit(offset)}) / ${sql.lit(size)}) * ${sql.lit(size)} + ${sql.lit(offset)}`.as('bucket') as never);
    } else {
      selections.push(source.text(dimension).as(dimension) as never);
    }
  }
  for (const key of SUM_KEYS) selections.push(source.sums[key].as(key) as never);

  let q = db
    .selectFrom(source.table)
    .select(selections as never)
    .where(condition);
  if (query.agentId !== undefined) q = q.where('agent_id', '=', query.agentId);
  if (query.excludeAgentId !== undefined) q = q.where('agent_id', '<>', query.excludeAgentId);
  if (query.eventTypes !== undefined) q = q.where('event_type', 'in', [...query.eventTypes]);
  if (query.provider !== undefined) q = q.where('provider', '=', query.provider);
  if (query.model !== undefined) q = q.where('model', '=', query.model);
  if (query.dimensions.length > 0) q = q.groupBy(query.dimensions.map((_, i) => sql.lit(i + 1)) as never);
  return q;
}

/** An hour that [from, to] cuts: the part of it inside the range and the parts outside. */
export interface CutHour {
  hour: number;
  inside: [number, number];
  outside: [number, number][];
}

/** The whole hours of [from, to] (first and last hour start, or null) and the hours it cuts (at most two). */
export function splitRange(from: number, to: number): { wholeHours: [number, number] | null; cutHours: CutHour[] } {
  const firstHour = Math.floor(from / HOUR_MS) * HOUR_MS;
  const lastHour = Math.floor(to / HOUR_MS) * HOUR_MS;
  const cut = (hour: number): CutHour => {
    const end = hour + HOUR_MS - 1;
    const inside: [number, number] = [Math.max(from, hour), Math.min(to, end)];
    const outside: [number, number][] = [];
    if (inside[0] > hour) outside.push([hour, inside[0] - 1]);
    if (inside[1] < end) outside.push([inside[1] + 1, end]);
    return { hour, inside, outside };
  };
  const firstCut = from > firstHour || to < firstHour + HOUR_MS - 1;
  const lastCut = from > lastHour || to < lastHour + HOUR_MS - 1;
  const cutHours = [...(firstCut ? [cut(firstHour)] : []), ...(lastCut && lastHour !== firstHour ? [cut(lastHour)] : [])];
  const first = firstCut ? firstHour + HOUR_MS : firstHour;
  const last = lastCut ? lastHour - HOUR_MS : lastHour;
  return { wholeHours: first <= last ? [first, last] : null, cutHours };
}

/** Whether any row of `table` (of any agent or type) has its `time` in one of `ranges`. */
const rowsWithin =
  (table: 'events' | 'sessions', time: 'ts' | 'started_at') =>
  (ranges: readonly [number, number][]): RawBuilder<SqlBool> =>
    sql<SqlBool>`(${sql.join(
      ranges.map(
        ([start, end]) =>
          sql`exists (select 1 from ${sql.table(table)} as outside where outside.${sql.ref(time)} >= ${start} and outside.${sql.ref(time)} <= ${end})`,
      ),
      sql` or `,
    )})`;

const eventsWithin = rowsWithin('events', 'ts');
const sessionsStartedWithin = rowsWithin('sessions', 'started_at');

/**
 * How [from, to] is read (`hourly`: a condition on an hourly table's `hour`; `raw`: on the events'
 * `ts`; null: nothing to read there). Whole hours come from the hourly table. An hour the range
 * cuts comes from the hourly table too when no event at all lies in its part outside the range
 * (then the hour's row holds exactly the part inside; "now" cuts the current hour so, as no event
 * is stamped in the future), else from the events of its part inside. Both conditions go into one
 * statement, so that the test and the read it chooses see the same snapshot.
 */
export function rangeConditions(
  from: number,
  to: number,
  timeOfHourly: string,
  timeOfEvents: string,
  within: (ranges: readonly [number, number][]) => RawBuilder<SqlBool> = eventsWithin,
): { hourly: RawBuilder<SqlBool> | null; raw: RawBuilder<SqlBool> | null } {
  const { wholeHours, cutHours } = splitRange(from, to);
  const hour = sql.ref(timeOfHourly);
  const ts = sql.ref(timeOfEvents);
  const hourly: RawBuilder<SqlBool>[] = [];
  const raw: RawBuilder<SqlBool>[] = [];
  if (wholeHours) hourly.push(sql<SqlBool>`(${hour} >= ${wholeHours[0]} and ${hour} <= ${wholeHours[1]})`);
  for (const cut of cutHours) {
    const outsideHasEvents = within(cut.outside);
    hourly.push(sql<SqlBool>`(${hour} = ${cut.hour} and not ${outsideHasEvents})`);
    // The test sits in the range's lower bound, so an index range over `ts` is empty when it fails,
    // instead of every event of the cut hour being read and dropped (the current hour grows with the data).
    raw.push(sql<SqlBool>`(${ts} >= case when ${outsideHasEvents} then cast(${cut.inside[0]} as bigint) end and ${ts} <= ${cut.inside[1]})`);
  }
  const any = (terms: RawBuilder<SqlBool>[]) => (terms.length === 0 ? null : sql<SqlBool>`(${sql.join(terms, sql` or `)})`);
  return { hourly: any(hourly), raw: any(raw) };
}

/**
 * Exact sums over every event with from ≤ ts ≤ to, per dimension key: the rollups where they hold
 * exactly the range, the events elsewhere (rangeConditions), read in one statement and merged.
 */
export async function aggregate(database: ObserveDatabase, query: AggregateQuery): Promise<AggregateRow[]> {
  const { hourly, raw } = rangeConditions(query.from, query.to, 'hour', 'ts');
  const { db } = database;
  const parts = [...(hourly ? [aggregateSource(db, SOURCES.rollup, query, hourly)] : []), ...(raw ? [aggregateSource(db, SOURCES.events, query, raw)] : [])];
  const rows = (await (parts.length === 1 ? parts[0]! : parts[0]!.unionAll(parts[1]! as never)).execute()) as Record<string, unknown>[];
  const merged = new Map<string, AggregateRow>();
  for (const row of rows) {
    // PostgreSQL answers sum(bigint) as numeric text; empty sums are null.
    const out: AggregateRow = emptySums();
    for (const key of SUM_KEYS) out[key] = Number(row[key] ?? 0);
    for (const dimension of query.dimensions) out[dimension] = dimension === 'bucket' ? Number(row.bucket) : String(row[dimension]);
    const key = JSON.stringify(query.dimensions.map((d) => out[d]));
    const existing = merged.get(key);
    if (existing) addSums(existing, out);
    else merged.set(key, out);
  }
  return [...merged.values()];
}

export const mean = (sum: number, count: number): number => (count === 0 ? 0 : sum / count);
export const ratio = (part: number, whole: number): number => (whole === 0 ? 0 : part / whole);

/**
 * Sessions started in the window per agent (the system agent left out), with their summed
 * duration: whole hours from agent_session_hours, an hour the window cuts from it too when no
 * session started in its part outside the window, else from those sessions (rangeConditions).
 */
export async function sessionsPerAgent(
  database: ObserveDatabase,
  window: { from: number; to: number },
  agentId?: string,
): Promise<{ agent_id: string; sessions: number; duration: number }[]> {
  const { hourly, raw } = rangeConditions(window.from, window.to, 'hour', 'started_at', sessionsStartedWithin);
  const { db } = database;
  const agent = agentId === undefined ? sql`agent_id <> ${SYSTEM_AGENT_ID}` : sql`agent_id = ${agentId}`;
  const parts = [
    ...(hourly
      ? [
          db
            .selectFrom('agent_session_hours')
            .select(['agent_id', sumAsDouble(sql.ref('session_count')).as('sessions'), sumAsDouble(sql.ref('duration_sum')).as('duration')])
            .where(hourly)
            .where(agent as RawBuilder<SqlBool>)
            .groupBy('agent_id'),
        ]
      : []),
    ...(raw
      ? [
          db
            .selectFrom('sessions')
            .select((eb) => ['agent_id', eb.fn.countAll<number>().as('sessions'), sumAsDouble(sessionDurationSql()).as('duration')])
            .where(raw)
            .where(agent as RawBuilder<SqlBool>)
            .groupBy('agent_id'),
        ]
      : []),
  ];
  const [first, second] = parts as SelectQueryBuilder<ObserveSchema, 'sessions', Record<string, unknown>>[];
  const rows = await (second === undefined ? first! : first!.unionAll(second)).execute();
  const merged = new Map<string, { agent_id: string; sessions: number; duration: number }>();
  for (const row of rows as { agent_id: string; sessions: unknown; duration: unknown }[]) {
    const entry = merged.get(row.agent_id) ?? { agent_id: row.agent_id, sessions: 0, duration: 0 };
    entry.sessions += Number(row.sessions ?? 0);
    entry.duration += Number(row.duration ?? 0);
    merged.set(row.agent_id, entry);
  }
  return [...merged.values()];
}
