import { DAY_MS, isoTimestampMs, routeOptions, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { identifier } from '../events/index.ts';
import { ANALYSES, DEFAULT_LIMIT, DEFAULT_RANGE_DAYS, MAX_LIMIT, reflect } from './service.ts';

const reflectQuerySchema = z.object({
  analysis: z.enum(ANALYSES, { error: `must be one of ${ANALYSES.join(', ')}` }),
  agentId: identifier.optional(),
  from: isoTimestampMs.optional(),
  to: isoTimestampMs.optional(),
  limit: z.coerce.number().int().min(1).max(MAX_LIMIT).default(DEFAULT_LIMIT),
});

const iso = z.string();
const count = z.number().int().nonnegative();
const share = z.number().min(0).max(1);
const usdAmount = z.number();

const insight = <T extends string, D extends z.ZodType>(type: T, data: D) => z.object({ type: z.literal(type), summary: z.string(), data, confidence: share });

const insightSchema = z
  .union([
    insight(
      'error_pattern',
      z.object({
        pattern: z.string(),
        count,
        firstSeen: iso,
        lastSeen: iso,
        affectedSessions: z.array(z.string()),
        precedingTools: z.array(z.array(z.string())),
      }),
    ),
    insight('tool_sequence', z.object({ tools: z.array(z.string()), frequency: count, sessions: count, errorRate: share })),
    insight('cost_summary', z.object({ totalCost: usdAmount, avgPerSession: usdAmount, totalSessions: count })),
    insight('model_cost', z.object({ model: z.string(), callCount: count, totalCost: usdAmount, avgCostPerCall: usdAmount })),
    insight('performance_stats', z.object({ successRate: share, avgDuration: z.number(), avgToolCalls: z.number(), avgErrors: z.number() })),
    insight('performance_assessment', z.object({ assessment: z.enum(['improving', 'stable', 'degrading']) })),
  ])
  .meta({ id: 'ReflectInsight' });

export function registerReflectRoutes(app: ZodApp, ctx: ObserveContext): void {
  app.get(
    '/api/reflect',
    routeOptions('read', {
      operationId: 'reflectOnEvents',
      summary: 'Patterns in the events of a time range: error patterns, tool sequences, cost by model, performance trend',
      tags: ['reflect'],
      querystring: reflectQuerySchema,
      response: {
        200: z.object({
          analysis: z.enum(ANALYSES),
          insights: z.array(insightSchema),
          metadata: z.object({ sessionsAnalyzed: count, eventsAnalyzed: count, timeRange: z.object({ from: iso, to: iso }) }),
        }),
      },
    }),
    async (request) => {
      const { analysis, agentId, limit } = request.query;
      // Default range: the last 7 days up to now (or up to `to`).
      const to = request.query.to ?? ctx.clock.now();
      const from = request.query.from ?? to - DEFAULT_RANGE_DAYS * DAY_MS;
      if (from > to) throw observeError('validation', 'Validation failed: from must not be after to', [{ path: 'from', message: 'must not be after to' }]);
      return reflect(ctx, { analysis, agentId, from, to, limit });
    },
  );
}
