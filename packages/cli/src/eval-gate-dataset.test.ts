import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { sendJson } from '@vigil/platform/testing';
import { ObserveFixture } from './eval-gate-observe-fixture.ts';
import { runCli } from './eval-gate-testkit.ts';

// Dataset mode: the real `vigil eval-gate` binary (a child process, CI=true) against the real
// observe app, which sends each case to a real agent webhook (node:http) that logs a session to
// observe over its HTTP API and answers {sessionId, output}.

describe('vigil eval-gate dataset mode against the real observe service and a live agent webhook', () => {
  let observe: ObserveFixture;
  let complianceId = '';
  let agent: Server;
  let agentUrl = '';
  let delayMs = 0;
  let calls = 0;
  const received: Array<{ input?: { tool?: string }; caseId?: string; runId?: string }> = [];

  before(async () => {
    observe = await ObserveFixture.start();
    complianceId = await observe.createNoDeleteEvaluator();
    // The agent under test: "runs" a case by logging a session that calls input.tool, then answers.
    agent = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        void (async () => {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as (typeof received)[number];
          received.push(body);
          const tool = body.input?.tool ?? 'search';
          const sessionId = `case-${++calls}-${tool}`;
          if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
          await observe.ingestSession(sessionId, 'dataset-bot', [tool]);
          // The case whose session is tampered with as soon as it is logged.
          if (tool === 'tampered') await observe.tamperEvent(sessionId, 1);
          sendJson(res, 200, { sessionId, output: `used ${tool}` });
        })().catch((error: unknown) => sendJson(res, 500, { error: String(error) }));
      });
    });
    await new Promise<void>((done) => agent.listen(0, '127.0.0.1', () => done()));
    agentUrl = `http://127.0.0.1:${(agent.address() as AddressInfo).port}/run`;
  });

  after(async () => {
    agent?.closeAllConnections();
    if (agent) await new Promise<void>((done) => agent.close(() => done()));
    await observe?.close();
  });

  /** One case per tool; `expected` is the output the agent answers (what a run without an evaluator compares). */
  const createDataset = async (tools: string[]): Promise<string> => {
    const cases = tools.map((tool) => ({ input: { tool }, expected: `used ${tool}` }));
    const created = await observe.api('POST', '/api/datasets', { name: `tools ${tools.join(' ')}`, cases });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    return created.json.id;
  };

  test('every case passes (no evaluator: the outputs equal expected) → exit 0; one line per case and a case table', async () => {
    const datasetId = await createDataset(['search', 'lookup', 'search']);
    const before = received.length;
    const result = await runCli(
      ['--dataset-id', datasetId, '--agent-id', 'dataset-bot', '--webhook-url', agentUrl, '--min-pass-rate', '1', '--timeout-seconds', '60'],
      observe.cliEnv(),
    );
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.deepEqual(
      received
        .slice(before)
        .map((body) => body.input?.tool)
        .sort(),
      ['lookup', 'search', 'search'],
      'the server sent each case to the agent webhook once',
    );
    assert.match(result.stderr, /^Dataset run \S+ started: 3 cases/m);
    assert.equal(result.stderr.match(/^\[\d\/3\] case #\d.*: PASS/gm)?.length, 3, result.stderr);
    assert.doesNotMatch(result.stderr, /\r|\x1b\[/, 'no live progress line under CI=true');
    assert.match(result.stdout, /^case\s+session\s+score\s+result\s+reason$/m);
    assert.match(result.stdout, /^pass rate 1\.00 \(3\/3\), required 1\.00: PASS$/m);
  });

  test('with an evaluator, a case that breaks its rules pulls the pass rate below the minimum → exit 1', async () => {
    const datasetId = await createDataset(['search', 'delete_db', 'search', 'search']);
    const args = ['--dataset-id', datasetId, '--agent-id', 'dataset-bot', '--webhook-url', agentUrl, '--evaluator-id', complianceId];
    const failing = await runCli([...args, '--min-pass-rate', '0.8', '--json'], observe.cliEnv());
    assert.equal(failing.code, 1, `${failing.stdout}\n${failing.stderr}`);
    const report = JSON.parse(failing.stdout);
    assert.equal(report.mode, 'dataset');
    assert.equal(report.result, 'fail');
    assert.equal(report.run.status, 'completed');
    assert.equal(report.run.totalCases, 4);
    assert.equal(report.run.passedCases, 3);
    assert.equal(report.passRate, 0.75);
    const bad = report.cases.find((c: { sessionId: string | null }) => c.sessionId?.endsWith('delete_db'));
    assert.equal(bad.passed, false);
    assert.equal(bad.score, 0);
    const run = await observe.api('GET', `/api/runs/${report.run.id}`);
    assert.equal(run.json.evaluatorId, complianceId, 'the CLI passed --evaluator-id to the run');
  });

  test('a case whose session has a broken hash chain fails the gate (exit 1) even at a full pass rate', async () => {
    const datasetId = await createDataset(['search', 'tampered']);
    const result = await runCli(['--dataset-id', datasetId, '--agent-id', 'dataset-bot', '--webhook-url', agentUrl, '--min-pass-rate', '1'], observe.cliEnv());
    assert.equal(result.code, 1, `${result.stdout}\n${result.stderr}`);
    assert.match(result.stdout, /^pass rate 1\.00 \(2\/2\), required 1\.00: PASS$/m, 'without an evaluator both cases pass');
    const broken = /^FAIL: the hash chain of session (case-\d+-tampered) is broken at seq 1 \(event \S+\): hash does not match the event content$/m.exec(
      result.stdout,
    );
    assert.ok(broken, result.stdout);
    assert.match(result.stderr, new RegExp(`^vigil eval-gate: the hash chain of session ${broken[1]} is broken at seq 1 `, 'm'));
    assert.doesNotMatch(result.stdout, /session case-\d+-search is broken/);
  });

  test('a run that outlasts --timeout-seconds exits 2', async () => {
    const datasetId = await createDataset(['search']);
    delayMs = 3000;
    try {
      const started = Date.now();
      const result = await runCli(
        [
          '--dataset-id',
          datasetId,
          '--agent-id',
          'dataset-bot',
          '--webhook-url',
          agentUrl,
          '--evaluator-id',
          complianceId,
          '--min-pass-rate',
          '0',
          '--timeout-seconds',
          '1',
        ],
        observe.cliEnv(),
      );
      assert.equal(result.code, 2, `${result.stdout}\n${result.stderr}`);
      assert.match(result.stderr, /did not complete within 1 s \(--timeout-seconds\): 0\/1 cases done/);
      assert.ok(Date.now() - started < 15_000);
      // The server finishes the run on its own; wait for it so nothing is in flight at shutdown.
      const runId = /Dataset run (\S+) started/.exec(result.stderr)?.[1];
      assert.ok(runId, result.stderr);
      let status = '';
      for (let i = 0; i < 100 && status !== 'completed'; i++) {
        await new Promise((r) => setTimeout(r, 200));
        status = (await observe.api('GET', `/api/runs/${runId}`)).json.status;
      }
      assert.equal(status, 'completed');
    } finally {
      delayMs = 0;
    }
  });

  test('an unknown dataset prints the server message and exits 2', async () => {
    const result = await runCli(
      ['--dataset-id', 'no-such-dataset', '--agent-id', 'dataset-bot', '--webhook-url', agentUrl, '--min-pass-rate', '1'],
      observe.cliEnv(),
    );
    assert.equal(result.code, 2);
    assert.match(result.stderr, /POST \/api\/datasets\/no-such-dataset\/runs answered 404: \S/);
  });
});
