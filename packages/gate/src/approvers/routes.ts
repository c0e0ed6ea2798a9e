import { deletedAnswer, deletedResponse, isoTimestampMs, routeOptions, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import { auditActor } from '../auth/index.ts';
import type { GateContext } from '../context.ts';
import { gateError } from '../errors.ts';
import { createDelegation, createGroup, deleteGroup, listDelegations, listGroups, revokeDelegation, toDelegation, toGroup, updateGroup } from './store.ts';

const idParams = z.object({ id: z.string().min(1).max(100) });
const decider = z.string().trim().min(1).max(200);
const groupName = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/, 'letters, digits, `_`, `.`, `-` (1–100), starting with a letter or digit');

const groupBody = z
  .object({
    name: groupName,
    members: z.array(decider).max(500).describe('Decider names as the gate derives them: slack:U1, discord:42, api:<key name>, dashboard:<user>, mcp:<client>'),
    description: z.string().max(1000).nullable().default(null),
  })
  .strict();

const groupSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    members: z.array(z.string()),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'ApproverGroup' });

const delegationSchema = z
  .object({
    id: z.string(),
    delegator: z.string(),
    delegate: z.string(),
    startsAt: z.string(),
    endsAt: z.string(),
    reason: z.string().nullable(),
    createdAt: z.string(),
    revokedAt: z.string().nullable(),
    active: z.boolean().describe('Started, not ended, not revoked'),
  })
  .meta({ id: 'Delegation' });

export function registerApproverRoutes(app: ZodApp, ctx: GateContext): void {
  app.get(
    '/api/approver-groups',
    routeOptions('request:read', {
      operationId: 'listApproverGroups',
      summary: 'List approver groups by name',
      tags: ['approvers'],
      response: { 200: z.object({ groups: z.array(groupSchema) }) },
    }),
    async () => ({ groups: (await listGroups(ctx.database)).map(toGroup) }),
  );

  app.post(
    '/api/approver-groups',
    routeOptions('admin', {
      operationId: 'createApproverGroup',
      summary: 'Create an approver group (`group:<name>` in a rule’s approvers or quorum)',
      tags: ['approvers'],
      errorStatuses: [409],
      body: groupBody,
      response: { 201: groupSchema },
    }),
    async (request, reply) => {
      const row = await createGroup(ctx.database, request.body, auditActor(request), ctx.clock.now());
      if (!row) throw gateError('approverGroupExists');
      return reply.status(201).send(toGroup(row));
    },
  );

  app.put(
    '/api/approver-groups/:id',
    routeOptions('admin', {
      operationId: 'updateApproverGroup',
      summary: 'Change an approver group (fields not given stay as they are)',
      tags: ['approvers'],
      errorStatuses: [409],
      params: idParams,
      body: groupBody.partial().strict(),
      response: { 200: groupSchema },
    }),
    async (request) => {
      const row = await updateGroup(ctx.database, request.params.id, request.body, auditActor(request), ctx.clock.now());
      if (row === 'missing') throw gateError('approverGroupNotFound');
      if (row === 'taken') throw gateError('approverGroupExists');
      return toGroup(row);
    },
  );

  app.delete(
    '/api/approver-groups/:id',
    routeOptions('admin', {
      operationId: 'deleteApproverGroup',
      summary: 'Delete an approver group',
      tags: ['approvers'],
      params: idParams,
      response: { 200: deletedResponse },
    }),
    async (request) => {
      if (!(await deleteGroup(ctx.database, request.params.id, auditActor(request), ctx.clock.now()))) throw gateError('approverGroupNotFound');
      return deletedAnswer(request.params.id);
    },
  );

  app.get(
    '/api/delegations',
    routeOptions('request:read', {
      operationId: 'listDelegations',
      summary: 'List delegations, latest start first (at most 500)',
      tags: ['approvers'],
      response: { 200: z.object({ delegations: z.array(delegationSchema) }) },
    }),
    async () => {
      const now = ctx.clock.now();
      return { delegations: (await listDelegations(ctx.database)).map((row) => toDelegation(row, now)) };
    },
  );

  app.post(
    '/api/delegations',
    routeOptions('admin', {
      operationId: 'createDelegation',
      summary: "Lend a decider's authority to another for a time window (out of office)",
      description:
        'While active, the delegate may decide from chat wherever the delegator may, and votes for the delegator in a quorum whose groups admit the delegator (docs/guide/approvers.md).',
      tags: ['approvers'],
      body: z
        .object({
          delegator: decider,
          delegate: decider,
          startsAt: isoTimestampMs.optional().describe('Default: now'),
          endsAt: isoTimestampMs,
          reason: z.string().max(1000).nullable().default(null),
        })
        .strict(),
      response: { 201: delegationSchema },
    }),
    async (request, reply) => {
      const now = ctx.clock.now();
      const { delegator, delegate, endsAt, reason } = request.body;
      const startsAt = request.body.startsAt ?? now;
      if (delegator === delegate) throw gateError('validation', 'A decider cannot delegate to themselves');
      if (endsAt <= startsAt) throw gateError('validation', 'endsAt must be after startsAt');
      if (endsAt <= now) throw gateError('validation', 'endsAt must lie in the future');
      const row = await createDelegation(ctx.database, { delegator, delegate, startsAt, endsAt, reason }, auditActor(request), now);
      return reply.status(201).send(toDelegation(row, now));
    },
  );

  app.delete(
    '/api/delegations/:id',
    routeOptions('admin', {
      operationId: 'revokeDelegation',
      summary: 'Revoke a delegation (it stays listed, with revokedAt)',
      tags: ['approvers'],
      params: idParams,
      response: { 200: delegationSchema },
    }),
    async (request) => {
      const now = ctx.clock.now();
      const row = await revokeDelegation(ctx.database, request.params.id, auditActor(request), now);
      if (!row) throw gateError('delegationNotFound');
      return toDelegation(row, now);
    },
  );
}
