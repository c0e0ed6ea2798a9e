import { bearerToken, constantTimeEqual, sha256Hex, type ZodApp } from '@vigil/platform';
import type { FastifyRequest } from 'fastify';
import type { GateContext } from '../context.ts';
import { MAX_RATE_LIMIT } from '../bounds.ts';
import { gateError } from '../errors.ts';
import type { ApiKeyRow, DashboardSessionRow } from './tables.ts';
import { grants, type Scope } from './scopes.ts';
import { isDashboardToken, sessionActor } from './sessions.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The API key whose scopes and rate limit apply (for a dashboard session: the key it was opened with). */
    gateKey: ApiKeyRow | null;
    /** The dashboard session of a request made with a session token, else null. */
    dashboardSession: DashboardSessionRow | null;
    /** Who acts, derived from the credential only: `api:<key name>`, `dashboard:<name>` or `mcp:<name>`. */
    gateActor: string | null;
  }
}

/** What the hook sets on the answers to a key that has a rate limit (requests per minute), as the OpenAPI documents show it. */
export const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': { type: 'integer', minimum: 1, maximum: MAX_RATE_LIMIT, description: "The key's limit, requests per minute; set when the key has one" },
  'X-RateLimit-Remaining': { type: 'integer', minimum: 0, maximum: MAX_RATE_LIMIT, description: 'Requests the key may still make in the current window' },
  'X-RateLimit-Reset': { type: 'integer', minimum: 0, maximum: 60, description: 'Seconds until the window frees a slot' },
};

const TOUCH_INTERVAL_MS = 60_000;

/**
 * A key row's parsed scopes. The key cache hands out the same row object until it refreshes it, so
 * the column is parsed once per row instead of once per request.
 */
const parsedScopes = new WeakMap<ApiKeyRow, string[]>();
function scopesOf(key: ApiKeyRow): string[] {
  let scopes = parsedScopes.get(key);
  if (scopes === undefined) {
    scopes = JSON.parse(key.scopes) as string[];
    parsedScopes.set(key, scopes);
  }
  return scopes;
}

/** `api:<key name>`: the server-derived identity of a decision taken with an API key. */
export function apiActor(key: ApiKeyRow): string {
  return `api:${key.name}`;
}

/**
 * Who acted, as the audit records it: the actor string (`decidedBy`), and the API key behind the
 * credential (for a session token: the key it was opened with), with the key's name at that time.
 * The gate's own actions (policy decisions, expiry) have no key.
 */
export interface AuditActor {
  actor: string;
  keyId: string | null;
  keyName: string | null;
}

/** The audit actor of an authenticated request. */
export function auditActor(request: FastifyRequest): AuditActor {
  const key = request.gateKey!;
  return { actor: request.gateActor!, keyId: key.id, keyName: key.name };
}

export function systemActor(actor: string): AuditActor {
  return { actor, keyId: null, keyName: null };
}

/**
 * Every route that takes a key (all but `public` ones and the metrics scrape): authenticate the
 * bearer credential (401) — an API key, or a dashboard session token (auth/sessions.ts) standing
 * for its key —, check the route's `config.scope` (403), then apply the key's rate limit (429) and its headers.
 */
export function registerAuthentication(app: ZodApp, ctx: GateContext): void {
  const rateLimitRefusals = ctx.metrics.counter('vigil_rate_limit_refusals_total', "Requests refused 429 by a key's rate limit");
  app.decorateRequest('gateKey', null);
  app.decorateRequest('dashboardSession', null);
  app.decorateRequest('gateActor', null);
  app.addHook('onRequest', async (request, reply) => {
    if (request.is404) return;
    const { auth, scope } = request.routeOptions.config;
    // The scrape admits itself (client address or METRICS_TOKEN, platform/metrics.ts).
    if (auth === 'public' || auth === 'metrics') return;
    // Every route that takes a key declares its scope (the app does not build otherwise); HEAD is its GET's route.
    const required = scope as Scope | 'any';
    const token = bearerToken(request.headers.authorization);
    if (token === null) throw gateError('unauthorized');
    const hash = sha256Hex(token);
    const now = ctx.clock.now();
    let key: ApiKeyRow;
    // A `gds_` token is a dashboard session (a GATE_ADMIN_KEY that happens to start so still works as a key).
    const session = isDashboardToken(token) ? await ctx.keys.findSession(hash) : undefined;
    if (session && constantTimeEqual(session.session.token_hash, hash)) {
      if (session.session.expires_at <= now) throw gateError('unauthorized', 'The session has expired; sign in again');
      key = session.key;
      request.dashboardSession = session.session;
      request.gateActor = sessionActor(session.session);
    } else {
      const found = await ctx.keys.find(hash);
      if (!found || !constantTimeEqual(found.key_hash, hash)) throw gateError('unauthorized');
      key = found;
      request.gateActor = apiActor(key);
    }
    if (!grants(scopesOf(key), required)) throw gateError('forbidden', `This route needs the ${required} scope`);
    request.gateKey = key;

    if (key.rate_limit !== null) {
      const rate = await ctx.limiter.consume(key.id, key.rate_limit, now);
      const resetSeconds = Math.ceil(rate.resetMs / 1000);
      void reply.header('x-ratelimit-limit', rate.limit);
      void reply.header('x-ratelimit-remaining', rate.remaining);
      void reply.header('x-ratelimit-reset', resetSeconds);
      if (!rate.allowed) {
        void reply.header('retry-after', Math.max(1, resetSeconds));
        rateLimitRefusals.inc();
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
          .catch((error: unknown) => request.server.backgroundWriteFailed(error, 'could not record key use'));
      });
    }
  });
}
