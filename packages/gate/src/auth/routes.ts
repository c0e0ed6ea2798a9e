import { routeOptions, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import { MAX_RATE_LIMIT } from '../bounds.ts';
import type { GateContext } from '../context.ts';
import { gateError } from '../errors.ts';
import { auditActor } from './auth.ts';
import { createApiKey, listKeys, revokeApiKey, toApiKey, updateApiKey } from './keys.ts';
import { SCOPES } from './scopes.ts';

const scopes = z
  .array(z.enum(SCOPES))
  .min(1)
  .max(SCOPES.length)
  .transform((s) => [...new Set(s)]);
const rateLimit = z.number().int().min(1).max(MAX_RATE_LIMIT).nullable();

const keySchema = z
  .object({
    id: z.string(),
    name: z.string(),
    prefix: z.string(),
    scopes: z.array(z.enum(SCOPES)),
    rateLimit: z.number().int().nullable(),
    createdAt: z.string(),
    lastUsedAt: z.string().nullable(),
    revokedAt: z.string().nullable(),
  })
  .meta({ id: 'GateApiKey' });

const idParams = z.object({ id: z.string().min(1).max(100) });

export function registerKeyRoutes(app: ZodApp, ctx: GateContext): void {
  const { database } = ctx;

  app.post(
    '/api/api-keys',
    routeOptions('admin', {
      operationId: 'createApiKey',
      summary: 'Create an API key; the raw key is in this response only',
      description: 'rateLimit is requests per minute; omitted or null means unlimited.',
      tags: ['api-keys'],
      body: z.object({ name: z.string().trim().min(1).max(200), scopes, rateLimit: rateLimit.optional() }).strict(),
      response: { 201: keySchema.extend({ key: z.string() }) },
    }),
    async (request, reply) => {
      const { name, scopes: keyScopes, rateLimit: limit } = request.body;
      const { row, raw } = await createApiKey(ctx.database, { name, scopes: keyScopes, rateLimit: limit ?? null }, auditActor(request), ctx.clock.now());
      return reply.status(201).send({ ...toApiKey(row), key: raw });
    },
  );

  app.get(
    '/api/api-keys',
    routeOptions('admin', {
      operationId: 'listApiKeys',
      summary: 'List API keys (never the secrets)',
      tags: ['api-keys'],
      response: { 200: z.object({ keys: z.array(keySchema) }) },
    }),
    async () => ({ keys: (await listKeys(database)).map(toApiKey) }),
  );

  app.patch(
    '/api/api-keys/:id',
    routeOptions('admin', {
      operationId: 'updateApiKey',
      summary: 'Change a key’s name, scopes or rate limit',
      tags: ['api-keys'],
      params: idParams,
      body: z
        .object({ name: z.string().trim().min(1).max(200), scopes, rateLimit })
        .partial()
        .strict(),
      response: { 200: keySchema },
    }),
    async (request) => {
      const row = await updateApiKey(ctx.database, request.params.id, request.body, auditActor(request), ctx.clock.now());
      if (!row) throw gateError('keyNotFound');
      ctx.keys.invalidate();
      return toApiKey(row);
    },
  );

  app.delete(
    '/api/api-keys/:id',
    routeOptions('admin', {
      operationId: 'revokeApiKey',
      summary: 'Revoke an API key (it stops working at once)',
      tags: ['api-keys'],
      params: idParams,
      response: { 200: z.object({ id: z.string(), revoked: z.literal(true) }) },
    }),
    async (request) => {
      if (!(await revokeApiKey(ctx.database, request.params.id, auditActor(request), ctx.clock.now()))) throw gateError('keyNotFound');
      ctx.keys.invalidate();
      return { id: request.params.id, revoked: true as const };
    },
  );
}
