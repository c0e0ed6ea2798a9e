import type { ChangeActor } from '@vigil/platform';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { changedDefinition, changeRuleRecorded, type RuleTable } from '../rules/index.ts';
import { ruleDefinitionSchema, type RuleDefinition, type UpdateRuleBody } from './schemas.ts';
import { deleteRule, insertRule, lockRule, toRuleOut, writeRule, type GuardrailRule } from './store.ts';

const GUARDRAIL_RULES: RuleTable<GuardrailRule, RuleDefinition> = { resource: 'guardrail', lock: lockRule, write: writeRule, toOut: toRuleOut };

/** The stored definition (without its counters and times), as a PUT's changes apply to it. */
function definitionOf(stored: GuardrailRule): RuleDefinition {
  const { name, description, agentId, conditionType, conditionConfig, actionType, actionConfig, cooldownMinutes, enabled, dryRun } = stored;
  return { name, description, agentId, conditionType, conditionConfig, actionType, actionConfig, cooldownMinutes, enabled, dryRun };
}

/** Creates the rule unless MAX_GUARDRAIL_RULES exist (counted in the same transaction), with its admin-change row. */
export async function createGuardrailRule(ctx: ObserveContext, definition: RuleDefinition, actor: ChangeActor): Promise<GuardrailRule> {
  const rule = await insertRule(ctx.database, definition, actor, ctx.clock.now());
  if (!rule) throw observeError('guardrailRuleLimit');
  return rule;
}

/** Applies a PUT's changes under the rule's row lock, with its admin-change row; false when there is no such rule. */
export async function changeGuardrailRule(ctx: ObserveContext, id: string, changes: UpdateRuleBody, actor: ChangeActor): Promise<boolean> {
  return changeRuleRecorded(ctx, GUARDRAIL_RULES, id, (stored) => changedDefinition(definitionOf(stored), changes, ruleDefinitionSchema), actor);
}

/** Deletes the rule (its trigger history is kept), with its admin-change row; false when there is no such rule. */
export async function deleteGuardrailRule(ctx: ObserveContext, id: string, actor: ChangeActor): Promise<boolean> {
  return deleteRule(ctx.database, id, actor, ctx.clock.now());
}
