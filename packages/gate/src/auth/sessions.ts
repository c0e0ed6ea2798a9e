import { generateSecret, newId, routeOptions, toIso, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { GateContext } from '../context.ts';
import { gateError } from '../errors.ts';
import type { DashboardSessionRow } from './tables.ts';
import type { Scope } from './scopes.ts';
import { SCOPES } from './scopes.ts';

/**
 * Client sessions. The web dashboard signs a person in, and an MCP server its client, with an
 * API key and a name; the gate answers a short-lived bearer token (prefix `gds_`) bound to that
 * key, name and kind. Only the token's SHA-256 is stored. A request made with the token:
 *  - has the scopes and the rate limit of the key *now* (a key narrowed or revoked narrows or
 *    ends its sessions at once on this instance, within GATE_CACHE_REFRESH_MS on others);
 *  - is attributed `dashboard:<name>` or `mcp:<name>` (decidedBy, audit actor): kind and name
 *    come from the stored session, never from the request body;
 *  - stops working at `expiresAt` (DASHBOARD_SESSION_TTL_MS after sign-in) or at sign-out.
 * A session token cannot open another session, so a session cannot outlive its TTL.
 */
export const DASHBOARD_TOKEN_PREFIX = 'gds';
export const DASHBOARD_SESSION_TTL_MS = 8 * 60 * 60 * 1000;
/** Expired and revoked sessions are deleted this long after they end (at the next sign-in). */
const SESSION_PURGE_AFTER_MS = 24 * 60 * 60 * 1000;

export function isDashboardToken(token: string): boolean {
  return token.startsWith(`${DASHBOARD_TOKEN_PREFIX}_`);
}

export type SessionKind = DashboardSessionRow['kind'];

/** The actor of a session: `dashboard:<name>` or `mcp:<name>`. */
export function sessionActor(session: Pick<DashboardSessionRow, 'kind' | 'name'>): string {
  return `${session.kind}:${session.name}`;
}

/** Letters, digits, spaces and . ' _ @ - ; starts with a letter or digit. */
const NAME_PATTERN = /^[\p{L}\p{N}][\p{L}\p{N} .'_@-]*$/u;
const displayName = z
  .string()
  .trim()
  .min(1, 'name is required')
  .max(100, 'name must be at most 100 characters')
  .regex(NAME_PATTERN, "name may hold letters, digits, spaces and . ' _ @ - (starting with a letter or digit)");

const sessionSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    actor: z.string(),
    keyId: z.string(),
    keyName: z.string(),
    scopes: z.array(z.enum(SCOPES)),
    rateLimit: z.number().int().nullable(),
    createdAt: z.string(),
    expiresAt: z.string(),
  })
  .meta({ id: 'DashboardSession' });

const whoamiSchema = z.object({
  kind: z.enum(['api_key', 'dashboard_session', 'mcp_session']),
  actor: z.string(),
  keyId: z.string(),
  keyName: z.string(),
  scopes: z.array(z.enum(SCOPES)),
  rateLimit: z.number().int().nullable(),
  session: z.object({ id: z.string(), name: z.string(), createdAt: z.string(), expiresAt: z.string() }).nullable(),
});

export function registerDashboardSessionRoutes(app: ZodApp, ctx: GateContext): void {
  const { db } = ctx.database;

  const signIn = (kind: SessionKind, path: string, operationId: string, summary: string): void => {
    app.post(
      path,
      // Any valid key; the session then has that key's scopes.
      routeOptions('any', {
        operationId,
        // A session token cannot open another session: 403 although any key may.
        errorStatuses: [403],
        summary,
        description:
          'Authenticate with an API key (a session token cannot open another session). The token is in this response only; ' +
          `requests made with it have the key’s scopes and rate limit and are attributed \`${kind}:<name>\`. ` +
          `It expires ${DASHBOARD_SESSION_TTL_MS / 3_600_000} hours after sign-in.`,
        tags: ['dashboard'],
        body: z.object({ name: displayName }).strict(),
        response: { 201: sessionSchema.extend({ token: z.string() }) },
      }),
      async (request, reply) => {
        if (request.dashboardSession !== null) {
          throw gateError('forbidden', 'A session cannot open another one; sign in with an API key');
        }
        const key = request.gateKey!;
        const now = ctx.clock.now();
        const secret = generateSecret(DASHBOARD_TOKEN_PREFIX);
        const row: DashboardSessionRow = {
          id: newId(),
          token_hash: secret.hash,
          prefix: secret.prefix,
          key_id: key.id,
          kind,
          name: request.body.name,
          created_at: now,
          expires_at: now + DASHBOARD_SESSION_TTL_MS,
          revoked_at: null,
        };
        await db.transaction().execute(async (trx) => {
          // Housekeeping: sessions that ended a day ago are of no further use.
          await trx
            .deleteFrom('dashboard_sessions')
            .where('expires_at', '<', now - SESSION_PURGE_AFTER_MS)
            .execute();
          await trx
            .deleteFrom('dashboard_sessions')
            .where('revoked_at', '<', now - SESSION_PURGE_AFTER_MS)
            .execute();
          await trx.insertInto('dashboard_sessions').values(row).execute();
        });
        return reply.status(201).send({
          id: row.id,
          name: row.name,
          actor: sessionActor(row),
          keyId: key.id,
          keyName: key.name,
          scopes: JSON.parse(key.scopes) as Scope[],
          rateLimit: key.rate_limit,
          createdAt: toIso(row.created_at),
          expiresAt: toIso(row.expires_at),
          token: secret.raw,
        });
      },
    );
  };
  signIn(
    'dashboard',
    '/api/dashboard/sessions',
    'createDashboardSession',
    'Sign in to the dashboard: exchange an API key and a display name for a short-lived session token',
  );
  signIn(
    'mcp',
    '/api/mcp/sessions',
    'createMcpSession',
    'Sign an MCP client in: exchange an API key and the client name for a short-lived token attributed mcp:<name>',
  );

  app.get(
    '/api/dashboard/sessions/current',
    routeOptions('any', {
      operationId: 'getCurrentSession',
      summary: 'Who the credential of this request is: its actor, key, scopes and (for a session token) expiry',
      description: 'Any valid key or session token.',
      tags: ['dashboard'],
      response: { 200: whoamiSchema },
    }),
    async (request) => {
      const key = request.gateKey!;
      const session = request.dashboardSession;
      return {
        kind: session === null ? ('api_key' as const) : (`${session.kind}_session` as const),
        actor: request.gateActor!,
        keyId: key.id,
        keyName: key.name,
        scopes: JSON.parse(key.scopes) as Scope[],
        rateLimit: key.rate_limit,
        session: session === null ? null : { id: session.id, name: session.name, createdAt: toIso(session.created_at), expiresAt: toIso(session.expires_at) },
      };
    },
  );

  app.delete(
    '/api/dashboard/sessions/current',
    routeOptions('any', {
      operationId: 'endCurrentSession',
      summary: 'Sign out: revoke the dashboard session token this request carries',
      tags: ['dashboard'],
      response: { 200: z.object({ id: z.string(), revoked: z.literal(true) }) },
    }),
    async (request) => {
      const session = request.dashboardSession;
      if (session === null) throw gateError('validation', 'Sign-out needs a dashboard session token, not an API key');
      await db.updateTable('dashboard_sessions').set({ revoked_at: ctx.clock.now() }).where('id', '=', session.id).where('revoked_at', 'is', null).execute();
      ctx.keys.invalidate();
      return { id: session.id, revoked: true as const };
    },
  );
}
