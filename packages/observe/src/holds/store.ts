import { changeLeafHash, forUpdate, hashHex, newId, recordChange, toIso, type ChangeActor, type DialectName } from '@vigil/platform';
import type { ExpressionBuilder, Kysely, Transaction } from 'kysely';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import type { HoldOut } from './schemas.ts';
import type { LegalHoldRow } from './tables.ts';

export const LEGAL_HOLD_RESOURCE = 'legal_hold';

export function toHoldOut(row: LegalHoldRow): HoldOut {
  return {
    id: row.id,
    scope: row.scope,
    targetId: row.target_id,
    reason: row.reason,
    placedBy: row.placed_by,
    placedAt: toIso(Number(row.placed_at)),
    active: row.released_at === null,
    releasedAt: row.released_at === null ? null : toIso(Number(row.released_at)),
    releasedBy: row.released_by,
    releaseReason: row.release_reason,
  };
}

export async function insertHold(
  database: ObserveDatabase,
  hold: Pick<LegalHoldRow, 'scope' | 'target_id' | 'reason'>,
  actor: ChangeActor,
  now: number,
): Promise<LegalHoldRow> {
  const row: LegalHoldRow = { id: newId(), ...hold, placed_by: actor.actor, placed_at: now, released_at: null, released_by: null, release_reason: null };
  await database.db.transaction().execute(async (trx) => {
    await trx.insertInto('legal_holds').values(row).execute();
    await recordChange(trx, { resource: LEGAL_HOLD_RESOURCE, resourceId: row.id, action: 'created', actor, before: null, after: toHoldOut(row) }, now);
  });
  return row;
}

/** Releases a hold (its row stays, released); the row as it was, undefined when there is no such hold. */
export async function releaseHold(
  database: ObserveDatabase,
  id: string,
  reason: string,
  actor: ChangeActor,
  now: number,
): Promise<{ before: LegalHoldRow; after: LegalHoldRow } | undefined> {
  return database.db.transaction().execute(async (trx) => {
    const before = await lockHold(trx, database.dialect, id);
    if (before === undefined || before.released_at !== null) return before && { before, after: before };
    const after: LegalHoldRow = { ...before, released_at: now, released_by: actor.actor, release_reason: reason };
    await trx.updateTable('legal_holds').set({ released_at: now, released_by: actor.actor, release_reason: reason }).where('id', '=', id).execute();
    await recordChange(
      trx,
      { resource: LEGAL_HOLD_RESOURCE, resourceId: id, action: 'revoked', actor, before: toHoldOut(before), after: toHoldOut(after) },
      now,
    );
    return { before, after };
  });
}

async function lockHold(trx: Transaction<ObserveSchema>, dialect: DialectName, id: string): Promise<LegalHoldRow | undefined> {
  return forUpdate(trx.selectFrom('legal_holds').selectAll().where('id', '=', id), dialect).executeTakeFirst();
}

export async function findHold(database: ObserveDatabase, id: string): Promise<LegalHoldRow | undefined> {
  return database.db.selectFrom('legal_holds').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Newest first; `active` filters on whether a hold is in force. */
export async function listHolds(database: ObserveDatabase, active: boolean | undefined): Promise<LegalHoldRow[]> {
  let query = database.db.selectFrom('legal_holds').selectAll().orderBy('placed_at', 'desc').orderBy('id', 'desc');
  if (active !== undefined) query = query.where('released_at', active ? 'is' : 'is not', null);
  return query.execute();
}

/**
 * The holds in force as the change log records them, oldest first: a hold whose last logged change
 * (a change row whose audit-log leaf matches it) placed it and none released it. The table is not
 * read: a row inserted or deleted in the database, or a release written into it, changes nothing
 * (compare platform logged-state.ts); an edited change row does not count, so the last intact one decides.
 */
export async function holdsInForce(db: Kysely<ObserveSchema>): Promise<HoldOut[]> {
  const changes = await db
    .selectFrom('admin_changes as c')
    .innerJoin('audit_log_leaves as l', 'l.item_id', 'c.id')
    .selectAll('c')
    .select('l.leaf_hash')
    .where('c.resource', '=', LEGAL_HOLD_RESOURCE)
    .orderBy('l.idx')
    .execute();
  const last = new Map<string, HoldOut | null>();
  for (const change of changes) {
    if (change.resource_id === null || hashHex(change.leaf_hash) !== changeLeafHash(change).toString('hex')) continue;
    last.set(change.resource_id, change.after === null ? null : (JSON.parse(change.after) as HoldOut));
  }
  return [...last.values()]
    .filter((hold): hold is HoldOut => hold !== null && hold.active)
    .sort((a, b) => (a.placedAt === b.placedAt ? (a.id < b.id ? -1 : 1) : a.placedAt < b.placedAt ? -1 : 1));
}

/** The holds in force (holdsInForce) on any of these targets, oldest first. */
export async function activeHoldsOn(
  db: Kysely<ObserveSchema>,
  targets: { sessions?: readonly string[]; agents?: readonly string[]; subjects?: readonly string[] },
): Promise<HoldOut[]> {
  const wanted = {
    session: new Set(targets.sessions ?? []),
    agent: new Set(targets.agents ?? []),
    subject: new Set(targets.subjects ?? []),
  };
  return (await holdsInForce(db)).filter((hold) => wanted[hold.scope].has(hold.targetId));
}

/** The targets of the holds in force, by scope. */
export function heldTargets(holds: readonly HoldOut[], scope: HoldOut['scope']): string[] {
  return holds.filter((hold) => hold.scope === scope).map((hold) => hold.targetId);
}

/**
 * A filter of `sessions` rows: those none of the holds in force covers, by their id or their agent
 * (a subject's holds cover the sessions of its events: erasure/ adds that through its subject index).
 */
export function notHeldSession(holds: readonly HoldOut[]) {
  const sessions = heldTargets(holds, 'session');
  const agents = heldTargets(holds, 'agent');
  return (eb: ExpressionBuilder<ObserveSchema, 'sessions'>) =>
    eb.and([
      ...(sessions.length > 0 ? [eb('sessions.id', 'not in', sessions)] : []),
      ...(agents.length > 0 ? [eb('sessions.agent_id', 'not in', agents)] : []),
    ]);
}
