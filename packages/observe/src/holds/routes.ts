import { keyChangeActor, routeOptions, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { holdParams, holdSchema, listHoldsQuerySchema, placeHoldBodySchema, releaseHoldBodySchema } from './schemas.ts';
import { placeHold, releaseLegalHold } from './service.ts';
import { findHold, listHolds, toHoldOut } from './store.ts';

export function registerHoldRoutes(app: ZodApp, ctx: ObserveContext): void {
  app.post(
    '/api/holds',
    routeOptions('admin', {
      operationId: 'placeLegalHold',
      summary: 'Place a legal hold on a session, an agent or a data subject: retention keeps what it covers and erasure is refused (409) until it is released',
      description:
        'A subject is given by its id and stored as its keyed hash. Placing is recorded in the change log (resource `legal_hold`, action `created`).',
      tags: ['holds'],
      body: placeHoldBodySchema,
      response: { 201: holdSchema },
    }),
    async (request, reply) => reply.status(201).send(toHoldOut(await placeHold(ctx, request.body, keyChangeActor(request.apiKey)))),
  );

  app.get(
    '/api/holds',
    routeOptions('read', {
      operationId: 'listLegalHolds',
      summary: 'Legal holds, newest first (those in force and those released), as the change log records them',
      description:
        'Answered from the change log whose audit-log leaves verify, the same evidence retention and erasure decide by: a row of the holds table inserted, deleted or edited in the database changes nothing here.',
      tags: ['holds'],
      querystring: listHoldsQuerySchema,
      response: { 200: z.object({ holds: z.array(holdSchema) }) },
    }),
    async (request) => ({ holds: await listHolds(ctx.database, request.query.active) }),
  );

  app.get(
    '/api/holds/:id',
    routeOptions('read', { operationId: 'getLegalHold', summary: 'One legal hold', tags: ['holds'], params: holdParams, response: { 200: holdSchema } }),
    async (request) => {
      const hold = await findHold(ctx.database, request.params.id);
      if (hold === undefined) throw observeError('legalHoldNotFound');
      return hold;
    },
  );

  app.post(
    '/api/holds/:id/release',
    routeOptions('admin', {
      operationId: 'releaseLegalHold',
      summary: 'Release a legal hold; it stays listed, released. Recorded in the change log (action `revoked`)',
      tags: ['holds'],
      params: holdParams,
      body: releaseHoldBodySchema,
      errorStatuses: [409],
      response: { 200: holdSchema },
    }),
    async (request) => releaseLegalHold(ctx, request.params.id, request.body.reason, keyChangeActor(request.apiKey)),
  );
}
