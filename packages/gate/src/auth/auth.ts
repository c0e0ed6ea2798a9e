import { bearerToken, constantTimeEqual, sha256Hex, type ZodApp } from '@vigil/platform';
import type { GateContext } from '../context.ts';
import { gateError } from '../errors.ts';
import type { ApiKeyRow } from '../schema.ts';
import { grants, ROUTE_SCOPES } from './scopes.ts';

declare module 'fastify' {
  interface FastifyRequest {
    gateKey: ApiKeyRow | null;
  }
}

const TOUCH_INTERVAL_MS = 60_000;

/** `api:<key name>`: the server-derived identity of a decision taken with an API key. */
export function apiActor(key: ApiKeyRow): string {
  return `api:${key.name}`;
}

/**
 * Every route: find its scope in ROUTE_SCOPES (unlisted routes are refused), authenticate the
 * bearer key (401), check the scope (403), then apply the key's rate limit (429) and its headers.
 */
export function registerAuthentication(app: ZodApp, ctx: GateContext): void {
  app.decorateRequest('gateKey', null);
  app.addHook('onRequest', async (request, reply) => {
    if (request.is404) return;
    // HEAD is the GET route without a body: same scope.
    const method = request.method === 'HEAD' ? 'GET' : request.method;
    const required = ROUTE_SCOPES[`${method} ${request.routeOptions.url}`];
    if (required === 'public') return;
    const token = bearerToken(request.headers.authorization);
    if (token === null) throw gateError('unauthorized');
    const hash = sha256Hex(token);
    const key = await ctx.keys.find(hash);
    if (!key || !constantTimeEqual(key.key_hash, hash)) throw gateError('unauthorized');
    if (required === undefined || !grants(JSON.parse(key.scopes) as string[], required)) {
      throw gateError('forbidden', required === undefined ? 'This route is not open to API keys' : `This route needs the ${required} scope`);
    }
    request.gateKey = key;

    const now = ctx.clock.now();
    if (key.rate_limit !== null) {
      const rate = await ctx.limiter.consume(key.id, key.rate_limit, now);
      const resetSeconds = Math.ceil(rate.resetMs / 1000);
      void reply.header('x-ratelimit-limit', rate.limit);
      void reply.header('x-ratelimit-remaining', rate.remaining);
      void reply.header('x-ratelimit-reset', resetSeconds);
      if (!rate.allowed) {
        void reply.header('retry-after', Math.max(1, resetSeconds));
        throw gateError('rateLimited', `Rate limit of ${rate.limit} requests per minute exceeded; retry in ${Math.max(1, resetSeconds)} s`);
      }
    }
    if (key.last_used_at === null || now - key.last_used_at >= TOUCH_INTERVAL_MS) {
      // The cached row records the touch too, so the next request does not schedule another.
      key.last_used_at = now;
      setImmediate(() => {
        ctx.database.db
          .updateTable('api_keys')
          .set({ last_used_at: now })
          .where('id', '=', key.id)
          .execute()
          .catch((error: unknown) => request.log.warn({ err: error }, 'could not record key use'));
      });
    }
  });
}
