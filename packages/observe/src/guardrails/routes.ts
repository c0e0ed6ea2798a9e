import { offsetPage, routeOptions, toIso, toIsoOrNull, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { registerRuleRoutes, ruleParams } from '../rules/index.ts';
import { createRuleBodySchema, historyQuerySchema, listQuerySchema, ruleSchema, statusSchema, triggerSchema, updateRuleBodySchema } from './schemas.ts';
import { changeGuardrailRule, createGuardrailRule, deleteGuardrailRule } from './service.ts';
import { activeCooldowns, findRule, listRules, listTriggers, toRuleOut, toTriggerOut } from './store.ts';

const RECENT_TRIGGERS = 20;

export function registerGuardrailRoutes(app: ZodApp, ctx: ObserveContext): void {
  registerRuleRoutes(app, {
    path: '/api/guardrails',
    tag: 'guardrails',
    schemas: { rule: ruleSchema, create: createRuleBodySchema, update: updateRuleBodySchema },
    summaries: {
      create: 'Create a guardrail rule',
      list: 'List guardrail rules, newest first; `agentId`: the rules that apply to that agent (its own and those of every agent)',
      get: 'One guardrail rule',
      update:
        'Change a guardrail rule; only the given fields change (each config is replaced whole); the rule GET answered is accepted, its read-only fields ignored',
      delete: 'Delete a guardrail rule; its trigger history is kept',
    },
    operationIds: {
      create: 'createGuardrailRule',
      list: 'listGuardrailRules',
      get: 'getGuardrailRule',
      update: 'updateGuardrailRule',
      delete: 'deleteGuardrailRule',
    },
    createErrorStatuses: [409],
    notFound: 'guardrailRuleNotFound',
    deleteAnswersOk: true,
    toOut: toRuleOut,
    listQuery: listQuerySchema,
    list: (query) => listRules(ctx.database, query),
    find: (id) => findRule(ctx.database, id),
    create: (body, actor) => createGuardrailRule(ctx, body, actor),
    update: (id, changes, actor) => changeGuardrailRule(ctx, id, changes, actor),
    remove: (id, actor) => deleteGuardrailRule(ctx, id, actor),
  });

  app.get(
    '/api/guardrails/history',
    routeOptions('read', {
      operationId: 'listGuardrailHistory',
      summary: 'Trigger history of every rule (dry runs included), newest first',
      tags: ['guardrails'],
      querystring: historyQuerySchema,
      response: { 200: z.object({ triggers: z.array(triggerSchema), total: z.number().int(), hasMore: z.boolean() }) },
    }),
    async (request) => offsetPage('triggers', await listTriggers(ctx.database, request.query), request.query.offset, toTriggerOut),
  );

  app.get(
    '/api/guardrails/:id/status',
    routeOptions('read', {
      operationId: 'getGuardrailRuleStatus',
      summary: 'Rule status: the rule, ready, in cooldown (per agent) or disabled, with its recent triggers',
      tags: ['guardrails'],
      params: ruleParams,
      response: { 200: statusSchema },
    }),
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
        lastTriggeredAt: toIsoOrNull(rule.lastTriggeredAt),
        recentTriggers: recent.rows.map(toTriggerOut),
      };
    },
  );
}
