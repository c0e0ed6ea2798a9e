import { sendJsonText, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { eventSchema, ingestBodySchema, ingestResponseSchema, listEventsQuerySchema } from './schemas.ts';
import { eventsJson, findEvent, listEvents, toEvent } from './store.ts';

export function registerEventRoutes(app: ZodApp, ctx: ObserveContext): void {
  app.post(
    '/api/events',
    {
      schema: {
        summary: 'Ingest a batch of 1 to 1000 events, atomically',
        tags: ['events'],
        body: ingestBodySchema,
        response: { 201: ingestResponseSchema },
      },
    },
    async (request, reply) => {
      const appended = await ctx.events.append(request.body.events, ctx.clock.now());
      // Written as text (the schema still documents it): ids and hashes are the server's own, and
      // validating a thousand objects only to stringify them cost more than the rest of the reply.
      const events = appended.map(({ id, hash }) => `{"id":${JSON.stringify(id)},"hash":"${hash}"}`).join(',');
      return sendJsonText(reply.status(201), `{"ingested":${appended.length},"events":[${events}]}`);
    },
  );

  app.get(
    '/api/events',
    {
      schema: {
        summary: 'Query events',
        tags: ['events'],
        querystring: listEventsQuerySchema,
        response: { 200: z.object({ events: z.array(eventSchema), total: z.number().int(), hasMore: z.boolean() }) },
      },
    },
    async (request, reply) => {
      const { rows, total } = await listEvents(ctx.database, request.query);
      const hasMore = request.query.offset + rows.length < total;
      return sendJsonText(reply, `{"events":${eventsJson(rows)},"total":${total},"hasMore":${hasMore}}`);
    },
  );

  app.get(
    '/api/events/:id',
    {
      schema: {
        summary: 'One event',
        tags: ['events'],
        params: z.object({ id: z.string().min(1).max(256) }),
        response: { 200: eventSchema },
      },
    },
    async (request) => {
      const row = await findEvent(ctx.database, request.params.id);
      if (!row) throw observeError('eventNotFound');
      return toEvent(row);
    },
  );
}
