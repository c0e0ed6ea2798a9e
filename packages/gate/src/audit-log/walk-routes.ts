import { readSnapshot, registerAuditWalkRoutes, type AuditLog, type AuditWalkLoaders, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import { auditEntryText, chainEntryOf, erasureOfMarkerText } from '../stored-formats/index.ts';
import type { GateContext } from '../context.ts';
import { gateError } from '../errors.ts';
import type { GateSchema } from '../schema.ts';
import type { AuditRow } from '../requests/index.ts';

/** An entry's canonical chain text: exactly what its hash is computed over (audit/chain.ts). */
function entryText(row: AuditRow): string {
  return auditEntryText(chainEntryOf(row), row.prev_hash);
}

/** The audit walk and export (platform audit-walk.ts) over the gate's requests and their audit entries (docs/audit.md). */
export function registerGateAuditWalkRoutes(app: ZodApp, ctx: GateContext, log: AuditLog<GateSchema>): void {
  const { db } = ctx.database;
  const loaders: AuditWalkLoaders = {
    scope: (requestId) =>
      readSnapshot(ctx.database, async (snapshot) => {
        const request = await snapshot.selectFrom('requests').select(['audit_head_seq', 'audit_head_hash']).where('id', '=', requestId).executeTakeFirst();
        if (request === undefined) return undefined;
        const rows = await snapshot.selectFrom('audit_entries').selectAll().where('request_id', '=', requestId).orderBy('seq').orderBy('id').execute();
        return { head: { seq: request.audit_head_seq, hash: request.audit_head_hash }, items: rows.map((row) => ({ id: row.id, text: entryText(row) })) };
      }),
    texts: async (ids) => {
      const rows = await db.selectFrom('audit_entries').selectAll().where('id', 'in', ids).execute();
      return new Map(rows.map((row) => [row.id, entryText(row)]));
    },
    erasures: async (requestId) => {
      // The erasures the request's erased entries name (their markers), with their signed leaves.
      const marked = await db
        .selectFrom('audit_entries')
        .select('details')
        .where('request_id', '=', requestId)
        .where('details', 'like', '{"erased":true,%')
        .execute();
      const ids = [...new Set(marked.flatMap((row) => erasureOfMarkerText(row.details) ?? []))];
      if (ids.length === 0) return [];
      const rows = await db.selectFrom('audit_erasures').select(['leaf_idx', 'body', 'signature']).where('erasure_id', 'in', ids).orderBy('leaf_idx').execute();
      return rows.map((row) => ({ leafIndex: Number(row.leaf_idx), body: row.body, signature: row.signature }));
    },
  };
  registerAuditWalkRoutes(app, {
    log,
    db,
    tables: { items: 'audit_entries', itemScope: 'request_id', scopes: 'requests', headSeq: 'audit_head_seq', headHash: 'audit_head_hash' },
    errors: gateError,
    scopeNotFound: () => gateError('requestNotFound'),
    scopeIdSchema: z.string().min(1).max(100),
    clock: ctx.clock,
    names: { scope: 'request', item: 'entry', items: 'entries' },
    loaders,
    readScope: 'request:read',
    operationIds: { unlogged: 'listUnloggedAuditEntries', heads: 'listRequestAuditHeads' },
  });
}
