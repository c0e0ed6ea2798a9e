import { routeOptions, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { identifier } from '../events/index.ts';
import { TREE_EVENT_LIMIT } from './build.ts';
import { sessionTreeSchema } from './schemas.ts';
import { sessionTree } from './service.ts';

export function registerTreeRoutes(app: ZodApp, ctx: ObserveContext): void {
  app.get(
    '/api/sessions/:id/tree',
    routeOptions('read', {
      operationId: 'getSessionTree',
      summary: "A session's spans and call pairs as nested nodes with timings",
      description:
        "The session's spans (nested by `parentSpanId`) and SDK call pairs (by `callId`) as nodes with their children, built from the first 10,000 events (`truncated: true` beyond). See docs/guide/behaviour.md, *Trace trees*.",
      tags: ['sessions'],
      params: z.object({ id: identifier }),
      response: { 200: sessionTreeSchema },
    }),
    async (request) => {
      const tree = await sessionTree(ctx, request.params.id);
      if (!tree) throw observeError('sessionNotFound');
      return { sessionId: request.params.id, ...tree, eventLimit: TREE_EVENT_LIMIT };
    },
  );
}
