import { DAY_MS, sumAsDouble, toIso } from '@vigil/platform';
import { usdOf } from '@vigil/pricing';
import { sql, type RawBuilder } from 'kysely';
import { nanosSql, SYSTEM_AGENT_ID } from '../events/index.ts';
import { aggregate } from '../analytics/index.ts';
import type { ObserveContext } from '../context.ts';
import type { HealthSnapshotRow } from './tables.ts';
import { sessionDurationSql, sessionOverSql } from '../sessions/index.ts';
import { emptyToolFigures, scoreWindow, trendOf, type DimensionScore, type SessionFigures, type ToolFigures, type Trend } from './scores.ts';

/** The baseline of a window: the 30 days immediately before it. */
export const BASELINE_DAYS = 30;
export const DEFAULT_WINDOW_DAYS = 7;
/** Snapshots always hold the default (7-day) window's values, so that days are comparable. @alias */
export const SNAPSHOT_WINDOW_DAYS = DEFAULT_WINDOW_DAYS;
const TOOL_EVENT_TYPES = ['tool_call', 'tool_response', 'tool_error'] as const;
const INSERT_CHUNK = 200;

export interface HealthReport {
  agentId: string;
  overallScore: number;
  trend: Trend;
  trendDelta: number;
  dimensions: DimensionScore[];
  window: { from: string; to: string };
  sessionCount: number;
  computedAt: string;
}

/** Inclusive bounds in epoch ms. */
type Range = readonly [number, number];

interface Ranges {
  current: Range;
  baseline: Range;
  previous: Range;
  previousBaseline: Range;
}

/**
 * The window is [now − days, now] (both inclusive); the previous window is the same length right
 * before it, and each has a baseline of the 30 days right before it. Adjacent ranges never share a
 * millisecond.
 */
export function rangesOf(now: number, windowDays: number): Ranges {
  const length = windowDays * DAY_MS;
  const baseline = BASELINE_DAYS * DAY_MS;
  const from = now - length;
  const previousFrom = from - length;
  return {
    current: [from, now],
    baseline: [from - baseline, from - 1],
    previous: [previousFrom, from - 1],
    previousBaseline: [previousFrom - baseline, previousFrom - 1],
  };
}

const RANGE_NAMES = ['current', 'baseline', 'previous', 'previousBaseline'] as const;
type RangeName = (typeof RANGE_NAMES)[number];

/**
 * Per agent, the session figures of the four ranges, in one pass over the sessions table with
 * conditional sums (a session belongs to a range by its started_at). Only agents with at least one
 * session in the current window are returned; never the system agent (alert bookkeeping).
 * Durations and completion follow the idle rule (sessions/figures.ts), judged at `now`.
 */
async function sessionFigures(
  ctx: ObserveContext,
  ranges: Ranges,
  now: number,
  agentId: string | undefined,
): Promise<Map<string, Record<RangeName, SessionFigures>>> {
  const { db } = ctx.database;
  const over = sessionOverSql(now, ctx.config.sessionIdleTimeoutMs);
  const selections: RawBuilder<unknown>[] = [];
  for (const name of RANGE_NAMES) {
    const [start, end] = ranges[name];
    const inRange = sql`started_at >= ${start} and started_at <= ${end}`;
    selections.push(
      sql`sum(case when ${inRange} then 1 else 0 end)`.as(`${name}_sessions`) as never,
      sql`sum(case when ${inRange} and error_count > 0 then 1 else 0 end)`.as(`${name}_errored`) as never,
      sql`sum(case when ${inRange} and ${over} then 1 else 0 end)`.as(`${name}_over`) as never,
      sql`sum(case when ${inRange} and status = 'completed' then 1 else 0 end)`.as(`${name}_completed`) as never,
      sql`sum(case when ${inRange} then ${nanosSql(sql.ref('total_cost_usd'))} else 0 end)`.as(`${name}_nanos`) as never,
      sumAsDouble(sql`case when ${inRange} then ${sessionDurationSql()} else 0 end`).as(`${name}_duration`) as never,
    );
  }
  let query = db
    .selectFrom('sessions')
    .select(['agent_id', ...(selections as never[])])
    .where('started_at', '>=', ranges.previousBaseline[0])
    .where('started_at', '<=', ranges.current[1])
    .where('agent_id', '<>', SYSTEM_AGENT_ID);
  if (agentId !== undefined) query = query.where('agent_id', '=', agentId);
  const rows = (await query.groupBy('agent_id').execute()) as Record<string, unknown>[];
  const out = new Map<string, Record<RangeName, SessionFigures>>();
  // PostgreSQL answers sums of bigint as numeric text.
  const num = (value: unknown): number => Number(value ?? 0);
  for (const row of rows) {
    const figures = {} as Record<RangeName, SessionFigures>;
    for (const name of RANGE_NAMES) {
      figures[name] = {
        sessions: num(row[`${name}_sessions`]),
        errored: num(row[`${name}_errored`]),
        over: num(row[`${name}_over`]),
        completed: num(row[`${name}_completed`]),
        costSum: usdOf(num(row[`${name}_nanos`])),
        durationSum: num(row[`${name}_duration`]),
      };
    }
    if (figures.current.sessions > 0) out.set(String(row.agent_id), figures);
  }
  return out;
}

/** Per agent, tool_call / tool_response / tool_error counts of the events with a timestamp in the range. */
async function toolFigures(ctx: ObserveContext, range: Range, agentId: string | undefined): Promise<Map<string, ToolFigures>> {
  const rows = await aggregate(ctx.database, {
    from: range[0],
    to: range[1],
    dimensions: ['agent_id', 'event_type'],
    agentId,
    eventTypes: TOOL_EVENT_TYPES,
    sums: [],
  });
  const out = new Map<string, ToolFigures>();
  for (const row of rows) {
    const id = String(row.agent_id);
    const figures = out.get(id) ?? emptyToolFigures();
    if (row.event_type === 'tool_call') figures.calls += row.eventCount;
    else if (row.event_type === 'tool_response') figures.responses += row.eventCount;
    else if (row.event_type === 'tool_error') figures.errors += row.eventCount;
    out.set(id, figures);
  }
  return out;
}

/**
 * Health of every agent with at least one session started in the window (or of one agent; the
 * system agent has none), sorted sickest first: overallScore ascending, then agentId. All figures
 * come from three queries, whatever the number of agents.
 */
export async function computeHealth(ctx: ObserveContext, windowDays: number, now: number, agentId?: string): Promise<HealthReport[]> {
  const ranges = rangesOf(now, windowDays);
  const [sessions, currentTools, previousTools] = await Promise.all([
    sessionFigures(ctx, ranges, now, agentId),
    toolFigures(ctx, ranges.current, agentId),
    toolFigures(ctx, ranges.previous, agentId),
  ]);
  const reports: HealthReport[] = [];
  for (const [id, figures] of sessions) {
    const current = scoreWindow({ sessions: figures.current, baseline: figures.baseline, tools: currentTools.get(id) ?? emptyToolFigures() });
    const previous =
      figures.previous.sessions > 0
        ? scoreWindow({ sessions: figures.previous, baseline: figures.previousBaseline, tools: previousTools.get(id) ?? emptyToolFigures() })
        : null;
    reports.push({
      agentId: id,
      overallScore: current.overallScore,
      ...trendOf(current.overallScore, previous?.overallScore ?? null),
      dimensions: current.dimensions,
      window: { from: toIso(ranges.current[0]), to: toIso(ranges.current[1]) },
      sessionCount: figures.current.sessions,
      computedAt: toIso(now),
    });
  }
  return reports.sort((a, b) => a.overallScore - b.overallScore || (a.agentId < b.agentId ? -1 : a.agentId > b.agentId ? 1 : 0));
}

/** Health of one agent, or null when it has no session started in the window. */
export async function agentHealth(ctx: ObserveContext, agentId: string, windowDays: number, now: number): Promise<HealthReport | null> {
  return (await computeHealth(ctx, windowDays, now, agentId))[0] ?? null;
}

// ---------------------------------------------------------------------------------------------
// Snapshots

/** The UTC calendar date (YYYY-MM-DD) of an instant. */
export const utcDate = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

const score = (report: HealthReport, name: string): number => report.dimensions.find((d) => d.name === name)?.score ?? 0;

function snapshotRow(report: HealthReport, date: string, now: number): HealthSnapshotRow {
  return {
    agent_id: report.agentId,
    date,
    overall_score: report.overallScore,
    error_rate_score: score(report, 'error_rate'),
    cost_efficiency_score: score(report, 'cost_efficiency'),
    tool_success_score: score(report, 'tool_success'),
    latency_score: score(report, 'latency'),
    completion_rate_score: score(report, 'completion_rate'),
    session_count: report.sessionCount,
    created_at: now,
  };
}

/** Inserts the day's snapshots; one already there wins (concurrent first queries insert once). Returns rows inserted. */
async function insertSnapshots(ctx: ObserveContext, reports: readonly HealthReport[], now: number): Promise<number> {
  const date = utcDate(now);
  let inserted = 0;
  for (let i = 0; i < reports.length; i += INSERT_CHUNK) {
    const rows = reports.slice(i, i + INSERT_CHUNK).map((report) => snapshotRow(report, date, now));
    const result = await ctx.database.db
      .insertInto('health_snapshots')
      .values(rows)
      .onConflict((oc) => oc.columns(['agent_id', 'date']).doNothing())
      .executeTakeFirst();
    inserted += Number(result.numInsertedOrUpdatedRows ?? 0);
  }
  return inserted;
}

/**
 * Saves today's snapshot of one agent unless it exists. `report` is the agent's health when the
 * caller already computed it for the snapshot window; otherwise it is computed here (only when the
 * snapshot is missing). An agent without sessions in the snapshot window gets no snapshot.
 */
export async function ensureAgentSnapshot(ctx: ObserveContext, agentId: string, now: number, report?: HealthReport | null): Promise<boolean> {
  const existing = await ctx.database.db
    .selectFrom('health_snapshots')
    .select('agent_id')
    .where('agent_id', '=', agentId)
    .where('date', '=', utcDate(now))
    .executeTakeFirst();
  if (existing) return false;
  // null: the caller found no session in the snapshot window; undefined: not computed yet.
  const health = report !== undefined ? report : await agentHealth(ctx, agentId, SNAPSHOT_WINDOW_DAYS, now);
  if (!health) return false;
  return (await insertSnapshots(ctx, [health], now)) > 0;
}

/**
 * Saves today's snapshot of every agent with a session in the snapshot window that has none yet.
 * `reports` are snapshot-window reports the caller already holds (the 7-day overview). Returns the
 * snapshots written.
 */
export async function ensureSnapshots(ctx: ObserveContext, now: number, reports?: readonly HealthReport[]): Promise<number> {
  const { db } = ctx.database;
  const [from, to] = rangesOf(now, SNAPSHOT_WINDOW_DAYS).current;
  const [candidates, existing] = await Promise.all([
    reports
      ? reports.map((r) => r.agentId)
      : db
          .selectFrom('sessions')
          .select('agent_id')
          .distinct()
          .where('started_at', '>=', from)
          .where('started_at', '<=', to)
          .where('agent_id', '<>', SYSTEM_AGENT_ID)
          .execute()
          .then((rows) => rows.map((r) => r.agent_id)),
    db
      .selectFrom('health_snapshots')
      .select('agent_id')
      .where('date', '=', utcDate(now))
      .execute()
      .then((rows) => new Set(rows.map((r) => r.agent_id))),
  ]);
  const missing = new Set(candidates.filter((id) => !existing.has(id)));
  if (missing.size === 0) return 0;
  const all = reports ?? (await computeHealth(ctx, SNAPSHOT_WINDOW_DAYS, now));
  return insertSnapshots(
    ctx,
    all.filter((r) => missing.has(r.agentId)),
    now,
  );
}

export interface HealthSnapshot {
  agentId: string;
  date: string;
  overallScore: number;
  errorRateScore: number;
  costEfficiencyScore: number;
  toolSuccessScore: number;
  latencyScore: number;
  completionRateScore: number;
  sessionCount: number;
}

/** The agent's snapshots of the last `days` UTC days, today included, oldest first. */
export async function snapshotHistory(ctx: ObserveContext, agentId: string, days: number, now: number): Promise<HealthSnapshot[]> {
  const rows = await ctx.database.db
    .selectFrom('health_snapshots')
    .selectAll()
    .where('agent_id', '=', agentId)
    .where('date', '>=', utcDate(now - (days - 1) * DAY_MS))
    .where('date', '<=', utcDate(now))
    .orderBy('date', 'asc')
    .execute();
  return rows.map((row) => ({
    agentId: row.agent_id,
    date: row.date,
    overallScore: Number(row.overall_score),
    errorRateScore: Number(row.error_rate_score),
    costEfficiencyScore: Number(row.cost_efficiency_score),
    toolSuccessScore: Number(row.tool_success_score),
    latencyScore: Number(row.latency_score),
    completionRateScore: Number(row.completion_rate_score),
    sessionCount: Number(row.session_count),
  }));
}

/** The periodic job that snapshots agents nobody queried today: hourly, so a day is never missed. */
export const HEALTH_SNAPSHOT_JOB = 'observe.health-snapshots';
export const HEALTH_SNAPSHOT_INTERVAL_MS = 3_600_000;
