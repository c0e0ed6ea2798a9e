/**
 * examples/openai-agents.ts and examples/langgraph.ts, run as their headers say against a real
 * gate and observe (linked as `npm start` links them) on each database and a local stand-in of
 * OpenAI. The OpenAI Agents example is killed while it waits for a human and started again: the
 * new process resumes the stored run with the decision taken meanwhile.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { eventually, startLiveServices, type LiveServices } from '@vigil/cli/testing';
import { describeEachDatabase, type TestBackend, type TestHttpServer } from '@vigil/platform/testing';
import { GateClient, ObserveClient } from './index.ts';
import { startScriptedProviders } from './provider-fixtures.ts';

const root = resolve(import.meta.dirname, '../../..');

let provider: TestHttpServer;
let scratch: string;
before(async () => {
  provider = await startScriptedProviders(0, { toolArguments: () => ({ orderId: '1042', amount: 349 }) });
  scratch = mkdtempSync(join(tmpdir(), 'vigil-framework-examples-'));
});
after(async () => {
  await provider?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

function databaseEnv(backend: TestBackend, service: 'OBSERVE' | 'GATE'): Record<string, string> {
  const database = backend.freshDatabase();
  return database.kind === 'postgres' ? { DATABASE_URL: database.url, [`${service}_DB_SCHEMA`]: database.schema } : {};
}

interface Run {
  code: Promise<number | null>;
  stdout: () => string;
  stderr: () => string;
  kill: () => void;
}

/** An example as a user runs it from the repository root. */
function runExample(file: string, env: Record<string, string>): Run {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VIGIL_') && !k.startsWith('OPENAI_')));
  const child = spawn(process.execPath, ['--import', 'tsx', resolve(root, 'examples', file)], {
    cwd: root,
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return { code: new Promise((done) => child.once('exit', done)), stdout: () => stdout, stderr: () => stderr, kill: () => child.kill('SIGKILL') };
}

await describeEachDatabase('framework examples', (backend) => {
  let live: LiveServices;
  let env: Record<string, string>;
  let admin: GateClient;
  let observe: ObserveClient;

  before(async () => {
    live = await startLiveServices({ linked: true, observeEnv: databaseEnv(backend, 'OBSERVE'), gateEnv: databaseEnv(backend, 'GATE') });
    admin = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
    observe = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey });
    env = {
      VIGIL_URL: live.observeUrl,
      VIGIL_API_KEY: live.observeKey,
      VIGIL_GATE_URL: live.gateUrl,
      VIGIL_GATE_API_KEY: await live.gateKey('example-agent', ['request:create', 'request:read']),
      OPENAI_API_KEY: 'sk-stand-in',
      OPENAI_BASE_URL: `${provider.url}/v1`,
      // The Agents SDK would send its traces to OpenAI.
      OPENAI_AGENTS_DISABLE_TRACING: '1',
    };
  });
  after(() => live?.close());

  /** The session's approval and tool events, once the gate's decision is in it. */
  async function sessionFacts(sessionId: string) {
    const { events, chainValid } = await eventually(
      () => observe.getTimeline(sessionId),
      (timeline) => timeline.events.some((e) => e.eventType === 'session_ended'),
      10_000,
      `the end of session ${sessionId}`,
    );
    assert.equal(chainValid, true);
    return events.map((e) => (e.eventType === 'custom' ? String(e.payload.type) : e.eventType));
  }

  test('examples/openai-agents.ts: killed while it waits for a human, started again, it resumes the stored run with the decision', async () => {
    const runFile = join(scratch, `refund-run-${backend.kind}.json`);
    const first = runExample('openai-agents.ts', { ...env, REFUND_RUN_FILE: runFile });
    const waiting = await eventually(
      async () => first.stdout(),
      (out) => /Waiting for a decision on request \S+/.test(out),
      60_000,
      'the wait',
    );
    const requestId = /Waiting for a decision on request (\S+)/.exec(waiting)![1]!;
    const sessionId = /Session (\S+) started/.exec(waiting)![1]!;
    assert.ok(existsSync(runFile), 'the interrupted run is stored before the wait');
    first.kill();
    await first.code;

    await admin.decide(requestId, 'approved', 'broken on arrival');
    const second = runExample('openai-agents.ts', { ...env, REFUND_RUN_FILE: runFile });
    assert.equal(await second.code, 0, second.stderr());
    assert.equal(second.stderr(), '');
    assert.match(second.stdout(), /Resuming the run stored in/);
    assert.match(second.stdout(), /Answer: Done: refunded 349 EUR on order 1042/);
    assert.equal(existsSync(runFile), false, 'the finished run is forgotten');

    // One session across both processes: each fact once, the refund after the human's decision.
    assert.deepEqual(await sessionFacts(sessionId), [
      'session_started',
      'approval_requested',
      'approval_granted',
      'approval_redeemed',
      'tool_call',
      'tool_response',
      'session_ended',
    ]);
    const request = await admin.getRequest(requestId);
    assert.deepEqual(request.params, { orderId: '1042', amount: 349 });
    assert.notEqual(request.confirmedAt, null, 'the gate is told the refund ran');
  });

  test('examples/langgraph.ts: the interrupt waits for a human who approves through the API, then the graph finishes', async () => {
    const program = runExample('langgraph.ts', env);
    const waiting = await eventually(
      async () => program.stdout(),
      (out) => /Waiting for a decision on request \S+/.test(out),
      60_000,
      'the wait',
    );
    const requestId = /Waiting for a decision on request (\S+)/.exec(waiting)![1]!;
    await admin.decide(requestId, 'approved', 'broken on arrival');
    assert.equal(await program.code, 0, program.stderr());
    assert.equal(program.stderr(), '');
    assert.match(program.stdout(), /Answer: Done: refunded 349 EUR on order 1042/);
    const sessionId = /Session (\S+) started/.exec(program.stdout())![1]!;
    assert.deepEqual(await sessionFacts(sessionId), [
      'session_started',
      'approval_requested',
      'approval_granted',
      'approval_redeemed',
      'tool_call',
      'tool_response',
      'session_ended',
    ]);
    assert.notEqual((await admin.getRequest(requestId)).confirmedAt, null);
  });
});
