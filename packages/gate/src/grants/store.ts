import { forUpdate, governedState, recordChange, toIso, type ChangeActor, type Snapshot } from '@vigil/platform';
import type { Transaction } from 'kysely';
import type { GateDatabase, GateSchema } from '../schema.ts';
import type { GrantRow, GrantUseRow } from './tables.ts';

/** The resource name the change log records grants under. */
export const GRANT_CHANGES = 'grant';

/** A grant's columns its logged changes govern: all but `uses` (moved by every use, each in its request's audit trail). */
const GRANT_STATE_COLUMNS = [
  'id',
  'action',
  'agent_id',
  'session_id',
  'expires_at',
  'max_uses',
  'request_id',
  'note',
  'created_at',
  'created_by',
  'created_by_key_id',
  'revoked_at',
  'revoked_by',
] as const;

export function grantState(row: GrantRow): Snapshot {
  return governedState(row, GRANT_STATE_COLUMNS);
}

export type GrantStatus = 'active' | 'expired' | 'used_up' | 'revoked';

export function grantStatus(row: GrantRow, now: number): GrantStatus {
  if (row.revoked_at !== null) return 'revoked';
  if (row.max_uses !== null && row.uses >= row.max_uses) return 'used_up';
  if (row.expires_at !== null && row.expires_at <= now) return 'expired';
  return 'active';
}

/** A grant as the API shows it. */
export function toGrant(row: GrantRow, now: number) {
  return {
    id: row.id,
    action: row.action,
    agentId: row.agent_id,
    sessionId: row.session_id,
    expiresAt: row.expires_at === null ? null : toIso(row.expires_at),
    maxUses: row.max_uses,
    uses: row.uses,
    usesLeft: row.max_uses === null ? null : Math.max(0, row.max_uses - row.uses),
    status: grantStatus(row, now),
    requestId: row.request_id,
    note: row.note,
    createdAt: toIso(row.created_at),
    createdBy: row.created_by,
    revokedAt: row.revoked_at === null ? null : toIso(row.revoked_at),
    revokedBy: row.revoked_by,
  };
}

/** What the change log records of a grant (its governed columns, as the API names them). */
function grantSnapshot(row: GrantRow): Snapshot {
  const { uses: _uses, usesLeft: _left, status: _status, ...shown } = toGrant(row, row.created_at);
  return shown;
}

/** What a grant's change writes with it in its transaction (its notices). */
type WithChange = (trx: Transaction<GateSchema>, row: GrantRow) => Promise<void>;

export async function insertGrant(database: GateDatabase, row: GrantRow, actor: ChangeActor, withChange: WithChange): Promise<void> {
  await database.db.transaction().execute(async (trx) => {
    await trx.insertInto('grants').values(row).execute();
    await withChange(trx, row);
    await recordChange(
      trx,
      { resource: GRANT_CHANGES, resourceId: row.id, action: 'created', actor, before: null, after: grantSnapshot(row), state: grantState(row) },
      row.created_at,
    );
  });
}

/** Revokes a grant; `missing` when there is none, `revoked` when it already was. */
export async function revokeGrant(
  database: GateDatabase,
  id: string,
  actor: ChangeActor,
  now: number,
  withChange: WithChange,
): Promise<{ kind: 'missing' } | { kind: 'already'; row: GrantRow } | { kind: 'revoked'; row: GrantRow }> {
  return database.db.transaction().execute(async (trx) => {
    const before = await forUpdate(trx.selectFrom('grants').selectAll().where('id', '=', id), database.dialect).executeTakeFirst();
    if (!before) return { kind: 'missing' as const };
    if (before.revoked_at !== null) return { kind: 'already' as const, row: before };
    const after: GrantRow = { ...before, revoked_at: now, revoked_by: actor.actor };
    await trx.updateTable('grants').set({ revoked_at: now, revoked_by: actor.actor }).where('id', '=', id).execute();
    await withChange(trx, after);
    await recordChange(
      trx,
      {
        resource: GRANT_CHANGES,
        resourceId: id,
        action: 'revoked',
        actor,
        before: grantSnapshot(before),
        after: grantSnapshot(after),
        state: grantState(after),
      },
      now,
    );
    return { kind: 'revoked' as const, row: after };
  });
}

export async function findGrant(database: GateDatabase, id: string): Promise<GrantRow | undefined> {
  return database.db.selectFrom('grants').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function grantUses(database: GateDatabase, id: string): Promise<GrantUseRow[]> {
  return database.db.selectFrom('grant_uses').selectAll().where('grant_id', '=', id).orderBy('use_no').execute();
}

export interface ListGrantsQuery {
  /** Only grants that can still be used (not revoked, expired or used up). */
  active: boolean;
  action?: string;
  limit: number;
  offset: number;
}

export async function listGrants(database: GateDatabase, query: ListGrantsQuery, now: number): Promise<{ rows: GrantRow[]; total: number }> {
  let base = database.db.selectFrom('grants');
  if (query.action !== undefined) base = base.where('action', '=', query.action);
  if (query.active) {
    base = base
      .where('revoked_at', 'is', null)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
      .where((eb) => eb.or([eb('max_uses', 'is', null), eb('uses', '<', eb.ref('max_uses'))]));
  }
  const [rows, count] = await Promise.all([
    base.selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').limit(query.limit).offset(query.offset).execute(),
    base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

/**
 * The grants that can still be used at `now`, oldest first (what routed requests are matched
 * against, GrantService keeps them between reads). Grants are made by people, so a bound in the
 * thousands is never reached in practice; past it the newest wait for older ones to end.
 */
export async function liveGrants(database: GateDatabase, now: number): Promise<GrantRow[]> {
  return database.db
    .selectFrom('grants')
    .selectAll()
    .where('revoked_at', 'is', null)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .where((eb) => eb.or([eb('max_uses', 'is', null), eb('uses', '<', eb.ref('max_uses'))]))
    .orderBy('created_at')
    .orderBy('id')
    .limit(LIVE_GRANTS_READ)
    .execute();
}

const LIVE_GRANTS_READ = 10_000;

/**
 * Takes one use of a grant for a request, in the request's creation transaction: one conditional
 * update (not revoked, not expired, uses left), so that of any number of concurrent requests on any
 * number of instances exactly `max_uses` take one; then the use's row. The grant after the use; null when none is left.
 */
export async function claimUse(trx: Transaction<GateSchema>, grantId: string, requestId: string, now: number): Promise<GrantRow | null> {
  const claimed = await trx
    .updateTable('grants')
    .set((eb) => ({ uses: eb('uses', '+', 1) }))
    .where('id', '=', grantId)
    .where('revoked_at', 'is', null)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .where((eb) => eb.or([eb('max_uses', 'is', null), eb('uses', '<', eb.ref('max_uses'))]))
    .returningAll()
    .executeTakeFirst();
  if (!claimed) return null;
  await trx
    .insertInto('grant_uses')
    .values({ grant_id: grantId, use_no: Number(claimed.uses), request_id: requestId, used_at: now })
    .execute();
  return claimed;
}
