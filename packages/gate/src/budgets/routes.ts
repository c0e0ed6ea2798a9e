import { deletedAnswer, deletedResponse, routeOptions, toIso, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import { auditActor } from '../auth/index.ts';
import type { GateContext } from '../context.ts';
import { gateError } from '../errors.ts';
import type { RequestService } from '../requests/index.ts';
import type { BudgetService } from './service.ts';
import { BUDGET_SCOPES, BUDGET_WINDOWS, breachesOf, figuresOfBudget, findBudget, levelOf, toBudget, windowStart } from './store.ts';

/** A budget name is a policy path segment: `budgets.<name>.spendUsd`. */
const budgetName = z.string().regex(/^[A-Za-z0-9_-]{1,100}$/, 'letters, digits, _ and - (it is a policy path segment: budgets.<name>.spendUsd)');
const usd = z.number().min(0).max(1e9);

const budgetFields = {
  name: budgetName,
  scope: z.enum(BUDGET_SCOPES).describe('agent, session, tag or tenant'),
  scopeValue: z
    .string()
    .min(1)
    .max(200)
    .nullable()
    .describe('The agent, session or tag; null: each agent / each session (a tag budget needs its tag, a tenant budget takes none)'),
  window: z.enum(BUDGET_WINDOWS).describe('UTC hour, day, calendar month, or each session'),
  softUsd: usd.nullable().describe('Above it, matching requests are routed to a person'),
  hardUsd: usd.nullable().describe('Above it, matching requests are denied and (pauseOnHard) the agents paused in observe'),
  pauseOnHard: z.boolean(),
  enabled: z.boolean(),
};

const budgetBody = z
  .object({
    ...budgetFields,
    scopeValue: budgetFields.scopeValue.default(null),
    softUsd: budgetFields.softUsd.default(null),
    hardUsd: budgetFields.hardUsd.default(null),
    pauseOnHard: z.boolean().default(true),
    enabled: z.boolean().default(true),
  })
  .strict();
const budgetPatch = z.object(budgetFields).partial().strict();

const budgetSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    scope: z.enum(BUDGET_SCOPES),
    scopeValue: z.string().nullable(),
    window: z.enum(BUDGET_WINDOWS),
    softUsd: z.number().nullable(),
    hardUsd: z.number().nullable(),
    pauseOnHard: z.boolean(),
    enabled: z.boolean(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Budget' });

const budgetDetailSchema = budgetSchema
  .extend({
    windowStart: z.string().describe('The start of the current window (the Unix epoch for session windows)'),
    figures: z
      .array(z.object({ key: z.string(), spendUsd: z.number(), level: z.enum(['ok', 'soft', 'hard']), agentIds: z.array(z.string()), updatedAt: z.string() }))
      .describe('The current window: the spend read from observe per agent, session, tag or tenant (`*`), highest first'),
    breaches: z
      .array(z.object({ key: z.string(), level: z.enum(['soft', 'hard']), spendUsd: z.number(), windowStart: z.string(), at: z.string() }))
      .describe('Thresholds crossed, newest first (each is also a `breached` entry of the change log)'),
  })
  .meta({ id: 'BudgetDetail' });

const idParams = z.object({ id: z.string().min(1).max(100) });

const requestBudgetsSchema = z
  .object({
    budgets: z
      .array(
        z.object({
          name: z.string(),
          spendUsd: z.number(),
          softUsd: z.number().nullable(),
          hardUsd: z.number().nullable(),
          level: z.enum(['ok', 'soft', 'hard']),
        }),
      )
      .describe('The enabled budgets that cover the request now (by its context: agent, session, tags), with their current spend, by name'),
  })
  .meta({ id: 'RequestBudgets' });

export function registerBudgetRoutes(app: ZodApp, ctx: GateContext, budgets: BudgetService, requests: RequestService): void {
  app.get(
    '/api/requests/:id/budgets',
    routeOptions('request:read', {
      operationId: 'getRequestBudgets',
      errorStatuses: [404],
      summary: "The budgets covering a request now, with their current window's spend",
      description:
        'What a new request with this context would be assessed against at this moment (the dashboard shows it beside a pending request); the budget that routed or denied it at its creation is in its `created` audit entry (`details.budget`).',
      tags: ['budgets'],
      params: idParams,
      response: { 200: requestBudgetsSchema },
    }),
    async (request) => {
      const row = await requests.get(request.params.id);
      if (!row) throw gateError('requestNotFound');
      const assessment = await budgets.assess({ context: JSON.parse(row.context) as Record<string, unknown> }, ctx.clock.now());
      return {
        budgets: Object.entries(assessment?.figures ?? {})
          .map(([name, figure]) => ({ name, ...figure }))
          .sort((a, b) => (a.name < b.name ? -1 : 1)),
      };
    },
  );

  app.get(
    '/api/budgets',
    routeOptions('request:read', {
      operationId: 'listBudgets',
      summary: 'List budgets by name',
      tags: ['budgets'],
      response: { 200: z.object({ budgets: z.array(budgetSchema) }) },
    }),
    async () => ({ budgets: (await ctx.database.db.selectFrom('budgets').selectAll().orderBy('name').execute()).map(toBudget) }),
  );

  app.get(
    '/api/budgets/:id',
    routeOptions('request:read', {
      operationId: 'getBudget',
      errorStatuses: [404],
      summary: "A budget with its current window's spend figures and its breaches",
      tags: ['budgets'],
      params: idParams,
      response: { 200: budgetDetailSchema },
    }),
    async (request) => {
      const row = await findBudget(ctx.database, request.params.id);
      if (!row) throw gateError('budgetNotFound');
      const start = windowStart(row.window, ctx.clock.now());
      const [figures, breaches] = await Promise.all([figuresOfBudget(ctx.database, row.id, start, 200), breachesOf(ctx.database, row.id, 100)]);
      return {
        ...toBudget(row),
        windowStart: toIso(start),
        figures: figures.map((f) => ({
          key: f.key,
          spendUsd: Number(f.spend_usd),
          level: levelOf(row, Number(f.spend_usd)),
          agentIds: JSON.parse(f.agent_ids) as string[],
          updatedAt: toIso(Number(f.updated_at)),
        })),
        breaches: breaches.map((b) => ({
          key: b.key,
          level: b.level as 'soft' | 'hard',
          spendUsd: Number(b.spend_usd),
          windowStart: toIso(Number(b.window_start)),
          at: toIso(Number(b.at)),
        })),
      };
    },
  );

  app.post(
    '/api/budgets',
    routeOptions('admin', {
      operationId: 'createBudget',
      summary: 'Create a budget',
      description:
        'Spend comes from observe (the figures of GET /api/analytics/costs), read every BUDGET_POLL_MS. Over `softUsd` a request that covers it is routed to a person (even if a policy or grant would approve it); over `hardUsd` it is denied and, with `pauseOnHard`, the agents that spent it are paused in observe. Policies read it as `budgets.<name>.spendUsd` and `budgets.<name>.level`. Recorded in the change log, as is every threshold crossed (action `breached`).',
      tags: ['budgets'],
      body: budgetBody,
      response: { 201: budgetSchema },
    }),
    async (request, reply) => reply.status(201).send(toBudget(await budgets.create(request.body, auditActor(request)))),
  );

  app.put(
    '/api/budgets/:id',
    routeOptions('admin', {
      operationId: 'updateBudget',
      errorStatuses: [404],
      summary: 'Update a budget (fields not given stay as they are)',
      tags: ['budgets'],
      params: idParams,
      body: budgetPatch,
      response: { 200: budgetSchema },
    }),
    async (request) => toBudget(await budgets.update(request.params.id, request.body, auditActor(request))),
  );

  app.delete(
    '/api/budgets/:id',
    routeOptions('admin', {
      operationId: 'deleteBudget',
      errorStatuses: [404],
      summary: 'Delete a budget',
      tags: ['budgets'],
      params: idParams,
      response: { 200: deletedResponse },
    }),
    async (request) => {
      await budgets.remove(request.params.id, auditActor(request));
      return deletedAnswer(request.params.id);
    },
  );
}
