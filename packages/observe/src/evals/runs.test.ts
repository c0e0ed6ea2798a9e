import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ManualClock } from '@vigil/platform';
import { observeConfigFromEnvironment } from '../config.ts';
import { describeEachDatabase, sendJson, TestHttpServer, type ReceivedRequest, type TestBackend } from '@vigil/platform/testing';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildObserveService } from '../app.ts';
import type { Event } from '../events/index.ts';
import type { ObserveDatabase } from '../schema.ts';
import { assertErrorBody, everyTableText, insertEventCopy, startTestObserve, type TestObserve } from '../testing.ts';

type Json = Record<string, any>;
type Call = (options: InjectOptions) => Promise<LightMyRequestResponse>;

async function waitForRun(observe: TestObserve, id: string, timeoutMs = 20_000): Promise<Json> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await observe.call({ method: 'GET', url: `/api/runs/${id}` });
    assert.equal(response.statusCode, 200, response.body);
    const run = response.json() as Json;
    if (run.status === 'completed') return run;
    if (Date.now() > deadline) {
      // The claims and attempts the API does not show: a case claimed and never finished is told apart from one never taken.
      const claims = await observe.service.context.database.db
        .selectFrom('eval_run_cases')
        .select(['position', 'status', 'claimed_until', 'attempts'])
        .where('run_id', '=', id)
        .execute();
      assert.fail(`run ${id} did not complete: ${JSON.stringify(run)}; its cases: ${JSON.stringify(claims)}`);
    }
    await sleep(20);
  }
}

/**
 * A real agent behind a webhook: for each case it logs a session to observe through the API (as an
 * agent would), then answers {sessionId, output}. What it does depends on input.task.
 */
class Agent {
  readonly server: TestHttpServer;
  /** The observe instance the agent logs to. */
  call: Call | null = null;
  /** Its database, for the case that tampers with its own session. */
  database: ObserveDatabase | null = null;
  private readonly seen = new Set<string>();

  constructor() {
    this.server = new TestHttpServer((request, res) => {
      this.handle(request, res).catch((error: unknown) => sendJson(res, 500, { error: String(error) }));
    });
  }

  private async log(events: Json[]): Promise<void> {
    const response = await this.call!({ method: 'POST', url: '/api/events', payload: { events } });
    if (response.statusCode !== 201) throw new Error(response.body);
  }

  private async handle(request: ReceivedRequest, res: ServerResponse): Promise<void> {
    const { caseId, agentId, input } = JSON.parse(request.body) as { caseId: string; agentId: string; input: Json };
    const sessionId = `agent-session-${caseId}`;
    const started = { sessionId, agentId, eventType: 'session_started', payload: { agentName: 'Eval agent' } };
    const ended = { sessionId, agentId, eventType: 'session_ended', payload: { reason: 'completed' } };
    switch (input.task) {
      case 'ok':
        await this.log([started, { sessionId, agentId, eventType: 'tool_call', payload: { toolName: 'lookup', callId: 'c1', arguments: input } }, ended]);
        return sendJson(res, 200, { sessionId, output: input.answer });
      case 'shell':
        await this.log([started, { sessionId, agentId, eventType: 'tool_call', payload: { toolName: 'shell_exec', callId: 'c1', arguments: {} } }, ended]);
        return sendJson(res, 200, { sessionId, output: input.answer });
      case 'error':
        await this.log([
          started,
          { sessionId, agentId, eventType: 'tool_error', payload: { toolName: 'lookup', callId: 'c1', error: 'boom', durationMs: 3 } },
          ended,
        ]);
        return sendJson(res, 200, { sessionId, output: input.answer });
      case 'tampered': {
        await this.log([started, ended]);
        const last = await this.database!.db.selectFrom('events')
          .select('id')
          .where('session_id', '=', sessionId)
          .where('seq', '=', 1)
          .executeTakeFirstOrThrow();
        await insertEventCopy(this.database!, last.id, { id: `forged-${caseId}`, seq: 2, hash: Buffer.alloc(32, 0xff) });
        return sendJson(res, 200, { sessionId, output: input.answer });
      }
      case 'subject':
        // A conversation about a data subject, and an answer quoting their data.
        await this.log([{ ...started, metadata: { subjectId: input.subject } }, ended]);
        return sendJson(res, 200, { sessionId, output: `${input.name} lives at 12 Quay Street` });
      case 'fail':
        return sendJson(res, 500, { error: 'agent crashed' });
      case 'hang':
        return; // never answers
      case 'hang-once':
        if (!this.seen.has(caseId)) {
          this.seen.add(caseId);
          return;
        }
        await this.log([started, ended]);
        return sendJson(res, 200, { sessionId, output: input.answer });
      case 'garbage':
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('done!');
        return;
      case 'no-session':
        return sendJson(res, 200, { output: 1 });
      case 'unlogged':
        return sendJson(res, 200, { sessionId: `never-logged-${caseId}`, output: input.answer });
      default:
        return sendJson(res, 400, { error: 'unknown task' });
    }
  }
}

await describeEachDatabase('datasets', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  test('create, list newest first, get with cases', async () => {
    const created = await observe.call({
      method: 'POST',
      url: '/api/datasets',
      payload: {
        name: ' refunds ',
        cases: [{ input: { q: 'refund A-1' }, expected: { ok: true } }, { input: 'plain text' }, { input: [1, 2], expected: null }],
      },
    });
    assert.equal(created.statusCode, 201, created.body);
    const dataset = created.json() as Json;
    assert.deepEqual(Object.keys(dataset).sort(), ['caseCount', 'cases', 'createdAt', 'id', 'name']);
    assert.equal(dataset.name, 'refunds');
    assert.equal(dataset.caseCount, 3);
    assert.equal(dataset.createdAt, '2026-11-22T10:00:00.000Z');
    assert.deepEqual(
      dataset.cases.map((c: Json) => ({ index: c.index, input: c.input, expected: c.expected })),
      [
        { index: 0, input: { q: 'refund A-1' }, expected: { ok: true } },
        { index: 1, input: 'plain text', expected: null },
        { index: 2, input: [1, 2], expected: null },
      ],
    );
    assert.equal(new Set(dataset.cases.map((c: Json) => c.id)).size, 3);
    (observe.clock as ManualClock).advance(1000);
    const second = (await observe.call({ method: 'POST', url: '/api/datasets', payload: { name: 'other', cases: [{ input: 1 }] } })).json() as Json;

    const list = (await observe.call({ method: 'GET', url: '/api/datasets' })).json() as Json;
    assert.deepEqual(list, {
      datasets: [
        { id: second.id, name: 'other', caseCount: 1, createdAt: '2026-11-22T10:00:01.000Z' },
        { id: dataset.id, name: 'refunds', caseCount: 3, createdAt: '2026-11-22T10:00:00.000Z' },
      ],
    });
    assert.deepEqual((await observe.call({ method: 'GET', url: `/api/datasets/${dataset.id}` })).json(), dataset);
    assertErrorBody(await observe.call({ method: 'GET', url: '/api/datasets/unknown' }), 404);
  });

  test('1 to 1000 cases; bad datasets are 400 and store nothing', async () => {
    const count = async () => ((await observe.call({ method: 'GET', url: '/api/datasets' })).json() as Json).datasets.length;
    const before = await count();
    const many = Array.from({ length: 1000 }, (_, i) => ({ input: { i } }));
    const big = await observe.call({ method: 'POST', url: '/api/datasets', payload: { name: 'big', cases: many } });
    assert.equal(big.statusCode, 201, big.body);
    assert.equal((big.json() as Json).cases[999].index, 999);
    for (const body of [
      { name: 'x', cases: [] },
      { name: 'x', cases: [...many, { input: 1 }] },
      { name: 'x', cases: [{ expected: 1 }] },
      { name: 'x', cases: [{ input: 1, other: 2 }] },
      { name: 'x' },
      { cases: [{ input: 1 }] },
      { name: 'x', cases: [{ input: 'y'.repeat(100_001) }] },
      { name: 'x', cases: [{ input: 1 }], extra: true },
    ]) {
      assertErrorBody(await observe.call({ method: 'POST', url: '/api/datasets', payload: body }), 400, JSON.stringify(body).slice(0, 60));
    }
    assert.equal(await count(), before + 1);
  });
});

await describeEachDatabase('evaluation runs against a live agent webhook', (backend) => {
  const agent = new Agent();
  let observe: TestObserve;
  before(async () => {
    await agent.server.start();
    observe = await startTestObserve(backend);
    agent.call = observe.call;
    agent.database = observe.service.context.database;
  });
  after(async () => {
    await observe.close();
    await agent.server.stop();
  });

  const createDataset = async (cases: Json[]): Promise<Json> => {
    const response = await observe.call({ method: 'POST', url: '/api/datasets', payload: { name: 'suite', cases } });
    assert.equal(response.statusCode, 201, response.body);
    return response.json() as Json;
  };

  test('without an evaluator: passes when the session exists, has no error and the output equals expected; failures carry an error', async () => {
    const dataset = await createDataset([
      { input: { task: 'ok', answer: 42 }, expected: 42 },
      { input: { task: 'ok', answer: { b: 1, a: [1, 2] } }, expected: { a: [1, 2], b: 1 } },
      { input: { task: 'ok', answer: 'x' }, expected: 'y' },
      { input: { task: 'error', answer: 1 } },
      { input: { task: 'fail' } },
      { input: { task: 'garbage' } },
      { input: { task: 'unlogged', answer: 1 } },
      { input: { task: 'ok', answer: 'anything' } },
      { input: { task: 'no-session' } },
      { input: { task: 'ok' }, expected: 'missing' },
    ]);
    const response = await observe.call({
      method: 'POST',
      url: `/api/datasets/${dataset.id}/runs`,
      payload: { agentId: 'eval-agent', webhookUrl: `${agent.server.url}/hook` },
    });
    assert.equal(response.statusCode, 202, response.body);
    const created = response.json() as Json;
    assert.deepEqual(Object.keys(created).sort(), [
      'agentId',
      'cases',
      'completedCases',
      'createdAt',
      'datasetId',
      'evaluatorId',
      'failedCases',
      'finishedAt',
      'id',
      'passedCases',
      'status',
      'totalCases',
    ]);
    assert.equal(created.status, 'running');
    assert.equal(created.datasetId, dataset.id);
    assert.equal(created.agentId, 'eval-agent');
    assert.equal(created.evaluatorId, null);
    assert.equal(created.totalCases, 10);
    assert.equal(created.completedCases, 0);
    assert.equal(created.passedCases, 0);
    assert.equal(created.failedCases, 0);
    assert.equal(created.finishedAt, null);
    assert.deepEqual(created.cases[0], {
      caseId: dataset.cases[0].id,
      index: 0,
      sessionId: null,
      passed: null,
      score: null,
      error: null,
      actual: null,
      reasoning: null,
    });

    const run = await waitForRun(observe, created.id);
    assert.equal(run.totalCases, 10);
    assert.equal(run.completedCases, 10);
    assert.equal(run.passedCases, 3);
    assert.equal(run.failedCases, 7);
    assert.equal(run.finishedAt, '2026-11-22T10:00:00.000Z');
    const byIndex = run.cases as Json[];
    assert.deepEqual(
      byIndex.map((c) => c.index),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    );
    assert.deepEqual(
      byIndex.map((c) => c.passed),
      [true, true, false, false, false, false, false, true, false, false],
    );
    for (const c of byIndex) {
      assert.equal(c.caseId, dataset.cases[c.index].id);
      assert.equal(c.score, null, 'no evaluator, no score');
      if (c.passed) assert.equal(c.error, null);
    }
    assert.equal(byIndex[0]!.sessionId, `agent-session-${dataset.cases[0].id}`);
    assert.equal(byIndex[2]!.error, 'the output does not equal expected');
    // What the agent answered is kept beside what was expected; without an evaluator there is no reasoning.
    assert.deepEqual(byIndex[2]!.actual, dataset.cases[2].input.answer);
    assert.notDeepEqual(byIndex[2]!.actual, dataset.cases[2].expected);
    assert.equal(byIndex[2]!.reasoning, null);
    assert.equal(byIndex[4]!.actual, null, 'no answer, no actual');
    assert.equal(byIndex[3]!.error, 'the session has 1 error event');
    assert.equal(byIndex[3]!.sessionId, `agent-session-${dataset.cases[3].id}`);
    assert.equal(byIndex[4]!.error, 'the webhook answered HTTP 500');
    assert.equal(byIndex[4]!.sessionId, null);
    assert.equal(byIndex[5]!.error, 'the webhook answer is not JSON');
    assert.match(byIndex[6]!.error, /session "never-logged-.*" was not logged to observe/);
    assert.match(byIndex[8]!.error, /not \{sessionId, output\?\}/);
    assert.equal(byIndex[9]!.error, 'the webhook answer has no output to compare with expected');

    // What the agent received: {runId, caseId, datasetId, agentId, input}, one POST per case.
    const hooks = agent.server.requests.filter((r) => r.url === '/hook');
    assert.equal(hooks.length, 10);
    const first = hooks.map((r) => JSON.parse(r.body) as Json).find((b) => b.caseId === dataset.cases[0].id)!;
    assert.deepEqual(first, {
      runId: created.id,
      caseId: dataset.cases[0].id,
      datasetId: dataset.id,
      agentId: 'eval-agent',
      input: { task: 'ok', answer: 42 },
    });
    assert.equal(hooks[0]!.method, 'POST');
    assert.equal(hooks[0]!.headers['x-vigil-run-id'], created.id);
    assert.equal(hooks[0]!.headers['x-vigil-case-id'], (JSON.parse(hooks[0]!.body) as Json).caseId);
    assert.match(String(hooks[0]!.headers['content-type']), /^application\/json/);
    // Without an evaluator nothing is chained into the agent's sessions.
    const timeline = (await observe.call({ method: 'GET', url: `/api/sessions/agent-session-${dataset.cases[0].id}/timeline` })).json() as { events: Event[] };
    assert.ok(timeline.events.every((e) => e.eventType !== 'eval_result'));
  });

  test("GET /api/datasets/:id/runs lists a dataset's runs newest first, without cases; 404 for an unknown dataset", async () => {
    const dataset = await createDataset([{ input: { task: 'ok', answer: 1 }, expected: 1 }]);
    const other = await createDataset([{ input: { task: 'ok', answer: 2 } }]);
    const start = async (id: string) => {
      const response = await observe.call({
        method: 'POST',
        url: `/api/datasets/${id}/runs`,
        payload: { agentId: 'eval-agent', webhookUrl: `${agent.server.url}/hook` },
      });
      assert.equal(response.statusCode, 202, response.body);
      return (response.json() as Json).id as string;
    };
    const first = await start(dataset.id);
    (observe.clock as ManualClock).advance(1000);
    const second = await start(dataset.id);
    await start(other.id);
    await waitForRun(observe, first);
    const finished = await waitForRun(observe, second);
    const listed = await observe.call({ method: 'GET', url: `/api/datasets/${dataset.id}/runs` });
    assert.equal(listed.statusCode, 200, listed.body);
    const runs = (listed.json() as { runs: Json[] }).runs;
    assert.deepEqual(
      runs.map((run) => run.id),
      [second, first],
    );
    const { cases: _cases, ...summary } = finished;
    assert.deepEqual(runs[0], summary);
    const limited = (await observe.call({ method: 'GET', url: `/api/datasets/${dataset.id}/runs?limit=1` })).json() as { runs: Json[] };
    assert.deepEqual(
      limited.runs.map((run) => run.id),
      [second],
    );
    assert.equal((await observe.call({ method: 'GET', url: '/api/datasets/nope/runs' })).statusCode, 404);
    assert.equal((await observe.call({ method: 'GET', url: `/api/datasets/${dataset.id}/runs?limit=0` })).statusCode, 400);
  });

  test("erasing a subject forgets the answers runs kept of the subject's sessions", async () => {
    const dataset = await createDataset([{ input: { task: 'subject', subject: 'carol@example.com', name: 'Carol' }, expected: 'no address' }]);
    const response = await observe.call({
      method: 'POST',
      url: `/api/datasets/${dataset.id}/runs`,
      payload: { agentId: 'eval-agent', webhookUrl: `${agent.server.url}/hook` },
    });
    assert.equal(response.statusCode, 202, response.body);
    const runId = (response.json() as Json).id;
    assert.equal((await waitForRun(observe, runId)).cases[0].actual, 'Carol lives at 12 Quay Street');
    const holding = async () => [...(await everyTableText(observe))].filter(([, text]) => text.includes('12 Quay Street')).map(([table]) => table);
    assert.deepEqual(await holding(), ['eval_run_cases']);

    const erased = await observe.call({ method: 'DELETE', url: '/api/subjects/carol%40example.com', payload: { reason: 'request 7' } });
    assert.equal(erased.statusCode, 200, erased.body);
    const after = (await observe.call({ method: 'GET', url: `/api/runs/${runId}` })).json() as Json;
    assert.deepEqual([after.cases[0].actual, after.cases[0].reasoning, after.cases[0].passed], [null, null, false]);
    assert.deepEqual(await holding(), [], 'no table keeps the answer');
  });

  test('a webhook that does not answer within caseTimeoutSeconds fails its case', async () => {
    const dataset = await createDataset([{ input: { task: 'hang' } }]);
    const response = await observe.call({
      method: 'POST',
      url: `/api/datasets/${dataset.id}/runs`,
      payload: { agentId: 'eval-agent', webhookUrl: `${agent.server.url}/slow`, caseTimeoutSeconds: 1 },
    });
    assert.equal(response.statusCode, 202, response.body);
    const started = Date.now();
    const run = await waitForRun(observe, (response.json() as Json).id);
    assert.ok(Date.now() - started >= 900, 'the case waited for its timeout');
    assert.equal(run.failedCases, 1);
    assert.deepEqual(run.cases[0], {
      caseId: dataset.cases[0].id,
      index: 0,
      sessionId: null,
      passed: false,
      score: null,
      error: 'the webhook did not answer within 1 s',
      actual: null,
      reasoning: null,
    });
  });

  test('with a compliance evaluator each session is scored by the compliance code and gets a chained eval_result', async () => {
    const evaluator = (
      await observe.call({
        method: 'POST',
        url: '/api/evaluators',
        payload: {
          name: 'no shell',
          kind: 'compliance',
          rules: [
            { id: 'no-shell', type: 'tool_denylist', tools: ['shell_*'] },
            { id: 'free', type: 'max_cost', maxUsd: 0 },
          ],
        },
      })
    ).json() as Json;
    const dataset = await createDataset([{ input: { task: 'ok' } }, { input: { task: 'shell' } }, { input: { task: 'fail' } }]);
    const response = await observe.call({
      method: 'POST',
      url: `/api/datasets/${dataset.id}/runs`,
      payload: { agentId: 'eval-agent', webhookUrl: `${agent.server.url}/hook`, evaluatorId: evaluator.id },
    });
    assert.equal(response.statusCode, 202, response.body);
    assert.equal((response.json() as Json).evaluatorId, evaluator.id);
    // Deleting the evaluator does not change a run already started.
    assert.equal((await observe.call({ method: 'DELETE', url: `/api/evaluators/${evaluator.id}` })).statusCode, 200);
    const run = await waitForRun(observe, (response.json() as Json).id);
    assert.equal(run.passedCases, 1);
    assert.equal(run.failedCases, 2);
    const [ok, shell, failed] = run.cases as Json[];
    assert.deepEqual([ok!.passed, ok!.score, ok!.error], [true, 1, null]);
    assert.deepEqual([shell!.passed, shell!.score, shell!.error], [false, 0.5, null]);
    assert.deepEqual([failed!.passed, failed!.score, failed!.error], [false, null, 'the webhook answered HTTP 500']);
    // The evaluator's reasoning is kept with the case, the same as its eval_result event carries.
    assert.equal(failed!.reasoning, null);
    for (const c of [ok!, shell!]) {
      const events = ((await observe.call({ method: 'GET', url: `/api/sessions/${c.sessionId}/timeline` })).json() as { events: Event[] }).events;
      const verdict = events.at(-1)!;
      assert.equal(verdict.eventType, 'eval_result');
      assert.equal(verdict.payload.method, 'deterministic');
      assert.equal(verdict.payload.evaluatorId, evaluator.id);
      assert.equal(verdict.payload.score, c.score);
      assert.equal(c.reasoning, verdict.payload.reasoning);
      assert.ok(typeof c.reasoning === 'string' && c.reasoning.length > 0);
      const audit = (await observe.call({ method: 'GET', url: `/api/audit/verify?sessionId=${c.sessionId}` })).json() as Json;
      assert.equal(audit.valid, true);
    }
  });

  test('with an evaluator, a session whose chain is broken gets no verdict: its case fails with the broken step', async () => {
    const evaluator = (
      await observe.call({
        method: 'POST',
        url: '/api/evaluators',
        payload: { name: 'budget', kind: 'compliance', rules: [{ id: 'budget', type: 'max_cost', maxUsd: 1 }] },
      })
    ).json() as Json;
    const dataset = await createDataset([{ input: { task: 'ok' } }, { input: { task: 'tampered' } }]);
    const response = await observe.call({
      method: 'POST',
      url: `/api/datasets/${dataset.id}/runs`,
      payload: { agentId: 'eval-agent', webhookUrl: `${agent.server.url}/hook`, evaluatorId: evaluator.id },
    });
    assert.equal(response.statusCode, 202, response.body);
    const run = await waitForRun(observe, (response.json() as Json).id);
    const [ok, tampered] = run.cases as Json[];
    assert.deepEqual([ok!.passed, ok!.error], [true, null]);
    assert.equal(tampered!.passed, false);
    assert.equal(tampered!.score, null);
    const forged = `forged-${dataset.cases[1].id}`;
    assert.match(
      tampered!.error,
      new RegExp(`^scoring failed: The hash chain of session "${tampered!.sessionId}" is broken at seq 2 \\(event ${forged}\\): .*past the session head`),
    );
    const events = ((await observe.call({ method: 'GET', url: `/api/sessions/${tampered!.sessionId}/timeline` })).json() as { events: Event[] }).events;
    assert.equal(events.filter((e) => e.eventType === 'eval_result').length, 0, 'no verdict chained');
  });

  test('bad run requests are 400/404/503 and create no run', async () => {
    const dataset = await createDataset([{ input: { task: 'ok' } }]);
    const judge = (await observe.call({ method: 'POST', url: '/api/evaluators', payload: { name: 'j', kind: 'llm_judge', rubric: 'r' } })).json() as Json;
    const runsBefore = await observe.service.context.database.db.selectFrom('eval_runs').select('id').execute();
    const url = `/api/datasets/${dataset.id}/runs`;
    const ok = { agentId: 'a', webhookUrl: `${agent.server.url}/hook` };
    for (const body of [
      { webhookUrl: ok.webhookUrl },
      { agentId: 'a' },
      { ...ok, webhookUrl: 'ftp://example.com/hook' },
      { ...ok, webhookUrl: 'not a url' },
      { ...ok, caseTimeoutSeconds: 0 },
      { ...ok, caseTimeoutSeconds: 601 },
      { ...ok, caseTimeoutSeconds: 1.5 },
      { ...ok, evaluatorId: 'no-such-evaluator' },
      { ...ok, extra: 1 },
    ]) {
      assertErrorBody(await observe.call({ method: 'POST', url, payload: body }), 400, JSON.stringify(body));
    }
    assertErrorBody(await observe.call({ method: 'POST', url: '/api/datasets/unknown/runs', payload: ok }), 404);
    // A judge evaluator needs a configured judge, checked when the run is created.
    assertErrorBody(await observe.call({ method: 'POST', url, payload: { ...ok, evaluatorId: judge.id } }), 503);
    assertErrorBody(await observe.call({ method: 'GET', url: '/api/runs/unknown' }), 404);
    const runsAfter = await observe.service.context.database.db.selectFrom('eval_runs').select('id').execute();
    assert.equal(runsAfter.length, runsBefore.length);
  });
});

/** The real service on a database that outlives it, as `vigil observe` is across restarts. */
async function startOn(backend: TestBackend, clock: ManualClock) {
  const { dataDir, ...database } = backend.freshDatabase();
  const config = { ...observeConfigFromEnvironment({ LOG_LEVEL: 'silent' }, { dataDir }), database };
  const start = (kickEvalRuns = false) => buildObserveService(config, { clock, runJobs: false, kickEvalRuns });
  return { start };
}

await describeEachDatabase('evaluation runs survive a restart', (backend) => {
  const agent = new Agent();
  before(async () => {
    await agent.server.start();
  });
  after(() => agent.server.stop());

  test('unfinished cases are worked by the periodic job after a restart; a dead worker’s claim runs out; a case is given up after 3 attempts', async () => {
    const clock = new ManualClock(Date.parse('2026-11-22T10:00:00.000Z'));
    const { start } = await startOn(backend, clock);
    const first = await start();
    const raw = ((await first.app.inject({ method: 'POST', url: '/api/keys', payload: { name: 'k' } })).json() as Json).key as string;
    const callOf =
      (service: Awaited<ReturnType<typeof start>>): Call =>
      (options) =>
        service.app.inject({ ...options, headers: { authorization: `Bearer ${raw}`, ...options.headers } });

    const firstCall = callOf(first);
    const dataset = (
      await firstCall({
        method: 'POST',
        url: '/api/datasets',
        payload: {
          name: 'd',
          cases: [{ input: { task: 'ok', answer: 1 }, expected: 1 }, { input: { task: 'ok' } }, { input: { task: 'ok', answer: 2 }, expected: 2 }],
        },
      })
    ).json() as Json;
    const created = await firstCall({
      method: 'POST',
      url: `/api/datasets/${dataset.id}/runs`,
      payload: { agentId: 'a', webhookUrl: `${agent.server.url}/hook` },
    });
    assert.equal(created.statusCode, 202, created.body);
    const runId = (created.json() as Json).id as string;
    const { db } = first.context.database;
    // Case 0: held by a worker that died mid-case; case 1: already interrupted three times.
    await db
      .updateTable('eval_run_cases')
      .set({ claimed_until: clock.now() + 60_000, attempts: 1 })
      .where('run_id', '=', runId)
      .where('position', '=', 0)
      .execute();
    await db
      .updateTable('eval_run_cases')
      .set({ claimed_until: clock.now() - 1, attempts: 3 })
      .where('run_id', '=', runId)
      .where('position', '=', 1)
      .execute();
    await first.app.close();
    assert.equal(agent.server.requests.length, 0, 'nothing was worked before the restart');

    const second = await start();
    try {
      agent.call = callOf(second);
      const call = callOf(second);
      assert.equal(((await call({ method: 'GET', url: `/api/runs/${runId}` })).json() as Json).status, 'running');
      assert.equal(await second.evalRuns.job.tick(), true);
      let run = (await call({ method: 'GET', url: `/api/runs/${runId}` })).json() as Json;
      assert.equal(run.status, 'running');
      assert.equal(run.completedCases, 2);
      assert.deepEqual(
        run.cases.map((c: Json) => c.passed),
        [null, false, true],
      );
      assert.equal(run.cases[1].error, 'gave up after 3 interrupted attempts');
      assert.equal(agent.server.requests.length, 1, 'the given-up case did not call the webhook again');

      clock.advance(60_001);
      assert.equal(await second.evalRuns.job.tick(), true);
      run = (await call({ method: 'GET', url: `/api/runs/${runId}` })).json() as Json;
      assert.equal(run.status, 'completed');
      assert.equal(run.finishedAt, new Date(clock.now()).toISOString());
      assert.deepEqual(
        run.cases.map((c: Json) => c.passed),
        [true, false, true],
      );
      assert.equal(run.passedCases, 2);
      assert.equal(run.failedCases, 1);
      // Nothing is worked twice.
      assert.equal(agent.server.requests.length, 2);
      assert.equal(await second.evalRuns.job.tick(), true);
      assert.equal(agent.server.requests.length, 2);
    } finally {
      await second.app.close();
    }
  });

  test('shutdown does not wait out a case timeout: the interrupted case keeps its claim and is resumed later', async () => {
    const clock = new ManualClock(Date.parse('2026-11-22T10:00:00.000Z'));
    const { start } = await startOn(backend, clock);
    const first = await start(true);
    const raw = ((await first.app.inject({ method: 'POST', url: '/api/keys', payload: { name: 'k' } })).json() as Json).key as string;
    const callOf =
      (service: Awaited<ReturnType<typeof start>>): Call =>
      (options) =>
        service.app.inject({ ...options, headers: { authorization: `Bearer ${raw}`, ...options.headers } });
    agent.call = callOf(first);
    const requestsBefore = agent.server.requests.length;
    const dataset = (
      await callOf(first)({ method: 'POST', url: '/api/datasets', payload: { name: 'd', cases: [{ input: { task: 'hang-once', answer: 7 }, expected: 7 }] } })
    ).json() as Json;
    const created = await callOf(first)({
      method: 'POST',
      url: `/api/datasets/${dataset.id}/runs`,
      payload: { agentId: 'a', webhookUrl: `${agent.server.url}/hook`, caseTimeoutSeconds: 600 },
    });
    assert.equal(created.statusCode, 202, created.body);
    const runId = (created.json() as Json).id as string;
    const deadline = Date.now() + 5000;
    while (agent.server.requests.length === requestsBefore) {
      if (Date.now() > deadline) assert.fail('the webhook was not called');
      await sleep(10);
    }
    const started = performance.now();
    await first.app.close();
    assert.ok(performance.now() - started < 10_000, `close took ${Math.round(performance.now() - started)} ms`);

    const second = await start();
    try {
      agent.call = callOf(second);
      const call = callOf(second);
      const pending = await second.context.database.db.selectFrom('eval_run_cases').selectAll().where('run_id', '=', runId).executeTakeFirstOrThrow();
      assert.equal(pending.status, 'pending');
      assert.equal(pending.attempts, 1);
      assert.ok(pending.claimed_until !== null && Number(pending.claimed_until) > clock.now(), 'the claim is kept');
      // While the claim holds nobody takes the case again.
      await second.evalRuns.job.tick();
      assert.equal(((await call({ method: 'GET', url: `/api/runs/${runId}` })).json() as Json).status, 'running');
      clock.advance(Number(pending.claimed_until) - clock.now() + 1);
      await second.evalRuns.job.tick();
      const run = (await call({ method: 'GET', url: `/api/runs/${runId}` })).json() as Json;
      assert.equal(run.status, 'completed');
      assert.equal(run.passedCases, 1);
      assert.equal(run.cases[0].error, null);
    } finally {
      await second.app.close();
    }
  });
});
