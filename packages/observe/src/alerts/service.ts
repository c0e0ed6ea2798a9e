import type { ChangeActor } from '@vigil/platform';
import type { ObserveContext } from '../context.ts';
import { changedDefinition } from '../rules/index.ts';
import { ruleDefinitionSchema, type CreateRuleBody, type RuleDefinition, type UpdateRuleBody } from './schemas.ts';
import { changeRule, insertRule, type AlertRule } from './store.ts';

/** The stored definition (without id and times), as a PUT's changes apply to it. */
function definitionOf(stored: RuleDefinition): RuleDefinition {
  const { name, description, enabled, condition, threshold, windowMinutes, scope, notifyChannels } = stored;
  return { name, description, enabled, condition, threshold, windowMinutes, scope, notifyChannels };
}

export async function createAlertRule(ctx: ObserveContext, body: CreateRuleBody, actor: ChangeActor): Promise<AlertRule> {
  return insertRule(ctx.database, { ...body, scope: body.scope ?? {} }, actor, ctx.clock.now());
}

/** Applies a PUT's changes under the rule's row lock, with its admin-change row; false when there is no such rule. */
export async function changeAlertRule(ctx: ObserveContext, id: string, changes: UpdateRuleBody, actor: ChangeActor): Promise<boolean> {
  const revise = (stored: AlertRule) => changedDefinition(definitionOf(stored), changes, ruleDefinitionSchema);
  return (await changeRule(ctx.database, id, revise, actor, ctx.clock.now())) !== undefined;
}
