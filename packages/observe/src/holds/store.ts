import { forUpdate, newId, recordChange, toIso, type ChangeActor, type DialectName } from '@vigil/platform';
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

/** The holds in force on any of these targets, oldest first. */
export async function activeHoldsOn(
  db: Kysely<ObserveSchema>,
  targets: { sessions?: readonly string[]; agents?: readonly string[]; subjects?: readonly string[] },
): Promise<LegalHoldRow[]> {
  const pairs = [
    ['session', targets.sessions ?? []],
    ['agent', targets.agents ?? []],
    ['subject', targets.subjects ?? []],
  ] as const;
  const wanted = pairs.filter(([, ids]) => ids.length > 0);
  if (wanted.length === 0) return [];
  return db
    .selectFrom('legal_holds')
    .selectAll()
    .where('released_at', 'is', null)
    .where((eb) => eb.or(wanted.map(([scope, ids]) => eb.and([eb('scope', '=', scope), eb('target_id', 'in', [...new Set(ids)])]))))
    .orderBy('placed_at')
    .orderBy('id')
    .execute();
}

/**
 * A filter of `sessions` rows: those no hold in force covers, by their id or their agent (a
 * subject's holds cover the sessions of its events: erasure/ adds that through its subject index).
 */
export function notHeldSession(eb: ExpressionBuilder<ObserveSchema, 'sessions'>) {
  const held = (scope: LegalHoldRow['scope']) =>
    eb.selectFrom('legal_holds').select('legal_holds.target_id').where('legal_holds.scope', '=', scope).where('legal_holds.released_at', 'is', null);
  return eb.and([eb('sessions.id', 'not in', held('session')), eb('sessions.agent_id', 'not in', held('agent'))]);
}
