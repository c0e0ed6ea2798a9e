import { type ChangeActor, generateSecret, isLoopbackHost, keyChangeActor, newId, routeOptions, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { bodyValidationError, observeError } from '../errors.ts';
import type { ApiKeyRow } from './tables.ts';
import { FULL_ACCESS, OBSERVE_SCOPES, type ObserveScope } from './scopes.ts';
import { insertFirstKey, insertKey, listKeys, revokeKey, toApiKey } from './store.ts';

/** The first key, created without credentials at first start-up. */
const BOOTSTRAP_ACTOR: ChangeActor = { actor: 'bootstrap', keyId: null, keyName: null };

const scopesSchema = z
  .array(z.enum(OBSERVE_SCOPES))
  .min(1)
  .max(OBSERVE_SCOPES.length)
  .transform((list) => [...new Set(list)])
  .meta({ description: 'ingest: send events and read agent records (pause, overrides); read: every query; admin: everything' });

const keySchema = z
  .object({
    id: z.string(),
    name: z.string(),
    prefix: z.string(),
    scopes: z.array(z.enum(OBSERVE_SCOPES)),
    createdAt: z.string(),
    lastUsedAt: z.string().nullable(),
    revokedAt: z.string().nullable(),
  })
  .meta({ id: 'ApiKey' });

/**
 * The scopes of a key being created: those asked for, else full access. The first key always has
 * full access (a narrower one would leave no key able to manage keys); creating keys needs `admin`.
 */
function newKeyScopes(asked: readonly ObserveScope[] | undefined, bootstrap: boolean): readonly ObserveScope[] {
  if (bootstrap && asked !== undefined && !asked.includes('admin')) {
    throw bodyValidationError([{ path: ['scopes'], message: 'the first key has full access: omit scopes or include admin' }]);
  }
  return bootstrap ? FULL_ACCESS : (asked ?? FULL_ACCESS);
}

export function registerKeyRoutes(app: ZodApp, ctx: ObserveContext): void {
  app.post(
    '/api/keys',
    {
      // Admin only: a leaked agent key must not mint keys that outlive its revocation.
      config: { auth: 'bootstrap', scope: 'admin' },
      schema: {
        operationId: 'createApiKey',
        summary: 'Create an API key; the raw key is in this response only',
        description:
          'Without an Authorization header only while no active key exists (first start-up); that key has full access. ' +
          'Needs the admin scope; without `scopes` the new key has full access (admin).',
        tags: ['keys'],
        body: z.object({ name: z.string().trim().min(1).max(200), scopes: scopesSchema.optional() }),
        response: { 201: keySchema.extend({ key: z.string() }) },
      },
    },
    async (request, reply) => {
      // Admitted without credentials (first start-up): re-checked atomically with the insert.
      const bootstrap = request.apiKey === null && !ctx.config.authDisabled;
      const scopes = newKeyScopes(request.body.scopes, bootstrap);
      const secret = generateSecret('vgl');
      const row: ApiKeyRow = {
        id: newId(),
        name: request.body.name,
        prefix: secret.prefix,
        key_hash: secret.hash,
        scopes: JSON.stringify(scopes),
        created_at: ctx.clock.now(),
        last_used_at: null,
        revoked_at: null,
      };
      if (bootstrap) {
        if (!(await insertFirstKey(ctx.database, row, BOOTSTRAP_ACTOR))) throw observeError('unauthorized');
      } else {
        await insertKey(ctx.database, row, keyChangeActor(request.apiKey));
      }
      return reply.status(201).send({ ...toApiKey(row), key: secret.raw });
    },
  );

  app.get(
    '/api/keys',
    routeOptions('admin', {
      operationId: 'listApiKeys',
      summary: 'List API keys (never the secrets)',
      tags: ['keys'],
      response: { 200: z.object({ keys: z.array(keySchema) }) },
    }),
    async () => ({ keys: (await listKeys(ctx.database)).map(toApiKey) }),
  );

  app.delete(
    '/api/keys/:id',
    routeOptions('admin', {
      operationId: 'revokeApiKey',
      summary: 'Revoke an API key',
      description:
        'Revoking the last active key reopens key creation without credentials (the first-key bootstrap): the answer then carries `warning`. ' +
        'While observe listens beyond loopback that revocation is refused (409 last_key) unless `force=true`. ' +
        'A key already revoked answers the same again.',
      tags: ['keys'],
      params: z.object({ id: z.string().min(1).max(256) }),
      querystring: z.object({
        force: z
          .enum(['true', 'false'])
          .default('false')
          .transform((value) => value === 'true')
          .meta({ description: 'Revoke the last active key even while observe listens beyond loopback' }),
      }),
      response: { 200: z.object({ id: z.string(), revoked: z.literal(true), warning: z.string().optional() }) },
    }),
    async (request) => {
      const exposed = !isLoopbackHost(ctx.config.host);
      const outcome = await revokeKey(ctx.database, request.params.id, keyChangeActor(request.apiKey), ctx.clock.now(), {
        allowLast: !exposed || request.query.force,
      });
      if (outcome.result === 'notFound') throw observeError('keyNotFound');
      if (outcome.result === 'refused') throw observeError('lastKeyExposed');
      if (outcome.result === 'revoked' && outcome.lastKey) {
        const warning = `no active API key is left: until one is created, POST /api/keys without credentials creates an admin key${exposed ? `, and observe listens beyond this machine (${ctx.config.host})` : ''}`;
        app.log.warn({ keyId: outcome.row.id }, warning);
        return { id: outcome.row.id, revoked: true as const, warning };
      }
      return { id: outcome.row.id, revoked: true as const };
    },
  );
}
