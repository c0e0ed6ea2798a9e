import { eraseBodySchema, erasureLeavesQuerySchema, erasureLeavesSchema, erasureParams, listErasureLeaves, routeOptions, type ZodApp } from '@vigil/platform';
import { auditActor } from '../auth/index.ts';
import type { GateContext } from '../context.ts';
import { gateError } from '../errors.ts';
import { eraseParams, erasureReceiptSchema } from './schemas.ts';
import { eraseSubject, findErasureReceipt } from './service.ts';

export function registerErasureRoutes(app: ZodApp, ctx: GateContext): void {
  app.delete(
    '/api/subjects/:id',
    routeOptions('admin', {
      operationId: 'eraseSubject',
      summary:
        'Erase a data subject: every request naming it keeps its id, status, times and audit chain while its content becomes an erasure marker, under one signed erasure leaf',
      description:
        'Replaces the params, context, decision reason and execution result of every request naming the subject, and the details of its decision, vote, confirmation and redemption entries, by the erasure marker; deletes their webhook deliveries; answers a signed deletion receipt (docs/guide/erasure.md). A request of the subject still pending answers 409 and erases nothing.',
      tags: ['erasure'],
      params: eraseParams,
      body: eraseBodySchema,
      errorStatuses: [404, 409],
      response: { 200: erasureReceiptSchema },
    }),
    async (request) => eraseSubject(ctx, request.params.id, request.body.reason, auditActor(request)),
  );

  app.get(
    '/api/audit/erasures',
    routeOptions('request:read', {
      operationId: 'listErasureLeaves',
      summary: "Every erasure leaf of the gate's audit log: its index, its data and the log key's signature (what `vigil verify` holds erased requests to)",
      description:
        '`from` and `to` (ISO 8601, inclusive; optional) keep the erasures made in that period (an evidence pack’s deletion receipts), read from an index on the erasure time.',
      tags: ['audit'],
      querystring: erasureLeavesQuerySchema,
      response: { 200: erasureLeavesSchema },
    }),
    async (request) => listErasureLeaves(ctx.database.db, request.query),
  );

  app.get(
    '/api/erasures/:id',
    routeOptions('request:read', {
      operationId: 'getErasureReceipt',
      summary: "An erasure's signed deletion receipt, again",
      tags: ['erasure'],
      params: erasureParams,
      errorStatuses: [404],
      response: { 200: erasureReceiptSchema },
    }),
    async (request) => {
      const receipt = await findErasureReceipt(ctx, request.params.id);
      if (receipt === undefined) throw gateError('erasureNotFound');
      return receipt;
    },
  );
}
