import { usdOf } from '@vigil/pricing';
import { compareCodeUnits, groupedInteger, sumAsDouble, toIso } from '@vigil/platform';
import { sql, type ExpressionBuilder, type Kysely, type RawBuilder, type SelectQueryBuilder } from 'kysely';
import { aggregate, mean, ratio } from '../analytics/index.ts';
import type { ObserveContext } from '../context.ts';
import { agentScope, SYSTEM_AGENT_ID } from '../events/index.ts';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import { sessionDurationSql, sessionOverSql } from '../sessions/index.ts';
import { rawFigures, reflectTuning, SEPARATOR, type RawScope } from './figures.ts';
import { ngramSplit, patternSplit, type StateSplit } from './state.ts';

export { reflectTuning } from './figures.ts';

export const ANALYSES = ['error_patterns', 'tool_sequences', 'cost_analysis', 'performance_trends'] as const;
export type Analysis = (typeof ANALYSES)[number];

export const DEFAULT_RANGE_DAYS = 7;
export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;
/** affectedSessions of an error pattern lists at most this many sessions (count stays exact). */
export const MAX_AFFECTED_SESSIONS = 20;
/** precedingTools of an error pattern lists at most this many distinct sequences. */
export const MAX_PRECEDING_SEQUENCES = 5;
/** Confidence n / (n + k): half-sure at k observations, 0.9 at 9k. */
export const CONFIDENCE_K = 5;
/** performance_trends: a change of the half score beyond ± this many points is a trend. */
export const TREND_THRESHOLD_POINTS = 5;
const COST_EVENT_TYPES = ['llm_response', 'cost_tracked'];

export interface ReflectQuery {
  analysis: Analysis;
  agentId?: string;
  /** Inclusive bounds, epoch ms. */
  from: number;
  to: number;
  limit: number;
}

export interface ErrorPatternData {
  pattern: string;
  count: number;
  firstSeen: string;
  lastSeen: string;
  affectedSessions: string[];
  precedingTools: string[][];
}
export interface ToolSequenceData {
  tools: string[];
  frequency: number;
  sessions: number;
  errorRate: number;
}
export interface CostSummaryData {
  totalCost: number;
  avgPerSession: number;
  totalSessions: number;
}
export interface ModelCostData {
  model: string;
  callCount: number;
  totalCost: number;
  avgCostPerCall: number;
}
export interface PerformanceStatsData {
  successRate: number;
  avgDuration: number;
  avgToolCalls: number;
  avgErrors: number;
}
export type Assessment = 'improving' | 'stable' | 'degrading';
export interface AssessmentData {
  assessment: Assessment;
}

export type Insight =
  | { type: 'error_pattern'; summary: string; data: ErrorPatternData; confidence: number }
  | { type: 'tool_sequence'; summary: string; data: ToolSequenceData; confidence: number }
  | { type: 'cost_summary'; summary: string; data: CostSummaryData; confidence: number }
  | { type: 'model_cost'; summary: string; data: ModelCostData; confidence: number }
  | { type: 'performance_stats'; summary: string; data: PerformanceStatsData; confidence: number }
  | { type: 'performance_assessment'; summary: string; data: AssessmentData; confidence: number };

export interface ReflectResult {
  analysis: Analysis;
  insights: Insight[];
  metadata: { sessionsAnalyzed: number; eventsAnalyzed: number; timeRange: { from: string; to: string } };
}

/** Confidence from the number of observations behind an insight: n / (n + 5), rounded to 0.001. */
export function evidence(n: number): number {
  return n <= 0 ? 0 : Math.round((n / (n + CONFIDENCE_K)) * 1000) / 1000;
}

const plural = (n: number, word: string): string => `${groupedInteger(n)} ${word}${n === 1 ? '' : 's'}`;
const percent = (share: number): string => `${(Math.round(share * 1000) / 10).toString()}%`;
const dollars = (value: number): string => `$${Number(value.toPrecision(6)).toString()}`;
const num = (value: unknown): number => Number(value ?? 0);

type Eb = ExpressionBuilder<any, any>;

/**
 * The sessions of the range: those with at least one event timestamped in [from, to] (of the agent,
 * when given). startedAt / lastEventAt are a session's first and last event timestamps, so a
 * session starting or ending inside the range qualifies at once; only one spanning the whole range
 * is checked for an event inside it (one index probe on events (session_id, ts)).
 */
function sessionsOfRange(db: Kysely<ObserveSchema>, query: ReflectQuery): SelectQueryBuilder<ObserveSchema, 'sessions', object> {
  const { from, to, agentId } = query;
  const q = db
    .selectFrom('sessions')
    .where('started_at', '<=', to)
    .where('last_event_at', '>=', from)
    .where((eb: Eb) =>
      eb.or([
        eb('started_at', '>=', from),
        eb('last_event_at', '<=', to),
        eb.exists(
          eb
            .selectFrom('events as e')
            .select(sql.lit(1).as('one'))
            .whereRef('e.session_id', '=', 'sessions.id')
            .where('e.ts', '>=', from)
            .where('e.ts', '<=', to),
        ),
      ]),
    );
  // Unless asked for by name, the system agent's alert sessions are bookkeeping, not an agent's sessions.
  return q.where('agent_id', agentId === undefined ? '<>' : '=', agentId ?? SYSTEM_AGENT_ID);
}

async function countSessions(database: ObserveDatabase, query: ReflectQuery): Promise<number> {
  const row = await sessionsOfRange(database.db, query)
    .select((eb: Eb) => eb.fn.countAll().as('n'))
    .executeTakeFirst();
  return num((row as { n?: unknown } | undefined)?.n);
}

async function countEvents(database: ObserveDatabase, query: ReflectQuery): Promise<number> {
  const rows = await aggregate(database, { from: query.from, to: query.to, ...agentScope(query.agentId), dimensions: [] });
  return rows.reduce((n, row) => n + row.eventCount, 0);
}

// ---------------------------------------------------------------------------------------------
// error_patterns and tool_sequences: sessions from their kept state where it covers them, the
// others from their events (state.ts)

/** How the sessions not taken from their state are read: listed when few, else the whole range without the others. */
function rawScope(query: ReflectQuery, split: StateSplit<unknown>): RawScope {
  const range = { from: query.from, to: query.to, agentId: query.agentId };
  return split.raw.length <= reflectTuning.sessionFilterMax ? { ...range, sessions: split.raw } : { ...range, skip: split.keptSessions };
}

interface PatternGroup {
  pattern: string;
  count: number;
  firstSeen: number;
  lastSeen: number;
  /** session id → its latest occurrence of the pattern. */
  sessions: Map<string, number>;
  /** Key of a preceding-tools sequence (names joined by NUL) → occurrences. */
  preceding: Map<string, number>;
}

async function errorPatterns(ctx: ObserveContext, query: ReflectQuery): Promise<Insight[]> {
  const split = await patternSplit(ctx, query);
  const groups = new Map<string, PatternGroup>();
  const groupOf = (pattern: string): PatternGroup => {
    let group = groups.get(pattern);
    if (group === undefined) {
      group = { pattern, count: 0, firstSeen: Infinity, lastSeen: -Infinity, sessions: new Map(), preceding: new Map() };
      groups.set(pattern, group);
    }
    return group;
  };
  const add = (session: string, pattern: string, count: number, first: number, last: number) => {
    const group = groupOf(pattern);
    group.count += count;
    if (first < group.firstSeen) group.firstSeen = first;
    if (last > group.lastSeen) group.lastSeen = last;
    group.sessions.set(session, last);
  };
  const precede = (group: PatternGroup, key: string, count: number) => group.preceding.set(key, (group.preceding.get(key) ?? 0) + count);

  for (const o of split.kept.occurrences) add(o.session, o.pattern, o.count, o.first, o.last);
  for (const p of split.kept.preceding) precede(groupOf(p.pattern), p.key, p.count);
  const raw = await rawFigures(ctx.database, rawScope(query, split), { ngrams: false, patterns: true });
  for (const [session, figures] of raw)
    for (const [pattern, p] of figures.patterns) {
      add(session, pattern, p.count, p.first, p.last);
      for (const [key, count] of p.preceding) precede(groupOf(pattern), key, count);
    }

  const top = [...groups.values()].sort((a, b) => b.count - a.count || b.lastSeen - a.lastSeen || compareCodeUnits(a.pattern, b.pattern)).slice(0, query.limit);
  return top.map((group) => {
    const sessions = [...group.sessions.entries()].sort((a, b) => b[1] - a[1] || compareCodeUnits(a[0], b[0])).map(([id]) => id);
    const listed = sessions.slice(0, MAX_AFFECTED_SESSIONS);
    const preceding = [...group.preceding.entries()]
      .sort((a, b) => b[1] - a[1] || compareCodeUnits(a[0], b[0]))
      .slice(0, MAX_PRECEDING_SEQUENCES)
      .map(([key]) => key.split(SEPARATOR));
    const firstSeen = toIso(group.firstSeen);
    const lastSeen = toIso(group.lastSeen);
    let summary = `"${group.pattern}" occurred ${plural(group.count, 'time')} in ${plural(sessions.length, 'session')} between ${firstSeen} and ${lastSeen}`;
    if (preceding[0]) summary += `, most often after ${preceding[0].join(' → ')}`;
    if (sessions.length > listed.length) summary += ` (affectedSessions lists the ${listed.length} with the most recent occurrence of ${sessions.length})`;
    return {
      type: 'error_pattern' as const,
      summary,
      data: { pattern: group.pattern, count: group.count, firstSeen, lastSeen, affectedSessions: listed, precedingTools: preceding },
      confidence: evidence(group.count),
    };
  });
}

async function toolSequences(ctx: ObserveContext, query: ReflectQuery): Promise<Insight[]> {
  const split = await ngramSplit(ctx, query);
  const counts = new Map<string, { frequency: number; sessions: number; failed: number }>();
  for (const kept of split.kept) counts.set(kept.key, { frequency: kept.frequency, sessions: kept.sessions, failed: kept.failed });
  const raw = await rawFigures(ctx.database, rawScope(query, split), { ngrams: true, patterns: false });
  for (const figures of raw.values())
    for (const [key, n] of figures.ngrams) {
      const c = counts.get(key) ?? { frequency: 0, sessions: 0, failed: 0 };
      c.frequency += n.frequency;
      c.sessions += 1;
      c.failed += n.failed;
      counts.set(key, c);
    }

  // Most frequent first, then in more sessions, then longer, then by tool names.
  return [...counts.entries()]
    .map(([key, c]) => ({ key, tools: key.split(SEPARATOR), ...c }))
    .sort((a, b) => b.frequency - a.frequency || b.sessions - a.sessions || b.tools.length - a.tools.length || compareCodeUnits(a.key, b.key))
    .slice(0, query.limit)
    .map(({ tools, frequency, sessions, failed }) => {
      const errorRate = ratio(failed, frequency);
      return {
        type: 'tool_sequence' as const,
        summary: `${tools.join(' → ')} ran ${plural(frequency, 'time')} in ${plural(sessions, 'session')}; ${percent(errorRate)} of the runs hit a tool_error`,
        data: { tools, frequency, sessions, errorRate },
        confidence: evidence(sessions),
      };
    });
}

// ---------------------------------------------------------------------------------------------
// cost_analysis

/** Spend events (llm_response, cost_tracked) of the range per model: count and cost in whole nano-dollars, exact. */
async function spendByModel(database: ObserveDatabase, query: ReflectQuery): Promise<Map<string, { calls: number; nanos: number }>> {
  const rows = await aggregate(database, { from: query.from, to: query.to, agentId: query.agentId, eventTypes: COST_EVENT_TYPES, dimensions: ['model'] });
  const models = new Map<string, { calls: number; nanos: number }>();
  for (const row of rows) {
    const model = String(row.model);
    const entry = models.get(model) ?? { calls: 0, nanos: 0 };
    entry.calls += row.eventCount;
    entry.nanos += row.costNanos;
    models.set(model, entry);
  }
  return models;
}

async function costAnalysis(ctx: ObserveContext, query: ReflectQuery, sessions: number): Promise<Insight[]> {
  const rows = [...(await spendByModel(ctx.database, query)).entries()];
  const totalNanos = rows.reduce((sum, [, row]) => sum + row.nanos, 0);
  const total = usdOf(totalNanos);
  const calls = rows.reduce((n, [, row]) => n + row.calls, 0);
  const avgPerSession = usdOf(mean(totalNanos, sessions));
  const summary: Insight = {
    type: 'cost_summary',
    summary: `${dollars(total)} spent over ${plural(sessions, 'session')} (${dollars(avgPerSession)} per session) in ${plural(calls, 'priced call')}`,
    data: { totalCost: total, avgPerSession, totalSessions: sessions },
    confidence: sessions > 0 || calls > 0 ? 1 : 0,
  };
  const models: Insight[] = rows
    .map(([model, row]) => ({
      model: model === '' ? 'unknown' : model,
      callCount: row.calls,
      totalCost: usdOf(row.nanos),
      avgCostPerCall: usdOf(mean(row.nanos, row.calls)),
    }))
    .sort((a, b) => b.totalCost - a.totalCost || b.callCount - a.callCount || compareCodeUnits(a.model, b.model))
    .map((data) => ({
      type: 'model_cost' as const,
      summary: `${data.model}: ${plural(data.callCount, 'call')} cost ${dollars(data.totalCost)} (${percent(ratio(data.totalCost, total))} of the spend, ${dollars(data.avgCostPerCall)} per call)`,
      data,
      confidence: evidence(data.callCount),
    }));
  return [summary, ...models].slice(0, query.limit);
}

// ---------------------------------------------------------------------------------------------
// performance_trends

interface HalfFigures {
  sessions: number;
  ended: number;
  completed: number;
  errorFree: number;
}

/**
 * Score of one half, 0–100: the mean of the completion rate (completed / ended sessions) and the
 * share of sessions without an error event; only the latter when either half has no ended session,
 * so both halves are always scored alike.
 */
export function halfScore(half: HalfFigures, withCompletion: boolean): number {
  const errorFree = ratio(half.errorFree, half.sessions);
  return 100 * (withCompletion ? (ratio(half.completed, half.ended) + errorFree) / 2 : errorFree);
}

/** improving / degrading when the second half's score differs by more than 5 points, else stable. */
export function assess(first: HalfFigures, second: HalfFigures): { assessment: Assessment; before: number; after: number } | null {
  if (first.sessions === 0 || second.sessions === 0) return null;
  const withCompletion = first.ended > 0 && second.ended > 0;
  const before = halfScore(first, withCompletion);
  const after = halfScore(second, withCompletion);
  const delta = after - before;
  const assessment: Assessment = delta > TREND_THRESHOLD_POINTS ? 'improving' : delta < -TREND_THRESHOLD_POINTS ? 'degrading' : 'stable';
  return { assessment, before, after };
}

async function performanceTrends(ctx: ObserveContext, query: ReflectQuery): Promise<{ insights: Insight[]; sessions: number }> {
  // Halves of the range by session start: [from, mid) and [mid, to]; a session started before
  // `from` belongs to the first half.
  const mid = query.from + Math.floor((query.to - query.from + 1) / 2);
  const first = sql`started_at < ${mid}`;
  // "Ended" sessions are those that are over by the idle rule (sessions/figures.ts): ended, or idle now.
  const over = sessionOverSql(ctx.clock.now(), ctx.config.sessionIdleTimeoutMs);
  const half = (cond: RawBuilder<unknown>, prefix: string) => [
    sql`sum(case when ${cond} then 1 else 0 end)`.as(`${prefix}_sessions`),
    sql`sum(case when ${cond} and ${over} then 1 else 0 end)`.as(`${prefix}_ended`),
    sql`sum(case when ${cond} and status = 'completed' then 1 else 0 end)`.as(`${prefix}_completed`),
    sql`sum(case when ${cond} and error_count = 0 then 1 else 0 end)`.as(`${prefix}_error_free`),
  ];
  const row = (await sessionsOfRange(ctx.database.db, query)
    .select([
      sql`count(*)`.as('sessions'),
      sql`sum(case when ${over} then 1 else 0 end)`.as('ended'),
      sql`sum(case when status = 'completed' then 1 else 0 end)`.as('completed'),
      sumAsDouble(sessionDurationSql()).as('duration'),
      sql`sum(tool_call_count)`.as('tool_calls'),
      sql`sum(error_count)`.as('errors'),
      ...half(first, 'first'),
      ...half(sql`not (${first})`, 'second'),
    ] as never)
    .executeTakeFirst()) as Record<string, unknown> | undefined;
  const get = (key: string) => num(row?.[key]);
  const sessions = get('sessions');
  const ended = get('ended');
  const stats: PerformanceStatsData = {
    successRate: ratio(get('completed'), ended),
    avgDuration: mean(get('duration'), sessions),
    avgToolCalls: mean(get('tool_calls'), sessions),
    avgErrors: mean(get('errors'), sessions),
  };
  const figures = (prefix: string): HalfFigures => ({
    sessions: get(`${prefix}_sessions`),
    ended: get(`${prefix}_ended`),
    completed: get(`${prefix}_completed`),
    errorFree: get(`${prefix}_error_free`),
  });
  const firstHalf = figures('first');
  const secondHalf = figures('second');
  const trend = assess(firstHalf, secondHalf);
  const round1 = (n: number) => Math.round(n * 10) / 10;
  const insights: Insight[] = [
    {
      type: 'performance_stats',
      summary:
        `${percent(stats.successRate)} of ${plural(ended, 'ended session')} completed; ${plural(sessions, 'session')} lasted ` +
        `${round1(stats.avgDuration / 1000)} s on average with ${round1(stats.avgToolCalls)} tool calls and ${round1(stats.avgErrors)} error events`,
      data: stats,
      confidence: evidence(sessions),
    },
    trend === null
      ? {
          type: 'performance_assessment',
          summary: `Not enough data for a trend: ${plural(firstHalf.sessions, 'session')} in the first half of the range, ${plural(secondHalf.sessions, 'session')} in the second`,
          data: { assessment: 'stable' },
          confidence: 0,
        }
      : {
          type: 'performance_assessment',
          summary: `Performance is ${trend.assessment}: score ${round1(trend.before)} in the first half of the range, ${round1(trend.after)} in the second (${trend.after >= trend.before ? '+' : ''}${round1(trend.after - trend.before)} points)`,
          data: { assessment: trend.assessment },
          confidence: evidence(Math.min(firstHalf.sessions, secondHalf.sessions)),
        },
  ];
  return { insights: insights.slice(0, query.limit), sessions };
}

// ---------------------------------------------------------------------------------------------

async function analyse(ctx: ObserveContext, query: ReflectQuery): Promise<{ insights: Insight[]; sessions: number }> {
  if (query.analysis === 'performance_trends') return performanceTrends(ctx, query);
  const sessions = await countSessions(ctx.database, query);
  switch (query.analysis) {
    case 'error_patterns':
      return { insights: await errorPatterns(ctx, query), sessions };
    case 'tool_sequences':
      return { insights: await toolSequences(ctx, query), sessions };
    case 'cost_analysis':
      return { insights: await costAnalysis(ctx, query, sessions), sessions };
  }
}

/**
 * GET /api/reflect: the insights of one analysis over the events timestamped in [from, to] (of the
 * agent). `limit` caps the insights returned; every figure behind them covers all matching rows.
 */
export async function reflect(ctx: ObserveContext, query: ReflectQuery): Promise<ReflectResult> {
  const [events, { insights, sessions }] = await Promise.all([countEvents(ctx.database, query), analyse(ctx, query)]);
  return {
    analysis: query.analysis,
    insights,
    metadata: { sessionsAnalyzed: sessions, eventsAnalyzed: events, timeRange: { from: toIso(query.from), to: toIso(query.to) } },
  };
}
