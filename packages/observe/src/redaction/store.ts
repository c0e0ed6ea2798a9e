import { forUpdate, newId, recordChange, toIso, type ChangeActor, type DialectName, type MaskSpec } from '@vigil/platform';
import type { Transaction } from 'kysely';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import type { RedactionRuleOut, RuleDefinition } from './schemas.ts';
import type { RedactionRuleRow } from './tables.ts';

export const REDACTION_RULE_RESOURCE = 'redaction_rule';

/** A stored rule, decoded. */
export type StoredRule = RuleDefinition & { id: string; createdAt: number; updatedAt: number };

export function decodeRule(row: RedactionRuleRow): StoredRule {
  const common = { id: row.id, name: row.name, description: row.description, enabled: row.enabled === 1, label: row.label };
  const times = { createdAt: Number(row.created_at), updatedAt: Number(row.updated_at) };
  return row.kind === 'path'
    ? { ...common, kind: 'path', path: row.path ?? '', ...times }
    : { ...common, kind: 'regex', pattern: row.pattern ?? '', flags: row.flags ?? '', ...times };
}

export function toRuleOut(rule: StoredRule): RedactionRuleOut {
  return {
    id: rule.id,
    name: rule.name,
    description: rule.description,
    enabled: rule.enabled,
    kind: rule.kind,
    path: rule.kind === 'path' ? rule.path : null,
    pattern: rule.kind === 'regex' ? rule.pattern : null,
    flags: rule.kind === 'regex' ? rule.flags : null,
    label: rule.label,
    createdAt: toIso(rule.createdAt),
    updatedAt: toIso(rule.updatedAt),
  };
}

/** What a Masker takes of a stored rule. */
export function matcherOf(rule: StoredRule): MaskSpec {
  return rule.kind === 'path'
    ? { id: rule.id, kind: 'path', path: rule.path, label: rule.label }
    : { id: rule.id, kind: 'regex', pattern: rule.pattern, flags: rule.flags, label: rule.label };
}

function definitionColumns(definition: RuleDefinition) {
  return {
    name: definition.name,
    description: definition.description,
    enabled: definition.enabled ? 1 : 0,
    kind: definition.kind,
    path: definition.kind === 'path' ? definition.path : null,
    pattern: definition.kind === 'regex' ? definition.pattern : null,
    flags: definition.kind === 'regex' ? definition.flags : null,
    label: definition.label,
  };
}

export async function insertRule(database: ObserveDatabase, definition: RuleDefinition, actor: ChangeActor, now: number): Promise<StoredRule> {
  const row: RedactionRuleRow = { id: newId(), ...definitionColumns(definition), created_at: now, updated_at: now };
  const rule = decodeRule(row);
  await database.db.transaction().execute(async (trx) => {
    await trx.insertInto('redaction_rules').values(row).execute();
    await recordChange(trx, { resource: REDACTION_RULE_RESOURCE, resourceId: row.id, action: 'created', actor, before: null, after: toRuleOut(rule) }, now);
  });
  return rule;
}

/** Newest first (ids are time-ordered, so ties on createdAt are stable). */
export async function listRules(database: ObserveDatabase): Promise<StoredRule[]> {
  const rows = await database.db.selectFrom('redaction_rules').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
  return rows.map(decodeRule);
}

/** The enabled rules in the order they were created: the order a Masker applies them in. */
export async function listEnabledRules(database: ObserveDatabase): Promise<StoredRule[]> {
  const rows = await database.db.selectFrom('redaction_rules').selectAll().where('enabled', '=', 1).orderBy('id').execute();
  return rows.map(decodeRule);
}

export async function findRule(database: ObserveDatabase, id: string): Promise<StoredRule | undefined> {
  const row = await database.db.selectFrom('redaction_rules').selectAll().where('id', '=', id).executeTakeFirst();
  return row && decodeRule(row);
}

/** The rule, row-locked for the rest of the transaction (PostgreSQL; SQLite holds the write lock). */
export async function lockRule(trx: Transaction<ObserveSchema>, dialect: DialectName, id: string): Promise<StoredRule | undefined> {
  const row = await forUpdate(trx.selectFrom('redaction_rules').selectAll().where('id', '=', id), dialect).executeTakeFirst();
  return row && decodeRule(row);
}

/** Stores a rule's new definition (the caller holds its row lock: lockRule). */
export async function writeRule(trx: Transaction<ObserveSchema>, id: string, definition: RuleDefinition, now: number): Promise<void> {
  await trx
    .updateTable('redaction_rules')
    .set({ ...definitionColumns(definition), updated_at: now })
    .where('id', '=', id)
    .execute();
}

/** Deletes a rule with its admin-change row; false when there is no such rule. */
export async function deleteRule(database: ObserveDatabase, id: string, actor: ChangeActor, now: number): Promise<boolean> {
  return database.db.transaction().execute(async (trx) => {
    const row = await forUpdate(trx.selectFrom('redaction_rules').selectAll().where('id', '=', id), database.dialect).executeTakeFirst();
    if (row === undefined) return false;
    await trx.deleteFrom('redaction_rules').where('id', '=', id).execute();
    await recordChange(
      trx,
      { resource: REDACTION_RULE_RESOURCE, resourceId: id, action: 'deleted', actor, before: toRuleOut(decodeRule(row)), after: null },
      now,
    );
    return true;
  });
}

/** The most recent events (newest first) with what redaction reads of them. */
export async function recentEvents(database: ObserveDatabase, limit: number) {
  return database.db
    .selectFrom('events')
    .select(['id', 'session_id', 'ts', 'event_type', 'payload', 'metadata'])
    .orderBy('ts', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
}
