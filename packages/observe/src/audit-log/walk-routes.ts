import { readSnapshot, registerAuditWalkRoutes, type AuditWalkLoaders, type ZodApp } from '@vigil/platform';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { CHAIN_COLUMNS, chainTextOf, identifier } from '../events/index.ts';
import type { ObserveAuditLog } from './index.ts';

/** The audit walk and export (platform audit-walk.ts) over observe's sessions and their events (docs/audit.md). */
export function registerObserveAuditWalkRoutes(app: ZodApp, ctx: ObserveContext, log: ObserveAuditLog): void {
  const { db } = ctx.database;
  const loaders: AuditWalkLoaders = {
    scope: (sessionId) =>
      readSnapshot(ctx.database, async (snapshot) => {
        const session = await snapshot.selectFrom('sessions').select(['last_seq', 'last_hash']).where('id', '=', sessionId).executeTakeFirst();
        if (session === undefined) return undefined;
        const rows = await snapshot.selectFrom('events').select(CHAIN_COLUMNS).where('session_id', '=', sessionId).orderBy('seq').orderBy('id').execute();
        return { head: { seq: session.last_seq, hash: session.last_hash }, items: rows.map((row) => ({ id: row.id, text: chainTextOf(row) })) };
      }),
    texts: async (ids) => {
      const rows = await db.selectFrom('events').select(CHAIN_COLUMNS).where('id', 'in', ids).execute();
      return new Map(rows.map((row) => [row.id, chainTextOf(row)]));
    },
    unlogged: async (cursor, limit) => {
      let query = db
        .selectFrom('events as e')
        .leftJoin('audit_log_leaves as l', 'l.item_id', 'e.id')
        .select(['e.id', 'e.session_id', 'e.seq'])
        .where('l.idx', 'is', null)
        .orderBy('e.id')
        .limit(limit);
      if (cursor !== undefined) query = query.where('e.id', '>', cursor);
      return (await query.execute()).map((row) => ({ scopeId: row.session_id, seq: row.seq, itemId: row.id }));
    },
    heads: async (after, limit) => {
      let query = db.selectFrom('sessions').select(['id', 'last_seq', 'last_hash']).orderBy('id').limit(limit);
      if (after !== undefined) query = query.where('id', '>', after);
      return (await query.execute()).map((row) => ({ scopeId: row.id, headSeq: row.last_seq, headHash: row.last_hash }));
    },
  };
  registerAuditWalkRoutes(app, {
    log,
    errors: observeError,
    scopeNotFound: () => observeError('sessionNotFound'),
    scopeIdSchema: identifier,
    clock: ctx.clock,
    names: { scope: 'session', item: 'event', items: 'events' },
    loaders,
  });
}
