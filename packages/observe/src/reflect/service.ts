import { sumAsDouble, toIso } from '@vigil/platform';
import { sql, type ExpressionBuilder, type Kysely, type RawBuilder, type SelectQueryBuilder } from 'kysely';
import { aggregate, mean, ratio, usd } from '../analytics/index.ts';
import type { ObserveContext } from '../context.ts';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import { sessionDurationSql, sessionOverSql } from '../sessions/index.ts';
import { NgramCounter } from './ngrams.ts';
import { PatternCache } from './normalise.ts';
import { forEachBatch, jsonString, STREAM_BATCH } from './stream.ts';

export const ANALYSES = ['error_patterns', 'tool_sequences', 'cost_analysis', 'performance_trends'] as const;
export type Analysis = (typeof ANALYSES)[number];

export const DEFAULT_RANGE_DAYS = 7;
export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;
/** affectedSessions of an error pattern lists at most this many sessions (count stays exact). */
export const MAX_AFFECTED_SESSIONS = 20;
/** precedingTools of an error pattern lists at most this many distinct sequences. */
export const MAX_PRECEDING_SEQUENCES = 5;
/** Tool calls looked back from an error occurrence. */
export const PRECEDING_TOOLS = 3;
/** n-gram sizes of tool_sequences. */
export const SEQUENCE_SIZES = [2, 3] as const;
/** Confidence n / (n + k): half-sure at k observations, 0.9 at 9k. */
export const CONFIDENCE_K = 5;
/** performance_trends: a change of the half score beyond ± this many points is a trend. */
export const TREND_THRESHOLD_POINTS = 5;
/** Knobs of the streaming passes, changed only by tests (to drive both paths and batch edges). */
export const reflectTuning = {
  /**
   * error_patterns reads the tool calls of the affected sessions only (through the per-session
   * index) when there are at most this many of them; otherwise it streams every tool call of the range.
   */
  sessionFilterMax: 500,
  /** Rows per batch of a streamed query. */
  batchSize: STREAM_BATCH,
};
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

const plural = (n: number, word: string): string => `${n.toLocaleString('en-US')} ${word}${n === 1 ? '' : 's'}`;
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
  let q = db
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
  if (agentId !== undefined) q = q.where('agent_id', '=', agentId);
  return q;
}

/**
 * The range's tool calls (of the agent), for reading in (session_id, seq) order: the tool-call
 * index (event_type, session_id, seq, ts, tool_name, call_id, agent_id), partial on event_type
 * 'tool_call' (migration 0020), holds every column read, in that order. The range is written on `+ts` so that SQLite's planner, which keeps no statistics,
 * does not take the (event_type, ts) index instead and sort every tool call of the range (PostgreSQL
 * reads `+ts` as ts).
 */
function toolCallsOfRange(db: Kysely<ObserveSchema>, query: ReflectQuery): SelectQueryBuilder<ObserveSchema, 'events', object> {
  let q = db
    .selectFrom('events')
    .where('event_type', '=', 'tool_call')
    .where(sql`+ts`, '>=', query.from)
    .where(sql`+ts`, '<=', query.to);
  if (query.agentId !== undefined) q = q.where('agent_id', '=', query.agentId);
  return q;
}

/** Events timestamped in the range (of the agent), optionally of some types. */
function eventsOfRange(db: Kysely<ObserveSchema>, query: ReflectQuery): SelectQueryBuilder<ObserveSchema, 'events', object> {
  let q = db.selectFrom('events').where('ts', '>=', query.from).where('ts', '<=', query.to);
  if (query.agentId !== undefined) q = q.where('agent_id', '=', query.agentId);
  return q;
}

async function countSessions(database: ObserveDatabase, query: ReflectQuery): Promise<number> {
  const row = await sessionsOfRange(database.db, query)
    .select((eb: Eb) => eb.fn.countAll().as('n'))
    .executeTakeFirst();
  return num((row as { n?: unknown } | undefined)?.n);
}

async function countEvents(database: ObserveDatabase, query: ReflectQuery): Promise<number> {
  const rows = await aggregate(database, { from: query.from, to: query.to, agentId: query.agentId, dimensions: [] });
  return rows.reduce((n, row) => n + row.eventCount, 0);
}

// ---------------------------------------------------------------------------------------------
// error_patterns

/**
 * The text of an error event, in this order (first non-empty string): tool_error: payload.error,
 * payload.error.message, payload.message, payload.reason; any other error event: payload.message,
 * payload.error, payload.error.message, payload.reason, payload.data.message, payload.data.error.
 * Null when none (the pattern is then "<eventType> (no message)"). Cut to 2,000 characters.
 */
function errorText(dialect: ObserveDatabase['dialect']) {
  const field = (...path: string[]) => sql`nullif(${jsonString(dialect, 'payload', path)}, '')`;
  return sql<string | null>`substr(case when event_type = 'tool_error'
    then coalesce(${field('error')}, ${field('error', 'message')}, ${field('message')}, ${field('reason')})
    else coalesce(${field('message')}, ${field('error')}, ${field('error', 'message')}, ${field('reason')}, ${field('data', 'message')}, ${field('data', 'error')})
    end, 1, 2000)`;
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

interface Occurrence {
  seq: number;
  group: PatternGroup;
}

const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

async function errorPatterns(ctx: ObserveContext, query: ReflectQuery): Promise<Insight[]> {
  const { database } = ctx;
  const db = database.db;
  const patterns = new PatternCache();
  const groups = new Map<string, PatternGroup>();
  /** Occurrences per session, kept for the preceding-tools pass (id, seq and group only). */
  const occurrences = new Map<string, Occurrence[]>();

  // is_error = 1 is the one definition of an error event; the severity / tool_error disjunction
  // states the same thing in indexed columns, so the database reads only the range's error events.
  const errors = eventsOfRange(db, query)
    .select(['session_id', 'seq', 'ts', 'event_type', errorText(database.dialect).as('message')])
    .where('is_error', '=', 1)
    .where((eb: Eb) => eb.or([eb('severity', 'in', ['error', 'critical']), eb('event_type', '=', 'tool_error')]));
  await forEachBatch(
    database,
    errors,
    (rows) => {
      for (const row of rows as { session_id: string; seq: number; ts: number; event_type: string; message: string | null }[]) {
        const text = row.message === null ? `${row.event_type} (no message)` : patterns.pattern(String(row.message));
        let group = groups.get(text);
        if (group === undefined) {
          group = { pattern: text, count: 0, firstSeen: Infinity, lastSeen: -Infinity, sessions: new Map(), preceding: new Map() };
          groups.set(text, group);
        }
        const ts = Number(row.ts);
        group.count += 1;
        if (ts < group.firstSeen) group.firstSeen = ts;
        if (ts > group.lastSeen) group.lastSeen = ts;
        const latest = group.sessions.get(row.session_id);
        if (latest === undefined || ts > latest) group.sessions.set(row.session_id, ts);
        let list = occurrences.get(row.session_id);
        if (list === undefined) {
          list = [];
          occurrences.set(row.session_id, list);
        }
        list.push({ seq: Number(row.seq), group });
      }
    },
    reflectTuning.batchSize,
  );

  const top = [...groups.values()].sort((a, b) => b.count - a.count || b.lastSeen - a.lastSeen || byText(a.pattern, b.pattern)).slice(0, query.limit);
  await precedingTools(ctx, query, new Set(top), occurrences);

  return top.map((group) => {
    const sessions = [...group.sessions.entries()].sort((a, b) => b[1] - a[1] || byText(a[0], b[0])).map(([id]) => id);
    const listed = sessions.slice(0, MAX_AFFECTED_SESSIONS);
    const preceding = [...group.preceding.entries()]
      .sort((a, b) => b[1] - a[1] || byText(a[0], b[0]))
      .slice(0, MAX_PRECEDING_SEQUENCES)
      .map(([key]) => key.split('\u0000'));
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

/**
 * Fills `preceding` of the reported groups: for each of their occurrences, the tool names of the
 * (up to) 3 tool_call events of the same session with a lower seq, timestamped in the range. One
 * pass over the tool calls, ordered by (session, seq), merged with each session's occurrences sorted
 * by seq. An occurrence without an earlier tool call adds nothing.
 */
async function precedingTools(ctx: ObserveContext, query: ReflectQuery, reported: Set<PatternGroup>, all: Map<string, Occurrence[]>): Promise<void> {
  const { database } = ctx;
  const sessions = new Map<string, Occurrence[]>();
  for (const [session, list] of all) {
    const kept = list.filter((o) => reported.has(o.group));
    if (kept.length > 0)
      sessions.set(
        session,
        kept.sort((a, b) => a.seq - b.seq),
      );
  }
  if (sessions.size === 0) return;

  // The few sessions' ranges of the tool-call index, or all of it.
  let calls = toolCallsOfRange(database.db, query).select(['session_id', 'seq', 'tool_name']).orderBy('session_id').orderBy('seq');
  if (sessions.size <= reflectTuning.sessionFilterMax) calls = calls.where('session_id', 'in', [...sessions.keys()]);

  let current: string | undefined;
  let pending: Occurrence[] = [];
  let next = 0;
  let recent: string[] = [];
  const record = (occurrence: Occurrence) => {
    if (recent.length === 0) return;
    const key = recent.join('\u0000');
    occurrence.group.preceding.set(key, (occurrence.group.preceding.get(key) ?? 0) + 1);
  };
  const flush = () => {
    for (; next < pending.length; next++) record(pending[next]!);
  };
  await forEachBatch(
    database,
    calls,
    (rows) => {
      for (const row of rows as { session_id: string; seq: number; tool_name: string | null }[]) {
        if (row.session_id !== current) {
          flush();
          current = row.session_id;
          pending = sessions.get(current) ?? [];
          next = 0;
          recent = [];
        }
        if (pending.length === 0) continue;
        const seq = Number(row.seq);
        for (; next < pending.length && pending[next]!.seq < seq; next++) record(pending[next]!);
        recent.push(row.tool_name ?? '');
        if (recent.length > PRECEDING_TOOLS) recent.shift();
      }
    },
    reflectTuning.batchSize,
  );
  flush();
}

// ---------------------------------------------------------------------------------------------
// tool_sequences

async function toolSequences(ctx: ObserveContext, query: ReflectQuery): Promise<Insight[]> {
  const { database } = ctx;
  const db = database.db;
  // tool_error events are a small share: per session, callId → the last seq of a tool_error for it.
  const failures = new Map<string, Map<string, number>>();
  const toolErrors = eventsOfRange(db, query).select(['session_id', 'seq', 'call_id']).where('event_type', '=', 'tool_error').where('call_id', 'is not', null);
  await forEachBatch(
    database,
    toolErrors,
    (rows) => {
      for (const row of rows as { session_id: string; seq: number; call_id: string }[]) {
        let calls = failures.get(row.session_id);
        if (calls === undefined) {
          calls = new Map();
          failures.set(row.session_id, calls);
        }
        calls.set(row.call_id, Math.max(calls.get(row.call_id) ?? -1, Number(row.seq)));
      }
    },
    reflectTuning.batchSize,
  );

  const counter = new NgramCounter(SEQUENCE_SIZES);
  const calls = toolCallsOfRange(db, query).select(['session_id', 'seq', 'tool_name', 'call_id']).orderBy('session_id').orderBy('seq');
  await forEachBatch(
    database,
    calls,
    (rows) => {
      for (const row of rows as { session_id: string; seq: number; tool_name: string | null; call_id: string | null }[]) {
        const failedAt = row.call_id === null ? undefined : failures.get(row.session_id)?.get(row.call_id);
        counter.add(row.session_id, row.tool_name ?? '', failedAt !== undefined && failedAt > Number(row.seq));
      }
    },
    reflectTuning.batchSize,
  );

  return counter
    .results()
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

/** Spend events (llm_response, cost_tracked) of the range per model: count and cost, exact. */
async function spendByModel(database: ObserveDatabase, query: ReflectQuery): Promise<Map<string, { calls: number; cost: number }>> {
  const rows = await aggregate(database, { from: query.from, to: query.to, agentId: query.agentId, eventTypes: COST_EVENT_TYPES, dimensions: ['model'] });
  const models = new Map<string, { calls: number; cost: number }>();
  for (const row of rows) {
    const model = String(row.model);
    const entry = models.get(model) ?? { calls: 0, cost: 0 };
    entry.calls += row.eventCount;
    entry.cost += row.costUsd;
    models.set(model, entry);
  }
  return models;
}

async function costAnalysis(ctx: ObserveContext, query: ReflectQuery, sessions: number): Promise<Insight[]> {
  const rows = [...(await spendByModel(ctx.database, query)).entries()];
  const total = rows.reduce((sum, [, row]) => sum + row.cost, 0);
  const calls = rows.reduce((n, [, row]) => n + row.calls, 0);
  const avgPerSession = usd(mean(total, sessions));
  const summary: Insight = {
    type: 'cost_summary',
    summary: `${dollars(usd(total))} spent over ${plural(sessions, 'session')} (${dollars(avgPerSession)} per session) in ${plural(calls, 'priced call')}`,
    data: { totalCost: usd(total), avgPerSession, totalSessions: sessions },
    confidence: sessions > 0 || calls > 0 ? 1 : 0,
  };
  const models: Insight[] = rows
    .map(([model, row]) => ({
      model: model === '' ? 'unknown' : model,
      callCount: row.calls,
      totalCost: usd(row.cost),
      avgCostPerCall: usd(mean(row.cost, row.calls)),
    }))
    .sort((a, b) => b.totalCost - a.totalCost || b.callCount - a.callCount || byText(a.model, b.model))
    .map((data) => ({
      type: 'model_cost' as const,
      summary: `${data.model}: ${plural(data.callCount, 'call')} cost ${dollars(data.totalCost)} (${percent(ratio(data.totalCost, usd(total)))} of the spend, ${dollars(data.avgCostPerCall)} per call)`,
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
