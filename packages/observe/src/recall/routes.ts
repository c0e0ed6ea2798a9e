import { isoTimestampMs, routeOptions, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { identifier } from '../events/index.ts';
import { CachingEmbedder, OpenAIEmbedder } from './embedder.ts';
import { queueDepth } from './queue.ts';
import { MAX_QUERY_CHARS, recall } from './search.ts';
import { countVectors } from './store.ts';

const recallQuerySchema = z
  .object({
    query: z
      .string({ error: 'query is required' })
      .trim()
      .min(1, 'query is required')
      .max(MAX_QUERY_CHARS, `query must be at most ${MAX_QUERY_CHARS} characters`),
    scope: z.enum(['all', 'events', 'sessions']).default('all'),
    agentId: identifier.optional(),
    from: isoTimestampMs.optional(),
    to: isoTimestampMs.optional(),
    limit: z.coerce.number().int().min(1).max(100).default(10),
    minScore: z.coerce.number().min(0).max(1).default(0),
  })
  .refine((q) => q.from === undefined || q.to === undefined || q.from <= q.to, { message: 'from must not be after to', path: ['from'] });

const recallResultSchema = z
  .object({
    sourceType: z.enum(['event', 'session']),
    sourceId: z.string(),
    score: z.number().min(0).max(1),
    text: z.string(),
    metadata: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'RecallResult' });

const statusSchema = z.object({
  embedder: z.object({ backend: z.enum(['local', 'openai']), model: z.string(), dimensions: z.number().int() }),
  queue: z.object({ depth: z.number().int(), retrying: z.number().int(), oldestEnqueuedAt: z.string().nullable() }),
  vectors: z.object({ stored: z.number().int(), indexed: z.number().int() }),
});

const backendOf = (embedder: ObserveContext['embedder']): 'local' | 'openai' =>
  (embedder instanceof CachingEmbedder ? embedder.inner : embedder) instanceof OpenAIEmbedder ? 'openai' : 'local';

export function registerRecallRoutes(app: ZodApp, ctx: ObserveContext): void {
  app.get(
    '/api/recall',
    routeOptions('read', {
      operationId: 'recallSimilar',
      summary: 'Semantic search over events and sessions, ranked by cosine similarity',
      description: 'Results by cosine similarity (0–1). How events get a vector: docs/api.md, *Recall and context*.',
      tags: ['recall'],
      querystring: recallQuerySchema,
      response: {
        200: z.object({ results: z.array(recallResultSchema), query: z.string(), totalResults: z.number().int() }),
      },
    }),
    async (request) => recall(ctx, request.query, request.log),
  );

  app.get(
    '/api/recall/status',
    routeOptions('read', {
      operationId: 'getRecallStatus',
      summary: 'Embedding backend, queue depth (0 once everything ingested is searchable) and vector counts',
      tags: ['recall'],
      response: { 200: statusSchema },
    }),
    async () => {
      const { embedder, database } = ctx;
      const [queue, stored] = await Promise.all([queueDepth(database), countVectors(database, embedder.model)]);
      return {
        embedder: { backend: backendOf(embedder), model: embedder.model, dimensions: embedder.dimensions },
        queue: {
          depth: queue.depth,
          retrying: queue.retrying,
          oldestEnqueuedAt: queue.oldestEnqueuedAt === null ? null : new Date(queue.oldestEnqueuedAt).toISOString(),
        },
        vectors: { stored, indexed: ctx.vectorIndex.size },
      };
    },
  );
}
