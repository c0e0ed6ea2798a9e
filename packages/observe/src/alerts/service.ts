import type { ObserveContext } from '../context.ts';
import { changedDefinition } from '../rules/index.ts';
import { ruleDefinitionSchema, type CreateRuleBody, type RuleDefinition, type UpdateRuleBody } from './schemas.ts';
import { insertRule, lockRule, updateRule, type AlertRule } from './store.ts';

/** The stored definition (without id and times), as a PUT's changes apply to it. */
function definitionOf(stored: RuleDefinition): RuleDefinition {
  const { name, description, enabled, condition, threshold, windowMinutes, scope, notifyChannels } = stored;
  return { name, description, enabled, condition, threshold, windowMinutes, scope, notifyChannels };
}

export async function createAlertRule(ctx: ObserveContext, body: CreateRuleBody): Promise<AlertRule> {
  return insertRule(ctx.database, { ...body, scope: body.scope ?? {} }, ctx.clock.now());
}

/** Applies a PUT's changes under the rule's row lock; false when there is no such rule. */
export async function changeAlertRule(ctx: ObserveContext, id: string, changes: UpdateRuleBody): Promise<boolean> {
  const { database } = ctx;
  return database.db.transaction().execute(async (trx) => {
    const stored = await lockRule(trx, database.dialect, id);
    if (!stored) return false;
    await updateRule(trx, id, changedDefinition(definitionOf(stored), changes, ruleDefinitionSchema), ctx.clock.now());
    return true;
  });
}
