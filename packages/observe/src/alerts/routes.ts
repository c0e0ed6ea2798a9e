import { acceptingReadBack, keyChangeActor, withChanges, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { bodyValidationError, observeError } from '../errors.ts';
import { deleteAlertRule } from './evaluator.ts';
import {
  createRuleBodySchema,
  historyEntrySchema,
  historyQuerySchema,
  ruleDefinitionSchema,
  ruleParams,
  ruleSchema,
  updateRuleBodySchema,
  type RuleDefinition,
} from './schemas.ts';
import { changeRule, findRule, insertRule, listHistory, listRules, toHistoryOut, toRuleOut, type AlertRule } from './store.ts';

/** The stored definition (without id and times), as a PUT's changes apply to it. */
function definitionOf(stored: AlertRule): RuleDefinition {
  const { name, description, enabled, condition, threshold, windowMinutes, scope, notifyChannels } = stored;
  return { name, description, enabled, condition, threshold, windowMinutes, scope, notifyChannels };
}

export function registerAlertRoutes(app: ZodApp, ctx: ObserveContext): void {
  app.post(
    '/api/alerts/rules',
    {
      schema: {
        summary: 'Create an alert rule',
        tags: ['alerts'],
        body: createRuleBodySchema,
        response: { 201: ruleSchema },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const rule = await insertRule(ctx.database, { ...body, scope: body.scope ?? {} }, keyChangeActor(request.apiKey), ctx.clock.now());
      return reply.status(201).send(toRuleOut(rule));
    },
  );

  app.get(
    '/api/alerts/rules',
    {
      schema: {
        summary: 'List alert rules, newest first',
        tags: ['alerts'],
        response: { 200: z.object({ rules: z.array(ruleSchema) }) },
      },
    },
    async () => ({ rules: (await listRules(ctx.database)).map(toRuleOut) }),
  );

  app.get(
    '/api/alerts/rules/:id',
    { schema: { summary: 'One alert rule', tags: ['alerts'], params: ruleParams, response: { 200: ruleSchema } } },
    async (request) => {
      const rule = await findRule(ctx.database, request.params.id);
      if (!rule) throw observeError('alertRuleNotFound');
      return toRuleOut(rule);
    },
  );

  app.put(
    '/api/alerts/rules/:id',
    {
      schema: {
        summary: 'Change an alert rule; only the given fields change (scope is replaced as a whole); the rule GET answered is accepted, its read-only fields ignored',
        tags: ['alerts'],
        params: ruleParams,
        body: acceptingReadBack(updateRuleBodySchema, ruleSchema),
        response: { 200: ruleSchema },
      },
    },
    async (request) => {
      const revise = (stored: AlertRule): RuleDefinition => {
        const checked = ruleDefinitionSchema.safeParse(withChanges(definitionOf(stored), request.body));
        if (!checked.success) throw bodyValidationError(checked.error.issues);
        return checked.data;
      };
      const rule = await changeRule(ctx.database, request.params.id, revise, keyChangeActor(request.apiKey), ctx.clock.now());
      if (!rule) throw observeError('alertRuleNotFound');
      return toRuleOut(rule);
    },
  );

  app.delete(
    '/api/alerts/rules/:id',
    {
      schema: {
        summary: 'Delete an alert rule; its history is kept and an open entry is resolved',
        tags: ['alerts'],
        params: ruleParams,
        response: { 200: z.object({ id: z.string(), deleted: z.literal(true) }) },
      },
    },
    async (request) => {
      if (!(await deleteAlertRule(ctx, request.params.id, keyChangeActor(request.apiKey), request.log))) throw observeError('alertRuleNotFound');
      return { id: request.params.id, deleted: true as const };
    },
  );

  app.get(
    '/api/alerts/history',
    {
      schema: {
        summary: 'Alert history, newest first',
        tags: ['alerts'],
        querystring: historyQuerySchema,
        response: { 200: z.object({ entries: z.array(historyEntrySchema), total: z.number().int(), hasMore: z.boolean() }) },
      },
    },
    async (request) => {
      const { rows, total } = await listHistory(ctx.database, request.query);
      return { entries: rows.map(toHistoryOut), total, hasMore: request.query.offset + rows.length < total };
    },
  );
}
