import { forUpdate, governedState, newId, recordChange, recordUpdate, toIso, type ChangeActor, type Snapshot } from '@vigil/platform';
import type { Kysely, Transaction } from 'kysely';
import type { GateDatabase, GateSchema } from '../schema.ts';
import type { Vote } from './quorum.ts';
import type { ApproverGroupRow, DelegationRow } from './tables.ts';

export const GROUP_CHANGES = 'approver_group';
export const DELEGATION_CHANGES = 'delegation';

export interface ApproverGroup {
  id: string;
  name: string;
  description: string | null;
  members: string[];
  createdAt: string;
  updatedAt: string;
}

export interface Delegation {
  id: string;
  delegator: string;
  delegate: string;
  startsAt: string;
  endsAt: string;
  reason: string | null;
  createdAt: string;
  revokedAt: string | null;
  /** Whether it lends authority now (started, not ended, not revoked). */
  active: boolean;
}

const GROUP_STATE = ['id', 'name', 'members', 'description', 'created_at'] as const;
const groupState = (row: ApproverGroupRow): Snapshot => governedState(row, GROUP_STATE);

export function toGroup(row: ApproverGroupRow): ApproverGroup {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    members: JSON.parse(row.members) as string[],
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
  };
}

export function toDelegation(row: DelegationRow, now: number): Delegation {
  return {
    id: row.id,
    delegator: row.delegator,
    delegate: row.delegate,
    startsAt: toIso(row.starts_at),
    endsAt: toIso(row.ends_at),
    reason: row.reason,
    createdAt: toIso(row.created_at),
    revokedAt: row.revoked_at === null ? null : toIso(row.revoked_at),
    active: row.revoked_at === null && row.starts_at <= now && now < row.ends_at,
  };
}

export async function listGroups(database: GateDatabase): Promise<ApproverGroupRow[]> {
  return database.db.selectFrom('approver_groups').selectAll().orderBy('name').execute();
}

export interface GroupInput {
  name: string;
  members: string[];
  description: string | null;
}

/** Undefined when the name is taken. */
export async function createGroup(database: GateDatabase, input: GroupInput, actor: ChangeActor, now: number): Promise<ApproverGroupRow | undefined> {
  return database.db.transaction().execute(async (trx) => {
    const taken = await trx.selectFrom('approver_groups').select('id').where('name', '=', input.name).executeTakeFirst();
    if (taken) return undefined;
    const row: ApproverGroupRow = {
      id: newId(),
      name: input.name,
      members: JSON.stringify([...new Set(input.members)]),
      description: input.description,
      created_at: now,
      updated_at: now,
    };
    await trx.insertInto('approver_groups').values(row).execute();
    await recordChange(
      trx,
      { resource: GROUP_CHANGES, resourceId: row.id, action: 'created', actor, before: null, after: toGroup(row), state: groupState(row) },
      now,
    );
    return row;
  });
}

/** 'missing' when no such group, 'taken' when renamed onto another group's name. */
export async function updateGroup(
  database: GateDatabase,
  id: string,
  patch: Partial<GroupInput>,
  actor: ChangeActor,
  now: number,
): Promise<ApproverGroupRow | 'missing' | 'taken'> {
  return database.db.transaction().execute(async (trx) => {
    const before = await forUpdate(trx.selectFrom('approver_groups').selectAll().where('id', '=', id), database.dialect).executeTakeFirst();
    if (!before) return 'missing';
    if (patch.name !== undefined && patch.name !== before.name) {
      const taken = await trx.selectFrom('approver_groups').select('id').where('name', '=', patch.name).executeTakeFirst();
      if (taken) return 'taken';
    }
    const changes = {
      ...(patch.name !== undefined && { name: patch.name }),
      ...(patch.members !== undefined && { members: JSON.stringify([...new Set(patch.members)]) }),
      ...(patch.description !== undefined && { description: patch.description }),
      updated_at: now,
    };
    await trx.updateTable('approver_groups').set(changes).where('id', '=', id).execute();
    const after: ApproverGroupRow = { ...before, ...changes };
    await recordUpdate(trx, { resource: GROUP_CHANGES, resourceId: id, actor, before, after, show: toGroup, state: groupState }, now);
    return after;
  });
}

export async function deleteGroup(database: GateDatabase, id: string, actor: ChangeActor, now: number): Promise<boolean> {
  return database.db.transaction().execute(async (trx) => {
    const before = await trx.deleteFrom('approver_groups').where('id', '=', id).returningAll().executeTakeFirst();
    if (!before) return false;
    await recordChange(trx, { resource: GROUP_CHANGES, resourceId: id, action: 'deleted', actor, before: toGroup(before), after: null, state: null }, now);
    return true;
  });
}

export interface DelegationInput {
  delegator: string;
  delegate: string;
  startsAt: number;
  endsAt: number;
  reason: string | null;
}

export async function createDelegation(database: GateDatabase, input: DelegationInput, actor: ChangeActor, now: number): Promise<DelegationRow> {
  const row: DelegationRow = {
    id: newId(),
    delegator: input.delegator,
    delegate: input.delegate,
    starts_at: input.startsAt,
    ends_at: input.endsAt,
    reason: input.reason,
    created_at: now,
    revoked_at: null,
  };
  await database.db.transaction().execute(async (trx) => {
    await trx.insertInto('delegations').values(row).execute();
    await recordChange(trx, { resource: DELEGATION_CHANGES, resourceId: row.id, action: 'created', actor, before: null, after: toDelegation(row, now) }, now);
  });
  return row;
}

/** Undefined when no such delegation; a revoked one is answered as it is. */
export async function revokeDelegation(database: GateDatabase, id: string, actor: ChangeActor, now: number): Promise<DelegationRow | undefined> {
  return database.db.transaction().execute(async (trx) => {
    const before = await forUpdate(trx.selectFrom('delegations').selectAll().where('id', '=', id), database.dialect).executeTakeFirst();
    if (!before || before.revoked_at !== null) return before;
    const after = { ...before, revoked_at: now };
    await trx.updateTable('delegations').set({ revoked_at: now }).where('id', '=', id).execute();
    await recordChange(
      trx,
      { resource: DELEGATION_CHANGES, resourceId: id, action: 'revoked', actor, before: toDelegation(before, now), after: toDelegation(after, now) },
      now,
    );
    return after;
  });
}

export async function listDelegations(database: GateDatabase): Promise<DelegationRow[]> {
  return database.db.selectFrom('delegations').selectAll().orderBy('starts_at', 'desc').orderBy('id', 'desc').limit(500).execute();
}

type Executor = Kysely<GateSchema> | Transaction<GateSchema>;

/** The deciders who lend `delegate` their authority at `now`. */
export async function delegatorsOf(executor: Executor, delegate: string, now: number): Promise<string[]> {
  const rows = await executor
    .selectFrom('delegations')
    .select('delegator')
    .where('delegate', '=', delegate)
    .where('ends_at', '>', now)
    .where('starts_at', '<=', now)
    .where('revoked_at', 'is', null)
    .orderBy('created_at')
    .execute();
  return [...new Set(rows.map((row) => row.delegator))];
}

/** The members of the named groups (unknown names have none). */
export async function membersOf(executor: Executor, names: readonly string[]): Promise<Set<string>> {
  if (names.length === 0) return new Set();
  const rows = await executor
    .selectFrom('approver_groups')
    .select('members')
    .where('name', 'in', [...names])
    .execute();
  return new Set(rows.flatMap((row) => JSON.parse(row.members) as string[]));
}

export async function votesOf(executor: Executor, requestId: string): Promise<Vote[]> {
  const rows = await executor.selectFrom('request_votes').selectAll().where('request_id', '=', requestId).orderBy('at').orderBy('principal').execute();
  return rows.map((row) => ({ principal: row.principal, decider: row.decider, vote: row.vote as Vote['vote'], at: row.at }));
}

export async function insertVote(executor: Executor, requestId: string, vote: Vote): Promise<void> {
  await executor
    .insertInto('request_votes')
    .values({ request_id: requestId, principal: vote.principal, decider: vote.decider, vote: vote.vote, at: vote.at })
    .execute();
}
