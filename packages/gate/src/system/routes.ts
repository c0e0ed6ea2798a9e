import { pingDatabase, toIso, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { GateContext } from '../context.ts';

const check = z.enum(['ok', 'error']);

export function registerHealthRoutes(app: ZodApp, ctx: GateContext): void {
  app.get(
    '/health',
    {
      config: { auth: 'public' },
      schema: {
        operationId: 'checkHealth',
        summary: 'Health; with ?deep=true also the database (a real query) and Redis (PING) when configured',
        description: 'Deep: the database (a real query) and Redis (PING) each `ok` or `error`; 503 when one fails.',
        tags: ['system'],
        security: [],
        querystring: z.object({ deep: z.enum(['true', 'false']).optional() }),
        response: {
          200: z.object({ status: z.literal('ok'), timestamp: z.string(), checks: z.object({ database: check, redis: check.optional() }).optional() }),
          503: z.object({ status: z.literal('degraded'), timestamp: z.string(), checks: z.object({ database: check, redis: check.optional() }) }),
        },
      },
    },
    async (request, reply) => {
      const timestamp = toIso(ctx.clock.now());
      if (request.query.deep !== 'true') return { status: 'ok' as const, timestamp };
      const database = await pingDatabase(ctx.database).then(
        () => 'ok' as const,
        () => 'error' as const,
      );
      const redis = ctx.limiter.check ? await ctx.limiter.check() : undefined;
      const checks = { database, ...(redis !== undefined && { redis }) };
      if (database === 'error' || redis === 'error') return reply.status(503).send({ status: 'degraded' as const, timestamp, checks });
      return { status: 'ok' as const, timestamp, checks };
    },
  );
}
