import { DAY_MS, HOUR_MS, sumAsDouble } from '@vigil/platform';
import { sql, type Expression, type Kysely, type RawBuilder, type SqlBool } from 'kysely';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import { SYSTEM_AGENT_ID } from '../events/index.ts';
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
  costUsd: number;
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
  costUsd: 0,
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

/** Per-row contributions in each source: a rollup row carries sums, an event row counts one. */
const SOURCES = {
  rollup: {
    table: 'event_rollups' as const,
    time: 'hour',
    text: (column: string) => sql.ref(column),
    sums: {
      eventCount: sql`sum(event_count)`,
      errorCount: sql`sum(error_count)`,
      toolCallCount: sql`sum(case when event_type = 'tool_call' then event_count else 0 end)`,
      costUsd: sql`sum(cost_usd)`,
      durationSum: sql`sum(duration_sum)`,
      durationCount: sql`sum(duration_count)`,
      latencySum: sql`sum(latency_sum)`,
      latencyCount: sql`sum(latency_count)`,
      inputTokens: tokenSum('input_tokens'),
      outputTokens: tokenSum('output_tokens'),
      failureCount: sql`sum(failure_count)`,
    },
  },
  events: {
    table: 'events' as const,
    time: 'ts',
    // The rollups' `tier` is the events' `complexity_tier`.
    text: (column: string) => sql`coalesce(${sql.ref(column === 'tier' ? 'complexity_tier' : column)}, '')`,
    sums: {
      eventCount: sql`count(*)`,
      errorCount: sql`sum(is_error)`,
      toolCallCount: sql`sum(case when event_type = 'tool_call' then 1 else 0 end)`,
      costUsd: sql`sum(cost_usd)`,
      durationSum: sql`sum(duration_ms)`,
      durationCount: sql`count(duration_ms)`,
      latencySum: sql`sum(latency_ms)`,
      latencyCount: sql`count(latency_ms)`,
      inputTokens: tokenSum('input_tokens'),
      outputTokens: tokenSum('output_tokens'),
      failureCount: sql`sum(case when finish_reason = 'error' then 1 else 0 end)`,
    },
  },
} satisfies Record<string, { table: string; time: string; text: (c: string) => RawBuilder<unknown>; sums: Record<keyof Sums, RawBuilder<unknown>> }>;

async function aggregateSource(
  db: Kysely<ObserveSchema>,
  source: (typeof SOURCES)[keyof typeof SOURCES],
  query: AggregateQuery,
  ranges: readonly [number, number][],
): Promise<AggregateRow[]> {
  if (ranges.length === 0) return [];
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

  let q = db.selectFrom(source.table).select(selections as never);
  q = q.where((eb) => eb.or(ranges.map(([start, end]) => eb.and([eb(time, '>=', start), eb(time, '<=', end)])) as Expression<SqlBool>[]));
  if (query.agentId !== undefined) q = q.where('agent_id', '=', query.agentId);
  if (query.excludeAgentId !== undefined) q = q.where('agent_id', '<>', query.excludeAgentId);
  if (query.eventTypes !== undefined) q = q.where('event_type', 'in', [...query.eventTypes]);
  if (query.provider !== undefined) q = q.where('provider', '=', query.provider);
  if (query.model !== undefined) q = q.where('model', '=', query.model);
  if (query.dimensions.length > 0) q = q.groupBy(query.dimensions.map((_, i) => sql.lit(i + 1)) as never);
  const rows = (await q.execute()) as Record<string, unknown>[];
  // PostgreSQL answers sum(bigint) as numeric text; empty sums are null.
  return rows.map((row) => {
    const out: AggregateRow = emptySums();
    for (const key of SUM_KEYS) out[key] = Number(row[key] ?? 0);
    for (const dimension of query.dimensions) out[dimension] = dimension === 'bucket' ? Number(row.bucket) : String(row[dimension]);
    return out;
  });
}

/**
 * Exact sums over every event with from ≤ ts ≤ to: whole hours come from the rollups, the partial
 * hours at either end from the events themselves (indexed by time), merged per dimension key.
 */
/** The whole hours of [from, to] (read from the hourly tables) and the partial hours at either end (read from the events). */
export function splitRange(from: number, to: number): { rollupRanges: [number, number][]; eventRanges: [number, number][] } {
  const firstWholeHour = Math.ceil(from / HOUR_MS) * HOUR_MS;
  const endOfWholeHours = Math.floor((to + 1) / HOUR_MS) * HOUR_MS;
  if (firstWholeHour >= endOfWholeHours) return { rollupRanges: [], eventRanges: [[from, to]] };
  return {
    rollupRanges: [[firstWholeHour, endOfWholeHours - HOUR_MS]],
    eventRanges: [
      ...(from < firstWholeHour ? [[from, firstWholeHour - 1] as [number, number]] : []),
      ...(endOfWholeHours <= to ? [[endOfWholeHours, to] as [number, number]] : []),
    ],
  };
}

export async function aggregate(database: ObserveDatabase, query: AggregateQuery): Promise<AggregateRow[]> {
  const { rollupRanges, eventRanges } = splitRange(query.from, query.to);
  const { db } = database;
  const parts = await Promise.all([aggregateSource(db, SOURCES.rollup, query, rollupRanges), aggregateSource(db, SOURCES.events, query, eventRanges)]);
  const merged = new Map<string, AggregateRow>();
  for (const row of parts.flat()) {
    const key = JSON.stringify(query.dimensions.map((d) => row[d]));
    const existing = merged.get(key);
    if (existing) addSums(existing, row);
    else merged.set(key, row);
  }
  return [...merged.values()];
}

/** Money is reported to the nano-dollar: sums of the same costs in another order agree. */
export const usd = (value: number): number => Math.round(value * 1e9) / 1e9;
export const mean = (sum: number, count: number): number => (count === 0 ? 0 : sum / count);
export const ratio = (part: number, whole: number): number => (whole === 0 ? 0 : part / whole);

/** Sessions started in the window per agent (the system agent left out), with their summed duration. */
export async function sessionsPerAgent(
  database: ObserveDatabase,
  window: { from: number; to: number },
): Promise<{ agent_id: string; sessions: number; duration: number | null }[]> {
  return database.db
    .selectFrom('sessions')
    .select((eb) => ['agent_id', eb.fn.countAll<number>().as('sessions'), sumAsDouble(sessionDurationSql()).as('duration')])
    .where('started_at', '>=', window.from)
    .where('started_at', '<=', window.to)
    .where('agent_id', '<>', SYSTEM_AGENT_ID)
    .groupBy('agent_id')
    .execute();
}
