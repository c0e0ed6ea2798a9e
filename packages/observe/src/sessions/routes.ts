import { offsetPage, routeOptions, sendJsonText, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { eventSchema, identifier } from '../events/index.ts';
import { chainBreakSchema, listSessionsQuerySchema, sessionSchema, sessionStepSchema, sessionStepsQuerySchema } from './schemas.ts';
import { sessionTimeline, timelineBody, verifySessionChain } from './service.ts';
import { findSession, listSessions, sessionSteps, toSession } from './store.ts';

const sessionParams = z.object({ id: identifier });

export function registerSessionRoutes(app: ZodApp, ctx: ObserveContext): void {
  app.get(
    '/api/sessions',
    routeOptions('read', {
      operationId: 'listSessions',
      summary: 'List sessions, newest first',
      description:
        "`from`/`to` filter on `startedAt`; `tags`: every tag listed must be carried. The system agent's `alert:<ruleId>` sessions are listed only with `agentId=system`.",
      tags: ['sessions'],
      querystring: listSessionsQuerySchema,
      response: { 200: z.object({ sessions: z.array(sessionSchema), total: z.number().int(), hasMore: z.boolean() }) },
    }),
    async (request) => offsetPage('sessions', await listSessions(ctx.database, request.query), request.query.offset, toSession),
  );

  app.get(
    '/api/sessions/:id',
    routeOptions('read', {
      operationId: 'getSession',
      summary: 'One session',
      description:
        '`durationMs`: `endedAt`, else the last event before the first silence longer than `SESSION_IDLE_TIMEOUT_MS`, else `lastEventAt`, minus `startedAt` (the one duration replay and the figures use too).',
      tags: ['sessions'],
      params: sessionParams,
      response: { 200: sessionSchema },
    }),
    async (request) => {
      const row = await findSession(ctx.database, request.params.id);
      if (!row) throw observeError('sessionNotFound');
      return toSession(row);
    },
  );

  app.get(
    '/api/sessions/:id/timeline',
    routeOptions('read', {
      operationId: 'getSessionTimeline',
      summary: "A session's events ascending by time, with the verdict of its hash chain",
      description: 'Events by timestamp, then `seq`.',
      tags: ['sessions'],
      params: sessionParams,
      response: { 200: z.object({ events: z.array(eventSchema), chainValid: z.boolean(), brokenAt: chainBreakSchema.nullable() }) },
    }),
    async (request, reply) => {
      const timeline = await sessionTimeline(ctx, request.params.id);
      if (!timeline) throw observeError('sessionNotFound');
      return sendJsonText(reply, timelineBody(timeline));
    },
  );

  app.get(
    '/api/sessions/:id/steps',
    routeOptions('read', {
      operationId: 'listSessionSteps',
      summary: "A session's events as steps, a page at a time",
      description:
        'Each event with the figures ingest derives from it (tool or model, cost, latency, tokens, error) and no payload: what comparing two sessions reads (the dashboard aligns them). In `seq` order, after `after`; `nextAfter` is the `after` of the next page, null on the last.',
      tags: ['sessions'],
      params: sessionParams,
      querystring: sessionStepsQuerySchema,
      response: { 200: z.object({ steps: z.array(sessionStepSchema), nextAfter: z.number().int().nullable() }) },
    }),
    async (request) => {
      if (!(await findSession(ctx.database, request.params.id))) throw observeError('sessionNotFound');
      const { after, limit } = request.query;
      // One more than asked says whether a next page exists.
      const steps = await sessionSteps(ctx.database, request.params.id, after, limit + 1);
      const more = steps.length > limit;
      if (more) steps.pop();
      return { steps, nextAfter: more ? steps.at(-1)!.seq : null };
    },
  );

  app.get(
    '/api/audit/verify',
    routeOptions('read', {
      operationId: 'verifySessionChain',
      errorStatuses: [404],
      summary: "Verify a session's hash chain",
      tags: ['audit'],
      querystring: z.object({ sessionId: identifier }),
      response: {
        200: z.object({
          sessionId: z.string(),
          valid: z.boolean(),
          eventCount: z.number().int(),
          headHash: z.string().nullable(),
          brokenAt: chainBreakSchema.nullable(),
          erasures: z
            .array(z.object({ erasureId: z.string(), eventIds: z.array(z.string()) }))
            .optional()
            .describe('The erasures whose signed leaves cover events of the chain (their content replaced by an erasure marker); absent when none'),
        }),
      },
    }),
    async (request) => {
      const chain = await verifySessionChain(ctx, request.query.sessionId);
      if (!chain) throw observeError('sessionNotFound');
      const { session, verdict } = chain;
      return {
        sessionId: session.id,
        valid: verdict.valid,
        eventCount: verdict.eventCount,
        headHash: session.last_hash,
        brokenAt: verdict.brokenAt,
        ...(verdict.erasures !== undefined && verdict.erasures.length > 0 && { erasures: verdict.erasures }),
      };
    },
  );
}
