import { offsetPage, routeOptions, toIso, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import { auditActor } from '../auth/index.ts';
import { MAX_OFFSET } from '../bounds.ts';
import type { GateContext } from '../context.ts';
import type { GrantService } from './service.ts';
import { toGrant } from './store.ts';

/** The longest a grant may last: 30 days. */
const MAX_GRANT_SECONDS = 30 * 24 * 3600;
const MAX_GRANT_USES = 1_000_000;

const grantBody = z
  .object({
    action: z.string().trim().min(1).max(200).optional().describe('The action granted; taken from `requestId` when omitted'),
    agentId: z.string().min(1).max(200).optional().describe("The agent granted (the requests' `context.agentId`)"),
    sessionId: z.string().min(1).max(200).optional().describe("The session granted (the requests' `context.sessionId`)"),
    requestId: z
      .string()
      .min(1)
      .max(100)
      .optional()
      .describe("A request to grant from: its action and, unless agentId or sessionId is given, its context's agentId and sessionId"),
    durationSeconds: z.number().int().min(1).max(MAX_GRANT_SECONDS).optional().describe('How long the grant lasts from now (at most 30 days)'),
    maxUses: z.number().int().min(1).max(MAX_GRANT_USES).optional().describe('How many requests it approves at most'),
    note: z.string().max(1000).optional(),
  })
  .strict();

const grantSchema = z
  .object({
    id: z.string(),
    action: z.string(),
    agentId: z.string().nullable(),
    sessionId: z.string().nullable(),
    expiresAt: z.string().nullable(),
    maxUses: z.number().int().nullable(),
    uses: z.number().int(),
    usesLeft: z.number().int().nullable(),
    status: z.enum(['active', 'expired', 'used_up', 'revoked']),
    requestId: z.string().nullable(),
    note: z.string().nullable(),
    createdAt: z.string(),
    createdBy: z.string(),
    revokedAt: z.string().nullable(),
    revokedBy: z.string().nullable(),
  })
  .meta({ id: 'Grant' });

const grantDetailSchema = grantSchema
  .extend({
    usedBy: z.array(z.object({ use: z.number().int(), requestId: z.string(), usedAt: z.string() })).describe('Every use: the request it approved, in order'),
  })
  .meta({ id: 'GrantDetail' });

const idParams = z.object({ id: z.string().min(1).max(100) });

export function registerGrantRoutes(app: ZodApp, ctx: GateContext, grants: GrantService): void {
  app.post(
    '/api/grants',
    routeOptions('request:decide', {
      operationId: 'createGrant',
      errorStatuses: [404],
      summary: 'Grant an action to an agent or session for a while and/or a number of uses',
      description:
        'Later requests of the action whose context names the agent (`agentId`) and/or session (`sessionId`) and that a policy routes for a decision ' +
        '(route_to_human or route_to_agent; never ones a policy denies) are approved by the grant: `decidedBy` and the receipt name `grant:<id>`, and the ' +
        "approving audit entry names the grant. Each use is taken in the request's transaction, so a grant of N uses approves exactly N requests however many " +
        'arrive at once. Needs an agent or session, and `durationSeconds`, `maxUses` or both. Recorded in the change log.',
      tags: ['grants'],
      body: grantBody,
      response: { 201: grantSchema },
    }),
    async (request, reply) => {
      const row = await grants.create(request.body, auditActor(request));
      return reply.status(201).send(toGrant(row, ctx.clock.now()));
    },
  );

  app.get(
    '/api/grants',
    routeOptions('request:read', {
      operationId: 'listGrants',
      summary: 'List grants, newest first',
      tags: ['grants'],
      querystring: z.object({
        active: z
          .enum(['true', 'false'])
          .default('false')
          .transform((v) => v === 'true')
          .describe('Only grants that can still be used'),
        action: z.string().min(1).max(200).optional(),
        limit: z.coerce.number().int().min(1).max(500).default(50),
        offset: z.coerce.number().int().min(0).max(MAX_OFFSET).default(0),
      }),
      response: { 200: z.object({ grants: z.array(grantSchema), total: z.number().int(), hasMore: z.boolean() }) },
    }),
    async (request) => {
      const page = await grants.list(request.query);
      const now = ctx.clock.now();
      return offsetPage('grants', page, request.query.offset, (row) => toGrant(row, now));
    },
  );

  app.get(
    '/api/grants/:id',
    routeOptions('request:read', {
      operationId: 'getGrant',
      errorStatuses: [404],
      summary: 'A grant with its uses',
      tags: ['grants'],
      params: idParams,
      response: { 200: grantDetailSchema },
    }),
    async (request) => {
      const { row, uses } = await grants.get(request.params.id);
      return { ...toGrant(row, ctx.clock.now()), usedBy: uses.map((use) => ({ use: use.use_no, requestId: use.request_id, usedAt: toIso(use.used_at) })) };
    },
  );

  app.post(
    '/api/grants/:id/revoke',
    routeOptions('request:decide', {
      operationId: 'revokeGrant',
      errorStatuses: [404, 409],
      summary: 'Revoke a grant: no request is approved by it any more',
      description:
        'A use being taken at the same moment either commits first (its request is approved) or finds the grant revoked. Recorded in the change log.',
      tags: ['grants'],
      params: idParams,
      response: { 200: grantSchema },
    }),
    async (request) => toGrant(await grants.revoke(request.params.id, auditActor(request)), ctx.clock.now()),
  );
}
