import { routeOptions, type ZodApp } from '@vigil/platform';
import type { ObserveContext } from '../context.ts';
import { registerRuleRoutes } from '../rules/index.ts';
import { dryRunBodySchema, dryRunResponseSchema, ruleDefinitionSchema, ruleSchema, updateRuleBodySchema } from './schemas.ts';
import type { EventRedaction } from './service.ts';
import { findRule, listRules, toRuleOut } from './store.ts';

export function registerRedactionRoutes(app: ZodApp, ctx: ObserveContext, redaction: EventRedaction): void {
  registerRuleRoutes(app, {
    path: '/api/redaction/rules',
    tag: 'redaction',
    schemas: { rule: ruleSchema, create: ruleDefinitionSchema, update: updateRuleBodySchema },
    summaries: {
      create: 'Create a redaction rule; it applies to every event ingested from then on (a regular expression that can backtrack catastrophically is refused)',
      list: 'List the redaction rules added through the API, newest first (those of REDACTION_RULES_FILE are configuration)',
      get: 'One redaction rule',
      update: 'Change a redaction rule; only the given fields change; the rule GET answered is accepted, its read-only fields ignored',
      delete: 'Delete a redaction rule; events already stored keep their markers',
    },
    operationIds: {
      create: 'createRedactionRule',
      list: 'listRedactionRules',
      get: 'getRedactionRule',
      update: 'updateRedactionRule',
      delete: 'deleteRedactionRule',
    },
    notFound: 'redactionRuleNotFound',
    toOut: toRuleOut,
    list: () => listRules(ctx.database),
    find: (id) => findRule(ctx.database, id),
    create: (body, actor) => redaction.create(body, actor),
    update: (id, changes, actor) => redaction.update(id, changes, actor),
    remove: (id, actor) => redaction.remove(id, actor),
  });

  app.post(
    '/api/redaction/dry-run',
    routeOptions('admin', {
      operationId: 'dryRunRedaction',
      summary: 'What a redaction rule (or detectors) would change on the most recent events, changing nothing',
      description:
        'Give a rule definition (`rule`), a stored rule (`ruleId`) or `detectors`; the `limit` most recent events are redacted in memory and those that would change are answered as they would be stored.',
      tags: ['redaction'],
      body: dryRunBodySchema,
      response: { 200: dryRunResponseSchema },
    }),
    async (request) => redaction.dryRun(request.body),
  );
}
