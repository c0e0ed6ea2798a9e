import { routeOptions, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import { MAX_OFFSET } from '../bounds.ts';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { commaList, identifier } from '../events/index.ts';
import { sendWritten } from './bytes.ts';
import { replayCacheOf } from './cache.ts';
import { replayBody, replaySource } from './service.ts';
import { REPLAY_EVENT_TYPES } from './state.ts';

export const REPLAY_LIMIT_DEFAULT = 1000;
export const REPLAY_LIMIT_MAX = 5000;

export const replayQuerySchema = z.object({
  offset: z.coerce.number().int().min(0).max(MAX_OFFSET).default(0),
  limit: z.coerce.number().int().min(1).max(REPLAY_LIMIT_MAX).default(REPLAY_LIMIT_DEFAULT),
  eventTypes: commaList(REPLAY_EVENT_TYPES, 'eventTypes')
    .optional()
    .meta({ description: `Comma-separated filter, any of: ${REPLAY_EVENT_TYPES.join(', ')}` }),
  includeContext: z
    .enum(['true', 'false'], { error: 'includeContext must be true or false' })
    .transform((value) => value === 'true')
    .default(true)
    .meta({ description: 'true (default) or false: include the reconstructed context of every step' }),
});

const replayEventSchema = z.object({
  id: z.string(),
  seq: z.number().int(),
  eventType: z.string(),
  timestamp: z.string(),
  payload: z.record(z.string(), z.unknown()),
  writtenBy: z.string().nullable().describe('The credential that wrote the event, as on events (docs/audit.md#who-wrote-an-event).'),
});

const replayContextSchema = z.object({
  eventIndex: z.number().int(),
  totalEvents: z.number().int(),
  cumulativeCostUsd: z.number(),
  elapsedMs: z.number(),
  eventCounts: z.record(z.string(), z.number().int()),
  llmHistory: z.array(
    z.object({
      callId: z.string(),
      provider: z.string().nullable(),
      model: z.string().nullable(),
      messages: z.unknown(),
      response: z.unknown(),
      costUsd: z.number().nullable(),
      latencyMs: z.number().nullable(),
    }),
  ),
  toolResults: z.array(
    z.object({
      callId: z.string(),
      toolName: z.string().nullable(),
      ok: z.boolean(),
      result: z.unknown(),
      error: z.unknown(),
      durationMs: z.number().nullable(),
    }),
  ),
  pendingApprovals: z.array(z.object({ requestId: z.string(), action: z.string().nullable(), urgency: z.string().nullable(), requestedAt: z.string() })),
  errorCount: z.number().int(),
  warnings: z.array(z.object({ eventIndex: z.number().int(), eventId: z.string(), code: z.string(), message: z.string() })),
});

export const replayResponseSchema = z.object({
  session: z.object({ id: z.string(), agentId: z.string(), status: z.string(), startedAt: z.string(), endedAt: z.string().optional() }),
  chainValid: z.boolean(),
  totalSteps: z.number().int(),
  steps: z.array(
    z.object({
      index: z.number().int(),
      event: replayEventSchema,
      pairedEvent: replayEventSchema.nullable(),
      pairDurationMs: z.number().nullable(),
      context: replayContextSchema.optional(),
    }),
  ),
  pagination: z.object({ offset: z.number().int(), limit: z.number().int(), hasMore: z.boolean() }),
  summary: z.object({
    totalCost: z.number(),
    totalDurationMs: z.number(),
    totalLlmCalls: z.number().int(),
    totalToolCalls: z.number().int(),
    totalErrors: z.number().int(),
    models: z.array(z.string()),
    tools: z.array(z.string()),
  }),
});

export function registerReplayRoutes(app: ZodApp, ctx: ObserveContext): void {
  const cache = replayCacheOf(ctx);
  app.get(
    '/api/sessions/:id/replay',
    routeOptions('read', {
      operationId: 'replaySession',
      summary: 'Replay a session step by step, with the context reconstructed at every step',
      description:
        'One step per event in timeline order, each with its `context` (the session right after that event) and the event paired with it. The `eventTypes` groups: `error` = error events, `decision` = approval_*, form_* and eval_result, `observation` = custom, cost_tracked and alert_*. See docs/guide/behaviour.md, *Replay*.',
      tags: ['sessions'],
      params: z.object({ id: identifier }),
      querystring: replayQuerySchema,
      response: { 200: replayResponseSchema },
    }),
    async (request, reply) => {
      const served = await cache.get(request.params.id, replaySource(ctx, request.params.id));
      if (!served) throw observeError('sessionNotFound');
      return sendWritten(reply, replayBody(served, request.query));
    },
  );
}
