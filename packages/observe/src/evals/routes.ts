import { deletedAnswer, deletedResponse, routeOptions, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import type { EvalRunWorker } from './runs.ts';
import {
  breachBodySchema,
  breachResultSchema,
  complianceBodySchema,
  complianceResultSchema,
  createDatasetBodySchema,
  createEvaluatorBodySchema,
  createRunBodySchema,
  datasetSchema,
  datasetSummarySchema,
  evaluatorSchema,
  idParams,
  judgeResultSchema,
  runListQuerySchema,
  runSchema,
  runSummarySchema,
  scoreBodySchema,
  sessionParams,
} from './schemas.ts';
import { complianceSpec, evaluateCompliance, evaluateWithJudge, judgePlan, judgeSpec, judgeSpecOf, recordBreach, resolveEvaluator } from './service.ts';
import {
  datasetCases,
  datasetRuns,
  deleteEvaluator,
  findDataset,
  findEvaluator,
  findRun,
  insertDataset,
  insertEvaluator,
  insertRun,
  listDatasets,
  listEvaluators,
  runCases,
  toDatasetOut,
  toDatasetSummary,
  toEvaluatorOut,
  toRunOut,
  toRunSummary,
} from './store.ts';

export function registerEvalRoutes(app: ZodApp, ctx: ObserveContext, runs: EvalRunWorker): void {
  app.post(
    '/api/eval/sessions/:sessionId/compliance',
    routeOptions('admin', {
      operationId: 'scoreSessionCompliance',
      errorStatuses: [409],
      summary: 'Score a session against deterministic rules and chain the verdict as an eval_result',
      description: "409 when the session's chain is broken. The score is rules passed / rules evaluated; passing is inclusive (score ≥ threshold).",
      tags: ['evals'],
      params: sessionParams,
      body: complianceBodySchema,
      response: { 201: complianceResultSchema },
    }),
    async (request, reply) => {
      const spec = await complianceSpec(ctx, request.body);
      return reply.status(201).send(await evaluateCompliance(ctx, request.params.sessionId, spec));
    },
  );

  app.post(
    '/api/eval/sessions/:sessionId/score',
    routeOptions('admin', {
      operationId: 'scoreSessionWithJudge',
      errorStatuses: [409, 502],
      summary: 'Score a session with an LLM judge against a rubric and chain the verdict as an eval_result',
      description: '503 when no judge is configured, 400 for an unpriced model, 502 when the judge gives no valid verdict.',
      tags: ['evals'],
      params: sessionParams,
      body: scoreBodySchema,
      response: { 201: judgeResultSchema },
    }),
    async (request, reply) => {
      const spec = await judgeSpec(ctx, request.body);
      return reply.status(201).send(await evaluateWithJudge(ctx, request.params.sessionId, spec));
    },
  );

  app.post(
    '/api/internal/eval/guardrail-breach',
    {
      config: { auth: 'service' },
      schema: {
        operationId: 'recordGuardrailBreach',
        errorStatuses: [409],
        summary: 'Record a denied action reported by the approval service (service token only)',
        description: '503 when `INTERNAL_SERVICE_TOKEN` is unset.',
        tags: ['evals'],
        body: breachBodySchema,
        response: { 201: breachResultSchema },
      },
    },
    async (request, reply) => {
      const { eventId } = await recordBreach(ctx, request.body);
      return reply.status(201).send({ recorded: true as const, eventId });
    },
  );

  // ---- evaluators ----

  app.post(
    '/api/evaluators',
    routeOptions('admin', {
      operationId: 'createEvaluator',
      summary: 'Save an evaluator',
      tags: ['evals'],
      body: createEvaluatorBodySchema,
      response: { 201: evaluatorSchema },
    }),
    async (request, reply) => {
      const body = request.body;
      if (body.kind === 'llm_judge' && body.model !== undefined) {
        // An unpriced model could never run: refused now rather than at each evaluation.
        if (!ctx.prices.find(body.model)) {
          throw observeError('judgeModelUnpriced', `The judge model ${JSON.stringify(body.model)} has no price in the price table`);
        }
      }
      const evaluator = await insertEvaluator(ctx.database, body, ctx.clock.now());
      return reply.status(201).send(toEvaluatorOut(evaluator));
    },
  );

  app.get(
    '/api/evaluators',
    routeOptions('read', {
      operationId: 'listEvaluators',
      summary: 'List evaluators, newest first',
      tags: ['evals'],
      response: { 200: z.object({ evaluators: z.array(evaluatorSchema) }) },
    }),
    async () => ({ evaluators: (await listEvaluators(ctx.database)).map(toEvaluatorOut) }),
  );

  app.get(
    '/api/evaluators/:id',
    routeOptions('read', { operationId: 'getEvaluator', summary: 'One evaluator', tags: ['evals'], params: idParams, response: { 200: evaluatorSchema } }),
    async (request) => {
      const evaluator = await findEvaluator(ctx.database, request.params.id);
      if (!evaluator) throw observeError('evaluatorNotFound');
      return toEvaluatorOut(evaluator);
    },
  );

  app.delete(
    '/api/evaluators/:id',
    routeOptions('admin', {
      operationId: 'deleteEvaluator',
      summary: 'Delete an evaluator (runs already started keep their copy of it)',
      tags: ['evals'],
      params: idParams,
      response: { 200: deletedResponse },
    }),
    async (request) => {
      if (!(await deleteEvaluator(ctx.database, request.params.id))) throw observeError('evaluatorNotFound');
      return deletedAnswer(request.params.id);
    },
  );

  // ---- datasets and runs ----

  app.post(
    '/api/datasets',
    routeOptions('admin', {
      operationId: 'createDataset',
      summary: 'Create a dataset of 1 to 1000 cases',
      tags: ['evals'],
      body: createDatasetBodySchema,
      response: { 201: datasetSchema },
    }),
    async (request, reply) => {
      const { row, cases } = await insertDataset(ctx.database, request.body, ctx.clock.now());
      return reply.status(201).send(toDatasetOut(row, cases));
    },
  );

  app.get(
    '/api/datasets',
    routeOptions('read', {
      operationId: 'listDatasets',
      summary: 'List datasets, newest first',
      tags: ['evals'],
      response: { 200: z.object({ datasets: z.array(datasetSummarySchema) }) },
    }),
    async () => ({ datasets: (await listDatasets(ctx.database)).map(toDatasetSummary) }),
  );

  app.get(
    '/api/datasets/:id',
    routeOptions('read', {
      operationId: 'getDataset',
      summary: 'One dataset with its cases',
      tags: ['evals'],
      params: idParams,
      response: { 200: datasetSchema },
    }),
    async (request) => {
      const dataset = await findDataset(ctx.database.db, request.params.id);
      if (!dataset) throw observeError('datasetNotFound');
      return toDatasetOut(dataset, await datasetCases(ctx.database.db, dataset.id));
    },
  );

  app.post(
    '/api/datasets/:id/runs',
    routeOptions('admin', {
      operationId: 'startDatasetRun',
      summary: 'Run every case of a dataset against an agent webhook, in the background',
      description: 'Answers 202 with the run; its cases run in the background.',
      tags: ['evals'],
      params: idParams,
      body: createRunBodySchema,
      response: { 202: runSchema },
    }),
    async (request, reply) => {
      const body = request.body;
      if (!(await findDataset(ctx.database.db, request.params.id))) throw observeError('datasetNotFound');
      const evaluator = body.evaluatorId === undefined ? null : await findEvaluatorForRun(body.evaluatorId);
      const run = await insertRun(
        ctx.database,
        { datasetId: request.params.id, agentId: body.agentId, webhookUrl: body.webhookUrl, evaluator, caseTimeoutMs: body.caseTimeoutSeconds * 1000 },
        ctx.clock.now(),
      );
      if (!run) throw observeError('datasetNotFound');
      const answer = toRunOut(run, await runCases(ctx.database.db, run.id));
      // Committed: the worker takes it from here, off the request path.
      runs.kick();
      return reply.status(202).send(answer);
    },
  );

  app.get(
    '/api/datasets/:id/runs',
    routeOptions('read', {
      operationId: 'listDatasetRuns',
      summary: "A dataset's runs, newest first, without their cases",
      description: '404 for an unknown dataset.',
      tags: ['evals'],
      params: idParams,
      querystring: runListQuerySchema,
      response: { 200: z.object({ runs: z.array(runSummarySchema) }) },
    }),
    async (request) => {
      if (!(await findDataset(ctx.database.db, request.params.id))) throw observeError('datasetNotFound');
      return { runs: (await datasetRuns(ctx.database.db, request.params.id, request.query.limit)).map(toRunSummary) };
    },
  );

  app.get(
    '/api/runs/:id',
    routeOptions('read', {
      operationId: 'getEvalRun',
      summary: 'An evaluation run with the outcome of each case',
      tags: ['evals'],
      params: idParams,
      response: { 200: runSchema },
    }),
    async (request) => {
      const run = await findRun(ctx.database.db, request.params.id);
      if (!run) throw observeError('evalRunNotFound');
      return toRunOut(run, await runCases(ctx.database.db, run.id));
    },
  );

  /** A run's evaluator: either kind; a judge evaluator needs a configured judge and a priced model now, not at every case. */
  async function findEvaluatorForRun(id: string) {
    const stored = await findEvaluator(ctx.database, id);
    const evaluator = await resolveEvaluator(ctx, id, stored?.kind ?? 'compliance');
    if (evaluator.kind === 'llm_judge') judgePlan(ctx, judgeSpecOf(evaluator));
    return evaluator;
  }
}
