import { DAY_MS, periodInOrder } from '@vigil/platform';
import { z } from 'zod';
import { boundedNumber, MAX_FIGURE } from '../bounds.ts';
import { identifier } from '../events/index.ts';
import { DIMENSION_NAMES } from '../health/index.ts';
import { ruleDescription, ruleHistoryPage, ruleName as name, ruleOutIdentity } from '../rules/index.ts';

export const CONDITION_TYPES = ['error_rate_threshold', 'cost_limit', 'health_score_threshold', 'custom_metric'] as const;
export type ConditionType = (typeof CONDITION_TYPES)[number];
export const ACTION_TYPES = ['pause_agent', 'notify_webhook', 'downgrade_model', 'approval_policy'] as const;
export type ActionType = (typeof ACTION_TYPES)[number];
export const OPERATORS = ['gt', 'gte', 'lt', 'lte', 'eq'] as const;
export type Operator = (typeof OPERATORS)[number];

export const DEFAULT_WINDOW_MS = 300_000;
export const DEFAULT_PERIOD_MS = DAY_MS;
/** Longest window or period a rule may look back over. */
export const MAX_LOOKBACK_MS = 90 * DAY_MS;
export const MAX_COOLDOWN_MINUTES = 10_080;
export const DEFAULT_COOLDOWN_MINUTES = 15;
/** Rules are evaluated after every ingest commit, so their number is bounded. */
export const MAX_GUARDRAIL_RULES = 500;

const lookback = (field: string, fallback: number) =>
  z
    .number()
    .int(`${field} must be a whole number of milliseconds`)
    .min(1000, `${field} must be 1000 to ${MAX_LOOKBACK_MS}`)
    .max(MAX_LOOKBACK_MS, `${field} must be 1000 to ${MAX_LOOKBACK_MS}`)
    .default(fallback);
const percent = (field: string) => z.number().finite().min(0, `${field} must be 0 to 100`).max(100, `${field} must be 0 to 100`);
/** A dot path of plain keys (they become JSON path literals in SQL). */
const METRIC_KEY = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,15}$/;

export const conditionConfigSchemas = {
  error_rate_threshold: z.strictObject({ threshold: percent('threshold'), windowMs: lookback('windowMs', DEFAULT_WINDOW_MS) }),
  cost_limit: z.strictObject({
    maxCostUsd: boundedNumber(0, MAX_FIGURE, 'maxCostUsd'),
    periodMs: lookback('periodMs', DEFAULT_PERIOD_MS),
  }),
  health_score_threshold: z.strictObject({
    minScore: percent('minScore'),
    dimension: z.enum(DIMENSION_NAMES, { error: `dimension must be one of: ${DIMENSION_NAMES.join(', ')}` }).optional(),
  }),
  custom_metric: z.strictObject({
    metricKey: z.string().max(200).regex(METRIC_KEY, 'metricKey must be a dot path of keys (letters, digits, _), e.g. quality.score'),
    operator: z.enum(OPERATORS, { error: `operator must be one of: ${OPERATORS.join(', ')}` }),
    value: boundedNumber(-MAX_FIGURE, MAX_FIGURE, 'value'),
  }),
} satisfies Record<ConditionType, z.ZodType>;

export type ConditionConfig<T extends ConditionType = ConditionType> = z.output<(typeof conditionConfigSchemas)[T]>;

export const actionConfigSchemas = {
  pause_agent: z.strictObject({ reason: z.string().trim().min(1).max(500).optional() }),
  notify_webhook: z.strictObject({ url: z.url({ protocol: /^https?$/, error: 'url must be an http(s) URL' }).max(2048) }),
  downgrade_model: z.strictObject({ targetModel: z.string().trim().min(1, 'targetModel is required').max(200) }),
  approval_policy: z.strictObject({ policyId: z.string().trim().min(1, 'policyId is required').max(200) }),
} satisfies Record<ActionType, z.ZodType>;

export type ActionConfig<T extends ActionType = ActionType> = z.output<(typeof actionConfigSchemas)[T]>;

const conditionType = z.enum(CONDITION_TYPES, { error: `conditionType must be one of: ${CONDITION_TYPES.join(', ')}` });
const actionType = z.enum(ACTION_TYPES, { error: `actionType must be one of: ${ACTION_TYPES.join(', ')}` });
const config = z.record(z.string(), z.unknown());
const cooldownMinutes = z
  .number()
  .int('cooldownMinutes must be a whole number')
  .min(0, `cooldownMinutes must be 0 to ${MAX_COOLDOWN_MINUTES}`)
  .max(MAX_COOLDOWN_MINUTES, `cooldownMinutes must be 0 to ${MAX_COOLDOWN_MINUTES}`);

/** The configs must fit their types; the issues point into conditionConfig / actionConfig. */
function checkConfigs(
  rule: { conditionType: ConditionType; conditionConfig: unknown; actionType: ActionType; actionConfig: unknown },
  ctx: z.RefinementCtx,
): void {
  const parts = [
    ['conditionConfig', conditionConfigSchemas[rule.conditionType].safeParse(rule.conditionConfig)],
    ['actionConfig', actionConfigSchemas[rule.actionType].safeParse(rule.actionConfig)],
  ] as const;
  for (const [field, parsed] of parts) {
    if (parsed.success) continue;
    for (const issue of parsed.error.issues) ctx.addIssue({ code: 'custom', path: [field, ...issue.path], message: issue.message });
  }
}

const definitionFields = {
  name,
  description: ruleDescription.optional(),
  agentId: identifier.nullable().optional(),
  conditionType,
  conditionConfig: config,
  actionType,
  actionConfig: config,
  cooldownMinutes,
  enabled: z.boolean(),
  dryRun: z.boolean(),
};

/** POST body; unknown keys are refused. */
export const createRuleBodySchema = z
  .strictObject({
    ...definitionFields,
    actionConfig: config.default({}),
    cooldownMinutes: cooldownMinutes.default(DEFAULT_COOLDOWN_MINUTES),
    enabled: z.boolean().default(true),
    dryRun: z.boolean().default(false),
  })
  .superRefine(checkConfigs);

/** PUT body: any subset; configs are replaced whole, and the merged rule is checked with `ruleDefinitionSchema`. */
export const updateRuleBodySchema = z.strictObject({
  name: name.optional(),
  description: ruleDescription.optional(),
  agentId: identifier.nullable().optional(),
  conditionType: conditionType.optional(),
  conditionConfig: config.optional(),
  actionType: actionType.optional(),
  actionConfig: config.optional(),
  cooldownMinutes: cooldownMinutes.optional(),
  enabled: z.boolean().optional(),
  dryRun: z.boolean().optional(),
});
export type UpdateRuleBody = z.output<typeof updateRuleBodySchema>;

export const ruleDefinitionSchema = z.strictObject(definitionFields).superRefine(checkConfigs);
export type RuleDefinition = z.infer<typeof ruleDefinitionSchema>;

export const ruleSchema = z
  .object({
    ...ruleOutIdentity,
    agentId: z.string().nullable(),
    conditionType: z.enum(CONDITION_TYPES),
    conditionConfig: config,
    actionType: z.enum(ACTION_TYPES),
    actionConfig: config,
    cooldownMinutes: z.number().int(),
    enabled: z.boolean(),
    dryRun: z.boolean(),
    triggerCount: z.number().int(),
    lastTriggeredAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'GuardrailRule' });
export type GuardrailRuleOut = z.infer<typeof ruleSchema>;

export const ACTION_STATUSES = ['applied', 'queued', 'dry_run'] as const;
export const actionResultSchema = z.object({ status: z.enum(ACTION_STATUSES), detail: z.string() });
export type ActionResult = z.infer<typeof actionResultSchema>;

export const triggerSchema = z
  .object({
    id: z.string(),
    ruleId: z.string(),
    ruleName: z.string(),
    agentId: z.string(),
    triggeredAt: z.string(),
    conditionType: z.enum(CONDITION_TYPES),
    currentValue: z.number(),
    threshold: z.number(),
    actionType: z.enum(ACTION_TYPES),
    dryRun: z.boolean(),
    actionResult: actionResultSchema,
  })
  .meta({ id: 'GuardrailTrigger' });
export type TriggerOut = z.infer<typeof triggerSchema>;

export const statusSchema = z
  .object({
    ruleId: z.string(),
    /** The rule itself, as GET /api/guardrails/:id answers it. */
    rule: ruleSchema,
    enabled: z.boolean(),
    dryRun: z.boolean(),
    /** disabled; cooldown while any agent is in cooldown; else ready. */
    state: z.enum(['disabled', 'ready', 'cooldown']),
    cooldowns: z.array(z.object({ agentId: z.string(), cooldownUntil: z.string() })),
    triggerCount: z.number().int(),
    lastTriggeredAt: z.string().nullable(),
    recentTriggers: z.array(triggerSchema),
  })
  .meta({ id: 'GuardrailStatus' });

/** GET /api/guardrails: `agentId` keeps the rules that apply to that agent, its own and those of every agent. */
export const listQuerySchema = z.object({ agentId: identifier.optional() });

export const historyQuerySchema = periodInOrder(z.object({ ...ruleHistoryPage, agentId: identifier.optional() }));
export type HistoryQuery = z.infer<typeof historyQuerySchema>;

/** What notify_webhook POSTs (also for dry runs, with `dryRun: true`). */
export interface TriggerNotification {
  triggerId: string;
  ruleId: string;
  ruleName: string;
  conditionType: ConditionType;
  currentValue: number;
  threshold: number;
  agentId: string;
  timestamp: string;
  dryRun: boolean;
  actionType: 'notify_webhook';
}
