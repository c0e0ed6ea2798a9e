import { forUpdate, MINUTE_MS, newDelivery, newId, recordChange, toIso, toIsoOrNull, type ChangeActor, type DialectName } from '@vigil/platform';
import type { Transaction } from 'kysely';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import type { GuardrailRuleRow, GuardrailTriggerRow } from './tables.ts';
import {
  actionConfigSchemas,
  conditionConfigSchemas,
  MAX_GUARDRAIL_RULES,
  type ActionConfig,
  type ActionResult,
  type ActionType,
  type ConditionConfig,
  type ConditionType,
  type GuardrailRuleOut,
  type HistoryQuery,
  type RuleDefinition,
  type TriggerOut,
} from './schemas.ts';

/** A stored rule, decoded, with its configs' defaults applied. */
export interface GuardrailRule {
  id: string;
  name: string;
  description: string | null;
  agentId: string | null;
  conditionType: ConditionType;
  conditionConfig: ConditionConfig;
  actionType: ActionType;
  actionConfig: ActionConfig;
  cooldownMinutes: number;
  enabled: boolean;
  dryRun: boolean;
  triggerCount: number;
  lastTriggeredAt: number | null;
  createdAt: number;
  updatedAt: number;
}

export function decodeRule(row: GuardrailRuleRow): GuardrailRule {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    agentId: row.agent_id,
    conditionType: row.condition_type as ConditionType,
    conditionConfig: JSON.parse(row.condition_config) as ConditionConfig,
    actionType: row.action_type as ActionType,
    actionConfig: JSON.parse(row.action_config) as ActionConfig,
    cooldownMinutes: row.cooldown_minutes,
    enabled: row.enabled === 1,
    dryRun: row.dry_run === 1,
    triggerCount: row.trigger_count,
    lastTriggeredAt: row.last_triggered_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function toRuleOut(rule: GuardrailRule): GuardrailRuleOut {
  return {
    id: rule.id,
    name: rule.name,
    description: rule.description,
    agentId: rule.agentId,
    conditionType: rule.conditionType,
    conditionConfig: rule.conditionConfig,
    actionType: rule.actionType,
    actionConfig: rule.actionConfig,
    cooldownMinutes: rule.cooldownMinutes,
    enabled: rule.enabled,
    dryRun: rule.dryRun,
    triggerCount: rule.triggerCount,
    lastTriggeredAt: toIsoOrNull(rule.lastTriggeredAt),
    createdAt: toIso(rule.createdAt),
    updatedAt: toIso(rule.updatedAt),
  };
}

/** Columns of a checked definition; the configs are stored with their defaults applied. */
function definitionColumns(definition: RuleDefinition) {
  return {
    name: definition.name,
    description: definition.description ?? null,
    agent_id: definition.agentId ?? null,
    condition_type: definition.conditionType,
    condition_config: JSON.stringify(conditionConfigSchemas[definition.conditionType].parse(definition.conditionConfig)),
    action_type: definition.actionType,
    action_config: JSON.stringify(actionConfigSchemas[definition.actionType].parse(definition.actionConfig)),
    cooldown_minutes: definition.cooldownMinutes,
    enabled: definition.enabled ? 1 : 0,
    dry_run: definition.dryRun ? 1 : 0,
  };
}

/** A new rule and its admin-change row; null when MAX_GUARDRAIL_RULES rules exist already. */
export async function insertRule(database: ObserveDatabase, definition: RuleDefinition, actor: ChangeActor, now: number): Promise<GuardrailRule | null> {
  const row: GuardrailRuleRow = {
    id: newId(),
    ...definitionColumns(definition),
    trigger_count: 0,
    last_triggered_at: null,
    created_at: now,
    updated_at: now,
  };
  const rule = decodeRule(row);
  return database.db.transaction().execute(async (trx) => {
    const count = await trx
      .selectFrom('guardrail_rules')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    if (Number(count.n) >= MAX_GUARDRAIL_RULES) return null;
    await trx.insertInto('guardrail_rules').values(row).execute();
    await recordChange(trx, { resource: 'guardrail', resourceId: row.id, action: 'created', actor, before: null, after: toRuleOut(rule) }, now);
    return rule;
  });
}

/** Newest first (ids are time-ordered, so ties on createdAt are stable). */
export async function listRules(database: ObserveDatabase, filter: { agentId?: string } = {}): Promise<GuardrailRule[]> {
  let query = database.db.selectFrom('guardrail_rules').selectAll();
  const { agentId } = filter;
  if (agentId !== undefined) query = query.where((eb) => eb.or([eb('agent_id', 'is', null), eb('agent_id', '=', agentId)]));
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
  return rows.map(decodeRule);
}

/** Enabled rules that apply to any of `agentIds` (their own or every agent's); all enabled rules without `agentIds`. */
export async function listEnabledRules(database: ObserveDatabase, agentIds?: readonly string[]): Promise<GuardrailRule[]> {
  let query = database.db.selectFrom('guardrail_rules').selectAll().where('enabled', '=', 1);
  if (agentIds !== undefined) query = query.where((eb) => eb.or([eb('agent_id', 'is', null), eb('agent_id', 'in', [...agentIds])]));
  const rows = await query.orderBy('id').execute();
  return rows.map(decodeRule);
}

export async function findRule(database: ObserveDatabase, id: string): Promise<GuardrailRule | undefined> {
  const row = await database.db.selectFrom('guardrail_rules').selectAll().where('id', '=', id).executeTakeFirst();
  return row && decodeRule(row);
}

/** The rule, row-locked for the rest of the transaction (PostgreSQL; SQLite holds the write lock). */
export async function lockRule(trx: Transaction<ObserveSchema>, dialect: DialectName, id: string): Promise<GuardrailRule | undefined> {
  const row = await forUpdate(trx.selectFrom('guardrail_rules').selectAll().where('id', '=', id), dialect).executeTakeFirst();
  return row && decodeRule(row);
}

/** Stores a rule's new definition (the caller holds its row lock: lockRule). */
export async function writeRule(trx: Transaction<ObserveSchema>, id: string, definition: RuleDefinition, now: number): Promise<void> {
  await trx
    .updateTable('guardrail_rules')
    .set({ ...definitionColumns(definition), updated_at: now })
    .where('id', '=', id)
    .execute();
}

/** Deletes the rule (its trigger history stays); false when no such rule exists. */
export async function deleteRule(database: ObserveDatabase, id: string, actor: ChangeActor, now: number): Promise<boolean> {
  return database.db.transaction().execute(async (trx) => {
    const row = await trx.deleteFrom('guardrail_rules').where('id', '=', id).returningAll().executeTakeFirst();
    if (!row) return false;
    await recordChange(trx, { resource: 'guardrail', resourceId: id, action: 'deleted', actor, before: toRuleOut(decodeRule(row)), after: null }, now);
    return true;
  });
}

// ---- triggers ----

export function toTriggerOut(row: GuardrailTriggerRow): TriggerOut {
  return {
    id: row.id,
    ruleId: row.rule_id,
    ruleName: row.rule_name,
    agentId: row.agent_id,
    triggeredAt: toIso(row.triggered_at),
    conditionType: row.condition_type as ConditionType,
    currentValue: row.current_value,
    threshold: row.threshold,
    actionType: row.action_type as ActionType,
    dryRun: row.dry_run === 1,
    actionResult: JSON.parse(row.action_result) as ActionResult,
  };
}

/** When the rule last fired for the agent (its cooldown runs from there). */
export async function lastTriggeredFor(trx: Transaction<ObserveSchema>, ruleId: string, agentId: string): Promise<number | null> {
  const row = await trx
    .selectFrom('guardrail_triggers')
    .select('triggered_at')
    .where('rule_id', '=', ruleId)
    .where('agent_id', '=', agentId)
    .orderBy('triggered_at', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row === undefined ? null : Number(row.triggered_at);
}

/** Records the trigger and counts it on the rule, in the caller's transaction. */
export async function insertTrigger(trx: Transaction<ObserveSchema>, row: GuardrailTriggerRow): Promise<void> {
  await trx.insertInto('guardrail_triggers').values(row).execute();
  await trx
    .updateTable('guardrail_rules')
    .set((eb) => ({ trigger_count: eb('trigger_count', '+', 1), last_triggered_at: row.triggered_at }))
    .where('id', '=', row.rule_id)
    .execute();
}

export async function queueDelivery(trx: Transaction<ObserveSchema>, triggerId: string, url: string, body: string, now: number): Promise<string> {
  const delivery = { ...newDelivery(url, body, now), trigger_id: triggerId };
  await trx.insertInto('guardrail_deliveries').values(delivery).execute();
  return delivery.id;
}

/** Newest first; `total` counts every matching trigger. */
export async function listTriggers(database: ObserveDatabase, query: HistoryQuery): Promise<{ rows: GuardrailTriggerRow[]; total: number }> {
  let filtered = database.db.selectFrom('guardrail_triggers');
  if (query.ruleId !== undefined) filtered = filtered.where('rule_id', '=', query.ruleId);
  if (query.from !== undefined) filtered = filtered.where('triggered_at', '>=', query.from);
  if (query.to !== undefined) filtered = filtered.where('triggered_at', '<=', query.to);
  if (query.agentId !== undefined) filtered = filtered.where('agent_id', '=', query.agentId);
  const [rows, count] = await Promise.all([
    filtered.selectAll().orderBy('triggered_at', 'desc').orderBy('id', 'desc').limit(query.limit).offset(query.offset).execute(),
    filtered.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

/** Agents for which the rule fired within its cooldown, with the end of each cooldown. */
export async function activeCooldowns(database: ObserveDatabase, rule: GuardrailRule, now: number): Promise<{ agentId: string; until: number }[]> {
  if (rule.cooldownMinutes === 0) return [];
  const length = rule.cooldownMinutes * MINUTE_MS;
  const rows = await database.db
    .selectFrom('guardrail_triggers')
    .select(['agent_id', (eb) => eb.fn.max('triggered_at').as('last')])
    .where('rule_id', '=', rule.id)
    .where('triggered_at', '>', now - length)
    .groupBy('agent_id')
    .orderBy('agent_id')
    .execute();
  return rows.map((row) => ({ agentId: row.agent_id, until: Number(row.last) + length }));
}

// ---- the agent record (actions) ----

/** Pauses the agent unless it is paused already; false when there is no such agent. */
export async function pauseAgent(
  trx: Transaction<ObserveSchema>,
  agentId: string,
  reason: string,
  now: number,
): Promise<'paused' | 'already_paused' | 'unknown'> {
  const paused = await trx
    .updateTable('agents')
    .set({ paused_at: now, pause_reason: reason })
    .where('id', '=', agentId)
    .where('paused_at', 'is', null)
    .executeTakeFirst();
  if (Number(paused.numUpdatedRows) === 1) return 'paused';
  const exists = await trx.selectFrom('agents').select('id').where('id', '=', agentId).executeTakeFirst();
  return exists ? 'already_paused' : 'unknown';
}

export async function setAgentFields(
  trx: Transaction<ObserveSchema>,
  agentId: string,
  fields: { model_override: string } | { approval_policy_id: string },
): Promise<boolean> {
  const result = await trx.updateTable('agents').set(fields).where('id', '=', agentId).executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}
