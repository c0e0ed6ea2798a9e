import { routeOptions, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { identifier, COMPLEXITY_TIERS } from '../events/index.ts';
import { CONFIDENCES, recommendations } from './service.ts';

const recommendationsQuerySchema = z.object({
  agentId: identifier.optional(),
  period: z.coerce.number().int().min(1).max(90).default(7),
  limit: z.coerce.number().int().min(1).max(50).default(10),
});

const usdAmount = z.number().nonnegative();
const rate = z.number().min(0).max(1);

const recommendationSchema = z
  .object({
    currentModel: z.string(),
    recommendedModel: z.string(),
    complexityTier: z.enum(COMPLEXITY_TIERS),
    currentCostPerCall: usdAmount,
    recommendedCostPerCall: usdAmount,
    monthlySavings: usdAmount,
    callVolume: z.number().int(),
    currentSuccessRate: rate,
    recommendedSuccessRate: rate,
    confidence: z.enum(CONFIDENCES),
    agentId: z.string(),
  })
  .meta({ id: 'OptimizeRecommendation' });

export function registerOptimizeRoutes(app: ZodApp, ctx: ObserveContext): void {
  app.get(
    '/api/optimize/recommendations',
    routeOptions('read', {
      operationId: 'listModelRecommendations',
      summary: 'Cheaper models of the same provider per agent, model and complexity tier, with estimated monthly savings',
      tags: ['optimize'],
      querystring: recommendationsQuerySchema,
      response: {
        200: z.object({
          recommendations: z.array(recommendationSchema),
          totalPotentialSavings: usdAmount,
          period: z.number().int(),
          analyzedCalls: z.number().int(),
        }),
      },
    }),
    async (request) => recommendations(ctx, request.query),
  );
}
