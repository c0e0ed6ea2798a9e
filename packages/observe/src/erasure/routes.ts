import {
  eraseBodySchema,
  erasureLeavesQuerySchema,
  erasureLeavesSchema,
  erasureParams,
  keyChangeActor,
  listErasureLeaves,
  routeOptions,
  type ZodApp,
} from '@vigil/platform';
import type { ObserveAuditLog } from '../audit-log/index.ts';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { eraseParams, erasureReceiptSchema } from './schemas.ts';
import { eraseSubject, findErasureReceipt } from './service.ts';

export function registerErasureRoutes(app: ZodApp, ctx: ObserveContext, log: ObserveAuditLog): void {
  app.delete(
    '/api/subjects/:id',
    routeOptions('admin', {
      operationId: 'eraseSubject',
      summary:
        'Erase a data subject: every event naming it keeps its id, seq and hash while its content becomes an erasure marker, under one signed erasure leaf',
      description:
        'Removes the content from the events, the full-text index, the stored vectors and summaries, and every in-memory cache; the answer is a signed deletion receipt (docs/guide/erasure.md). A legal hold in force on the subject, one of its sessions or their agents answers 409 and erases nothing.',
      tags: ['erasure'],
      params: eraseParams,
      body: eraseBodySchema,
      errorStatuses: [404, 409],
      response: { 200: erasureReceiptSchema },
    }),
    async (request) => eraseSubject(ctx, log, request.params.id, request.body.reason, keyChangeActor(request.apiKey)),
  );

  app.get(
    '/api/audit/erasures',
    routeOptions('read', {
      operationId: 'listErasureLeaves',
      summary: "Every erasure leaf of the audit log: its index, its data and the log key's signature (what `vigil verify` holds erased events to)",
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
    routeOptions('read', {
      operationId: 'getErasureReceipt',
      summary: "An erasure's signed deletion receipt, again",
      tags: ['erasure'],
      params: erasureParams,
      errorStatuses: [404],
      response: { 200: erasureReceiptSchema },
    }),
    async (request) => {
      const receipt = await findErasureReceipt(ctx, log, request.params.id);
      if (receipt === undefined) throw observeError('erasureNotFound');
      return receipt;
    },
  );
}
