import { routeOptions, sendJsonText, type ZodApp } from '@vigil/platform';
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import {
  bodyDigestOf,
  digestKeyedBody,
  findStoredAnswer,
  IDEMPOTENCY_KEY_HEADER,
  idempotencyKeyHeaderSchema,
  KeysInFlight,
  KeyStoredMeanwhile,
  REPLAYED_HEADER,
  storeKey,
  type IdempotencyClaim,
  type StoredAnswer,
} from './idempotency.ts';
import type { AppendedEvent } from './ingest.ts';
import { eventSchema, ingestBodySchema, ingestResponseSchema, listEventsQuerySchema } from './schemas.ts';
import { eventsJson, findEvent, listEvents, toEvent } from './store.ts';
import { keyWriter } from './writer.ts';

/**
 * The 201 answer, written as text (the schema still documents it): ids and hashes are the server's
 * own, and validating a thousand objects only to stringify them cost more than the rest of the reply.
 */
function ingestAnswer(appended: readonly AppendedEvent[]): string {
  const events = appended.map(({ id, hash }) => `{"id":${JSON.stringify(id)},"hash":"${hash}"}`).join(',');
  return `{"ingested":${appended.length},"events":[${events}]}`;
}

/** A repeat of a stored key: its answer again when the body is the same, else 422. */
function replay(reply: FastifyReply, claim: IdempotencyClaim, stored: StoredAnswer): FastifyReply {
  if (stored.fingerprint !== claim.fingerprint) throw observeError('idempotencyKeyReused');
  return sendJsonText(reply.status(stored.status).header(REPLAYED_HEADER, 'true'), stored.body);
}

function inFlightError(reply: FastifyReply): Error {
  void reply.header('retry-after', '1');
  return observeError('idempotencyInFlight');
}

export function registerEventRoutes(app: ZodApp, ctx: ObserveContext): void {
  const keysInFlight = new KeysInFlight();
  app.post(
    '/api/events',
    {
      preParsing: digestKeyedBody,
      config: { scope: 'ingest' },
      schema: {
        operationId: 'ingestEvents',
        errorStatuses: [409, 422],
        summary: 'Ingest a batch of 1 to 1000 events, atomically',
        description:
          "All events are stored or none. With an `Idempotency-Key` (docs/api.md, *Idempotent ingest*): a repeat of a stored key answers the first answer again with `Idempotent-Replayed: true`; 409 while the key's first request is still being stored (`Retry-After: 1`); 422 when the key was used with another body; 400 for a malformed key.",
        tags: ['events'],
        headers: z.object({ [IDEMPOTENCY_KEY_HEADER]: idempotencyKeyHeaderSchema.optional() }),
        body: ingestBodySchema,
        response: { 201: ingestResponseSchema },
      },
    },
    async (request, reply) => {
      const key = request.headers[IDEMPOTENCY_KEY_HEADER];
      const now = ctx.clock.now();
      if (key === undefined)
        return sendJsonText(reply.status(201), ingestAnswer(await ctx.events.append(request.body.events, now, { writtenBy: keyWriter(request.apiKey) })));

      const claim: IdempotencyClaim = { scope: request.apiKey?.id ?? '', key, fingerprint: bodyDigestOf(request) };
      const stored = await findStoredAnswer(ctx.database, claim, now);
      if (stored !== undefined) return replay(reply, claim, stored);
      if (!keysInFlight.take(claim)) throw inFlightError(reply);
      try {
        let answer = '';
        await ctx.events.append(request.body.events, now, {
          writtenBy: keyWriter(request.apiKey),
          afterAppend: async (trx, appended) => {
            answer = ingestAnswer(appended);
            await storeKey(trx, claim, { status: 201, body: answer }, now);
          },
        });
        return sendJsonText(reply.status(201), answer);
      } catch (error) {
        if (!(error instanceof KeyStoredMeanwhile)) throw error;
        // Another instance stored the key first: its answer (or 422), as if this were the repeat.
        const winner = await findStoredAnswer(ctx.database, claim, ctx.clock.now());
        if (winner === undefined) throw inFlightError(reply);
        return replay(reply, claim, winner);
      } finally {
        keysInFlight.release(claim);
      }
    },
  );

  app.get(
    '/api/events',
    routeOptions('read', {
      operationId: 'listEvents',
      summary: 'Query events',
      description: "`search`: words of the payload's text, as a phrase. Ordered by timestamp (`order`).",
      tags: ['events'],
      querystring: listEventsQuerySchema,
      response: { 200: z.object({ events: z.array(eventSchema), total: z.number().int(), hasMore: z.boolean() }) },
    }),
    async (request, reply) => {
      const { rows: stored, total } = await listEvents(ctx.database, request.query);
      const rows = await ctx.sealer.open(stored);
      const hasMore = request.query.offset + rows.length < total;
      return sendJsonText(reply, `{"events":${eventsJson(rows)},"total":${total},"hasMore":${hasMore}}`);
    },
  );

  app.get(
    '/api/events/:id',
    routeOptions('read', {
      operationId: 'getEvent',
      summary: 'One event',
      tags: ['events'],
      params: z.object({ id: z.string().min(1).max(256) }),
      response: { 200: eventSchema },
    }),
    async (request) => {
      const row = await findEvent(ctx.database, request.params.id);
      if (!row) throw observeError('eventNotFound');
      const [opened] = await ctx.sealer.open([row]);
      return toEvent(opened!);
    },
  );
}
