import { routeOptions, toIso, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { DIMENSION_NAMES } from './scores.ts';
import { computeHealth, DEFAULT_WINDOW_DAYS, ensureAgentSnapshot, ensureSnapshots, SNAPSHOT_WINDOW_DAYS, snapshotHistory } from './service.ts';

const identifier = z.string().min(1).max(256);
const windowDays = z.coerce.number().int().min(1).max(90).default(DEFAULT_WINDOW_DAYS).describe('Window in days (1 to 90)');

const dimensionSchema = z.object({
  name: z.enum(DIMENSION_NAMES),
  score: z.number().describe('0 to 100'),
  weight: z.number().describe('0 to 1'),
  rawValue: z.number().describe('The measured value behind the score: share, USD, ratio, ms, share'),
  description: z.string(),
});

const healthSchema = z
  .object({
    agentId: z.string(),
    overallScore: z.number().describe('0 to 100, weighted sum of the dimension scores'),
    trend: z.enum(['improving', 'stable', 'degrading']),
    trendDelta: z.number().describe('Point change of overallScore from the previous window of the same length'),
    dimensions: z.array(dimensionSchema),
    window: z.object({ from: z.string(), to: z.string() }),
    sessionCount: z.number().int(),
    computedAt: z.string(),
  })
  .meta({ id: 'AgentHealth' });

const snapshotSchema = z
  .object({
    agentId: z.string(),
    date: z.string().describe('YYYY-MM-DD (UTC)'),
    overallScore: z.number(),
    errorRateScore: z.number(),
    costEfficiencyScore: z.number(),
    toolSuccessScore: z.number(),
    latencyScore: z.number(),
    completionRateScore: z.number(),
    sessionCount: z.number().int(),
  })
  .meta({ id: 'HealthSnapshot' });

export function registerHealthRoutes(app: ZodApp, ctx: ObserveContext): void {
  app.get(
    '/api/agents/:id/health',
    routeOptions('read', {
      operationId: 'getAgentHealth',
      summary: 'Health score of one agent over its sessions started in the window; saves the day’s snapshot on the first query',
      description: '404 when the agent has no session in the window. How the five dimensions are scored: docs/api.md, *Health*.',
      tags: ['health'],
      params: z.object({ id: identifier }),
      querystring: z.object({ window: windowDays }),
      response: { 200: healthSchema },
    }),
    async (request) => {
      const now = ctx.clock.now();
      const agentId = request.params.id;
      const windowDays = request.query.window;
      const [report] = await computeHealth(ctx, windowDays, now, agentId);
      // The snapshot holds the 7-day values whatever window was asked for.
      await ensureAgentSnapshot(ctx, agentId, now, windowDays === SNAPSHOT_WINDOW_DAYS ? (report ?? null) : undefined);
      if (!report) {
        throw observeError('healthNoSessions', `No sessions for agent ${agentId} in the last ${windowDays} days`);
      }
      return report;
    },
  );

  app.get(
    '/api/health/overview',
    routeOptions('read', {
      operationId: 'getHealthOverview',
      summary: 'Health of every agent with a session in the window, sickest first',
      description: 'Lowest score first.',
      tags: ['health'],
      querystring: z.object({ window: windowDays }),
      response: { 200: z.object({ agents: z.array(healthSchema), computedAt: z.string() }) },
    }),
    async (request) => {
      const now = ctx.clock.now();
      const windowDays = request.query.window;
      const agents = await computeHealth(ctx, windowDays, now);
      await ensureSnapshots(ctx, now, windowDays === SNAPSHOT_WINDOW_DAYS ? agents : undefined);
      return { agents, computedAt: toIso(now) };
    },
  );

  app.get(
    '/api/health/history',
    routeOptions('read', {
      operationId: 'getHealthHistory',
      summary: 'Daily health snapshots of an agent over the last `days` UTC days (today included), oldest first',
      tags: ['health'],
      querystring: z.object({
        agentId: identifier,
        days: z.coerce.number().int().min(1).max(365).default(30).describe('Days back, today included (1 to 365)'),
      }),
      response: { 200: z.object({ snapshots: z.array(snapshotSchema), agentId: z.string(), days: z.number().int() }) },
    }),
    async (request) => {
      const { agentId, days } = request.query;
      return { snapshots: await snapshotHistory(ctx, agentId, days, ctx.clock.now()), agentId, days };
    },
  );
}
