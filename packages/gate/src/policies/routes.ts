import { deletedAnswer, deletedResponse, isSafePattern, judgePattern, routeOptions, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import { MAX_OFFSET, MAX_PRIORITY } from '../bounds.ts';
import type { GateContext } from '../context.ts';
import { auditActor } from '../auth/index.ts';
import { quorumSchema } from '../approvers/index.ts';
import { deadlinePlanSchema } from '../escalation/index.ts';
import { gateError } from '../errors.ts';
import { compilePolicySet, DECISIONS, URGENCIES, evaluatePolicies, ruleSchema, type PolicyDefinition, type Rule } from './engine.ts';
import { allPolicies, createPolicy, deletePolicy, listPolicies, toDefinition, toPolicy, updatePolicy } from './store.ts';

const policyBody = z
  .object({
    name: z.string().trim().min(1).max(200),
    priority: z.number().int().min(-MAX_PRIORITY).max(MAX_PRIORITY).default(100),
    enabled: z.boolean().default(true),
    rules: z.array(ruleSchema).max(100),
  })
  .strict();

const policyPatch = z
  .object({
    name: z.string().trim().min(1).max(200),
    priority: z.number().int().min(-MAX_PRIORITY).max(MAX_PRIORITY),
    enabled: z.boolean(),
    rules: z.array(ruleSchema).max(100),
  })
  .partial()
  .strict();

const policySchema = z
  .object({
    id: z.string(),
    name: z.string(),
    priority: z.number().int(),
    enabled: z.boolean(),
    rules: z.array(ruleSchema),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Policy' });

const idParams = z.object({ id: z.string().min(1).max(100) });

const jsonObject = z.record(z.string(), z.unknown());

/** POST /api/policies/simulate: a request as POST /api/requests takes it, plus an optional unsaved policy. */
const simulateBody = z
  .object({
    action: z.string().trim().min(1).max(200),
    params: jsonObject.default({}),
    context: jsonObject.default({}),
    urgency: z.enum(URGENCIES).default('normal'),
    candidate: policyBody
      .extend({ id: z.string().min(1).max(100).optional() })
      .optional()
      .meta({ description: 'An unsaved policy evaluated as if saved: with the id of a stored policy it stands in for that policy, else it is added' }),
  })
  .strict();

const simulateResponse = z.object({
  decision: z.object({
    decision: z.enum(DECISIONS),
    policyId: z.string().nullable(),
    policyName: z.string().nullable(),
    ruleIndex: z.number().int().nullable(),
    approvers: z.array(z.string()),
    channels: z.array(z.string()),
    requireReason: z.boolean(),
    onDeadline: deadlinePlanSchema.optional().describe("For a routed request: what its deadline does (docs/guide/escalation.md); the rule's, else the default"),
    quorum: quorumSchema.optional().describe('For a request routed to a human whose rule needs several approvals (docs/guide/approvers.md)'),
  }),
  status: z.enum(['approved', 'denied', 'pending']),
  matchedRule: ruleSchema.nullable(),
  candidateMatched: z.boolean(),
  policiesEvaluated: z.number().int(),
});

/** The id a candidate without one takes in the answer. */
export const CANDIDATE_POLICY_ID = 'candidate';

/** Every regex is judged when the policy is saved: an unsafe one is refused with the rule and path that hold it. */
function assertSafePatterns(rules: readonly Rule[]): void {
  rules.forEach((rule, index) => {
    for (const [path, matcher] of Object.entries(rule.match)) {
      if (matcher !== null && typeof matcher === 'object' && matcher.$regex !== undefined) {
        const verdict = judgePattern(matcher.$regex);
        if (!verdict.safe) {
          throw gateError('unsafePattern', `rules[${index}].match["${path}"].$regex is refused: ${verdict.reason}`);
        }
      }
    }
  });
}

export function registerPolicyRoutes(app: ZodApp, ctx: GateContext): void {
  app.get(
    '/api/policies',
    routeOptions('admin', {
      operationId: 'listPolicies',
      summary: 'List policies in evaluation order',
      description: 'In evaluation order: priority, then id.',
      tags: ['policies'],
      querystring: z.object({
        limit: z.coerce.number().int().min(1).max(500).default(50),
        offset: z.coerce.number().int().min(0).max(MAX_OFFSET).default(0),
      }),
      response: {
        200: z.object({
          policies: z.array(policySchema),
          pagination: z.object({ total: z.number().int(), limit: z.number().int(), offset: z.number().int(), hasMore: z.boolean() }),
          refused: z
            .array(z.object({ id: z.string(), name: z.string(), reason: z.string() }))
            .describe('Stored policies the engine does not apply: their row is not as their last logged change left it (edited or inserted in the database)'),
        }),
      },
    }),
    async (request) => {
      const { limit, offset } = request.query;
      const [{ rows, total }, refused] = await Promise.all([listPolicies(ctx.database, limit, offset), ctx.policies.refused()]);
      return { policies: rows.map(toPolicy), pagination: { total, limit, offset, hasMore: offset + rows.length < total }, refused };
    },
  );

  app.post(
    '/api/policies',
    routeOptions('admin', {
      operationId: 'createPolicy',
      summary: 'Create a policy',
      description:
        "A rule's `match` maps paths (`action`, `params.amount`, or just `amount`) to an exact value or an operator object (`$lt`, `$gt`, `$lte`, `$gte`, `$in`, `$regex`); several operators must all hold, and a path that does not exist never matches. A `$regex` prone to catastrophic backtracking is a 400.",
      tags: ['policies'],
      body: policyBody,
      response: { 201: policySchema },
    }),
    async (request, reply) => {
      assertSafePatterns(request.body.rules);
      const row = await createPolicy(ctx.database, request.body, auditActor(request), ctx.clock.now());
      ctx.policies.invalidate();
      return reply.status(201).send(toPolicy(row));
    },
  );

  app.put(
    '/api/policies/:id',
    routeOptions('admin', {
      operationId: 'updatePolicy',
      summary: 'Update a policy (fields not given stay as they are)',
      tags: ['policies'],
      params: idParams,
      body: policyPatch,
      response: { 200: policySchema },
    }),
    async (request) => {
      if (request.body.rules) assertSafePatterns(request.body.rules);
      const row = await updatePolicy(ctx.database, request.params.id, request.body, auditActor(request), ctx.clock.now());
      if (!row) throw gateError('policyNotFound');
      ctx.policies.invalidate();
      return toPolicy(row);
    },
  );

  app.delete(
    '/api/policies/:id',
    routeOptions('admin', {
      operationId: 'deletePolicy',
      summary: 'Delete a policy',
      tags: ['policies'],
      params: idParams,
      response: { 200: deletedResponse },
    }),
    async (request) => {
      if (!(await deletePolicy(ctx.database, request.params.id, auditActor(request), ctx.clock.now()))) throw gateError('policyNotFound');
      ctx.policies.invalidate();
      return deletedAnswer(request.params.id);
    },
  );

  app.post(
    '/api/policies/simulate',
    routeOptions('admin', {
      operationId: 'simulatePolicies',
      summary: 'Try a request against the policies without creating it (nothing is stored, no webhook is sent)',
      description:
        'Evaluates the request with the same engine as POST /api/requests against the stored policies as they are now ' +
        '(enabled ones, by priority) and, when given, an unsaved `candidate` policy. `status` is what the request would ' +
        'get: approved (auto_approve), denied (auto_deny) or pending (route_to_human, route_to_agent, or no rule matched).',
      tags: ['policies'],
      body: simulateBody,
      response: { 200: simulateResponse },
    }),
    async (request) => {
      const { candidate, ...input } = request.body;
      // As the engine applies them: without the policies it refuses.
      const refused = new Set((await ctx.policies.refused()).map((policy) => policy.id));
      const definitions: PolicyDefinition[] = (await allPolicies(ctx.database)).filter((row) => !refused.has(row.id)).map(toDefinition);
      let candidateId: string | null = null;
      if (candidate) {
        assertSafePatterns(candidate.rules);
        candidateId = candidate.id ?? CANDIDATE_POLICY_ID;
        const definition: PolicyDefinition = {
          id: candidateId,
          name: candidate.name,
          priority: candidate.priority,
          enabled: candidate.enabled,
          rules: candidate.rules,
        };
        const replaced = definitions.findIndex((d) => d.id === candidateId);
        if (replaced >= 0) definitions[replaced] = definition;
        else definitions.push(definition);
      }
      const set = compilePolicySet(definitions, isSafePattern);
      const decision = evaluatePolicies(set, { ...input, status: 'pending' });
      const policy = set.policies.find((p) => p.id === decision.policyId);
      const matchedRule = policy && decision.ruleIndex !== null ? (policy.rules[decision.ruleIndex]?.rule ?? null) : null;
      return {
        decision,
        status: decision.decision === 'auto_approve' ? ('approved' as const) : decision.decision === 'auto_deny' ? ('denied' as const) : ('pending' as const),
        matchedRule,
        candidateMatched: candidateId !== null && decision.policyId === candidateId,
        policiesEvaluated: set.policies.length,
      };
    },
  );
}
