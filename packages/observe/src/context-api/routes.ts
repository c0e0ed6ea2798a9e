import { routeOptions, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { identifier } from '../events/index.ts';
import { MAX_QUERY_CHARS } from '../recall/index.ts';
import { buildContext } from './service.ts';

const contextQuerySchema = z.object({
  topic: z
    .string({ error: 'topic is required' })
    .trim()
    .min(1, 'topic is required')
    .max(MAX_QUERY_CHARS, `topic must be at most ${MAX_QUERY_CHARS} characters`),
  userId: identifier.optional(),
  agentId: identifier.optional(),
  limit: z.coerce.number().int().min(1).max(50).default(5),
});

const keyEventSchema = z.object({ id: z.string(), eventType: z.string(), summary: z.string(), timestamp: z.string() });

const contextSessionSchema = z
  .object({
    sessionId: z.string(),
    agentId: z.string(),
    startedAt: z.string(),
    endedAt: z.string().optional(),
    summary: z.string(),
    relevanceScore: z.number().min(0).max(1),
    keyEvents: z.array(keyEventSchema),
  })
  .meta({ id: 'ContextSession' });

const lessonSchema = z
  .object({
    id: z.string(),
    title: z.string(),
    content: z.string(),
    category: z.string(),
    importance: z.number(),
    relevanceScore: z.number().min(0).max(1),
  })
  .meta({ id: 'ContextLesson' });

export function registerContextRoutes(app: ZodApp, ctx: ObserveContext): void {
  app.get(
    '/api/context',
    routeOptions('read', {
      operationId: 'getContext',
      summary: 'Sessions relevant to a topic (similarity and recency), with key events, and lessons from the memory server',
      tags: ['context'],
      querystring: contextQuerySchema,
      response: {
        200: z.object({
          topic: z.string(),
          sessions: z.array(contextSessionSchema),
          lessons: z.array(lessonSchema),
          summary: z.string(),
          totalSessions: z.number().int(),
        }),
      },
    }),
    async (request) => buildContext(ctx, request.query, request.log),
  );
}
