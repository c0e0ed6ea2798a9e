// examples/vercel-ai-approval.ts and examples/mastra.ts, run as their headers say against a real gate and observe and a
// local stand-in of the OpenAI API. examples/mastra.ts needs Node >= 22.13 (@mastra/core): skipped with the reason before.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { eventually, startLiveServices, type LiveServices } from '@vigil/cli/testing';
import { GateClient, ObserveClient } from './index.ts';
import { startScriptedProviders } from './provider-fixtures.ts';

const root = resolve(import.meta.dirname, '../../..');
const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
const mastraSkip = major < 22 || (major === 22 && minor < 13) ? `@mastra/core needs Node >= 22.13; this is Node ${process.versions.node}` : false;

let live: LiveServices;
let provider: Awaited<ReturnType<typeof startScriptedProviders>>;
let admin: GateClient;
before(async () => {
  live = await startLiveServices({ linked: true });
  provider = await startScriptedProviders();
  admin = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
});
after(async () => {
  await provider?.stop();
  await live?.close();
});

function runExample(file: string, env: Record<string, string>) {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VIGIL_'))) as Record<string, string>;
  const child = spawn(process.execPath, ['--import', 'tsx', resolve(root, 'examples', file)], {
    cwd: root,
    env: { ...inherited, OPENAI_API_KEY: 'sk-stand-in', OPENAI_BASE_URL: `${provider.url}/v1`, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return { code: new Promise<number | null>((done) => child.once('exit', done)), stdout: () => stdout, stderr: () => stderr };
}

/** The example's session (the gate linked to observe, as under `npm start`): the approval, the decision, the redemption and the refund each once, in order; and its request approved and confirmed. */
async function assertRecorded(stdout: string, decidedBy: string): Promise<void> {
  const sessionId = /Session (\S+) started/.exec(stdout)?.[1];
  assert.ok(sessionId, stdout);
  const observe = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey });
  const { events, chainValid } = await observe.getTimeline(sessionId);
  assert.equal(chainValid, true);
  assert.deepEqual(
    events
      .map((e) => (e.eventType === 'custom' && e.payload.type === 'approval_redeemed' ? 'redeemed' : e.eventType))
      .filter((t) => /^(approval_|tool_|redeemed)/.test(t)),
    ['approval_requested', 'approval_granted', 'redeemed', 'tool_call', 'tool_response'],
  );
  const requestId = events.find((e) => e.eventType === 'approval_requested')!.payload.requestId as string;
  const request = await admin.getRequest(requestId);
  assert.deepEqual([request.action, request.params, request.status, request.decidedBy], ['refund', { amount: 25, orderId: '1042' }, 'approved', decidedBy]);
  assert.notEqual(request.confirmedAt, null, 'the refund that ran is confirmed');
}

for (const file of ['vercel-ai-approval.ts', 'mastra.ts']) {
  describe(`examples/${file}`, { skip: file === 'mastra.ts' && mastraSkip }, () => {
    test('a policy approves the refund: it is issued, and the session records request, decision and refund once', async () => {
      const policy = await admin.createPolicy({
        name: 'small refunds',
        priority: 10,
        rules: [{ match: { action: 'refund', amount: { $lt: 100 } }, decision: 'auto_approve' }],
      });
      try {
        const agentKey = await live.gateKey(`example-${file}`, ['request:create', 'request:read']);
        const program = runExample(file, {
          VIGIL_URL: live.observeUrl,
          VIGIL_API_KEY: live.observeKey,
          VIGIL_GATE_URL: live.gateUrl,
          VIGIL_GATE_API_KEY: agentKey,
        });
        assert.equal(await program.code, 0, program.stderr());
        assert.equal(program.stderr(), '', `examples/${file} wrote to stderr`);
        assert.match(program.stdout(), /Refund( issued)?: \{"refundId":"rf_1042","amount":25\}/);
        await assertRecorded(program.stdout(), `policy:${policy.id}`);
      } finally {
        await admin.deletePolicy(policy.id);
      }
    });

    test('the gate routes the refund to a human, who approves it through the API: then it is issued', async () => {
      const policy = await admin.createPolicy({
        name: 'refunds need a human',
        priority: 10,
        rules: [{ match: { action: 'refund' }, decision: 'route_to_human' }],
      });
      try {
        const agentKey = await live.gateKey(`example-human-${file}`, ['request:create', 'request:read']);
        const program = runExample(file, {
          VIGIL_URL: live.observeUrl,
          VIGIL_API_KEY: live.observeKey,
          VIGIL_GATE_URL: live.gateUrl,
          VIGIL_GATE_API_KEY: agentKey,
        });
        const out = await eventually(
          async () => program.stdout(),
          (text) => /Refund request (\S+) waits for a human/.test(text),
          60_000,
          'the waiting message',
        );
        const requestId = /Refund request (\S+) waits/.exec(out)![1]!;
        const supervisor = new GateClient({ baseUrl: live.gateUrl, apiKey: await live.gateKey(`supervisor-${file}`, ['request:read', 'request:decide']) });
        await supervisor.decide(requestId, 'approved', 'broken on arrival');
        assert.equal(await program.code, 0, program.stderr());
        assert.match(program.stdout(), /Refund( issued)?: \{"refundId":"rf_1042","amount":25\}/);
        await assertRecorded(program.stdout(), 'api:supervisor-' + file);
      } finally {
        await admin.deletePolicy(policy.id);
      }
    });
  });
}
