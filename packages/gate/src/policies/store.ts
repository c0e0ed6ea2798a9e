import { PreparedQuery, toIso } from '@vigil/platform';
import type { Kysely, Transaction } from 'kysely';
import type { GateDatabase, GateSchema, PolicyRow } from '../schema.ts';
import type { PolicyDefinition, Rule } from './engine.ts';

export function toDefinition(row: PolicyRow): PolicyDefinition {
  return { id: row.id, name: row.name, priority: row.priority, enabled: row.enabled === 1, rules: JSON.parse(row.rules) as Rule[] };
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
  await trx.updateTable('counters').set((eb) => ({ value: eb('value', '+', 1) })).where('name', '=', 'policies').execute();
}

/** A policy change and the version bump in one transaction; nothing is bumped when `work` changed nothing. */
async function changePolicies(database: GateDatabase, work: (trx: Transaction<GateSchema>) => Promise<boolean>): Promise<boolean> {
  return database.db.transaction().execute(async (trx) => {
    if (!(await work(trx))) return false;
    await bumpPolicyVersion(trx);
    return true;
  });
}

export async function insertPolicy(database: GateDatabase, row: PolicyRow): Promise<void> {
  await changePolicies(database, async (trx) => {
    await trx.insertInto('policies').values(row).execute();
    return true;
  });
}

export interface PolicyChanges {
  name?: string;
  priority?: number;
  enabled?: boolean;
  rules?: Rule[];
}

/** false when there is no such policy. */
export async function updatePolicy(database: GateDatabase, id: string, changes: PolicyChanges, now: number): Promise<boolean> {
  const columns = {
    ...(changes.name !== undefined && { name: changes.name }),
    ...(changes.priority !== undefined && { priority: changes.priority }),
    ...(changes.enabled !== undefined && { enabled: changes.enabled ? 1 : 0 }),
    ...(changes.rules !== undefined && { rules: JSON.stringify(changes.rules) }),
    updated_at: now,
  };
  return changePolicies(database, async (trx) => {
    const result = await trx.updateTable('policies').set(columns).where('id', '=', id).executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  });
}

/** false when there is no such policy. */
export async function deletePolicy(database: GateDatabase, id: string): Promise<boolean> {
  return changePolicies(database, async (trx) => {
    const result = await trx.deleteFrom('policies').where('id', '=', id).executeTakeFirst();
    return Number(result.numDeletedRows) > 0;
  });
}

export async function allPolicies(database: GateDatabase): Promise<PolicyRow[]> {
  return database.db.selectFrom('policies').selectAll().execute();
}

export async function listPolicies(database: GateDatabase, limit: number, offset: number): Promise<{ rows: PolicyRow[]; total: number }> {
  const [rows, count] = await Promise.all([
    database.db.selectFrom('policies').selectAll().orderBy('priority').orderBy('id').limit(limit).offset(offset).execute(),
    database.db.selectFrom('policies').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

export async function findPolicy(database: GateDatabase, id: string): Promise<PolicyRow | undefined> {
  return database.db.selectFrom('policies').selectAll().where('id', '=', id).executeTakeFirst();
}
