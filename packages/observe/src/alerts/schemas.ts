import { periodInOrder } from '@vigil/platform';
import { z } from 'zod';
import { boundedNumber, MAX_FIGURE } from '../bounds.ts';
import { identifier } from '../events/index.ts';
import { ruleDescription, ruleHistoryPage, ruleName as name, ruleOutIdentity } from '../rules/index.ts';

export const ALERT_CONDITIONS = ['error_rate_exceeds', 'cost_exceeds', 'latency_exceeds', 'event_count_exceeds', 'no_events_for'] as const;
export type AlertCondition = (typeof ALERT_CONDITIONS)[number];

export const MAX_WINDOW_MINUTES = 43_200;
export const MAX_NOTIFY_CHANNELS = 20;

const condition = z.enum(ALERT_CONDITIONS, { error: `condition must be one of: ${ALERT_CONDITIONS.join(', ')}` });
const threshold = boundedNumber(0, MAX_FIGURE, 'threshold');
const windowMinutes = z
  .number()
  .int('windowMinutes must be a whole number of minutes')
  .min(1, `windowMinutes must be 1 to ${MAX_WINDOW_MINUTES}`)
  .max(MAX_WINDOW_MINUTES, `windowMinutes must be 1 to ${MAX_WINDOW_MINUTES}`);

export const scopeSchema = z
  .strictObject({
    agentId: identifier.optional(),
    /** Sessions that carry every listed tag. */
    tags: z.array(z.string().min(1).max(200)).max(100).optional(),
  })
  .meta({ id: 'AlertScope' });
export type AlertScope = z.infer<typeof scopeSchema>;

const channel = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2048);
const notifyChannels = z.array(channel).max(MAX_NOTIFY_CHANNELS, `notifyChannels holds at most ${MAX_NOTIFY_CHANNELS} URLs`);

/** Rules that span fields: an error rate is a ratio, and a channel is listed once. */
function checkRule(rule: { condition?: AlertCondition; threshold?: number; notifyChannels?: string[] }, ctx: z.RefinementCtx): void {
  if (rule.condition === 'error_rate_exceeds' && rule.threshold !== undefined && rule.threshold > 1) {
    ctx.addIssue({ code: 'custom', path: ['threshold'], message: 'threshold of error_rate_exceeds is a ratio from 0 to 1' });
  }
  const channels = rule.notifyChannels ?? [];
  channels.forEach((url, index) => {
    if (channels.indexOf(url) !== index) ctx.addIssue({ code: 'custom', path: ['notifyChannels', index], message: 'URL is listed twice' });
  });
}

/** POST body; unknown keys are refused. */
export const createRuleBodySchema = z
  .strictObject({
    name,
    description: ruleDescription.default(null),
    enabled: z.boolean().default(true),
    condition,
    threshold,
    windowMinutes,
    scope: scopeSchema.optional(),
    notifyChannels: notifyChannels.default([]),
  })
  .superRefine(checkRule);
export type CreateRuleBody = z.output<typeof createRuleBodySchema>;

/** PUT body: any subset of the creation fields; the merged rule is checked with `ruleDefinitionSchema`. */
export const updateRuleBodySchema = z.strictObject({
  name: name.optional(),
  description: ruleDescription.optional(),
  enabled: z.boolean().optional(),
  condition: condition.optional(),
  threshold: threshold.optional(),
  windowMinutes: windowMinutes.optional(),
  scope: scopeSchema.optional(),
  notifyChannels: notifyChannels.optional(),
});
export type UpdateRuleBody = z.output<typeof updateRuleBodySchema>;

/** A complete rule definition (what is stored); a PUT must leave the rule valid by this schema. */
export const ruleDefinitionSchema = z
  .strictObject({ name, description: ruleDescription, enabled: z.boolean(), condition, threshold, windowMinutes, scope: scopeSchema, notifyChannels })
  .superRefine(checkRule);
export type RuleDefinition = z.infer<typeof ruleDefinitionSchema>;

export const ruleSchema = z
  .object({
    ...ruleOutIdentity,
    enabled: z.boolean(),
    condition: z.enum(ALERT_CONDITIONS),
    threshold: z.number(),
    windowMinutes: z.number().int(),
    scope: z.object({ agentId: z.string().optional(), tags: z.array(z.string()).optional() }),
    notifyChannels: z.array(z.string()),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'AlertRule' });
export type AlertRuleOut = z.infer<typeof ruleSchema>;

export const historyEntrySchema = z
  .object({
    id: z.string(),
    ruleId: z.string(),
    triggeredAt: z.string(),
    resolvedAt: z.string().optional(),
    currentValue: z.number(),
    threshold: z.number(),
    notified: z.boolean(),
  })
  .meta({ id: 'AlertHistoryEntry' });
export type HistoryEntryOut = z.infer<typeof historyEntrySchema>;

export const historyQuerySchema = periodInOrder(z.object(ruleHistoryPage));
export type HistoryQuery = z.infer<typeof historyQuerySchema>;
