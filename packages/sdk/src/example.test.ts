import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { GateClient, ObserveClient } from './index.ts';
import { eventually, startLiveServices, type LiveServices } from '@vigil/cli/testing';
import { FINAL_ANSWER, startScriptedProviders } from './provider-fixtures.ts';

const root = resolve(import.meta.dirname, '../../..');

let live: LiveServices;
before(async () => {
  // Linked as under `npm start`: the gate forwards request events to observe.
  live = await startLiveServices({ linked: true });
});
after(() => live?.close());

interface Run {
  code: Promise<number | null>;
  stdout: () => string;
  stderr: () => string;
}

/** A program as a user runs it from the repository root (asynchronously: the servers live in this process). */
function run(command: string, commandArgs: string[], env: Record<string, string>): Run {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VIGIL_'))) as Record<string, string>;
  const child = spawn(command, commandArgs, { cwd: root, env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return { code: new Promise((done) => child.once('exit', done)), stdout: () => stdout, stderr: () => stderr };
}

/** examples/agent-loop.ts, run as the quick start (docs/guide/quick-start.md) says. */
function runExample(env: Record<string, string>, args: string[] = []): Run {
  return run(process.execPath, ['--import', 'tsx', resolve(root, 'examples/agent-loop.ts'), ...args], env);
}

function sessionIdOf(stdout: string): string {
  const match = /Session ([0-9a-f-]{36}) started/.exec(stdout);
  assert.ok(match, stdout);
  return match[1]!;
}

async function assertRecorded(sessionId: string, requestId: string, decidedBy: string): Promise<void> {
  const observe = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey });
  const session = await observe.getSession(sessionId);
  assert.equal(session.status, 'completed');
  assert.equal(session.agentId, 'refund-agent');
  assert.equal(session.toolCallCount, 3, 'lookup_order, check_refund_policy, issue_refund');
  const { events, chainValid } = await observe.getTimeline(sessionId);
  assert.equal(chainValid, true);
  const types = events.map((e) => e.eventType);
  assert.equal(types.filter((t) => t === 'llm_call').length, 4);
  // Each approval fact once (the agent records them; the gate forwards no copy), in seq order.
  assert.deepEqual(
    types.filter((t) => t.startsWith('approval_')),
    ['approval_requested', 'approval_granted'],
  );
  assert.deepEqual(
    events.map((e) => e.seq),
    events.map((_, i) => i),
  );
  // The same events as steps (what the dashboard compares), without their payloads.
  const { steps, nextAfter } = await observe.listSessionSteps(sessionId, { limit: 100 });
  assert.equal(nextAfter, null);
  assert.deepEqual(
    steps.map((s) => [s.id, s.eventType]),
    events.map((e) => [e.id, e.eventType]),
  );
  assert.equal(types.filter((t) => t === 'llm_response').length, 4);
  assert.deepEqual(
    events.filter((e) => e.eventType === 'tool_response').map((e) => e.payload.toolName),
    ['lookup_order', 'check_refund_policy', 'issue_refund'],
  );
  const spend = events.filter((e) => e.eventType === 'llm_response').reduce((sum, e) => sum + (e.payload.costUsd as number), 0);
  assert.ok(spend > 0, 'gpt-4o-mini calls are priced');
  assert.ok(Math.abs(session.totalCostUsd - spend) < 1e-9);

  const gate = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
  const request = await gate.getRequest(requestId);
  assert.equal(request.status, 'approved');
  assert.equal(request.decidedBy, decidedBy);
  // The session's tags travel with the request, so that tag budgets cover it (docs/guide/budgets.md).
  assert.deepEqual(request.context, { sessionId, agentId: 'refund-agent', recordedByAgent: true, tags: ['example', 'support'] });
  assert.notEqual(request.confirmedAt, null, 'the executed refund is confirmed');
  assert.match(String((request.executionResult as { result?: { refundId?: string } }).result?.refundId), /^rf_1042_/);
}

describe('examples/agent-loop.ts', () => {
  test('runs against real servers: waits while a human approves the refund through the gate API', async () => {
    const agentKey = await live.gateKey('refund-agent', ['request:create', 'request:read']);
    const run = runExample({ VIGIL_URL: live.observeUrl, VIGIL_API_KEY: live.observeKey, VIGIL_GATE_URL: live.gateUrl, VIGIL_GATE_API_KEY: agentKey });
    const supervisor = new GateClient({ baseUrl: live.gateUrl, apiKey: await live.gateKey('supervisor', ['request:read', 'request:decide']) });
    const [pending] = await eventually(
      () => supervisor.listRequests({ action: 'refund', status: 'pending' }),
      (list) => list.length === 1,
      60_000,
      'the refund request',
    );
    await eventually(
      async () => run.stdout(),
      (out) => out.includes(`/api/requests/${pending!.id}/decide`),
      10_000,
      'the printed approval command',
    );
    await supervisor.decide(pending!.id, 'approved', 'damaged on delivery');
    assert.equal(await run.code, 0, run.stderr());
    assert.match(run.stdout(), /Refund approved by api:supervisor: damaged on delivery/);
    assert.match(run.stdout(), /Stored: \d+ events, 3 tool calls, 0 errors, \$0\.\d+, status completed/);
    await assertRecorded(sessionIdOf(run.stdout()), pending!.id, 'api:supervisor');
  });

  test('--auto-approve with an agent key that may not decide says so, without a stack trace, and keeps waiting for a human', async () => {
    const agentKey = await live.gateKey('refund-agent-2', ['request:create', 'request:read']);
    const run = runExample({ VIGIL_URL: live.observeUrl, VIGIL_API_KEY: live.observeKey, VIGIL_GATE_URL: live.gateUrl, VIGIL_GATE_API_KEY: agentKey }, [
      '--auto-approve',
    ]);
    await eventually(
      async () => run.stdout(),
      (out) => out.includes('needs a gate key with the request:decide scope'),
      30_000,
      'the explanation',
    );
    const id = /approve refund request (\S+):/.exec(run.stdout())?.[1];
    assert.ok(id, run.stdout());
    assert.doesNotMatch(run.stdout(), /Bearer \$|Bearer "/, 'the printed curl has no empty shell variable');
    await new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey }).decide(id, 'approved', 'checked by hand');
    assert.equal(await run.code, 0, run.stderr());
    assert.equal(run.stderr(), '', 'no stack trace');
    await assertRecorded(sessionIdOf(run.stdout()), id, 'api:admin (GATE_ADMIN_KEY)');
  });

  test('--auto-approve decides its own request with the gate key', async () => {
    const run = runExample(
      { VIGIL_URL: live.observeUrl, VIGIL_API_KEY: live.observeKey, VIGIL_GATE_URL: live.gateUrl, VIGIL_GATE_API_KEY: live.gateAdminKey },
      ['--auto-approve'],
    );
    assert.equal(await run.code, 0, run.stderr());
    const id = /approve refund request (\S+):/.exec(run.stdout())?.[1];
    assert.ok(id, run.stdout());
    await assertRecorded(sessionIdOf(run.stdout()), id, 'api:admin (GATE_ADMIN_KEY)');
  });
});

describe('examples in other languages', () => {
  test('examples/http.sh records a session with curl alone; observe summarises it and the chain verifies', async () => {
    const shell = run('bash', ['examples/http.sh'], { VIGIL_URL: live.observeUrl, VIGIL_API_KEY: live.observeKey });
    assert.equal(await shell.code, 0, shell.stderr());
    const sessionId = /Session (http-example-\S+):/.exec(shell.stdout())?.[1];
    assert.ok(sessionId, shell.stdout());
    assert.match(shell.stdout(), /"valid":true/);
    const observe = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey });
    const session = await observe.getSession(sessionId);
    assert.deepEqual([session.status, session.eventCount, session.toolCallCount], ['completed', 6, 1]);
  });

  test('examples/python_agent.py records its session and gets the refund approved by the policy of docs/guide/curl.md', async (t) => {
    if (spawnSync('python3', ['--version']).status !== 0) {
      if (process.env.REQUIRE_SERVICES === '1') assert.fail('python3 is required (REQUIRE_SERVICES=1)');
      return t.skip('python3 is not installed');
    }
    const admin = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
    const policy = await admin.createPolicy({
      name: 'payments',
      priority: 10,
      rules: [{ match: { action: 'pay', amount: { $lt: 100 } }, decision: 'auto_approve' }],
    });
    try {
      const agentKey = await live.gateKey('python-agent', ['request:create', 'request:read']);
      const python = run('python3', ['examples/python_agent.py'], {
        PYTHONPATH: resolve(root, 'python'),
        VIGIL_URL: live.observeUrl,
        VIGIL_API_KEY: live.observeKey,
        VIGIL_GATE_URL: live.gateUrl,
        VIGIL_GATE_API_KEY: agentKey,
      });
      assert.equal(await python.code, 0, python.stderr());
      assert.match(python.stdout(), /Refund approved by policy/);
      const sessionId = /Stored session (\S+)/.exec(python.stdout())?.[1];
      assert.ok(sessionId, python.stdout());
      const observe = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey });
      const { events, chainValid } = await observe.getTimeline(sessionId);
      assert.equal(chainValid, true);
      assert.deepEqual(
        events.map((e) => e.eventType),
        [
          'session_started',
          'tool_call',
          'tool_response',
          'llm_call',
          'llm_response',
          'approval_requested',
          'approval_granted',
          'tool_call',
          'tool_response',
          'session_ended',
        ],
      );
      assert.ok((events[4]!.payload.costUsd as number) > 0, 'gpt-4o-mini is priced');
    } finally {
      await admin.deletePolicy(policy.id);
    }
  });
});

describe('provider examples (against a local stand-in of the provider API)', () => {
  /** Runs examples/<file> as the quick start says, answers what Vigil stored of its session. */
  async function runProviderExample(file: string, env: Record<string, string>) {
    const provider = await startScriptedProviders();
    try {
      const program = run(process.execPath, ['--import', 'tsx', resolve(root, 'examples', file)], {
        VIGIL_URL: live.observeUrl,
        VIGIL_API_KEY: live.observeKey,
        ...Object.fromEntries(Object.entries(env).map(([k, v]) => [k, v.replace('$PROVIDER', provider.url)])),
      });
      assert.equal(await program.code, 0, program.stderr());
      // A provider SDK's warning (a deprecated model, say) would greet everyone who copies the example.
      assert.equal(program.stderr(), '', `examples/${file} wrote to stderr`);
      assert.match(program.stdout(), new RegExp(`Answer: ${FINAL_ANSWER}`));
      const sessionId = /Session (\S+) started/.exec(program.stdout())?.[1];
      assert.ok(sessionId, program.stdout());
      const observe = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey });
      const { events, chainValid } = await observe.getTimeline(sessionId);
      assert.equal(chainValid, true);
      assert.equal((await observe.getSession(sessionId)).status, 'completed');
      return events;
    } finally {
      await provider.stop();
    }
  }

  const TOOL_TURN = ['session_started', 'llm_call', 'llm_response', 'tool_call', 'tool_response', 'llm_call', 'llm_response', 'session_ended'];

  test('examples/openai.ts: both completions (tool call, then answer) priced, and the tool between them', async () => {
    const events = await runProviderExample('openai.ts', { OPENAI_API_KEY: 'sk-stand-in', OPENAI_BASE_URL: '$PROVIDER/v1' });
    assert.deepEqual(
      events.map((e) => e.eventType),
      TOOL_TURN,
    );
    const [first, second] = events.filter((e) => e.eventType === 'llm_response');
    assert.equal(first!.payload.finishReason, 'tool_calls');
    assert.deepEqual(
      (first!.payload.toolCalls as Array<{ name: string }>).map((c) => c.name),
      ['get_weather'],
    );
    assert.equal(second!.payload.completion, FINAL_ANSWER);
    for (const response of [first!, second!]) assert.ok((response.payload.costUsd as number) > 0, 'gpt-4o-mini is priced');
    assert.deepEqual(events[4]!.payload.result, { city: 'Oslo', celsius: -3, sky: 'snow' });
  });

  test('examples/anthropic.ts: tool use, the tool, then the answer, priced', async () => {
    const events = await runProviderExample('anthropic.ts', { ANTHROPIC_API_KEY: 'sk-ant-stand-in', ANTHROPIC_BASE_URL: '$PROVIDER' });
    assert.deepEqual(
      events.map((e) => e.eventType),
      TOOL_TURN,
    );
    assert.equal(events[1]!.payload.systemPrompt, 'You are a weather assistant.');
    const [first, second] = events.filter((e) => e.eventType === 'llm_response');
    assert.equal(first!.payload.finishReason, 'tool_use');
    assert.equal(second!.payload.completion, FINAL_ANSWER);
    for (const response of [first!, second!]) assert.ok((response.payload.costUsd as number) > 0, "the example's model is priced");
  });

  test('the Anthropic model the quick start, the SDK README and examples/anthropic.ts name is not one @anthropic-ai/sdk calls deprecated', () => {
    // The SDK warns on every call with a model of this list (resources/messages/messages.js).
    const anthropicSdk = dirname(createRequire(import.meta.url).resolve('@anthropic-ai/sdk'));
    const { DEPRECATED_MODELS } = createRequire(import.meta.url)(join(anthropicSdk, 'internal/data/deprecated-models.js')) as {
      DEPRECATED_MODELS: Record<string, string>;
    };
    assert.ok(Object.keys(DEPRECATED_MODELS).length > 0, 'the list was found');
    for (const file of ['docs/guide/quick-start.md', 'packages/sdk/README.md', 'examples/anthropic.ts']) {
      const models = [...readFileSync(join(root, file), 'utf8').matchAll(/model: '(claude-[^']+)'/g)].map((match) => match[1]!);
      assert.ok(models.length > 0, `${file} names a Claude model`);
      for (const model of models)
        assert.equal(DEPRECATED_MODELS[model], undefined, `${file}: ${model} is deprecated (end of life ${DEPRECATED_MODELS[model]})`);
    }
  });

  test("examples/vercel-ai.ts: both model steps through the middleware, the AI SDK's tool run between them", async () => {
    const events = await runProviderExample('vercel-ai.ts', { OPENAI_API_KEY: 'sk-stand-in', OPENAI_BASE_URL: '$PROVIDER/v1' });
    assert.deepEqual(
      events.map((e) => e.eventType),
      TOOL_TURN,
    );
    const [first, second] = events.filter((e) => e.eventType === 'llm_response');
    assert.deepEqual(
      (first!.payload.toolCalls as Array<{ name: string }>).map((c) => c.name),
      ['get_weather'],
    );
    assert.equal(events[3]!.payload.callId, 'call_1', "the tool run carries the model's tool-call id");
    assert.equal(second!.payload.completion, FINAL_ANSWER);
    for (const response of [first!, second!]) assert.ok((response.payload.costUsd as number) > 0);
  });

  test('examples/langchain.ts: chat model runs and the tool run, priced', async () => {
    const events = await runProviderExample('langchain.ts', { OPENAI_API_KEY: 'sk-stand-in', OPENAI_BASE_URL: '$PROVIDER/v1' });
    assert.deepEqual(
      events.map((e) => e.eventType).filter((t) => t !== 'custom'),
      TOOL_TURN,
    );
    const [first, second] = events.filter((e) => e.eventType === 'llm_response');
    assert.deepEqual(
      (first!.payload.toolCalls as Array<{ name: string }>).map((c) => c.name),
      ['get_weather'],
    );
    assert.equal(second!.payload.completion, FINAL_ANSWER);
    for (const response of [first!, second!]) assert.ok((response.payload.costUsd as number) > 0);
  });
});
