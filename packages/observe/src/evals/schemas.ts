import { canonicalJson } from '@vigil/platform';
import { z } from 'zod';
import { boundedNumber, MAX_FIGURE, showBound } from '../bounds.ts';
import { clientAgentId, identifier, SEVERITIES } from '../events/index.ts';

// ---------------------------------------------------------------------------------------------
// Limits (docs/guide/behaviour.md, *Compliance evaluations*)
// ---------------------------------------------------------------------------------------------

export const MAX_RULES = 100;
export const MAX_TOOLS_PER_RULE = 100;
export const MAX_RULE_ID_LENGTH = 200;
export const MAX_TOOL_PATTERN_LENGTH = 256;
export const MAX_DESCRIPTION_LENGTH = 1000;
export const MAX_RUBRIC_LENGTH = 10_000;
export const MAX_NAME_LENGTH = 200;
export const MAX_MODEL_LENGTH = 200;
export const MAX_CASES = 1000;
/** Canonical JSON of one case's input, and of its expected output. */
export const MAX_CASE_JSON_LENGTH = 100_000;
export const DEFAULT_CASE_TIMEOUT_SECONDS = 30;
export const MAX_CASE_TIMEOUT_SECONDS = 600;
/** The judge passes a session when score >= this, unless passThreshold is given. */
export const DEFAULT_JUDGE_PASS_THRESHOLD = 0.7;

export const RULE_TYPES = ['tool_denylist', 'tool_allowlist', 'max_cost', 'no_severity_above'] as const;
export type Severity = (typeof SEVERITIES)[number];

export const EVALUATOR_KINDS = ['compliance', 'llm_judge'] as const;
export type EvaluatorKind = (typeof EVALUATOR_KINDS)[number];

// ---------------------------------------------------------------------------------------------
// Compliance rules
// ---------------------------------------------------------------------------------------------

const ruleId = z
  .string({ error: `id is required (1 to ${MAX_RULE_ID_LENGTH} characters)` })
  .min(1, `id must be 1 to ${MAX_RULE_ID_LENGTH} characters`)
  .max(MAX_RULE_ID_LENGTH, `id must be 1 to ${MAX_RULE_ID_LENGTH} characters`);
const description = z.string().max(MAX_DESCRIPTION_LENGTH, `description must be at most ${MAX_DESCRIPTION_LENGTH} characters`).optional();

/** A tool name, or a pattern with a leading and/or trailing `*`; a `*` anywhere else is refused. */
const toolPattern = z
  .string()
  .min(1, `a tool must be 1 to ${MAX_TOOL_PATTERN_LENGTH} characters`)
  .max(MAX_TOOL_PATTERN_LENGTH, `a tool must be 1 to ${MAX_TOOL_PATTERN_LENGTH} characters`)
  .refine((pattern) => !pattern.slice(1, -1).includes('*'), { message: 'a * is a wildcard only at the start or the end of a tool pattern' });

const tools = z
  .array(toolPattern, { error: `tools is required (1 to ${MAX_TOOLS_PER_RULE} tool names or patterns)` })
  .min(1, `tools must hold 1 to ${MAX_TOOLS_PER_RULE} entries`)
  .max(MAX_TOOLS_PER_RULE, `tools must hold 1 to ${MAX_TOOLS_PER_RULE} entries`);

export const complianceRuleSchema = z.discriminatedUnion(
  'type',
  [
    z.strictObject({ id: ruleId, type: z.literal('tool_denylist'), tools, description }),
    z.strictObject({ id: ruleId, type: z.literal('tool_allowlist'), tools, description }),
    z.strictObject({
      id: ruleId,
      type: z.literal('max_cost'),
      maxUsd: boundedNumber(0, MAX_FIGURE, 'maxUsd', `maxUsd is required (a number of USD, 0 to ${showBound(MAX_FIGURE)})`),
      description,
    }),
    z.strictObject({
      id: ruleId,
      type: z.literal('no_severity_above'),
      severity: z.enum(SEVERITIES, { error: `severity must be one of: ${SEVERITIES.join(', ')}` }),
      description,
    }),
  ],
  { error: (issue) => (issue.code === 'invalid_union' ? `type must be one of: ${RULE_TYPES.join(', ')}` : undefined) },
);
export type ComplianceRule = z.infer<typeof complianceRuleSchema>;

export const rulesSchema = z
  .array(complianceRuleSchema, { error: `rules must be an array of 1 to ${MAX_RULES} rules` })
  .min(1, `rules must hold 1 to ${MAX_RULES} rules`)
  .max(MAX_RULES, `rules must hold 1 to ${MAX_RULES} rules`)
  .superRefine((rules, ctx) => {
    const ids = rules.map((rule) => rule.id);
    ids.forEach((id, index) => {
      if (ids.indexOf(id) !== index) ctx.addIssue({ code: 'custom', path: [index, 'id'], message: `rule id ${JSON.stringify(id)} is used twice` });
    });
  });

const passThreshold = z
  .number({ error: 'passThreshold must be a number from 0 to 1' })
  .finite()
  .min(0, 'passThreshold must be from 0 to 1')
  .max(1, 'passThreshold must be from 0 to 1');

const rubric = z
  .string({ error: `rubric is required (1 to ${MAX_RUBRIC_LENGTH} characters)` })
  .refine((text) => text.trim().length > 0, { message: 'rubric must not be blank' })
  .refine((text) => text.length <= MAX_RUBRIC_LENGTH, { message: `rubric must be at most ${MAX_RUBRIC_LENGTH} characters` });

const model = z
  .string()
  .trim()
  .min(1, `model must be 1 to ${MAX_MODEL_LENGTH} characters`)
  .max(MAX_MODEL_LENGTH, `model must be 1 to ${MAX_MODEL_LENGTH} characters`);

/** A body either names a saved evaluator or carries its own definition, never both. */
function exclusive(own: readonly string[], ownName: string) {
  return (body: Record<string, unknown>, ctx: z.RefinementCtx): void => {
    const present = own.filter((key) => body[key] !== undefined);
    if (body.evaluatorId === undefined) {
      if (body[ownName] === undefined) ctx.addIssue({ code: 'custom', path: [ownName], message: `${ownName} is required (or give evaluatorId)` });
      return;
    }
    for (const key of present) {
      ctx.addIssue({ code: 'custom', path: [key], message: `${key} cannot be combined with evaluatorId (the evaluator defines it)` });
    }
  };
}

/** POST /api/eval/sessions/:sessionId/compliance: `{rules, passThreshold?}` or `{evaluatorId}`. */
export const complianceBodySchema = z
  .strictObject({ rules: rulesSchema.optional(), passThreshold: passThreshold.optional(), evaluatorId: identifier.optional() })
  .superRefine(exclusive(['rules', 'passThreshold'], 'rules'));
export type ComplianceBody = z.infer<typeof complianceBodySchema>;

/** POST /api/eval/sessions/:sessionId/score: `{rubric, model?, passThreshold?}` or `{evaluatorId}`. */
export const scoreBodySchema = z
  .strictObject({ rubric: rubric.optional(), model: model.optional(), passThreshold: passThreshold.optional(), evaluatorId: identifier.optional() })
  .superRefine(exclusive(['rubric', 'model', 'passThreshold'], 'rubric'));
export type ScoreBody = z.infer<typeof scoreBodySchema>;

export const sessionParams = z.object({ sessionId: identifier });

// ---------------------------------------------------------------------------------------------
// Guardrail breach (service to service)
// ---------------------------------------------------------------------------------------------

const shortText = (name: string, max: number) =>
  z
    .string({ error: `${name} must be a string of 1 to ${max} characters` })
    .min(1, `${name} must be 1 to ${max} characters`)
    .max(max, `${name} must be 1 to ${max} characters`);

/** What the approval service sends (gate/src/requests/breach.ts). */
export const breachBodySchema = z.strictObject({
  sessionId: identifier,
  agentId: clientAgentId,
  breach: z.strictObject({
    ruleId: shortText('ruleId', 500),
    ruleType: shortText('ruleType', 100).optional(),
    tool: shortText('tool', 500).optional(),
    reason: shortText('reason', 10_000).optional(),
    source: shortText('source', 100),
  }),
});
export type BreachBody = z.infer<typeof breachBodySchema>;

// ---------------------------------------------------------------------------------------------
// Evaluators
// ---------------------------------------------------------------------------------------------

const name = z
  .string({ error: `name is required (1 to ${MAX_NAME_LENGTH} characters)` })
  .trim()
  .min(1, `name must be 1 to ${MAX_NAME_LENGTH} characters`)
  .max(MAX_NAME_LENGTH, `name must be 1 to ${MAX_NAME_LENGTH} characters`);

export const createEvaluatorBodySchema = z
  .strictObject({
    name,
    kind: z.enum(EVALUATOR_KINDS, { error: `kind must be one of: ${EVALUATOR_KINDS.join(', ')}` }),
    rules: rulesSchema.optional(),
    rubric: rubric.optional(),
    passThreshold: passThreshold.optional(),
    model: model.optional(),
  })
  .superRefine((body, ctx) => {
    const required = body.kind === 'compliance' ? 'rules' : 'rubric';
    const foreign = body.kind === 'compliance' ? ['rubric', 'model'] : ['rules'];
    if (body[required] === undefined) ctx.addIssue({ code: 'custom', path: [required], message: `${required} is required for kind ${body.kind}` });
    for (const key of foreign) {
      if (body[key as keyof typeof body] !== undefined) {
        ctx.addIssue({ code: 'custom', path: [key], message: `${key} does not apply to kind ${body.kind}` });
      }
    }
  });
export type CreateEvaluatorBody = z.infer<typeof createEvaluatorBodySchema>;

export const idParams = z.object({ id: identifier });

// ---------------------------------------------------------------------------------------------
// Datasets and runs
// ---------------------------------------------------------------------------------------------

/** A JSON value that must be present, whose canonical form is at most MAX_CASE_JSON_LENGTH characters. */
const caseJson = (what: string) =>
  z.unknown().superRefine((value, ctx) => {
    if (value === undefined) {
      ctx.addIssue({ code: 'custom', message: `${what} is required` });
      return;
    }
    if (canonicalJson(value).length > MAX_CASE_JSON_LENGTH) {
      ctx.addIssue({ code: 'custom', message: `${what} must be at most ${MAX_CASE_JSON_LENGTH} characters of JSON` });
    }
  });

export const createDatasetBodySchema = z.strictObject({
  name,
  cases: z
    .array(z.strictObject({ input: caseJson('input'), expected: caseJson('expected').optional() }), {
      error: `cases is required (1 to ${MAX_CASES} cases)`,
    })
    .min(1, `cases must hold 1 to ${MAX_CASES} cases`)
    .max(MAX_CASES, `cases must hold 1 to ${MAX_CASES} cases`),
});
export type CreateDatasetBody = z.infer<typeof createDatasetBodySchema>;

export const createRunBodySchema = z.strictObject({
  agentId: identifier,
  webhookUrl: z.url({ protocol: /^https?$/, error: 'webhookUrl must be an http(s) URL' }).max(2048, 'webhookUrl must be at most 2048 characters'),
  evaluatorId: identifier.optional(),
  caseTimeoutSeconds: z
    .number()
    .int('caseTimeoutSeconds must be a whole number')
    .min(1, `caseTimeoutSeconds must be 1 to ${MAX_CASE_TIMEOUT_SECONDS}`)
    .max(MAX_CASE_TIMEOUT_SECONDS, `caseTimeoutSeconds must be 1 to ${MAX_CASE_TIMEOUT_SECONDS}`)
    .default(DEFAULT_CASE_TIMEOUT_SECONDS),
});

/** What the agent webhook answers (extra fields are ignored). */
export const webhookAnswerSchema = z.looseObject({ sessionId: identifier, output: z.unknown().optional() });

// ---------------------------------------------------------------------------------------------
// Responses (documentation; responses are serialised as built)
// ---------------------------------------------------------------------------------------------

const chainedEventSchema = z.object({ id: z.string(), hash: z.string(), prevHash: z.string().nullable() });
const violationSchema = z.object({ ruleId: z.string(), ruleType: z.string(), detail: z.string() });

export const complianceResultSchema = z
  .object({
    sessionId: z.string(),
    method: z.literal('deterministic'),
    score: z.number(),
    passed: z.boolean(),
    reasoning: z.string(),
    violations: z.array(violationSchema),
    rulesEvaluated: z.number().int(),
    event: chainedEventSchema,
  })
  .meta({ id: 'ComplianceResult' });
export type ComplianceResult = z.infer<typeof complianceResultSchema>;
export type Violation = z.infer<typeof violationSchema>;

export const judgeResultSchema = z
  .object({
    sessionId: z.string(),
    method: z.literal('llm_judge'),
    score: z.number(),
    passed: z.boolean(),
    reasoning: z.string(),
    judgeModel: z.string(),
    costUsd: z.number(),
    tokenCount: z.number().int(),
    event: chainedEventSchema,
  })
  .meta({ id: 'JudgeResult' });
export type JudgeResult = z.infer<typeof judgeResultSchema>;

export const breachResultSchema = z.object({ recorded: z.literal(true), eventId: z.string() });

export const evaluatorSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    kind: z.enum(EVALUATOR_KINDS),
    rules: z.array(z.record(z.string(), z.unknown())).nullable(),
    rubric: z.string().nullable(),
    passThreshold: z.number().nullable(),
    model: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'Evaluator' });
export type EvaluatorOut = z.infer<typeof evaluatorSchema>;

const datasetCaseSchema = z.object({ id: z.string(), index: z.number().int(), input: z.unknown(), expected: z.unknown() });
export const datasetSummarySchema = z.object({ id: z.string(), name: z.string(), caseCount: z.number().int(), createdAt: z.string() });
export const datasetSchema = datasetSummarySchema.extend({ cases: z.array(datasetCaseSchema) }).meta({ id: 'Dataset' });
export type DatasetOut = z.infer<typeof datasetSchema>;
export type DatasetSummaryOut = z.infer<typeof datasetSummarySchema>;

const runCaseSchema = z.object({
  caseId: z.string(),
  index: z.number().int(),
  sessionId: z.string().nullable(),
  passed: z.boolean().nullable(),
  score: z.number().nullable(),
  error: z.string().nullable(),
  actual: z.unknown().describe("the output the agent's webhook answered (null when none)"),
  reasoning: z.string().nullable().describe("the evaluator's reasoning (null without an evaluator)"),
});
export const runSchema = z
  .object({
    id: z.string(),
    datasetId: z.string(),
    agentId: z.string(),
    evaluatorId: z.string().nullable(),
    status: z.enum(['running', 'completed']),
    totalCases: z.number().int(),
    completedCases: z.number().int(),
    passedCases: z.number().int(),
    failedCases: z.number().int(),
    createdAt: z.string(),
    finishedAt: z.string().nullable(),
    cases: z.array(runCaseSchema),
  })
  .meta({ id: 'EvalRun' });
export type RunOut = z.infer<typeof runSchema>;
/** A run without its cases, as a dataset's list of runs shows it. */
export const runSummarySchema = runSchema.omit({ cases: true }).meta({ id: 'EvalRunSummary' });
export const runListQuerySchema = z.object({ limit: z.coerce.number().int().min(1).max(200).default(50) });
