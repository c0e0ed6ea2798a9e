import { offsetPage, routeOptions, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { registerRuleRoutes } from '../rules/index.ts';
import { deleteAlertRule } from './evaluator.ts';
import { createRuleBodySchema, historyEntrySchema, historyQuerySchema, ruleSchema, updateRuleBodySchema } from './schemas.ts';
import { changeAlertRule, createAlertRule } from './service.ts';
import { findRule, listHistory, listRules, toHistoryOut, toRuleOut } from './store.ts';

export function registerAlertRoutes(app: ZodApp, ctx: ObserveContext): void {
  registerRuleRoutes(app, {
    path: '/api/alerts/rules',
    tag: 'alerts',
    schemas: { rule: ruleSchema, create: createRuleBodySchema, update: updateRuleBodySchema },
    summaries: {
      create: 'Create an alert rule',
      list: 'List alert rules, newest first',
      get: 'One alert rule',
      update:
        'Change an alert rule; only the given fields change (scope is replaced as a whole); the rule GET answered is accepted, its read-only fields ignored',
      delete: 'Delete an alert rule; its history is kept and an open entry is resolved',
    },
    operationIds: { create: 'createAlertRule', list: 'listAlertRules', get: 'getAlertRule', update: 'updateAlertRule', delete: 'deleteAlertRule' },
    notFound: 'alertRuleNotFound',
    toOut: toRuleOut,
    list: () => listRules(ctx.database),
    find: (id) => findRule(ctx.database, id),
    create: (body, actor) => createAlertRule(ctx, body, actor),
    update: (id, changes, actor) => changeAlertRule(ctx, id, changes, actor),
    remove: (id, actor, log) => deleteAlertRule(ctx, id, actor, log),
  });

  app.get(
    '/api/alerts/history',
    routeOptions('read', {
      operationId: 'listAlertHistory',
      summary: 'Alert history, newest first',
      tags: ['alerts'],
      querystring: historyQuerySchema,
      response: { 200: z.object({ entries: z.array(historyEntrySchema), total: z.number().int(), hasMore: z.boolean() }) },
    }),
    async (request) => offsetPage('entries', await listHistory(ctx.database, request.query), request.query.offset, toHistoryOut),
  );
}
