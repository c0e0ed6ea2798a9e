import type { ChangeActor } from '@vigil/platform';
import type { ObserveContext } from '../context.ts';
import { changedDefinition, changeRuleRecorded, type RuleTable } from '../rules/index.ts';
import { ruleDefinitionSchema, type CreateRuleBody, type RuleDefinition, type UpdateRuleBody } from './schemas.ts';
import { insertRule, lockRule, toRuleOut, writeRule, type AlertRule } from './store.ts';

const ALERT_RULES: RuleTable<AlertRule, RuleDefinition> = { resource: 'alert_rule', lock: lockRule, write: writeRule, toOut: toRuleOut };

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
  return changeRuleRecorded(ctx, ALERT_RULES, id, (stored) => changedDefinition(definitionOf(stored), changes, ruleDefinitionSchema), actor);
}
