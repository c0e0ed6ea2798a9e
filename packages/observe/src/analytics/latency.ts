// Latency percentiles: DDSketch bins kept per hour and per day in the ingest transaction, merged per request.
import { DDSketch } from '@datadog/sketches-js';
import { compareCodeUnits } from '@vigil/platform';
import { sql, type Kysely, type RawBuilder, type SelectQueryBuilder, type SqlBool, type Transaction } from 'kysely';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import type { LatencySketchRow } from './tables.ts';
import type { EventRow } from '../events/index.ts';
import { readRange, signed, unionAll } from './aggregate.ts';
import { HOURLY, spanStart, type Span } from './spans.ts';
import { TupleIndex } from './tuple-index.ts';

/**
 * Every reported percentile is within 1 % of the true value (DDSketch's relative-accuracy
 * guarantee, with the rank definition of `exactQuantile`).
 */
export const RELATIVE_ACCURACY = 0.01;
const QUANTILES = { p50: 0.5, p95: 0.95, p99: 0.99 } as const;

/** DDSketch's logarithmic mapping: bin k holds the values in (γ^(k−1), γ^k], γ = (1+α)/(1−α). */
const mapping = new DDSketch({ relativeAccuracy: RELATIVE_ACCURACY }).mapping;
/** Zero (and the nonsensical negative) durations share one bin below every other. */
const ZERO_BIN = -1_000_000;

export const binOf = (ms: number): number => (ms < mapping.minPossible ? ZERO_BIN : mapping.key(ms));

/** The two latencies measured: tool durations (tool_response/tool_error) and LLM latency (llm_response). */
export type LatencyMetric = 'tool' | 'llm';
const VALUE_COLUMN = { tool: 'duration_ms', llm: 'latency_ms' } as const;

export type Percentiles = Record<keyof typeof QUANTILES, number>;

/**
 * p50/p95/p99 of bins given as [bin, count] pairs (counts of one bin may come in several pairs);
 * null when empty. Each rank reads its bin's value, and a fractional rank interpolates between the
 * two, as `exactQuantile` does between the values: each is within 1 % of its true value, so their
 * weighted mean is within 1 % of the exact percentile.
 */
export function percentilesOfBins(bins: Iterable<readonly [number, number]>): Percentiles | null {
  const counts = new Map<number, number>();
  for (const [bin, count] of bins) addToBin(counts, bin, count);
  return percentilesOfCounts(counts);
}

/** Adds a count (negative: taken out) to its bin. */
function addToBin(counts: Map<number, number>, bin: number, count: number): void {
  counts.set(bin, (counts.get(bin) ?? 0) + count);
}

/** percentilesOfBins of bins already summed: count by bin (bins left with no count are none). */
function percentilesOfCounts(counts: ReadonlyMap<number, number>): Percentiles | null {
  const sorted = [...counts.keys()].filter((bin) => counts.get(bin)! > 0).sort((a, b) => a - b);
  if (sorted.length === 0) return null;
  // Rank r (0-based) falls in the first bin whose running count passes r.
  const ends: number[] = [];
  let total = 0;
  for (const bin of sorted) ends.push((total += counts.get(bin)!));
  const valueAt = (rank: number): number => {
    let low = 0;
    let high = ends.length - 1;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (ends[middle]! > rank) high = middle;
      else low = middle + 1;
    }
    const bin = sorted[low]!;
    return bin === ZERO_BIN ? 0 : mapping.value(bin);
  };
  const at = (q: number) => interpolated(q * (total - 1), valueAt);
  return { p50: at(QUANTILES.p50), p95: at(QUANTILES.p95), p99: at(QUANTILES.p99) };
}

/**
 * The exact quantile the sketch approximates: linear interpolation between the closest ranks, at
 * rank h = q·(n−1) of the sorted values (PostgreSQL's percentile_cont, numpy's and Excel's
 * default), so the median of two values is their mean and p99 of fewer than 100 values lies
 * between the two largest.
 */
export function exactQuantile(sorted: readonly number[], q: number): number {
  return interpolated(q * (sorted.length - 1), (rank) => sorted[rank]!);
}

/** The value at fractional rank `h` from the values at whole ranks (0-based, ascending). */
function interpolated(h: number, valueAt: (rank: number) => number): number {
  const below = Math.floor(h);
  const lower = valueAt(below);
  return h === below ? lower : lower + (h - below) * (valueAt(below + 1) - lower);
}

export type SketchSource = Pick<EventRow, 'ts' | 'agent_id' | 'tool_name' | 'provider' | 'model' | 'duration_ms' | 'latency_ms'>;

/** A sketch row's primary key, in index order. */
export const SKETCH_KEY = ['hour', 'agent_id', 'metric', 'tool_name', 'provider', 'model', 'bin'] as const;

/** A sketch row's key as one string: equal for rows of the same (hour, agent, metric, tool, provider, model, bin). */
export function sketchKey(row: Pick<LatencySketchRow, (typeof SKETCH_KEY)[number]>): string {
  return keyOf(row.hour, row.bin, row.agent_id, row.metric, row.tool_name, row.provider, row.model);
}

/** Length-prefixed parts: as unambiguous as JSON of the list, without building the list (built once a row of a batch, for its lock order). */
function keyOf(hour: number, bin: number, ...parts: string[]): string {
  let key = `${hour}|${bin}`;
  for (const part of parts) key += `|${part.length}:${part}`;
  return key;
}

/**
 * Sketch bins counted event by event: the one definition of what an event adds to the latency
 * sketches, used by ingest (its deltas) and by the audit's recomputation from chained events.
 */
export class SketchCounts {
  private readonly found = new TupleIndex<LatencySketchRow>();
  private readonly created: LatencySketchRow[] = [];

  constructor(private readonly span: Span) {}

  add(e: SketchSource): void {
    if (e.duration_ms !== null) this.count(e, 'tool', e.duration_ms);
    if (e.latency_ms !== null) this.count(e, 'llm', e.latency_ms);
  }

  private count(e: SketchSource, metric: LatencyMetric, value: number): void {
    const hour = spanStart(e.ts, this.span);
    const tool = metric === 'tool' ? (e.tool_name ?? '') : '';
    const provider = metric === 'llm' ? (e.provider ?? '') : '';
    const model = metric === 'llm' ? (e.model ?? '') : '';
    const bin = binOf(value);
    const parts = [hour, bin, e.agent_id, metric, tool, provider, model];
    let row = this.found.get(parts);
    if (row === undefined) {
      row = { hour, agent_id: e.agent_id, metric, tool_name: tool, provider, model, bin, count: 0 };
      this.found.set(parts, row);
      this.created.push(row);
    }
    row.count += 1;
  }

  /** One row per key, in key order (a fixed lock order). */
  rows(): LatencySketchRow[] {
    return this.created
      .map((row): [string, LatencySketchRow] => [sketchKey(row), row])
      .sort(([a], [b]) => compareCodeUnits(a, b))
      .map(([, row]) => row);
  }
}

/** The sketch bins over `span` a set of events adds, one row per key, in key order (a fixed lock order). */
export function sketchDeltas(events: readonly SketchSource[], span: Span): LatencySketchRow[] {
  const counts = new SketchCounts(span);
  for (const e of events) counts.add(e);
  return counts.rows();
}

const ROWS_PER_STATEMENT = 500;

/** Adds (`sign` 1) or subtracts (`sign` -1) bin counts to the sketches over `span`, in the caller's transaction. */
export async function applySketchDeltas(trx: Transaction<ObserveSchema>, deltas: readonly LatencySketchRow[], sign: 1 | -1, span: Span): Promise<void> {
  const table = span.sketches;
  for (let offset = 0; offset < deltas.length; offset += ROWS_PER_STATEMENT) {
    const chunk = deltas.slice(offset, offset + ROWS_PER_STATEMENT).map((row) => ({ ...row, count: sign * row.count }));
    await trx
      .insertInto(table)
      .values(chunk)
      .onConflict((oc) => oc.columns([...SKETCH_KEY]).doUpdateSet({ count: sql`${sql.ref(`${table}.count`)} + excluded.count` }))
      .execute();
  }
  if (sign === -1 && deltas.length > 0) {
    const hours = [...new Set(deltas.map((d) => d.hour))];
    await trx.deleteFrom(table).where('hour', 'in', hours).where('count', '<=', 0).execute();
  }
}

const SOURCE_COLUMNS = ['ts', 'agent_id', 'tool_name', 'provider', 'model', 'duration_ms', 'latency_ms'] as const;
const timed = (db: Kysely<ObserveSchema>) =>
  db
    .selectFrom('events')
    .select([...SOURCE_COLUMNS])
    .where((eb) => eb.or([eb('duration_ms', 'is not', null), eb('latency_ms', 'is not', null)]));

/** Subtracts the timings of these sessions' events from the sketches over `span` (before the events are deleted). */
export async function subtractSessionsFromSketches(trx: Transaction<ObserveSchema>, sessionIds: readonly string[], span: Span): Promise<void> {
  if (sessionIds.length === 0) return;
  const rows = await timed(trx)
    .where('session_id', 'in', [...sessionIds])
    .execute();
  await applySketchDeltas(trx, sketchDeltas(rows.map(numeric), span), -1, span);
}

const numeric = (row: SketchSource): SketchSource => ({
  ...row,
  ts: Number(row.ts),
  duration_ms: row.duration_ms === null ? null : Number(row.duration_ms),
  latency_ms: row.latency_ms === null ? null : Number(row.latency_ms),
});

const BACKFILL_PAGE = 5_000;

/** Builds the sketches over `span` of every stored event into its empty table (a repair), a page of events at a time. */
export async function backfillSketches(db: Kysely<ObserveSchema>, span: Span): Promise<void> {
  let after = '';
  for (;;) {
    const page = await timed(db).select('id').where('id', '>', after).orderBy('id').limit(BACKFILL_PAGE).execute();
    if (page.length === 0) return;
    await applySketchDeltas(db as Transaction<ObserveSchema>, sketchDeltas(page.map(numeric), span), 1, span);
    after = page.at(-1)!.id;
  }
}

/** The stored sketch rows over `span` and the rows recomputed from the events, both in key order: equal when exact. */
export async function compareSketches(db: Kysely<ObserveSchema>, span: Span = HOURLY): Promise<{ stored: LatencySketchRow[]; recomputed: LatencySketchRow[] }> {
  const stored = await db.selectFrom(span.sketches).selectAll().execute();
  const all = await timed(db).execute();
  const asRow = (row: LatencySketchRow): LatencySketchRow => ({ ...row, hour: Number(row.hour), bin: Number(row.bin), count: Number(row.count) });
  const order = (rows: LatencySketchRow[]) =>
    rows.map(asRow).sort((a, b) => (JSON.stringify(SKETCH_KEY.map((k) => a[k])) < JSON.stringify(SKETCH_KEY.map((k) => b[k])) ? -1 : 1));
  return { stored: order(stored), recomputed: order(sketchDeltas(all.map(numeric), span)) };
}

export type LatencyDimension = 'agent_id' | 'tool_name' | 'provider' | 'model';

export interface LatencyQuery {
  /** Inclusive bounds, epoch ms. */
  from: number;
  to: number;
  metric: LatencyMetric;
  dimensions: readonly LatencyDimension[];
  agentId?: string;
  excludeAgentId?: string;
  provider?: string;
  model?: string;
}

/** The optional filters of a latency query, in one order (filterShape). */
function latencyFilters(query: Omit<LatencyQuery, 'metric'>) {
  return { agentId: query.agentId, excludeAgentId: query.excludeAgentId, provider: query.provider, model: query.model };
}

/** The query's time condition and filters (placed: placedFilters) on a select from a span's sketches or the events (all have these columns). */
function filtered<Q extends SelectQueryBuilder<ObserveSchema, Span['sketches'] | 'events', object>>(
  q: Q,
  condition: RawBuilder<SqlBool>,
  filters: ReturnType<typeof latencyFilters>,
): Q {
  const where = (builder: Q, ...args: unknown[]): Q => (builder.where as (...a: unknown[]) => Q)(...args);
  let out = where(q, condition);
  if (filters.agentId !== undefined) out = where(out, 'agent_id', '=', filters.agentId);
  if (filters.excludeAgentId !== undefined) out = where(out, 'agent_id', '<>', filters.excludeAgentId);
  if (filters.provider !== undefined) out = where(out, 'provider', '=', filters.provider);
  if (filters.model !== undefined) out = where(out, 'model', '=', filters.model);
  return out;
}

export type LatencyRow = Partial<Record<LatencyDimension, string>> & { percentiles: Percentiles };

/** A value column's null, typed as the values are (PostgreSQL types a bare null in a union as text). */
const NO_VALUE = sql`cast(null as double precision)`;

/** The percentiles of one metric over every timed event with from ≤ ts ≤ to, per dimension key (latencyPercentilesByMetric). */
export async function latencyPercentiles(database: ObserveDatabase, query: LatencyQuery): Promise<LatencyRow[]> {
  const { metric, ...rest } = query;
  return (await latencyPercentilesByMetric(database, { ...rest, metrics: [metric] }))[metric];
}

/**
 * Percentiles of each metric over every timed event with from ≤ ts ≤ to, per dimension key: whole
 * days and hours merge the stored sketch bins, the cut hours at either end bin the events
 * themselves (indexed by time, grouped by value in SQL; rangeConditions), so the range is exact to
 * the millisecond and only the 1 % of the sketch remains. Several metrics are read in one
 * statement, which reads a cut hour's events once for all of them.
 */
export async function latencyPercentilesByMetric(
  database: ObserveDatabase,
  query: Omit<LatencyQuery, 'metric'> & { metrics: readonly LatencyMetric[] },
): Promise<Record<LatencyMetric, LatencyRow[]>> {
  const { db } = database;
  const dims = query.dimensions;
  // The two metrics at most (LatencyMetric), each read once.
  const metrics = [...new Set(query.metrics)];
  const values = metrics.map((metric) => VALUE_COLUMN[metric]);
  // One statement (so every part sees one snapshot): sketch bins (is_value 0, their metric, bin in
  // k) and timed values of the events (is_value 1, the first metric's value in k, the second's in k2).
  const rows = await readRange(
    database,
    { from: query.from, to: query.to, of: 'events' },
    latencyFilters(query),
    `latencyPercentiles ${dims.join(',')} ${metrics.join(',')}`,
    ({ spans, raw }, placed) => {
      const parts = [
        ...spans.map(({ span, sign, condition }) =>
          filtered(
            db
              .selectFrom(span.sketches)
              .select([
                ...dims.map((d) => sql.ref(d).as(d)),
                sql.lit(0).as('is_value'),
                sql.ref('metric').as('metric'),
                sql.ref('bin').as('k'),
                NO_VALUE.as('k2'),
                signed(sql`sum(count)`, sign).as('n'),
              ] as never)
              .where('metric', 'in', [...metrics]),
            condition,
            placed,
          ).groupBy([...dims.map((d) => sql.ref(d)), sql.ref('metric'), sql.ref('bin')] as never),
        ),
        ...raw.map(({ sign, condition }) =>
          filtered(
            db
              .selectFrom('events')
              .select([
                ...dims.map((d) => sql`coalesce(${sql.ref(d)}, '')`.as(d)),
                sql.lit(1).as('is_value'),
                sql`cast(null as text)`.as('metric'),
                sql.ref(values[0]!).as('k'),
                (values[1] === undefined ? NO_VALUE : sql.ref(values[1])).as('k2'),
                signed(sql`count(*)`, sign).as('n'),
              ] as never)
              .where(
                sql<SqlBool>`(${sql.join(
                  values.map((value) => sql`${sql.ref(value)} is not null`),
                  sql` or `,
                )})`,
              ),
            condition,
            placed,
          ).groupBy([...dims.map((_, i) => sql.lit(i + 1)), ...values.map((value) => sql.ref(value))] as never),
        ),
      ];
      return unionAll(parts as SelectQueryBuilder<ObserveSchema, 'events', Record<string, unknown>>[]);
    },
  );

  // Summed by bin as they are read: each request reads a row per agent and bin, so no pair or key array is made per row.
  const groups = new Map<string, { metric: LatencyMetric; dimensions: Partial<Record<LatencyDimension, string>>; counts: Map<number, number> }>();
  const count = (metric: LatencyMetric, row: Record<string, unknown>, bin: number) => {
    const key = `${metric}|${dims.length === 0 ? '' : dims.length === 1 ? String(row[dims[0]!]) : JSON.stringify(dims.map((d) => String(row[d])))}`;
    let group = groups.get(key);
    if (!group) {
      group = { metric, dimensions: Object.fromEntries(dims.map((d) => [d, String(row[d])])), counts: new Map() };
      groups.set(key, group);
    }
    addToBin(group.counts, bin, Number(row.n));
  };
  for (const row of rows) {
    if (Number(row.is_value) === 0) {
      count(row.metric as LatencyMetric, row, Number(row.k));
      continue;
    }
    for (const [i, metric] of metrics.entries()) {
      const value = i === 0 ? row.k : row.k2;
      if (value !== null && value !== undefined) count(metric, row, binOf(Number(value)));
    }
  }
  const out: Record<LatencyMetric, LatencyRow[]> = { tool: [], llm: [] };
  for (const { metric, dimensions, counts } of groups.values()) {
    const percentiles = percentilesOfCounts(counts);
    if (percentiles) out[metric].push({ ...dimensions, percentiles });
  }
  return out;
}
