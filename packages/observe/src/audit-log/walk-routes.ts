import { readSnapshot, registerAuditWalkRoutes, type AuditWalkLoaders, type ZodApp } from '@vigil/platform';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { CHAIN_COLUMNS, chainTextOf, identifier, writerLeafText, writerOfStored } from '../events/index.ts';
import type { ObserveAuditLog } from './index.ts';

/** The audit walk and export (platform audit-walk.ts) over observe's sessions and their events (docs/audit.md). */
export function registerObserveAuditWalkRoutes(app: ZodApp, ctx: ObserveContext, log: ObserveAuditLog): void {
  const { db } = ctx.database;
  const loaders: AuditWalkLoaders = {
    scope: (sessionId) =>
      readSnapshot(ctx.database, async (snapshot) => {
        const session = await snapshot.selectFrom('sessions').select(['last_seq', 'last_hash']).where('id', '=', sessionId).executeTakeFirst();
        if (session === undefined) return undefined;
        const stored = await snapshot.selectFrom('events').select(CHAIN_COLUMNS).where('session_id', '=', sessionId).orderBy('seq').orderBy('id').execute();
        const rows = await ctx.sealer.open(stored);
        return { head: { seq: session.last_seq, hash: session.last_hash }, items: rows.map((row) => ({ id: row.id, text: chainTextOf(row) })) };
      }),
    texts: async (ids) => {
      const [rows, writerLeaves] = await Promise.all([
        db
          .selectFrom('events')
          .select(CHAIN_COLUMNS)
          .where('id', 'in', ids)
          .execute()
          .then((stored) => ctx.sealer.open(stored)),
        db.selectFrom('audit_writer_leaves').select(['item_id', 'body']).where('item_id', 'in', ids).execute(),
      ]);
      return new Map([
        ...rows.map((row): [string, string] => [row.id, chainTextOf(row)]),
        ...writerLeaves.map((leaf): [string, string] => [leaf.item_id, writerLeafText(leaf.body, log.name)]),
      ]);
    },
    erasures: async (sessionId) => {
      // The erasures the session's erased events name (their markers), with their signed leaves.
      const marked = await db
        .selectFrom('events')
        .select('payload')
        .where('session_id', '=', sessionId)
        .where('payload', 'like', '{"erased":true,"erasureId":%')
        .execute();
      const ids = [...new Set(marked.map((row) => (JSON.parse(row.payload) as { erasureId: string }).erasureId))];
      if (ids.length === 0) return [];
      const rows = await db.selectFrom('audit_erasures').select(['leaf_idx', 'body', 'signature']).where('erasure_id', 'in', ids).orderBy('leaf_idx').execute();
      return rows.map((row) => ({ leafIndex: Number(row.leaf_idx), body: row.body, signature: row.signature }));
    },
    writers: async (ids) => {
      const rows = await db.selectFrom('events').select(['id', 'written_by']).where('id', 'in', ids).execute();
      return new Map(rows.map((row) => [row.id, writerOfStored(row.written_by)]));
    },
  };
  registerAuditWalkRoutes(app, {
    log,
    db,
    tables: { items: 'events', itemScope: 'session_id', scopes: 'sessions', headSeq: 'last_seq', headHash: 'last_hash' },
    errors: observeError,
    scopeNotFound: () => observeError('sessionNotFound'),
    scopeIdSchema: identifier,
    clock: ctx.clock,
    names: { scope: 'session', item: 'event', items: 'events' },
    loaders,
    readScope: 'read',
    operationIds: { unlogged: 'listUnloggedEvents', heads: 'listSessionHeads' },
  });
}
