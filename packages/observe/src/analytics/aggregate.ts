import { DAY_MS, HOUR_MS, ShapedQueries, sumAsDouble } from '@vigil/platform';
import { sql, type Compilable, type Kysely, type RawBuilder, type SelectQueryBuilder, type SqlBool } from 'kysely';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import { sumNanosSql, SYSTEM_AGENT_ID } from '../events/index.ts';
import { sessionDurationSql } from '../sessions/index.ts';
import { HOURLY, SPANS, spanStart, type Span } from './spans.ts';

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

export interface AggregateQuery<Key extends SumKey = SumKey> {
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
  /**
   * The sums to compute (all when unset; eventCount always): a report that shows three of them
   * does not pay for the other eight on every row it reads (a third of the statement's time over
   * 30 days of rollups, half of it over a cut hour's events).
   */
  sums?: readonly Key[];
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

export type SumKey = keyof Sums;

/** A row of an aggregate: the sums asked for (AggregateQuery.sums) and the dimensions' values. */
export type AggregateRow<Key extends SumKey = SumKey> = Pick<Sums, Key | 'eventCount'> & Partial<Record<Dimension, string | number>>;

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

const SUM_KEYS = Object.keys(emptySums()) as SumKey[];

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
} satisfies Record<string, { time: string; text: (c: string) => RawBuilder<unknown>; sums: Record<keyof Sums, RawBuilder<unknown>> }>;

/** The optional filters of an aggregate, in one order (filterShape). */
function aggregateFilters(query: AggregateQuery) {
  return { agentId: query.agentId, excludeAgentId: query.excludeAgentId, eventTypes: query.eventTypes, provider: query.provider, model: query.model };
}

/** Rows of one source for the query (its filters placed: placedFilters) where `condition` holds, their sums counted with `sign`: a span's rollups, or the events. */
function aggregateSource(
  db: Kysely<ObserveSchema>,
  table: Span['rollups'] | 'events',
  source: (typeof SOURCES)[keyof typeof SOURCES],
  query: Pick<AggregateQuery, 'dimensions' | 'granularity'> & ReturnType<typeof aggregateFilters> & { sumKeys: readonly SumKey[] },
  { sign, condition }: { sign: Sign; condition: RawBuilder<SqlBool> },
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
  for (const key of query.sumKeys) selections.push(signed(source.sums[key], sign).as(key) as never);

  let q = db
    .selectFrom(table)
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

/**
 * How [from, to] is read at one span and the finer ones (coarsest first): the whole spans inside it
 * (first and last start, or null) and the spans it cuts (at most two).
 */
export interface RangeSplit<Bound = number> {
  whole: [Bound, Bound] | null;
  cuts: SpanCut<Bound>[];
}

/** A part of a span read at the next finer span (or, at the finest, from the rows between its bounds). */
export type FinerRead<Bound = number> = RangeSplit<Bound> | [Bound, Bound];

/**
 * A span [from, to] cuts, read by whichever of its parts holds less time up to now (splitRange).
 * `inside`: the span's row when no row lies in its parts `outside` the range, else its part inside
 * read finer. `outside`: the span's row less its parts outside the range read finer.
 */
export type SpanCut<Bound = number> =
  { start: Bound; by: 'inside'; outside: [Bound, Bound][]; inside: FinerRead<Bound> } | { start: Bound; by: 'outside'; outside: FinerRead<Bound>[] };

/**
 * How [from, to] falls on `spans` (coarsest first) from `level` down. A cut span is read by the part
 * that holds less time up to `now`: time after it holds no event (none is stamped in the future),
 * so the future part of today or of the current hour costs nothing to read. Either way gives the
 * same answer; the choice only decides how many rows are read.
 */
export function splitRange(from: number, to: number, spans: readonly Span[], now: number, level = 0): RangeSplit {
  const span = spans[level]!;
  const first = spanStart(from, span);
  const last = spanStart(to, span);
  const finer = ([start, end]: [number, number]): FinerRead => (level + 1 < spans.length ? splitRange(start, end, spans, now, level + 1) : [start, end]);
  const pastLength = ([start, end]: [number, number]) => Math.max(0, Math.min(end, now) - start + 1);
  const cut = (start: number): SpanCut => {
    const end = start + span.ms - 1;
    const inside: [number, number] = [Math.max(from, start), Math.min(to, end)];
    const outside: [number, number][] = [];
    if (inside[0] > start) outside.push([start, inside[0] - 1]);
    if (inside[1] < end) outside.push([inside[1] + 1, end]);
    const outsideLength = outside.reduce((sum, part) => sum + pastLength(part), 0);
    return outsideLength < pastLength(inside) ? { start, by: 'outside', outside: outside.map(finer) } : { start, by: 'inside', outside, inside: finer(inside) };
  };
  const firstCut = from > first || to < first + span.ms - 1;
  const lastCut = from > last || to < last + span.ms - 1;
  const cuts = [...(firstCut ? [cut(first)] : []), ...(lastCut && last !== first ? [cut(last)] : [])];
  const wholeFirst = firstCut ? first + span.ms : first;
  const wholeLast = lastCut ? last - span.ms : last;
  return { whole: wholeFirst <= wholeLast ? [wholeFirst, wholeLast] : null, cuts };
}

/** The split with each bound its conditions use replaced by `place(bound)`, called in one fixed order (splitShape's and placedSplit's). */
function mapBounds<From, To>(split: RangeSplit<From>, place: (bound: From) => To): RangeSplit<To> {
  const pair = ([start, end]: [From, From]): [To, To] => [place(start), place(end)];
  const finer = (read: FinerRead<From>): FinerRead<To> => (Array.isArray(read) ? pair(read) : mapBounds(read, place));
  return {
    whole: split.whole ? pair(split.whole) : null,
    cuts: split.cuts.map((cut): SpanCut<To> => {
      const start = place(cut.start);
      if (cut.by === 'outside') return { start, by: 'outside', outside: cut.outside.map(finer) };
      const outside = cut.outside.map(pair);
      return { start, by: 'inside', outside, inside: finer(cut.inside) };
    }),
  };
}

/**
 * What a range's conditions (rangeConditions) depend on besides its bounds — which spans are
 * whole and how each cut span is cut and read, at every level — and its bounds, in mapBounds's order.
 */
function splitShape(split: RangeSplit): { shape: string; bounds: number[] } {
  const bounds: number[] = [];
  mapBounds(split, (bound) => bounds.push(bound));
  const finer = (read: FinerRead): string => (Array.isArray(read) ? 'r' : shapeOf(read));
  const shapeOf = ({ whole, cuts }: RangeSplit): string =>
    (whole ? 'w' : '-') +
    cuts.map((cut) => (cut.by === 'inside' ? `i${cut.outside.length}(${finer(cut.inside)})` : `o(${cut.outside.map(finer).join(',')})`)).join('');
  return { shape: shapeOf(split), bounds };
}

/** The split with its bounds replaced by a statement's placeholders (ShapedQueries): the k-th of splitShape's bounds by `value(k)`. */
function placedSplit(split: RangeSplit, value: (index: number) => unknown): RangeSplit<unknown> {
  let next = 0;
  return mapBounds(split, () => value(next++));
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

/**
 * Whether any row of `table` (of any agent or type) has its `time` in one of `ranges`. The `limit 1`
 * keeps each test a one-row probe: without it SQLite (3.53, better-sqlite3's) turns the uncorrelated
 * EXISTS into a semi-join whose outer loop walks every row in the range while the rest of the
 * condition is false — 52,000 events for one hourly part of a 24 h report, 2.8 ms instead of 8 µs.
 */
const rowsWithin =
  (table: 'events' | 'sessions', time: 'ts' | 'started_at') =>
  (ranges: readonly [unknown, unknown][]): RawBuilder<SqlBool> =>
    sql<SqlBool>`(${sql.join(
      ranges.map(
        ([start, end]) =>
          sql`exists (select 1 from ${sql.table(table)} as outside where outside.${sql.ref(time)} >= ${start} and outside.${sql.ref(time)} <= ${end} limit 1)`,
      ),
      sql` or `,
    )})`;

export const eventsWithin = rowsWithin('events', 'ts');
const sessionsStartedWithin = rowsWithin('sessions', 'started_at');

/** What a range is read against (rangeConditions): the events' times, or the sessions' start times. */
const RANGE_OF = {
  events: { time: 'ts', within: eventsWithin },
  sessions: { time: 'started_at', within: sessionsStartedWithin },
} as const;

/** +1: a part's rows add to the report; -1: they are taken from it. */
export type Sign = 1 | -1;

/**
 * Where a range is read from (rangeConditions): conditions on the `hour` of the span tables read,
 * and on the rows' time (`raw`), each with the sign its rows count with.
 */
export interface RangeConditions {
  spans: { span: Span; sign: Sign; condition: RawBuilder<SqlBool> }[];
  raw: { sign: Sign; condition: RawBuilder<SqlBool> }[];
}

/**
 * How a range split on spans (its bounds placed: placedSplit) is read. Whole spans come from their
 * span's table. A span the range cuts is read by its shorter part (splitRange). By its part inside:
 * from its span's row when no row at all (of any agent or type) has its time in the span's part
 * outside the range, as the row then holds exactly the part inside ("now" cuts today and the
 * current hour so, as no event is stamped in the future); else its part inside is read at the next
 * finer span, the same way. By its part outside: the span's row, less that part read at the next
 * finer span. At the finest, a part is read from the rows themselves. Every condition goes into one
 * statement, so that the tests and the reads they choose see the same snapshot.
 */
function rangeConditions(split: RangeSplit<unknown>, readSpans: readonly Span[], { time, within }: (typeof RANGE_OF)[keyof typeof RANGE_OF]): RangeConditions {
  const hour = sql.ref('hour');
  const ts = sql.ref(time);
  const terms = readSpans.map(() => ({ 1: [] as RawBuilder<SqlBool>[], [-1]: [] as RawBuilder<SqlBool>[] }));
  const raw = { 1: [] as RawBuilder<SqlBool>[], [-1]: [] as RawBuilder<SqlBool>[] };
  const and = (guard: RawBuilder<SqlBool> | null, term: RawBuilder<SqlBool>) => (guard ? sql<SqlBool>`(${guard} and ${term})` : term);
  const finer = (part: FinerRead<unknown>, level: number, guard: RawBuilder<SqlBool> | null, sign: Sign) => {
    if (!Array.isArray(part)) return read(part, level, guard, sign);
    // A guard sits in the range's lower bound, so an index range over the time is empty when it
    // fails, instead of every row of the cut hour being read and dropped (the current hour grows with the data).
    const from = guard ? sql`case when ${guard} then cast(${part[0]} as bigint) end` : part[0];
    raw[sign].push(sql<SqlBool>`(${ts} >= ${from} and ${ts} <= ${part[1]})`);
  };
  const read = ({ whole, cuts }: RangeSplit<unknown>, level: number, guard: RawBuilder<SqlBool> | null, sign: Sign) => {
    if (whole) terms[level]![sign].push(and(guard, sql<SqlBool>`(${hour} >= ${whole[0]} and ${hour} <= ${whole[1]})`));
    for (const cut of cuts) {
      if (cut.by === 'outside') {
        terms[level]![sign].push(and(guard, sql<SqlBool>`${hour} = ${cut.start}`));
        for (const part of cut.outside) finer(part, level + 1, guard, -sign as Sign);
      } else {
        const outsideHasRows = within(cut.outside);
        terms[level]![sign].push(and(guard, sql<SqlBool>`(${hour} = ${cut.start} and not ${outsideHasRows})`));
        finer(cut.inside, level + 1, and(guard, outsideHasRows), sign);
      }
    }
  };
  read(split, 0, null, 1);
  const any = (parts: RawBuilder<SqlBool>[]) => sql<SqlBool>`(${sql.join(parts, sql` or `)})`;
  const signed = (bySign: { 1: RawBuilder<SqlBool>[]; [-1]: RawBuilder<SqlBool>[] }) =>
    ([1, -1] as const).flatMap((sign) => (bySign[sign].length === 0 ? [] : [{ sign, condition: any(bySign[sign]) }]));
  return {
    spans: readSpans.flatMap((span, level) => signed(terms[level]!).map((part) => ({ span, ...part }))),
    raw: signed(raw),
  };
}

/** `expression` counted with `sign`. */
export const signed = (expression: RawBuilder<unknown>, sign: Sign): RawBuilder<unknown> => (sign === 1 ? expression : sql`-(${expression})`);

/** The parts of a report's statement as one (at least one part: a range always has something to read). */
export function unionAll<Q extends SelectQueryBuilder<ObserveSchema, never, object>>(parts: readonly Q[]): Q {
  return parts.slice(1).reduce((all, part) => all.unionAll(part as never) as Q, parts[0]!);
}

/** The statements of every report readRange runs, by shape. */
const rangeQueries = new ShapedQueries<ObserveSchema>('readRange');

/**
 * A report's statement over [from, to] with its filters, built and compiled once per shape: the
 * shape is `shape` (the report, and what else its statement depends on: its grouping, its metric),
 * how the range falls on spans and which filters are set; the call binds the range's bounds and the
 * filters' values. `build` gets the range's conditions and the filters as placeholders. `spans`:
 * the spans whose tables the report may read (a report by hour reads no daily row).
 */
export function readRange<Filters extends QueryFilters, Row>(
  database: ObserveDatabase,
  range: { from: number; to: number; of: keyof typeof RANGE_OF; spans?: readonly Span[] },
  filters: Filters,
  shape: string,
  build: (conditions: RangeConditions, filters: Filters) => Compilable<Row>,
): Promise<Row[]> {
  const spans = range.spans ?? SPANS;
  // The wall clock, not the service's: it only chooses which rows to read, never what they add up to.
  const split = splitRange(range.from, range.to, spans, Date.now());
  const placed = splitShape(split);
  const set = filterShape(filters);
  const key = `${shape} ${spans.map((span) => span.ms).join(',')} ${placed.shape} ${set.shape}`;
  return rangeQueries.execute<Row>(database.db, database.dialect, key, [...placed.bounds, ...set.values], (value) =>
    build(rangeConditions(placedSplit(split, value), spans, RANGE_OF[range.of]), placedFilters(filters, value, placed.bounds.length)),
  );
}

/**
 * Exact sums over every event with from ≤ ts ≤ to, per dimension key: the daily and hourly rollups
 * where they hold exactly the range, the events elsewhere (rangeConditions), read in one statement and merged.
 */
export async function aggregate<Key extends SumKey = SumKey>(database: ObserveDatabase, query: AggregateQuery<Key>): Promise<AggregateRow<Key>[]> {
  const { dimensions, granularity } = query;
  const asked: readonly SumKey[] | undefined = query.sums;
  const sumKeys = asked === undefined ? SUM_KEYS : SUM_KEYS.filter((key) => key === 'eventCount' || asked.includes(key));
  // Days hold whole days and weeks (which start at 00:00 UTC), not hours.
  const byHour = dimensions.includes('bucket') && (granularity ?? 'hour') === 'hour';
  const rows = await readRange(
    database,
    { from: query.from, to: query.to, of: 'events', spans: byHour ? [HOURLY] : SPANS },
    aggregateFilters(query),
    `aggregate ${dimensions.join(',')} ${granularity ?? 'hour'} ${sumKeys.join(',')}`,
    ({ spans, raw }, filters) => {
      const placed = { dimensions, granularity, sumKeys, ...filters };
      const parts = [
        ...spans.map((part) => aggregateSource(database.db, part.span.rollups, SOURCES.rollup, placed, part)),
        ...raw.map((part) => aggregateSource(database.db, 'events', SOURCES.events, placed, part)),
      ];
      return unionAll(parts) as Compilable<Record<string, unknown>>;
    },
  );
  const merged = new Map<string, AggregateRow>();
  for (const row of rows) {
    // PostgreSQL answers sum(bigint) as numeric text; empty sums are null; sums not asked for stay 0.
    const out: Sums & Partial<Record<Dimension, string | number>> = emptySums();
    for (const key of sumKeys) out[key] = Number(row[key] ?? 0);
    for (const dimension of query.dimensions) out[dimension] = dimension === 'bucket' ? Number(row.bucket) : String(row[dimension]);
    const key = JSON.stringify(query.dimensions.map((d) => out[d]));
    const existing = merged.get(key);
    if (existing) addSums(existing, out);
    else merged.set(key, out);
  }
  // A key whose rows were all taken out again (a span's row less its part outside the range) has no event in the range.
  return [...merged.values()].filter((row) => row.eventCount !== 0);
}

export const mean = (sum: number, count: number): number => (count === 0 ? 0 : sum / count);
export const ratio = (part: number, whole: number): number => (whole === 0 ? 0 : part / whole);

/**
 * Sessions started in the window per agent (the system agent left out), with their summed
 * duration: whole days and hours from agent_session_days and agent_session_hours, a span the
 * window cuts from them too when no session started in its part outside the window, else from
 * those sessions (rangeConditions).
 */
export async function sessionsPerAgent(
  database: ObserveDatabase,
  window: { from: number; to: number },
  agentId?: string,
): Promise<{ agent_id: string; sessions: number; duration: number }[]> {
  const rows = await readRange(database, { ...window, of: 'sessions' }, { agentId }, 'sessionsPerAgent', ({ spans, raw }, filters) => {
    const { db } = database;
    const agent = filters.agentId === undefined ? sql`agent_id <> ${SYSTEM_AGENT_ID}` : sql`agent_id = ${filters.agentId}`;
    const parts = [
      ...spans.map(({ span, sign, condition }) =>
        db
          .selectFrom(span.sessions)
          .select([
            'agent_id',
            signed(sumAsDouble(sql.ref('session_count')), sign).as('sessions'),
            signed(sumAsDouble(sql.ref('duration_sum')), sign).as('duration'),
          ])
          .where(condition)
          .where(agent as RawBuilder<SqlBool>)
          .groupBy('agent_id'),
      ),
      ...raw.map(({ sign, condition }) =>
        db
          .selectFrom('sessions')
          .select(['agent_id', signed(sql`count(*)`, sign).as('sessions'), signed(sumAsDouble(sessionDurationSql()), sign).as('duration')])
          .where(condition)
          .where(agent as RawBuilder<SqlBool>)
          .groupBy('agent_id'),
      ),
    ];
    return unionAll(parts as SelectQueryBuilder<ObserveSchema, 'sessions', { agent_id: string; sessions: unknown; duration: unknown }>[]);
  });
  const merged = new Map<string, { agent_id: string; sessions: number; duration: number }>();
  for (const row of rows) {
    const entry = merged.get(row.agent_id) ?? { agent_id: row.agent_id, sessions: 0, duration: 0 };
    entry.sessions += Number(row.sessions ?? 0);
    entry.duration += Number(row.duration ?? 0);
    merged.set(row.agent_id, entry);
  }
  return [...merged.values()].filter((entry) => entry.sessions !== 0);
}
