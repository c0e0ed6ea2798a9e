import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { changedDefinition } from '../rules/index.ts';
import { MAX_GUARDRAIL_RULES, ruleDefinitionSchema, type RuleDefinition, type UpdateRuleBody } from './schemas.ts';
import { countRules, deleteRule, insertRule, lockRule, updateRule, type GuardrailRule } from './store.ts';

/** The stored definition (without its counters and times), as a PUT's changes apply to it. */
function definitionOf(stored: GuardrailRule): RuleDefinition {
  const { name, description, agentId, conditionType, conditionConfig, actionType, actionConfig, cooldownMinutes, enabled, dryRun } = stored;
  return { name, description, agentId, conditionType, conditionConfig, actionType, actionConfig, cooldownMinutes, enabled, dryRun };
}

/** Creates the rule unless MAX_GUARDRAIL_RULES exist (counted in the same transaction). */
export async function createGuardrailRule(ctx: ObserveContext, definition: RuleDefinition): Promise<GuardrailRule> {
  return ctx.database.db.transaction().execute(async (trx) => {
    if ((await countRules(trx)) >= MAX_GUARDRAIL_RULES) throw observeError('guardrailRuleLimit');
    return insertRule(trx, definition, ctx.clock.now());
  });
}

/** Applies a PUT's changes under the rule's row lock; false when there is no such rule. */
export async function changeGuardrailRule(ctx: ObserveContext, id: string, changes: UpdateRuleBody): Promise<boolean> {
  const { database } = ctx;
  return database.db.transaction().execute(async (trx) => {
    const stored = await lockRule(trx, database.dialect, id);
    if (!stored) return false;
    await updateRule(trx, id, changedDefinition(definitionOf(stored), changes, ruleDefinitionSchema), ctx.clock.now());
    return true;
  });
}

/** Deletes the rule (its trigger history is kept); false when there is no such rule. */
export async function deleteGuardrailRule(ctx: ObserveContext, id: string): Promise<boolean> {
  return deleteRule(ctx.database, id);
}
