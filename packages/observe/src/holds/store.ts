import { changeLeafHash, forUpdate, hashHex, newId, recordChange, toIso, type ChangeActor } from '@vigil/platform';
import type { ExpressionBuilder, Kysely } from 'kysely';
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

/**
 * Releases a hold as the change log records it (its row, when there is one, stays, released); the
 * hold as it was, undefined when the log records no such hold.
 */
export async function releaseHold(
  database: ObserveDatabase,
  id: string,
  reason: string,
  actor: ChangeActor,
  now: number,
): Promise<{ before: HoldOut; after: HoldOut } | undefined> {
  return database.db.transaction().execute(async (trx) => {
    // Serialises releases of one hold (while its row is there).
    await forUpdate(trx.selectFrom('legal_holds').select('id').where('id', '=', id), database.dialect).execute();
    const before = (await loggedHolds(trx)).find((hold) => hold.id === id);
    if (before === undefined || !before.active) return before && { before, after: before };
    const after: HoldOut = { ...before, active: false, releasedAt: toIso(now), releasedBy: actor.actor, releaseReason: reason };
    await trx.updateTable('legal_holds').set({ released_at: now, released_by: actor.actor, release_reason: reason }).where('id', '=', id).execute();
    await recordChange(trx, { resource: LEGAL_HOLD_RESOURCE, resourceId: id, action: 'revoked', actor, before, after }, now);
    return { before, after };
  });
}

/**
 * Every hold as the change log records it (its last logged state), in no order: a change row
 * counts only while its audit-log leaf matches it. The table is not read: a row inserted or deleted
 * in the database, or a release written into it, changes nothing (compare platform logged-state.ts);
 * an edited change row does not count, so the last intact one decides.
 */
async function loggedHolds(db: Kysely<ObserveSchema>): Promise<HoldOut[]> {
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
  return [...last.values()].filter((hold): hold is HoldOut => hold !== null);
}

const byPlacedAt = (a: HoldOut, b: HoldOut): number => (a.placedAt === b.placedAt ? (a.id < b.id ? -1 : 1) : a.placedAt < b.placedAt ? -1 : 1);

/** The holds in force as the change log records them (loggedHolds), oldest first: what retention and erasure decide by. */
export async function holdsInForce(db: Kysely<ObserveSchema>): Promise<HoldOut[]> {
  return (await loggedHolds(db)).filter((hold) => hold.active).sort(byPlacedAt);
}

/** The holds GET /api/holds lists, from the change log as the decisions are (loggedHolds): newest first; `active` filters on whether a hold is in force. */
export async function listHolds(database: ObserveDatabase, active: boolean | undefined): Promise<HoldOut[]> {
  return (await loggedHolds(database.db)).filter((hold) => active === undefined || hold.active === active).sort((a, b) => byPlacedAt(b, a));
}

/** One hold as the change log records it; undefined when it records none. */
export async function findHold(database: ObserveDatabase, id: string): Promise<HoldOut | undefined> {
  return (await loggedHolds(database.db)).find((hold) => hold.id === id);
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
