import { bearerToken, constantTimeEqual, sha256Hex, type ZodApp } from '@vigil/platform';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import type { ApiKeyRow } from './tables.ts';
import { grants, keyScopes, scopeText, type ObserveScope } from './scopes.ts';
import { keyOfStreamToken } from './stream-tokens.ts';
import { findActiveKeyByHash, hasActiveKey, keyState, touchKey } from './store.ts';

declare module 'fastify' {
  interface FastifyRequest {
    apiKey: ApiKeyRow | null;
  }
}

/** lastUsedAt is refreshed at most this often per key, after the response, never on the request path. */
const TOUCH_INTERVAL_MS = 60_000;

async function authenticate(ctx: ObserveContext, header: string | undefined): Promise<ApiKeyRow | null> {
  const token = bearerToken(header);
  if (token === null) return null;
  const hash = sha256Hex(token);
  const key = await findActiveKeyByHash(ctx.database, hash);
  // The lookup is by digest; the final comparison is constant-time all the same.
  return key && constantTimeEqual(key.key_hash, hash) ? key : null;
}

/**
 * The key when its row is as its last logged change left it; null (and a warning) for a key
 * inserted or edited in the database, which must not authenticate.
 */
async function loggedKey(ctx: ObserveContext, key: ApiKeyRow, log: { warn(object: object, message: string): void }): Promise<ApiKeyRow | null> {
  const verdict = await ctx.loggedStates.check('api_key', key.id, keyState(key));
  if (verdict.logged) return key;
  log.warn({ keyId: key.id, reason: verdict.reason }, `API key ${key.id} refused: ${verdict.reason}`);
  return null;
}

/**
 * The service-token check of routes marked `auth: 'service'`: 503 while INTERNAL_SERVICE_TOKEN is
 * unset, 401 unless `Authorization: Bearer <token>` carries it. The SHA-256 digests are compared in
 * constant time, so neither the token's length nor its content shows in the timing.
 */
function serviceTokenCheck(token: string | undefined): (header: string | undefined) => void {
  const expected = token === undefined ? null : sha256Hex(token);
  return (header) => {
    if (expected === null) throw observeError('serviceTokenNotConfigured');
    const given = bearerToken(header);
    if (given === null || !constantTimeEqual(sha256Hex(given), expected)) throw observeError('invalidServiceToken');
  };
}

/**
 * Bearer-key authentication for every route except those marked `auth: 'public'`, then the key's
 * scope for the route (its `config.scope`; 403 naming the scope). A route marked `bootstrap` (key
 * creation) also admits a request without an Authorization header while no active key exists: the
 * first start-up. Routes marked `service` take the service token only (also with AUTH_DISABLED,
 * which concerns API keys). Routes marked
 * `stream` also take a stream token in `?token=` when no Authorization header is sent; the token
 * then acts as the key that created it.
 */
export function registerAuthentication(app: ZodApp, ctx: ObserveContext): void {
  app.decorateRequest('apiKey', null);
  const checkServiceToken = serviceTokenCheck(ctx.config.internalServiceToken);
  app.addHook('onRequest', async (request) => {
    if (request.is404) return;
    const policy = request.routeOptions.config.auth;
    // The scrape admits itself (client address or METRICS_TOKEN, platform/metrics.ts), AUTH_DISABLED or not.
    if (policy === 'metrics') return;
    if (policy === 'service') return checkServiceToken(request.headers.authorization);
    if (ctx.config.authDisabled) return;
    if (policy === 'public') return;
    const header = request.headers.authorization;
    // Signed webhooks (approval_gate, form_service) carry no key; the route checks the signature
    // and demands a key for unsigned sources. Without either credential: 401 here.
    if (policy === 'signature' && header === undefined && request.headers['x-webhook-signature'] !== undefined) return;
    if (policy === 'bootstrap' && header === undefined && !(await hasActiveKey(ctx.database))) return;
    const streamToken = policy === 'stream' && header === undefined ? (request.query as { token?: unknown }).token : undefined;
    let key: ApiKeyRow | null | undefined;
    if (typeof streamToken === 'string') {
      key = await keyOfStreamToken(ctx, streamToken);
      if (!key || !(await loggedKey(ctx, key, request.log))) throw observeError('invalidStreamToken');
    } else {
      key = await authenticate(ctx, header);
      if (key) key = await loggedKey(ctx, key, request.log);
    }
    if (!key) throw observeError('unauthorized');
    // Every route that takes a key declares its scope (the app does not build otherwise); HEAD is its GET's route.
    const required = request.routeOptions.config.scope as ObserveScope | readonly ObserveScope[];
    const scopes = keyScopes(key.scopes);
    if (!grants(scopes, required)) {
      throw observeError('forbidden', `This route needs the ${scopeText(required)} scope; the key has ${scopes.join(', ')}`);
    }
    request.apiKey = key;
    const now = ctx.clock.now();
    if (key.last_used_at === null || now - key.last_used_at >= TOUCH_INTERVAL_MS) {
      setImmediate(() => {
        touchKey(ctx.database, key.id, now).catch((error: unknown) => request.server.backgroundWriteFailed(error, 'could not record key use'));
      });
    }
  });
}
