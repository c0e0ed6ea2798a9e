import { nanosOf, usdOf } from '@vigil/pricing';
import { sql } from 'kysely';
import { COUNTED_EVENT_TYPES } from '../alerts/index.ts';
import { ratio } from '../analytics/index.ts';
import { sumNanosSql, type LogPositions } from '../events/index.ts';
import type { ObserveDatabase } from '../schema.ts';
import type { EventRow } from '../events/index.ts';

/**
 * Rolling windows of each agent's counted events, kept in memory from the batches this instance
 * commits, so that evaluating error-rate and cost rules after a commit reads no SQL unless a breach
 * is possible. A window only bounds the rule's value (its edge buckets may hold events on either
 * side of the window's edge); when the bounds allow a breach the exact figure is read from SQL.
 */

/** A window's buckets: about this many over its length (finer buckets, tighter bounds). */
const BUCKETS_PER_WINDOW = 60;

export interface WindowSums {
  eventCount: number;
  errorCount: number;
  /** Spend in whole nano-dollars (exact). */
  costNanos: number;
}

const emptyWindowSums = (): WindowSums => ({ eventCount: 0, errorCount: 0, costNanos: 0 });

/** The sums of the buckets wholly inside [now − length, now] (exact) and of those across its edges. */
export interface WindowBounds {
  inside: WindowSums;
  edges: WindowSums;
}

export function bucketWidth(length: number): number {
  return Math.max(1, Math.ceil(length / BUCKETS_PER_WINDOW));
}

const COUNTED = new Set<string>(COUNTED_EVENT_TYPES);

/** Whether the event counts in a window (as the analytics sums a rule measures count it). */
export function countedInWindows(row: Pick<EventRow, 'event_type'>): boolean {
  return COUNTED.has(row.event_type);
}

export class RollingWindow {
  readonly width: number;
  private readonly buckets = new Map<number, WindowSums>();

  /** `seededThrough`: the commit log position its seed read (commits at or before it are in it already); `seededAt`: when. */
  constructor(
    readonly length: number,
    readonly seededThrough: number,
    readonly seededAt = 0,
  ) {
    this.width = bucketWidth(length);
  }

  add(ts: number, sums: WindowSums): void {
    const index = Math.floor(ts / this.width);
    const bucket = this.buckets.get(index);
    if (bucket) {
      bucket.eventCount += sums.eventCount;
      bucket.errorCount += sums.errorCount;
      bucket.costNanos += sums.costNanos;
    } else {
      this.buckets.set(index, { ...sums });
    }
  }

  addEvent(row: Pick<EventRow, 'ts' | 'is_error' | 'cost_usd'>): void {
    this.add(row.ts, { eventCount: 1, errorCount: row.is_error, costNanos: nanosOf(row.cost_usd ?? 0) });
  }

  /** Bounds over [now − length, now]; drops the buckets that ended before it (time only moves on). */
  bounds(now: number): WindowBounds {
    const from = now - this.length;
    const result: WindowBounds = { inside: emptyWindowSums(), edges: emptyWindowSums() };
    for (const [index, sums] of this.buckets) {
      const start = index * this.width;
      const end = start + this.width - 1;
      if (end < from) {
        this.buckets.delete(index);
        continue;
      }
      if (start > now) continue;
      const target = start >= from && end <= now ? result.inside : result.edges;
      target.eventCount += sums.eventCount;
      target.errorCount += sums.errorCount;
      target.costNanos += sums.costNanos;
    }
    return result;
  }

  get bucketCount(): number {
    return this.buckets.size;
  }
}

/**
 * The highest error rate (percent) any split of the edge buckets allows: every edge error inside,
 * every other edge event outside. Null when no error can be inside (the rate cannot exceed any threshold ≥ 0).
 */
export function maxErrorRate(bounds: WindowBounds): number | null {
  const errors = bounds.inside.errorCount + bounds.edges.errorCount;
  const events = bounds.inside.eventCount + bounds.edges.errorCount;
  // The rule's own arithmetic (measure), so that a bound equal to the value rounds the same way.
  return events === 0 || errors === 0 ? null : 100 * ratio(errors, events);
}

/** Costs are never negative, so every edge cost inside is the most the window can hold. */
export function maxCost(bounds: WindowBounds): number {
  return usdOf(bounds.inside.costNanos + bounds.edges.costNanos);
}

/**
 * How long a window is trusted before it is seeded again: events deleted meanwhile (retention)
 * leave it no later than this. Until then a deletion can only delay an error-rate breach to the sweep.
 */
export const WINDOW_RESEED_MS = 10 * 60_000;

/**
 * The commit log positions this instance saw committed. A window seeded at position S is complete
 * through this instance's latest commit L when every position in (S, L] is among them; otherwise
 * another instance (or a commit of this one not yet reported) wrote events it lacks, and it is
 * seeded again. Commits after L are the business of the instance that made them: its own
 * evaluation sees this instance's commits as gaps and seeds again.
 */
export class SeenPositions {
  /** Disjoint, sorted, not adjacent. */
  private ranges: [number, number][] = [];

  constructor(private readonly maxRanges = 256) {}

  add(positions: LogPositions): void {
    const merged: [number, number][] = [];
    let [first, last] = [positions.first, positions.last];
    for (const [a, b] of this.ranges) {
      if (b < first - 1 || a > last + 1) merged.push([a, b]);
      else [first, last] = [Math.min(first, a), Math.max(last, b)];
    }
    merged.push([first, last]);
    merged.sort((x, y) => x[0] - y[0]);
    // The oldest ranges go first; a window needing them is seeded again.
    this.ranges = merged.slice(-this.maxRanges);
  }

  /** The highest position seen; 0 before any. */
  get latest(): number {
    return this.ranges.at(-1)?.[1] ?? 0;
  }

  /** Whether every position in (after, through] was seen. */
  covers(after: number, through: number): boolean {
    if (through <= after) return true;
    return this.ranges.some(([a, b]) => a <= after + 1 && b >= through);
  }
}

/**
 * The agent's counted events since `now − length` (in buckets of the window's width) and the
 * commit log position they were read at, in one statement: one snapshot on both databases.
 */
export async function seedWindow(database: ObserveDatabase, agentId: string, length: number, now: number): Promise<RollingWindow> {
  const width = bucketWidth(length);
  const bucket = sql`ts / ${sql.lit(width)}`;
  const types = sql.join(COUNTED_EVENT_TYPES.map((t) => sql.lit(t)));
  const { rows } = await sql<{
    last_pos: number | string;
    bucket: number | string | null;
    events: number | string | null;
    errors: number | string | null;
    cost: number | string | null;
  }>`
    select h.last_pos, w.bucket, w.events, w.errors, w.cost
    from stream_head h
    left join (
      select ${bucket} as bucket, count(*) as events, sum(is_error) as errors, ${sumNanosSql('cost_usd')} as cost
      from events
      where agent_id = ${agentId} and event_type in (${types}) and ts >= ${now - length}
      group by ${bucket}
    ) w on 1 = 1
    where h.id = 1`.execute(database.db);
  const window = new RollingWindow(length, Number(rows[0]?.last_pos ?? 0), now);
  for (const row of rows) {
    if (row.bucket === null) continue;
    window.add(Number(row.bucket) * width, { eventCount: Number(row.events), errorCount: Number(row.errors), costNanos: Number(row.cost) });
  }
  return window;
}

/** The latest number at the metric's path in payload.data, else metadata, of these events (latest by ts, then id), as SQL reads it. */
export function latestMetricOf(
  events: readonly { row: Pick<EventRow, 'id' | 'ts' | 'metadata'>; payload: Record<string, unknown> }[],
  metricKey: string,
): number | null {
  const path = metricKey.split('.');
  let latest: { ts: number; id: string; value: number } | null = null;
  for (const { row, payload } of events) {
    if (latest !== null && (row.ts < latest.ts || (row.ts === latest.ts && row.id < latest.id))) continue;
    const value = numberAt(payload.data, path) ?? (row.metadata === '{}' ? null : numberAt(JSON.parse(row.metadata), path));
    if (value !== null) latest = { ts: row.ts, id: row.id, value };
  }
  return latest?.value ?? null;
}

function numberAt(value: unknown, path: readonly string[]): number | null {
  let at = value;
  for (const key of path) {
    if (at === null || typeof at !== 'object' || Array.isArray(at)) return null;
    at = (at as Record<string, unknown>)[key];
  }
  return typeof at === 'number' ? at : null;
}
