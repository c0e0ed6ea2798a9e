import { MASK_DETECTORS, MASK_MATCHER_SHAPES, maskFlags, maskLabel, maskPath, maskPattern } from '@vigil/platform';
import { z } from 'zod';
import { ruleDescription, ruleName, ruleOutIdentity } from '../rules/index.ts';

const common = { name: ruleName, description: ruleDescription.default(null), enabled: z.boolean().default(true) };

/** A stored rule's definition, checked whole (on create, and after a PUT's changes). */
export const ruleDefinitionSchema = z.discriminatedUnion('kind', [
  z.object({ ...common, ...MASK_MATCHER_SHAPES.path }),
  z.object({ ...common, ...MASK_MATCHER_SHAPES.regex }),
]);
export type RuleDefinition = z.output<typeof ruleDefinitionSchema>;

export type CreateRuleBody = RuleDefinition;

/** A PUT: only the fields given change; the result is checked whole (a new kind needs its path or pattern). */
export const updateRuleBodySchema = z.object({
  name: ruleName.optional(),
  description: ruleDescription.optional(),
  enabled: z.boolean().optional(),
  kind: z.enum(['path', 'regex']).optional(),
  path: maskPath.nullable().optional(),
  pattern: maskPattern.nullable().optional(),
  flags: maskFlags.nullable().optional(),
  label: maskLabel.optional(),
});
export type UpdateRuleBody = z.output<typeof updateRuleBodySchema>;

export const ruleSchema = z
  .object({
    ...ruleOutIdentity,
    enabled: z.boolean(),
    kind: z.enum(['path', 'regex']),
    path: z.string().nullable(),
    pattern: z.string().nullable(),
    flags: z.string().nullable(),
    label: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'RedactionRule' });
export type RedactionRuleOut = z.infer<typeof ruleSchema>;

const detectors = z.array(z.enum(MASK_DETECTORS)).max(MASK_DETECTORS.length);

export const dryRunBodySchema = z
  .object({
    rule: z.discriminatedUnion('kind', [z.object(MASK_MATCHER_SHAPES.path), z.object(MASK_MATCHER_SHAPES.regex)]).optional(),
    ruleId: z.string().min(1).max(256).optional(),
    detectors: detectors.optional(),
    limit: z.number().int().min(1).max(1000).default(100),
  })
  .refine((body) => body.rule !== undefined || body.ruleId !== undefined || (body.detectors?.length ?? 0) > 0, {
    message: 'name what to try: a rule, a ruleId or detectors',
  });
export type DryRunBody = z.output<typeof dryRunBodySchema>;

const redactionsSchema = z.array(z.object({ rule: z.string(), count: z.number().int() }));

export const dryRunResponseSchema = z.object({
  examined: z.number().int().describe('How many of the most recent events were tried'),
  matched: z.number().int().describe('How many of them the rule would change'),
  events: z
    .array(
      z.object({
        id: z.string(),
        sessionId: z.string(),
        timestamp: z.string(),
        redactions: redactionsSchema,
        payload: z.record(z.string(), z.unknown()),
        metadata: z.record(z.string(), z.unknown()),
      }),
    )
    .describe('The events the rule would change, as they would be stored; nothing is changed'),
});
