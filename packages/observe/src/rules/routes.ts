import { acceptingReadBack, type ChangeActor, deletedAnswer, deletedResponse, keyChangeActor, routeOptions, type ZodApp } from '@vigil/platform';
import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';
import { observeError, type ObserveErrorKey } from '../errors.ts';
import { ruleParams } from './schemas.ts';

/**
 * A kind of rule served as a collection (alert rules, guardrails): list, create, read, change
 * (partial, read-back accepted) and delete. The kind's own functions do the work; each mutation
 * runs in its own function so whatever it must do in its transaction (its admin-change row, with
 * the actor given here) stays in one place.
 */
export interface RuleResource<
  Rule,
  Out extends z.ZodObject,
  Create extends z.ZodType,
  Update extends z.ZodObject,
  ListQuery extends z.ZodObject = z.ZodObject,
> {
  /** The collection's URL; one rule is at `${path}/:id`. */
  path: string;
  tag: string;
  schemas: { rule: Out; create: Create; update: Update };
  summaries: { create: string; list: string; get: string; update: string; delete: string };
  /** The operations' names in the OpenAPI document, and the statuses creating one answers beyond its kind's (a conflict). */
  operationIds: { create: string; list: string; get: string; update: string; delete: string };
  createErrorStatuses?: readonly number[];
  notFound: ObserveErrorKey;
  /** The answer to a delete carries `ok: true` too (guardrails keep it for their clients). */
  deleteAnswersOk?: boolean;
  toOut(rule: Rule): z.output<Out>;
  /** The list's filters; without them the list takes no query parameter. */
  listQuery?: ListQuery;
  list(query: z.output<ListQuery>): Promise<Rule[]>;
  find(id: string): Promise<Rule | undefined>;
  create(body: z.output<Create>, actor: ChangeActor): Promise<Rule>;
  /** Applies the changes; false when there is no such rule. */
  update(id: string, changes: z.output<Update>, actor: ChangeActor): Promise<boolean>;
  /** false when there is no such rule. */
  remove(id: string, actor: ChangeActor, log: FastifyBaseLogger): Promise<boolean>;
}

export function registerRuleRoutes<Rule, Out extends z.ZodObject, Create extends z.ZodType, Update extends z.ZodObject, ListQuery extends z.ZodObject>(
  app: ZodApp,
  resource: RuleResource<Rule, Out, Create, Update, ListQuery>,
): void {
  const { path, tag, summaries, operationIds } = resource;
  // The routes see the schemas as plain objects: each kind's types are checked where it fills in `resource`.
  const schemas = resource.schemas as { rule: z.ZodObject; create: z.ZodType; update: z.ZodObject };
  const toOut = (rule: Rule) => resource.toOut(rule) as Record<string, unknown>;
  const item = `${path}/:id`;
  const found = async (id: string): Promise<Rule> => {
    const rule = await resource.find(id);
    if (rule === undefined) throw observeError(resource.notFound);
    return rule;
  };
  const deleted = resource.deleteAnswersOk ? deletedResponse.extend({ ok: z.literal(true) }) : deletedResponse;

  // Rules are read with `read` and changed by administrators only.
  app.post(
    path,
    routeOptions('admin', {
      operationId: operationIds.create,
      errorStatuses: resource.createErrorStatuses,
      summary: summaries.create,
      tags: [tag],
      body: schemas.create,
      response: { 201: schemas.rule },
    }),
    async (request, reply) => reply.status(201).send(toOut(await resource.create(request.body as z.output<Create>, keyChangeActor(request.apiKey)))),
  );

  app.get(
    path,
    routeOptions('read', {
      operationId: operationIds.list,
      summary: summaries.list,
      tags: [tag],
      querystring: resource.listQuery ?? z.object({}),
      response: { 200: z.object({ rules: z.array(schemas.rule) }) },
    }),
    async (request) => ({ rules: (await resource.list(request.query as z.output<ListQuery>)).map(toOut) }),
  );

  app.get(
    item,
    routeOptions('read', { operationId: operationIds.get, summary: summaries.get, tags: [tag], params: ruleParams, response: { 200: schemas.rule } }),
    async (request) => toOut(await found(request.params.id)),
  );

  app.put(
    item,
    routeOptions('admin', {
      operationId: operationIds.update,
      summary: summaries.update,
      tags: [tag],
      params: ruleParams,
      body: acceptingReadBack(schemas.update, schemas.rule),
      response: { 200: schemas.rule },
    }),
    async (request) => {
      const { id } = request.params;
      if (!(await resource.update(id, request.body as z.output<Update>, keyChangeActor(request.apiKey)))) throw observeError(resource.notFound);
      return toOut(await found(id));
    },
  );

  app.delete(
    item,
    routeOptions('admin', { operationId: operationIds.delete, summary: summaries.delete, tags: [tag], params: ruleParams, response: { 200: deleted } }),
    async (request) => {
      const { id } = request.params;
      if (!(await resource.remove(id, keyChangeActor(request.apiKey), request.log))) throw observeError(resource.notFound);
      return resource.deleteAnswersOk ? { ...deletedAnswer(id), ok: true as const } : deletedAnswer(id);
    },
  );
}
