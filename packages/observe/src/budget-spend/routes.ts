import type { ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { SPEND_SCOPES, SPEND_WINDOWS, spendFigures, windowStart } from './store.ts';

const spendBody = z
  .object({
    queries: z
      .array(
        z
          .object({
            id: z.string().min(1).max(100),
            scope: z.enum(SPEND_SCOPES),
            value: z.string().min(1).max(200).optional(),
            window: z.enum(SPEND_WINDOWS),
            minUsd: z.number().min(0).default(0),
          })
          .strict(),
      )
      .max(1000),
  })
  .strict();

const spendAnswer = z.object({
  at: z.number().int(),
  results: z.array(
    z.object({
      id: z.string(),
      windowStart: z.number().int(),
      figures: z.array(z.object({ key: z.string(), spendUsd: z.number(), agentIds: z.array(z.string()) })),
    }),
  ),
});

/** The spend the gate's budgets read (service token only): the figures of GET /api/analytics/costs, per scope and window. */
export function registerBudgetSpendRoutes(app: ZodApp, ctx: ObserveContext): void {
  app.post(
    '/api/internal/spend',
    {
      config: { auth: 'service' },
      schema: {
        operationId: 'readBudgetSpend',
        summary: "Spend per scope and window, for the gate's budgets (service token only)",
        description:
          'Each query names a scope (agent, session, tag, tenant; without `value`: each agent or session), a UTC window (hour, day, calendar month, or the session) and answers its figures: what each key spent since the window start, the same sums as GET /api/analytics/costs. 503 when `INTERNAL_SERVICE_TOKEN` is unset.',
        tags: ['analytics'],
        body: spendBody,
        response: { 200: spendAnswer },
      },
    },
    async (request) => {
      const at = ctx.clock.now();
      const results = [];
      for (const query of request.body.queries) {
        results.push({ id: query.id, windowStart: windowStart(query.window, at), figures: await spendFigures(ctx.database, query, at) });
      }
      return { at, results };
    },
  );
}
