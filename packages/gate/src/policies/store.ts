import { forUpdate, governedState, newId, PreparedQuery, recordChange, recordUpdate, toIso, type ChangeActor, type Snapshot } from '@vigil/platform';
import type { Kysely, Transaction } from 'kysely';
import type { GateDatabase, GateSchema } from '../schema.ts';
import type { PolicyRow } from './tables.ts';
import type { PolicyDefinition, Rule } from './engine.ts';

export function toDefinition(row: PolicyRow): PolicyDefinition {
  return { id: row.id, name: row.name, priority: row.priority, enabled: row.enabled === 1, rules: JSON.parse(row.rules) as Rule[] };
}

/**
 * A policy's columns its logged changes govern: all but `updated_at` (an update that changes
 * nothing moves it without a change row).
 */
const POLICY_STATE_COLUMNS = ['id', 'name', 'priority', 'enabled', 'rules', 'created_at'] as const;

/** What a policy's change records of it, and what its row is compared with before the engine applies it. */
export function policyState(row: PolicyRow): Snapshot {
  return governedState(row, POLICY_STATE_COLUMNS);
}

export function toPolicy(row: PolicyRow): PolicyDefinition & { createdAt: string; updatedAt: string } {
  return { ...toDefinition(row), createdAt: toIso(row.created_at), updatedAt: toIso(row.updated_at) };
}

const selectCounter = new PreparedQuery((db: Kysely<GateSchema>, _dialect, name: string) => db.selectFrom('counters').select('value').where('name', '=', name));

export async function policyVersion(database: GateDatabase): Promise<number> {
  const row = await selectCounter.first(database.db, database.dialect, 'policies');
  if (!row) throw new Error('the policies counter row is missing');
  return row.value;
}

/** Every policy change bumps the version in the same transaction, so every instance's cache sees it. */
async function bumpPolicyVersion(trx: Transaction<GateSchema>): Promise<void> {
  await trx
    .updateTable('counters')
    .set((eb) => ({ value: eb('value', '+', 1) }))
    .where('name', '=', 'policies')
    .execute();
}

export async function allPolicies(database: GateDatabase): Promise<PolicyRow[]> {
  return database.db.selectFrom('policies').selectAll().execute();
}

/** The names of those of `ids` that still exist (a deleted policy is missing from the map). */
export async function policyNames(database: GateDatabase, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await database.db
    .selectFrom('policies')
    .select(['id', 'name'])
    .where('id', 'in', [...ids])
    .execute();
  return new Map(rows.map((row) => [row.id, row.name]));
}

export async function listPolicies(database: GateDatabase, limit: number, offset: number): Promise<{ rows: PolicyRow[]; total: number }> {
  const [rows, count] = await Promise.all([
    database.db.selectFrom('policies').selectAll().orderBy('priority').orderBy('id').limit(limit).offset(offset).execute(),
    database.db
      .selectFrom('policies')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

/** A policy as given to create it (or, partially, to change it). */
export interface PolicyInput {
  name: string;
  priority: number;
  enabled: boolean;
  rules: Rule[];
}

/** A policy change, its admin-change row and the version bump, in one transaction. */
function changePolicies<T>(database: GateDatabase, work: (trx: Transaction<GateSchema>) => Promise<T | undefined>): Promise<T | undefined> {
  return database.db.transaction().execute(async (trx) => {
    const outcome = await work(trx);
    if (outcome !== undefined) await bumpPolicyVersion(trx);
    return outcome;
  });
}

export async function createPolicy(database: GateDatabase, input: PolicyInput, actor: ChangeActor, now: number): Promise<PolicyRow> {
  const row: PolicyRow = {
    id: newId(),
    name: input.name,
    priority: input.priority,
    enabled: input.enabled ? 1 : 0,
    rules: JSON.stringify(input.rules),
    created_at: now,
    updated_at: now,
  };
  await changePolicies(database, async (trx) => {
    await trx.insertInto('policies').values(row).execute();
    await recordChange(
      trx,
      { resource: 'policy', resourceId: row.id, action: 'created', actor, before: null, after: toPolicy(row), state: policyState(row) },
      now,
    );
    return row;
  });
  return row;
}

/** Applies the given fields; undefined when no such policy exists. */
export async function updatePolicy(
  database: GateDatabase,
  id: string,
  patch: Partial<PolicyInput>,
  actor: ChangeActor,
  now: number,
): Promise<PolicyRow | undefined> {
  return changePolicies(database, async (trx) => {
    const before = await forUpdate(trx.selectFrom('policies').selectAll().where('id', '=', id), database.dialect).executeTakeFirst();
    if (!before) return undefined;
    const changes = {
      ...(patch.name !== undefined && { name: patch.name }),
      ...(patch.priority !== undefined && { priority: patch.priority }),
      ...(patch.enabled !== undefined && { enabled: patch.enabled ? 1 : 0 }),
      ...(patch.rules !== undefined && { rules: JSON.stringify(patch.rules) }),
      updated_at: now,
    };
    await trx.updateTable('policies').set(changes).where('id', '=', id).execute();
    const after: PolicyRow = { ...before, ...changes };
    await recordUpdate(trx, { resource: 'policy', resourceId: id, actor, before, after, show: toPolicy, state: policyState }, now);
    return after;
  });
}

/** False when no such policy exists. */
export async function deletePolicy(database: GateDatabase, id: string, actor: ChangeActor, now: number): Promise<boolean> {
  const deleted = await changePolicies(database, async (trx) => {
    const before = await trx.deleteFrom('policies').where('id', '=', id).returningAll().executeTakeFirst();
    if (!before) return undefined;
    await recordChange(trx, { resource: 'policy', resourceId: id, action: 'deleted', actor, before: toPolicy(before), after: null, state: null }, now);
    return true;
  });
  return deleted === true;
}
