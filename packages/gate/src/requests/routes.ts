import { isoTimestampMs, periodInOrder, routeOptions, sendJsonText, toIso, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import { auditChainVerdictSchema, auditEntrySchema, toAuditEntry } from '../audit-trail/index.ts';
import { auditActor } from '../auth/index.ts';
import { MAX_OFFSET } from '../bounds.ts';
import type { GateContext } from '../context.ts';
import { gateError } from '../errors.ts';
import { DECISIONS, policyNames, URGENCIES } from '../policies/index.ts';
import type { IssuedRedemption, RequestService } from './service.ts';
import { chainEntryOf, receiptRedemptionSchema, receiptSchema, STATUSES } from '../stored-formats/index.ts';
import { erasedRequestOf, rowStateProblem, storedRequestState } from './row-check.ts';
import { listRequests, requestDetailJson, requestsAfter, storedDecision, verifiedAuditTrail } from './store.ts';

const jsonObject = z.record(z.string(), z.unknown());
const idParams = z.object({ id: z.string().min(1).max(100) });

const policyDecisionSchema = z.object({
  decision: z.enum(DECISIONS),
  policyId: z.string().nullable(),
  approvers: z.array(z.string()),
  channels: z.array(z.string()),
  requireReason: z.boolean(),
});

const requestDetailSchema = z
  .object({
    id: z.string(),
    action: z.string(),
    params: jsonObject,
    context: jsonObject,
    status: z.enum(STATUSES),
    urgency: z.enum(URGENCIES),
    decidedBy: z.string().nullable(),
    decisionReason: z.string().nullable(),
    createdAt: z.string(),
    decidedAt: z.string().nullable(),
    expiresAt: z.string().nullable(),
    confirmedAt: z.string().nullable(),
    executionResult: z.unknown(),
    policyDecision: policyDecisionSchema,
    escalation: z
      .object({
        tier: z.number().int().describe("The escalation tier reached (0: the rule's own deciders; docs/guide/escalation.md)"),
        deadlineAt: z.string().nullable().describe('When the current deadline passes (expiresAt, then each tier’s); null: none, or decided'),
        remindAt: z.string().nullable().describe('When the deciders are reminded next; null: no reminder due'),
      })
      .meta({ id: 'RequestEscalation' }),
    approvals: z
      .object({
        required: z.number().int().describe('Approvals from distinct deciders that approve the request'),
        denialsRequired: z.number().int().describe('Denials that deny it (1: any deny denies)'),
        groups: z.array(z.string()).describe('Approver groups whose members (or their delegates) may vote; empty: anyone who may decide'),
        approvedBy: z.array(z.string()).describe('Who approved so far (a delegate’s vote counts for its delegator), oldest first'),
        deniedBy: z.array(z.string()),
      })
      .nullable()
      .describe('Progress of a request whose rule needs several approvals (docs/guide/approvers.md); null when one decision settles it')
      .meta({ id: 'ApprovalProgress' }),
    receipt: receiptSchema.nullable().describe('The approval receipt (GET /api/requests/:id/receipt); null unless approved'),
  })
  .meta({ id: 'ApprovalRequest' });

const createdRequestSchema = requestDetailSchema
  .extend({
    redemption: receiptRedemptionSchema
      .nullable()
      .optional()
      .describe('Only with `redeem: true`: the receipt, redeemed for this credential in the same transaction, when a policy approved at once; else null'),
  })
  .meta({ id: 'CreatedApprovalRequest' });

/** The redemption as POST /api/receipts/redeem answers it. */
function redemptionJson(redemption: IssuedRedemption | undefined): string {
  if (!redemption) return 'null';
  const { requestId, action, at, by } = redemption;
  return JSON.stringify({ requestId, action, redeemedAt: toIso(at), redeemedBy: by.actor, keyId: by.keyId });
}

export function registerRequestRoutes(app: ZodApp, ctx: GateContext, requests: RequestService): void {
  app.post(
    '/api/requests',
    routeOptions('request:create', {
      operationId: 'createRequest',
      summary: 'Ask for approval of an action; the policy engine may decide at once',
      description:
        "The answer carries the policy engine's `policyDecision`: `auto_approve` / `auto_deny` decide at once, `route_to_human` and `route_to_agent` leave the request pending. " +
        'With `redeem: true` (an agent about to run the action itself), an approval at once also redeems its receipt for this credential, ' +
        "recorded in the request's audit chain as POST /api/receipts/redeem records it (`redemption`; a later redeem of it is a 409).",
      tags: ['requests'],
      body: z
        .object({
          action: z.string().trim().min(1).max(200),
          params: jsonObject.default({}),
          context: jsonObject.default({}),
          urgency: z.enum(URGENCIES).default('normal'),
          expiresAt: isoTimestampMs.optional(),
          redeem: z.boolean().default(false).describe('Redeem the receipt at once if a policy approves at once (docs/guide/receipts.md)'),
        })
        .strict(),
      response: { 201: createdRequestSchema },
    }),
    async (request, reply) => {
      // Named one by one: an object rest over the parsed body took V8's generic copy, 3.5 µs a POST against 0.1.
      const { action, params, context, urgency, expiresAt, redeem } = request.body;
      if (expiresAt !== undefined && expiresAt <= ctx.clock.now()) {
        throw gateError('validation', 'expiresAt must be in the future');
      }
      const row = await requests.create({ action, params, context, urgency, expiresAt: expiresAt ?? null, redeemOnIssue: redeem }, auditActor(request));
      const detail = requestDetailJson(row, await requests.receipt(row), await requests.approvalsOf(row));
      // Without `redeem`, the answer is the request as GET answers it.
      const answer = redeem ? `${detail.slice(0, -1)},"redemption":${redemptionJson(requests.issuedRedemption(row))}}` : detail;
      return sendJsonText(reply.status(201), answer);
    },
  );

  app.get(
    '/api/requests',
    routeOptions('request:read', {
      operationId: 'listRequests',
      summary: 'List requests, newest first',
      description:
        "`agentId` comes from the request's context; `policyName` is the routing policy's current name, null when no rule matched or it was deleted. " +
        'Filters (optional, combined with AND): `status`, `action`, `urgency`, `agentId` (the context’s), and `from`/`to` (ISO 8601, inclusive) on the creation time — ' +
        'what an evidence pack of a period and its agents reads, each from an index.',
      tags: ['requests'],
      querystring: periodInOrder(
        z.object({
          status: z.enum(STATUSES).optional(),
          action: z.string().min(1).max(200).optional(),
          urgency: z.enum(URGENCIES).optional(),
          agentId: z.string().min(1).max(200).optional(),
          from: isoTimestampMs.optional(),
          to: isoTimestampMs.optional(),
          limit: z.coerce.number().int().min(1).max(500).default(50),
          offset: z.coerce.number().int().min(0).max(MAX_OFFSET).default(0),
        }),
      ),
      response: {
        200: z.array(
          z.object({
            id: z.string(),
            action: z.string(),
            status: z.enum(STATUSES),
            urgency: z.enum(URGENCIES),
            createdAt: z.string(),
            agentId: z.string().nullable().describe('context.agentId, when the request gave one'),
            params: jsonObject,
            policyId: z.string().nullable().describe('The policy whose rule routed the request; null when no rule matched'),
            policyName: z.string().nullable().describe('That policy’s current name; null when no rule matched or the policy was deleted since'),
          }),
        ),
      },
    }),
    async (request) => {
      // Pending requests past their deadline are expired first, so the list never shows a stale status.
      if (request.query.status === undefined || request.query.status === 'pending') await requests.expireDue();
      const rows = await listRequests(ctx.database, request.query);
      await requests.checkRows(rows);
      const policyIds = rows.map((row) => storedDecision(row).policyId);
      const names = await policyNames(ctx.database, [...new Set(policyIds.filter((id) => id !== null))]);
      return rows.map((row, index) => {
        const context = JSON.parse(row.context) as Record<string, unknown>;
        const policyId = policyIds[index] ?? null;
        return {
          id: row.id,
          action: row.action,
          status: row.status as (typeof STATUSES)[number],
          urgency: row.urgency as (typeof URGENCIES)[number],
          createdAt: toIso(row.created_at),
          agentId: typeof context.agentId === 'string' ? context.agentId : null,
          params: JSON.parse(row.params) as Record<string, unknown>,
          policyId,
          policyName: policyId === null ? null : (names.get(policyId) ?? null),
        };
      });
    },
  );

  app.get(
    '/api/requests/:id',
    routeOptions('request:read', {
      operationId: 'getRequest',
      summary: 'One request',
      tags: ['requests'],
      params: idParams,
      response: { 200: requestDetailSchema },
    }),
    async (request, reply) => {
      const row = await requests.get(request.params.id);
      if (!row) throw gateError('requestNotFound');
      return sendJsonText(reply, requestDetailJson(row, await requests.receipt(row), await requests.approvalsOf(row)));
    },
  );

  app.post(
    '/api/requests/:id/decide',
    routeOptions('request:decide', {
      operationId: 'decideRequest',
      errorStatuses: [409],
      summary: 'Approve or deny a pending request; decidedBy is derived from the credential (api:<key name> or dashboard:<session name>)',
      description:
        'A `decidedBy` in the body is ignored. 409 when the request is no longer pending (decided or expired); 400 without the reason the matching rule requires. ' +
        'When the rule needs several approvals, a vote that does not settle the request answers 202 with the progress; 409 for a second vote of the same decider, 403 for one outside the quorum’s groups.',
      tags: ['requests'],
      params: idParams,
      body: z
        .object({
          decision: z.enum(['approved', 'denied']),
          reason: z.string().max(5000).optional(),
          // Clients (CLIs, MCP servers, chat bots) send who they think decides; the server derives it.
          decidedBy: z.string().nullable().optional().meta({ description: 'Ignored: decidedBy is derived from the credential' }),
        })
        .strict(),
      response: {
        200: z.object({
          id: z.string(),
          status: z.enum(STATUSES),
          decidedBy: z.string(),
          decidedAt: z.string(),
          receipt: receiptSchema.nullable().describe('The approval receipt when approved, else null'),
        }),
        202: z
          .object({
            id: z.string(),
            status: z.literal('pending'),
            approvals: z.object({
              required: z.number().int(),
              denialsRequired: z.number().int(),
              approvedBy: z.array(z.string()),
              deniedBy: z.array(z.string()),
            }),
          })
          .describe('A vote on a request that needs several approvals, counted without settling it (docs/guide/approvers.md)'),
      },
    }),
    async (request, reply) => {
      const row = await requests.decide(request.params.id, request.body.decision, request.body.reason, auditActor(request));
      if (row.status === 'pending') {
        const { required, denialsRequired, approvedBy, deniedBy } = (await requests.approvalsOf(row))!;
        return reply.status(202).send({ id: row.id, status: 'pending' as const, approvals: { required, denialsRequired, approvedBy, deniedBy } });
      }
      return {
        id: row.id,
        status: row.status as 'approved' | 'denied',
        decidedBy: row.decided_by!,
        decidedAt: toIso(row.decided_at!),
        receipt: await requests.receipt(row),
      };
    },
  );

  app.post(
    '/api/requests/:id/confirm',
    routeOptions('request:create', {
      operationId: 'confirmRequest',
      errorStatuses: [409],
      summary: 'Confirm execution of an approved action (once); the status stays approved',
      description: '409 unless approved and not yet confirmed. Records `confirmedAt` and `executionResult`.',
      tags: ['requests'],
      params: idParams,
      body: z.object({ result: jsonObject }).strict(),
      response: { 200: z.object({ id: z.string(), status: z.enum(STATUSES), confirmedAt: z.string() }) },
    }),
    async (request) => {
      const row = await requests.confirm(request.params.id, request.body.result, auditActor(request));
      return { id: row.id, status: row.status as 'approved', confirmedAt: toIso(row.confirmed_at!) };
    },
  );

  app.get(
    '/api/requests/:id/audit',
    routeOptions('request:read', {
      operationId: 'getRequestAudit',
      summary: 'The audit trail of a request, oldest first; each entry names its actor and the API key behind it',
      description:
        'Each entry carries its link in the request’s hash chain (`seq`, `prevHash`, `hash`; recipe in docs/audit.md) and ' +
        '`chainValid`: whether it and every entry before it verify. GET /api/requests/:id/audit/verify gives the whole verdict.',
      tags: ['requests'],
      params: idParams,
      response: { 200: z.array(auditEntrySchema) },
    }),
    async (request) => {
      // Reading the trail also settles a due expiry, so the trail shows it; a tampered row still shows its trail.
      const row = await requests.getForAudit(request.params.id);
      if (!row) throw gateError('requestNotFound');
      const trail = await verifiedAuditTrail(ctx.database, row.id);
      if (!trail) throw gateError('requestNotFound');
      const { brokenAt } = trail.verdict;
      return trail.rows.map((entry) => ({ id: entry.id, ...toAuditEntry(entry), chainValid: brokenAt === null || entry.seq < brokenAt }));
    },
  );

  app.get(
    '/api/requests/:id/audit/verify',
    routeOptions('request:read', {
      operationId: 'verifyRequestAudit',
      summary: 'Verify the hash chain of a request’s audit trail against the head the request records',
      description: 'Checks each entry against its leaf in the audit log too; `brokenAt` is the first failing `seq` (null when valid).',
      tags: ['requests'],
      params: idParams,
      response: { 200: auditChainVerdictSchema },
    }),
    async (request) => {
      const row = await requests.getForAudit(request.params.id);
      if (!row) throw gateError('requestNotFound');
      const trail = await verifiedAuditTrail(ctx.database, row.id);
      if (!trail) throw gateError('requestNotFound');
      const { verdict } = trail;
      // A chain that verifies still has to be what the row holds (docs/audit.md, "A request's row under its chain").
      const rowProblem = verdict.valid ? rowStateProblem(trail.request, trail.rows.map(chainEntryOf), trail.covers) : null;
      return {
        requestId: row.id,
        valid: verdict.valid && rowProblem === null,
        entryCount: trail.rows.length,
        headSeq: trail.head.seq,
        headHash: trail.head.hash,
        brokenAt: verdict.brokenAt,
        reason: rowProblem === null ? verdict.reason : `the request row does not match its chain: ${rowProblem}`,
        erasures: rowProblem === null ? verdict.erasures : [],
      };
    },
  );

  app.get(
    '/api/audit/requests',
    {
      config: { scope: 'request:read' },
      schema: {
        operationId: 'listRequestEvidence',
        summary: 'Every request’s stored fields that its audit chain commits to, by id (for `vigil verify`)',
        description:
          'Each request as its row holds it: the fields its audit entries set (status, decidedBy, decidedAt, decisionReason, confirmedAt, ' +
          'executionResult as canonical JSON text), its action and createdAt, and `requestHash`, the SHA-256 of its stored action, params, ' +
          'context, urgency, expiresAt and policy decision that its `created` entry must commit to (docs/audit.md). Answered as stored, ' +
          'tampered or not: `vigil verify` compares them with the logged entries. Keyset pages by id; `nextCursor` is null on the last page.',
        tags: ['audit'],
        querystring: z.object({
          after: z.string().min(1).max(100).optional(),
          limit: z.coerce.number().int().min(1).max(1000).default(1000),
        }),
        response: {
          200: z.object({
            requests: z.array(
              z.object({
                requestId: z.string(),
                headSeq: z.number().int().describe('The last seq of its audit chain the row records'),
                action: z.string(),
                createdAt: z.string(),
                requestHash: z.string(),
                status: z.string(),
                decidedBy: z.string().nullable(),
                decidedAt: z.string().nullable(),
                decisionReason: z.string().nullable(),
                confirmedAt: z.string().nullable(),
                executionResult: z.string().nullable(),
                escalation: z.string().nullable().describe('`tier N until <deadline>` after an escalation, else null (docs/guide/escalation.md)'),
                erasedBy: z
                  .string()
                  .nullable()
                  .describe(
                    "The erasure whose marker its params and context are (requestHash is then the marker's; the erasure's signed leaf lists the one its created entry committed to), else null (docs/guide/erasure.md)",
                  ),
              }),
            ),
            nextCursor: z.string().nullable(),
          }),
        },
      },
    },
    async (request) => {
      const { after, limit } = request.query;
      const rows = await requestsAfter(ctx.database, after, limit);
      return {
        requests: rows.map((row) => ({ requestId: row.id, headSeq: row.audit_head_seq, ...storedRequestState(row), erasedBy: erasedRequestOf(row) })),
        nextCursor: rows.length === limit ? rows.at(-1)!.id : null,
      };
    },
  );
}
