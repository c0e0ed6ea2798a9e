import { compareCodeUnits, DAY_MS, HOUR_MS, isoTimestampMs, routeOptions, toIso, type ZodApp } from '@vigil/platform';
import { usdOf } from '@vigil/pricing';
import { z } from 'zod';
import { agentScope } from '../events/index.ts';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { latencyPercentiles, latencyPercentilesByMetric, type LatencyRow, type Percentiles } from './latency.ts';
import {
  aggregate,
  bucketStarts,
  sessionsPerAgent,
  emptySums,
  GRANULARITIES,
  mean,
  ratio,
  type AggregateRow,
  type Granularity,
  type SumKey,
  type Sums,
} from './aggregate.ts';

/** More buckets than this is a client mistake (an hourly series over years), answered 400. */
const MAX_BUCKETS = 10_000;
const COST_EVENT_TYPES = ['llm_response', 'cost_tracked'];

/** `range`: the window's length back from `to` (AgentLens's shorthand), instead of `from`. */
const RANGES = { '1h': HOUR_MS, '6h': 6 * HOUR_MS, '24h': DAY_MS, '3d': 3 * DAY_MS, '7d': 7 * DAY_MS, '30d': 30 * DAY_MS } as const;
const text = z.string().min(1).max(200);
/**
 * Every report's window and agent filter. Analytics measure the agents: the system agent's
 * bookkeeping (alert events) is left out unless it is asked for by name (agentScope).
 */
const range = {
  from: isoTimestampMs.optional(),
  to: isoTimestampMs.optional(),
  range: z.enum(Object.keys(RANGES) as [keyof typeof RANGES, ...(keyof typeof RANGES)[]]).optional(),
  agentId: text.optional(),
};
const granularity = (fallback: Granularity) => z.enum(GRANULARITIES).default(fallback);

/** The window of a request: default the last 24 h; from after to is a 400. */
const number = z.number();

function windowOf(ctx: ObserveContext, query: { from?: number; to?: number; range?: keyof typeof RANGES }): { from: number; to: number } {
  if (query.range !== undefined && query.from !== undefined) {
    throw observeError('validation', 'Validation failed: give range or from, not both', [{ path: 'range', message: 'not with from' }]);
  }
  const to = query.to ?? ctx.clock.now();
  const from = query.from ?? to - (query.range === undefined ? DAY_MS : RANGES[query.range]);
  if (from > to) throw observeError('validation', 'Validation failed: from must not be after to', [{ path: 'from', message: 'must not be after to' }]);
  return { from, to };
}

function seriesOf<Key extends SumKey>(
  window: { from: number; to: number },
  g: Granularity,
  rows: readonly AggregateRow<Key>[],
): { start: number; sums: Pick<Sums, Key | 'eventCount'> }[] {
  const starts = bucketStarts(window.from, window.to, g);
  if (starts.length > MAX_BUCKETS) {
    throw observeError('validation', `Validation failed: the range holds ${starts.length} ${g} buckets; at most ${MAX_BUCKETS}`, [
      { path: 'granularity', message: `at most ${MAX_BUCKETS} buckets per request` },
    ]);
  }
  const byStart = new Map(rows.map((row) => [row.bucket as number, row]));
  return starts.map((start) => ({ start, sums: byStart.get(start) ?? emptySums() }));
}

/** The sums of `rows`, each asking for `keys` (aggregate's AggregateQuery.sums). */
function total<Key extends SumKey>(rows: readonly Pick<Sums, Key | 'eventCount'>[], keys: readonly Key[]): Pick<Sums, Key | 'eventCount'> {
  const sum: Pick<Sums, Key | 'eventCount'> = emptySums();
  for (const row of rows) {
    sum.eventCount += row.eventCount;
    for (const key of keys) sum[key] += row[key];
  }
  return sum;
}

// The sums each report shows, asked of aggregate (the others are not computed).
const OVERVIEW_SUMS = ['toolCallCount', 'errorCount', 'durationSum', 'durationCount', 'costNanos'] as const;
const LLM_SUMS = ['costNanos', 'inputTokens', 'outputTokens', 'latencySum', 'latencyCount'] as const;
const COST_SUMS = ['costNanos', 'inputTokens', 'outputTokens'] as const;

const overview = (s: Pick<Sums, (typeof OVERVIEW_SUMS)[number] | 'eventCount'>) => ({
  eventCount: s.eventCount,
  toolCallCount: s.toolCallCount,
  errorCount: s.errorCount,
  avgLatencyMs: mean(s.durationSum, s.durationCount),
  totalCostUsd: usdOf(s.costNanos),
});

const llmFigures = (s: Pick<Sums, (typeof LLM_SUMS)[number] | 'eventCount'>) => ({
  calls: s.eventCount,
  costUsd: usdOf(s.costNanos),
  inputTokens: s.inputTokens,
  outputTokens: s.outputTokens,
  avgLatencyMs: mean(s.latencySum, s.latencyCount),
});

/** `{ p50<Name>Ms, p95<Name>Ms, p99<Name>Ms }`, null when nothing was timed. */
function percentileFields<Name extends string>(name: Name, p: Percentiles | null | undefined): Record<`p${50 | 95 | 99}${Name}Ms`, number | null> {
  return { [`p50${name}Ms`]: p?.p50 ?? null, [`p95${name}Ms`]: p?.p95 ?? null, [`p99${name}Ms`]: p?.p99 ?? null } as Record<
    `p${50 | 95 | 99}${Name}Ms`,
    number | null
  >;
}
const percentileSchema = <Name extends string>(name: Name) => {
  const p = number.nullable();
  return { [`p50${name}Ms`]: p, [`p95${name}Ms`]: p, [`p99${name}Ms`]: p } as Record<`p${50 | 95 | 99}${Name}Ms`, typeof p>;
};
const byKey = (rows: readonly LatencyRow[], key: (row: LatencyRow) => string) => new Map(rows.map((row) => [key(row), row.percentiles]));

const overviewSchema = z.object({ eventCount: number, toolCallCount: number, errorCount: number, avgLatencyMs: number, totalCostUsd: number });
const llmFiguresSchema = z.object({ calls: number, costUsd: number, inputTokens: number, outputTokens: number, avgLatencyMs: number });

export function registerAnalyticsRoutes(app: ZodApp, ctx: ObserveContext): void {
  const { database } = ctx;

  app.get(
    '/api/analytics',
    routeOptions('read', {
      operationId: 'getAnalytics',
      summary: 'Event counts, errors, tool latency and cost per time bucket; tool latency percentiles over the range',
      description:
        '`range` counts back from `to` and is not taken with `from`. `totals` also carries the tool duration percentiles over the range (null when none).',
      tags: ['analytics'],
      querystring: z.object({ ...range, granularity: granularity('hour') }),
      response: {
        200: z.object({ buckets: z.array(overviewSchema.extend({ bucket: z.string() })), totals: overviewSchema.extend(percentileSchema('Latency')) }),
      },
    }),
    async (request) => {
      const window = windowOf(ctx, request.query);
      const g = request.query.granularity;
      const filter = { ...window, ...agentScope(request.query.agentId) };
      const [rows, [latency]] = await Promise.all([
        aggregate(database, { ...filter, granularity: g, dimensions: ['bucket'], sums: OVERVIEW_SUMS }),
        latencyPercentiles(database, { ...filter, metric: 'tool', dimensions: [] }),
      ]);
      const series = seriesOf(window, g, rows);
      return {
        buckets: series.map(({ start, sums }) => ({ bucket: toIso(start), ...overview(sums) })),
        totals: {
          ...overview(
            total(
              series.map((b) => b.sums),
              OVERVIEW_SUMS,
            ),
          ),
          ...percentileFields('Latency', latency?.percentiles),
        },
      };
    },
  );

  app.get(
    '/api/analytics/llm',
    routeOptions('read', {
      operationId: 'getLlmAnalytics',
      summary: 'LLM calls (llm_response events): cost, tokens, latency and latency percentiles by model and over time',
      description: '`summary` and each `byModel` row also carry the latency percentiles.',
      tags: ['analytics'],
      querystring: z.object({ ...range, granularity: granularity('hour'), model: text.optional(), provider: text.optional() }),
      response: {
        200: z.object({
          summary: z.object({
            totalCalls: number,
            totalCostUsd: number,
            totalInputTokens: number,
            totalOutputTokens: number,
            avgLatencyMs: number,
            avgCostPerCall: number,
            ...percentileSchema('Latency'),
          }),
          byModel: z.array(llmFiguresSchema.extend({ provider: z.string(), model: z.string(), ...percentileSchema('Latency') })),
          byTime: z.array(llmFiguresSchema.extend({ bucket: z.string() })),
        }),
      },
    }),
    async (request) => {
      const window = windowOf(ctx, request.query);
      const { agentId, model, provider } = request.query;
      const g = request.query.granularity;
      const filter = { ...window, granularity: g, ...agentScope(agentId), model, provider, eventTypes: ['llm_response'] };
      const latency = { ...window, ...agentScope(agentId), model, provider, metric: 'llm' as const };
      const [byModel, byTime, [overall], modelLatency] = await Promise.all([
        aggregate(database, { ...filter, dimensions: ['provider', 'model'], sums: LLM_SUMS }),
        aggregate(database, { ...filter, dimensions: ['bucket'], sums: LLM_SUMS }),
        latencyPercentiles(database, { ...latency, dimensions: [] }),
        latencyPercentiles(database, { ...latency, dimensions: ['provider', 'model'] }).then((rows) =>
          byKey(rows, (row) => JSON.stringify([row.provider, row.model])),
        ),
      ]);
      const series = seriesOf(window, g, byTime);
      const sums = total(byModel, LLM_SUMS);
      return {
        summary: {
          totalCalls: sums.eventCount,
          totalCostUsd: usdOf(sums.costNanos),
          totalInputTokens: sums.inputTokens,
          totalOutputTokens: sums.outputTokens,
          avgLatencyMs: mean(sums.latencySum, sums.latencyCount),
          avgCostPerCall: usdOf(mean(sums.costNanos, sums.eventCount)),
          ...percentileFields('Latency', overall?.percentiles),
        },
        byModel: byModel
          .map((row) => ({
            provider: String(row.provider),
            model: String(row.model),
            ...llmFigures(row),
            ...percentileFields('Latency', modelLatency.get(JSON.stringify([String(row.provider), String(row.model)]))),
          }))
          .sort((a, b) => b.costUsd - a.costUsd || b.calls - a.calls || compareCodeUnits(a.provider, b.provider) || compareCodeUnits(a.model, b.model)),
        byTime: series.map(({ start, sums: s }) => ({ bucket: toIso(start), ...llmFigures(s) })),
      };
    },
  );

  app.get(
    '/api/analytics/costs',
    routeOptions('read', {
      operationId: 'getCostAnalytics',
      summary: 'Spend (llm_response and cost_tracked events) by agent and over time',
      tags: ['analytics'],
      querystring: z.object({ ...range, granularity: granularity('day') }),
      response: {
        200: z.object({
          byAgent: z.array(
            z.object({
              agentId: z.string(),
              totalCostUsd: number,
              totalInputTokens: number,
              totalOutputTokens: number,
              totalTokens: number,
              eventCount: number,
            }),
          ),
          overTime: z.array(z.object({ bucket: z.string(), totalCostUsd: number, eventCount: number })),
          totals: z.object({ totalCostUsd: number, totalInputTokens: number, totalOutputTokens: number, totalTokens: number }),
        }),
      },
    }),
    async (request) => {
      const window = windowOf(ctx, request.query);
      const g = request.query.granularity;
      const filter = { ...window, granularity: g, ...agentScope(request.query.agentId), eventTypes: COST_EVENT_TYPES };
      const [byAgent, byTime] = await Promise.all([
        aggregate(database, { ...filter, dimensions: ['agent_id'], sums: COST_SUMS }),
        aggregate(database, { ...filter, dimensions: ['bucket'], sums: COST_SUMS }),
      ]);
      const tokens = (s: Pick<Sums, (typeof COST_SUMS)[number]>) => ({
        totalCostUsd: usdOf(s.costNanos),
        totalInputTokens: s.inputTokens,
        totalOutputTokens: s.outputTokens,
        totalTokens: s.inputTokens + s.outputTokens,
      });
      return {
        byAgent: byAgent
          .map((row) => ({ agentId: String(row.agent_id), ...tokens(row), eventCount: row.eventCount }))
          .sort((a, b) => b.totalCostUsd - a.totalCostUsd || compareCodeUnits(a.agentId, b.agentId)),
        overTime: seriesOf(window, g, byTime).map(({ start, sums }) => ({
          bucket: toIso(start),
          totalCostUsd: usdOf(sums.costNanos),
          eventCount: sums.eventCount,
        })),
        totals: tokens(total(byAgent, COST_SUMS)),
      };
    },
  );

  app.get(
    '/api/analytics/agents',
    routeOptions('read', {
      operationId: 'getAgentAnalytics',
      summary: 'Per agent: sessions started, events, errors, spend, mean session duration, tool duration and LLM latency percentiles',
      tags: ['analytics'],
      querystring: z.object(range),
      response: {
        200: z.object({
          agents: z.array(
            z.object({
              agentId: z.string(),
              sessionCount: number,
              totalEvents: number,
              totalErrors: number,
              errorRate: number,
              totalCostUsd: number,
              avgDurationMs: number,
              ...percentileSchema('ToolDuration'),
              ...percentileSchema('LlmLatency'),
            }),
          ),
        }),
      },
    }),
    async (request) => {
      const window = windowOf(ctx, request.query);
      const { agentId } = request.query;
      const scope = agentScope(agentId);
      const [events, sessions, latency] = await Promise.all([
        aggregate(database, { ...window, dimensions: ['agent_id'], ...scope, sums: ['errorCount', 'costNanos'] }),
        sessionsPerAgent(database, window, agentId),
        latencyPercentilesByMetric(database, { ...window, ...scope, metrics: ['tool', 'llm'], dimensions: ['agent_id'] }),
      ]);
      const byAgent = (rows: LatencyRow[]) => byKey(rows, (row) => String(row.agent_id));
      const toolLatency = byAgent(latency.tool);
      const llmLatency = byAgent(latency.llm);
      const agents = new Map<string, { sessions: number; duration: number; sums: Pick<Sums, 'eventCount' | 'errorCount' | 'costNanos'> }>();
      for (const row of events) agents.set(String(row.agent_id), { sessions: 0, duration: 0, sums: row });
      for (const row of sessions) {
        const entry = agents.get(row.agent_id) ?? { sessions: 0, duration: 0, sums: emptySums() };
        entry.sessions = Number(row.sessions);
        entry.duration = Number(row.duration ?? 0);
        agents.set(row.agent_id, entry);
      }
      return {
        agents: [...agents.entries()]
          .map(([agentId, { sessions: count, duration, sums }]) => ({
            agentId,
            sessionCount: count,
            totalEvents: sums.eventCount,
            totalErrors: sums.errorCount,
            errorRate: ratio(sums.errorCount, sums.eventCount),
            totalCostUsd: usdOf(sums.costNanos),
            avgDurationMs: mean(duration, count),
            ...percentileFields('ToolDuration', toolLatency.get(agentId)),
            ...percentileFields('LlmLatency', llmLatency.get(agentId)),
          }))
          .sort((a, b) => b.totalEvents - a.totalEvents || compareCodeUnits(a.agentId, b.agentId)),
      };
    },
  );

  app.get(
    '/api/analytics/tools',
    routeOptions('read', {
      operationId: 'getToolAnalytics',
      summary: 'Per tool: calls, errors (tool_error events), error rate, mean duration and duration percentiles',
      description: "`agentId`: that agent's calls.",
      tags: ['analytics'],
      querystring: z.object(range),
      response: {
        200: z.object({
          tools: z.array(
            z.object({
              toolName: z.string(),
              callCount: number,
              errorCount: number,
              errorRate: number,
              avgDurationMs: number,
              ...percentileSchema('Duration'),
            }),
          ),
        }),
      },
    }),
    async (request) => {
      const window = windowOf(ctx, request.query);
      const [rows, latency] = await Promise.all([
        aggregate(database, {
          ...window,
          dimensions: ['tool_name', 'event_type'],
          ...agentScope(request.query.agentId),
          eventTypes: ['tool_call', 'tool_response', 'tool_error'],
          sums: ['durationSum', 'durationCount'],
        }),
        latencyPercentiles(database, { ...window, ...agentScope(request.query.agentId), metric: 'tool', dimensions: ['tool_name'] }).then((found) =>
          byKey(found, (row) => String(row.tool_name)),
        ),
      ]);
      const tools = new Map<string, { calls: number; errors: number; durationSum: number; durationCount: number }>();
      for (const row of rows) {
        const name = String(row.tool_name);
        if (name === '') continue;
        const tool = tools.get(name) ?? { calls: 0, errors: 0, durationSum: 0, durationCount: 0 };
        if (row.event_type === 'tool_call') tool.calls += row.eventCount;
        if (row.event_type === 'tool_error') tool.errors += row.eventCount;
        tool.durationSum += row.durationSum;
        tool.durationCount += row.durationCount;
        tools.set(name, tool);
      }
      return {
        tools: [...tools.entries()]
          .map(([toolName, t]) => ({
            toolName,
            callCount: t.calls,
            errorCount: t.errors,
            errorRate: ratio(t.errors, t.calls),
            avgDurationMs: mean(t.durationSum, t.durationCount),
            ...percentileFields('Duration', latency.get(toolName)),
          }))
          .sort((a, b) => b.callCount - a.callCount || compareCodeUnits(a.toolName, b.toolName)),
      };
    },
  );
}
