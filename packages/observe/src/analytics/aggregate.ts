import { DAY_MS, HOUR_MS, ShapedQueries, sumAsDouble } from '@vigil/platform';
import { sql, type Compilable, type Kysely, type RawBuilder, type SelectQueryBuilder, type SqlBool } from 'kysely';
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

/** The optional filters of an aggregate, in one order (filterShape). */
function aggregateFilters(query: AggregateQuery) {
  return { agentId: query.agentId, excludeAgentId: query.excludeAgentId, eventTypes: query.eventTypes, provider: query.provider, model: query.model };
}

/** Rows of one source for the query (its filters placed: placedFilters): the hourly table's rows where `hourly` holds, or the events where `raw` holds. */
function aggregateSource(
  db: Kysely<ObserveSchema>,
  source: (typeof SOURCES)[keyof typeof SOURCES],
  query: Pick<AggregateQuery, 'dimensions' | 'granularity'> & ReturnType<typeof aggregateFilters>,
  condition: RawBuilder<SqlBool>,
) {
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
export interface CutHour<Bound = number> {
  hour: Bound;
  inside: [Bound, Bound];
  outside: [Bound, Bound][];
}

/** How [from, to] falls on hours: its whole hours (first and last hour start, or null) and the hours it cuts (at most two). */
export interface RangeSplit<Bound = number> {
  wholeHours: [Bound, Bound] | null;
  cutHours: CutHour<Bound>[];
}

/** How [from, to] falls on hours. */
export function splitRange(from: number, to: number): RangeSplit {
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

/**
 * What a range's conditions (rangeConditions) depend on besides its bounds — whether it has whole
 * hours, and how each cut hour is cut — and its bounds, in the order placedSplit places them.
 */
function splitShape(split: RangeSplit): { shape: string; bounds: number[] } {
  let shape = split.wholeHours ? 'w' : '-';
  const bounds: number[] = split.wholeHours ? [...split.wholeHours] : [];
  for (const cut of split.cutHours) {
    shape += `c${cut.outside.length}`;
    bounds.push(cut.hour, ...cut.inside, ...cut.outside.flat());
  }
  return { shape, bounds };
}

/** The split with its bounds replaced by a statement's placeholders (ShapedQueries): the k-th of splitShape's bounds by `value(k)`. */
function placedSplit(split: RangeSplit, value: (index: number) => unknown): RangeSplit<unknown> {
  let next = 0;
  const pair = (): [unknown, unknown] => [value(next++), value(next++)];
  return {
    wholeHours: split.wholeHours ? pair() : null,
    cutHours: split.cutHours.map((cut) => ({ hour: value(next++), inside: pair(), outside: cut.outside.map(pair) })),
  };
}

/** A query's optional filters by name: a value, a list of values, or unset. */
export type QueryFilters = Readonly<Record<string, string | readonly string[] | undefined>>;

/** Which of `filters` are set (and how long each list is), and their values in order: what a ShapedQueries call takes for them. */
function filterShape(filters: QueryFilters): { shape: string; values: string[] } {
  let shape = '';
  const values: string[] = [];
  for (const value of Object.values(filters)) {
    if (value === undefined) shape += '-';
    else if (typeof value === 'string') {
      shape += '1';
      values.push(value);
    } else {
      shape += `[${value.length}]`;
      values.push(...value);
    }
  }
  return { shape, values };
}

/** `filters` with their values replaced by a statement's placeholders, from `value(first)` on, in filterShape's order. */
function placedFilters<Filters extends QueryFilters>(filters: Filters, value: (index: number) => unknown, first: number): Filters {
  let next = first;
  const placed: Record<string, string | string[] | undefined> = {};
  for (const [name, given] of Object.entries(filters))
    placed[name] = given === undefined ? undefined : typeof given === 'string' ? (value(next++) as string) : given.map(() => value(next++) as string);
  return placed as Filters;
}

/** Whether any row of `table` (of any agent or type) has its `time` in one of `ranges`. */
const rowsWithin =
  (table: 'events' | 'sessions', time: 'ts' | 'started_at') =>
  (ranges: readonly [unknown, unknown][]): RawBuilder<SqlBool> =>
    sql<SqlBool>`(${sql.join(
      ranges.map(
        ([start, end]) =>
          sql`exists (select 1 from ${sql.table(table)} as outside where outside.${sql.ref(time)} >= ${start} and outside.${sql.ref(time)} <= ${end})`,
      ),
      sql` or `,
    )})`;

const eventsWithin = rowsWithin('events', 'ts');
const sessionsStartedWithin = rowsWithin('sessions', 'started_at');

/** What a range is read against (rangeConditions): the events' times, or the sessions' start times. */
const RANGE_OF = {
  events: { time: 'ts', within: eventsWithin },
  sessions: { time: 'started_at', within: sessionsStartedWithin },
} as const;

/**
 * How a range split on hours (its bounds placed: placedSplit) is read (`hourly`: a condition on
 * an hourly table's `hour`; `raw`: on the rows' time, `of`; null: nothing to read there). Whole hours
 * come from the hourly table. An hour the range cuts comes from the hourly table too when no event
 * at all lies in its part outside the range (then the hour's row holds exactly the part inside;
 * "now" cuts the current hour so, as no event is stamped in the future), else from the events of
 * its part inside. Both conditions go into one statement, so that the test and the read it chooses
 * see the same snapshot.
 */
function rangeConditions(
  { wholeHours, cutHours }: RangeSplit<unknown>,
  { time, within }: (typeof RANGE_OF)[keyof typeof RANGE_OF],
): { hourly: RawBuilder<SqlBool> | null; raw: RawBuilder<SqlBool> | null } {
  const hour = sql.ref('hour');
  const ts = sql.ref(time);
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

/** The statements of every report readRange runs, by shape. */
const rangeQueries = new ShapedQueries<ObserveSchema>('readRange');

/**
 * A report's statement over [from, to] with its filters, built and compiled once per shape: the
 * shape is `shape` (the report, and what else its statement depends on: its grouping, its metric),
 * how the range falls on hours and which filters are set; the call binds the range's bounds and the
 * filters' values. `build` gets the range's conditions and the filters as placeholders.
 */
export function readRange<Filters extends QueryFilters, Row>(
  database: ObserveDatabase,
  range: { from: number; to: number; of: keyof typeof RANGE_OF },
  filters: Filters,
  shape: string,
  build: (conditions: ReturnType<typeof rangeConditions>, filters: Filters) => Compilable<Row>,
): Promise<Row[]> {
  const split = splitRange(range.from, range.to);
  const hours = splitShape(split);
  const set = filterShape(filters);
  return rangeQueries.execute<Row>(database.db, database.dialect, `${shape} ${hours.shape} ${set.shape}`, [...hours.bounds, ...set.values], (value) =>
    build(rangeConditions(placedSplit(split, value), RANGE_OF[range.of]), placedFilters(filters, value, hours.bounds.length)),
  );
}

/**
 * Exact sums over every event with from ≤ ts ≤ to, per dimension key: the rollups where they hold
 * exactly the range, the events elsewhere (rangeConditions), read in one statement and merged.
 */
export async function aggregate(database: ObserveDatabase, query: AggregateQuery): Promise<AggregateRow[]> {
  const { dimensions, granularity } = query;
  const rows = await readRange(
    database,
    { from: query.from, to: query.to, of: 'events' },
    aggregateFilters(query),
    `aggregate ${dimensions.join(',')} ${granularity ?? 'hour'}`,
    ({ hourly, raw }, filters) => {
      const placed = { dimensions, granularity, ...filters };
      const parts = [
        ...(hourly ? [aggregateSource(database.db, SOURCES.rollup, placed, hourly)] : []),
        ...(raw ? [aggregateSource(database.db, SOURCES.events, placed, raw)] : []),
      ];
      return (parts.length === 1 ? parts[0]! : parts[0]!.unionAll(parts[1]! as never)) as Compilable<Record<string, unknown>>;
    },
  );
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
  const rows = await readRange(database, { ...window, of: 'sessions' }, { agentId }, 'sessionsPerAgent', ({ hourly, raw }, filters) => {
    const { db } = database;
    const agent = filters.agentId === undefined ? sql`agent_id <> ${SYSTEM_AGENT_ID}` : sql`agent_id = ${filters.agentId}`;
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
    const [first, second] = parts as SelectQueryBuilder<ObserveSchema, 'sessions', { agent_id: string; sessions: unknown; duration: unknown }>[];
    return second === undefined ? first! : first!.unionAll(second);
  });
  const merged = new Map<string, { agent_id: string; sessions: number; duration: number }>();
  for (const row of rows) {
    const entry = merged.get(row.agent_id) ?? { agent_id: row.agent_id, sessions: 0, duration: 0 };
    entry.sessions += Number(row.sessions ?? 0);
    entry.duration += Number(row.duration ?? 0);
    merged.set(row.agent_id, entry);
  }
  return [...merged.values()];
}
