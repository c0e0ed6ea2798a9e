import { acceptingReadBack, keyChangeActor, toIso, withChanges, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { bodyValidationError, observeError } from '../errors.ts';
import {
  createRuleBodySchema,
  historyQuerySchema,
  ruleDefinitionSchema,
  ruleParams,
  ruleSchema,
  statusSchema,
  triggerSchema,
  updateRuleBodySchema,
  type RuleDefinition,
} from './schemas.ts';
import { activeCooldowns, changeRule, deleteRule, findRule, insertRule, listRules, listTriggers, toRuleOut, toTriggerOut, type GuardrailRule } from './store.ts';

const RECENT_TRIGGERS = 20;

/** The stored definition (without its counters and times), as a PUT's changes apply to it. */
function definitionOf(stored: GuardrailRule): RuleDefinition {
  const { name, description, agentId, conditionType, conditionConfig, actionType, actionConfig, cooldownMinutes, enabled, dryRun } = stored;
  return { name, description, agentId, conditionType, conditionConfig, actionType, actionConfig, cooldownMinutes, enabled, dryRun };
}

export function registerGuardrailRoutes(app: ZodApp, ctx: ObserveContext): void {
  app.post(
    '/api/guardrails',
    { schema: { summary: 'Create a guardrail rule', tags: ['guardrails'], body: createRuleBodySchema, response: { 201: ruleSchema } } },
    async (request, reply) => {
      const rule = await insertRule(ctx.database, request.body, keyChangeActor(request.apiKey), ctx.clock.now());
      if (!rule) throw observeError('guardrailRuleLimit');
      return reply.status(201).send(toRuleOut(rule));
    },
  );

  app.get(
    '/api/guardrails',
    { schema: { summary: 'List guardrail rules, newest first', tags: ['guardrails'], response: { 200: z.object({ rules: z.array(ruleSchema) }) } } },
    async () => ({ rules: (await listRules(ctx.database)).map(toRuleOut) }),
  );

  app.get(
    '/api/guardrails/history',
    {
      schema: {
        summary: 'Trigger history of every rule (dry runs included), newest first',
        tags: ['guardrails'],
        querystring: historyQuerySchema,
        response: { 200: z.object({ triggers: z.array(triggerSchema), total: z.number().int(), hasMore: z.boolean() }) },
      },
    },
    async (request) => {
      const { rows, total } = await listTriggers(ctx.database, request.query);
      return { triggers: rows.map(toTriggerOut), total, hasMore: request.query.offset + rows.length < total };
    },
  );

  app.get(
    '/api/guardrails/:id',
    { schema: { summary: 'One guardrail rule', tags: ['guardrails'], params: ruleParams, response: { 200: ruleSchema } } },
    async (request) => {
      const rule = await findRule(ctx.database, request.params.id);
      if (!rule) throw observeError('guardrailRuleNotFound');
      return toRuleOut(rule);
    },
  );

  app.put(
    '/api/guardrails/:id',
    {
      schema: {
        summary: 'Change a guardrail rule; only the given fields change (each config is replaced whole); the rule GET answered is accepted, its read-only fields ignored',
        tags: ['guardrails'],
        params: ruleParams,
        body: acceptingReadBack(updateRuleBodySchema, ruleSchema),
        response: { 200: ruleSchema },
      },
    },
    async (request) => {
      const revise = (stored: GuardrailRule): RuleDefinition => {
        const checked = ruleDefinitionSchema.safeParse(withChanges(definitionOf(stored), request.body));
        if (!checked.success) throw bodyValidationError(checked.error.issues);
        return checked.data;
      };
      const rule = await changeRule(ctx.database, request.params.id, revise, keyChangeActor(request.apiKey), ctx.clock.now());
      if (!rule) throw observeError('guardrailRuleNotFound');
      return toRuleOut(rule);
    },
  );

  app.delete(
    '/api/guardrails/:id',
    {
      schema: {
        summary: 'Delete a guardrail rule; its trigger history is kept',
        tags: ['guardrails'],
        params: ruleParams,
        response: { 200: z.object({ id: z.string(), deleted: z.literal(true), ok: z.literal(true) }) },
      },
    },
    async (request) => {
      if (!(await deleteRule(ctx.database, request.params.id, keyChangeActor(request.apiKey), ctx.clock.now()))) throw observeError('guardrailRuleNotFound');
      return { id: request.params.id, deleted: true as const, ok: true as const };
    },
  );

  app.get(
    '/api/guardrails/:id/status',
    {
      schema: {
        summary: 'Rule status: the rule, ready, in cooldown (per agent) or disabled, with its recent triggers',
        tags: ['guardrails'],
        params: ruleParams,
        response: { 200: statusSchema },
      },
    },
    async (request) => {
      const rule = await findRule(ctx.database, request.params.id);
      if (!rule) throw observeError('guardrailRuleNotFound');
      const now = ctx.clock.now();
      const [cooldowns, recent] = await Promise.all([
        activeCooldowns(ctx.database, rule, now),
        listTriggers(ctx.database, { ruleId: rule.id, limit: RECENT_TRIGGERS, offset: 0 }),
      ]);
      return {
        ruleId: rule.id,
        rule: toRuleOut(rule),
        enabled: rule.enabled,
        dryRun: rule.dryRun,
        state: !rule.enabled ? ('disabled' as const) : cooldowns.length > 0 ? ('cooldown' as const) : ('ready' as const),
        cooldowns: cooldowns.map((c) => ({ agentId: c.agentId, cooldownUntil: toIso(c.until) })),
        triggerCount: rule.triggerCount,
        lastTriggeredAt: rule.lastTriggeredAt === null ? null : toIso(rule.lastTriggeredAt),
        recentTriggers: recent.rows.map(toTriggerOut),
      };
    },
  );
}
