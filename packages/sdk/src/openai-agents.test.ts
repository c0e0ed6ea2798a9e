/**
 * @vigil/sdk/openai-agents end to end: the real @openai/agents runner (Responses API, against a
 * local stand-in of OpenAI) with the adapter's needsApproval and execute, a real gate and observe
 * on each database. The tool must run only when the gate approved exactly the arguments executed.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, OpenAIProvider, run, setTracingDisabled, tool } from '@openai/agents';
import { z } from 'zod';
import { startLiveServices, type LiveServices } from '@vigil/cli/testing';
import { describeEachDatabase, type TestBackend } from '@vigil/platform/testing';
import type { TestHttpServer } from '@vigil/platform/testing';
import { GateClient, ObserveClient } from './node.ts';
import { VigilAgentApprovals, type VigilAgentApprovalsOptions } from './openai-agents.ts';
import { startScriptedProviders } from './provider-fixtures.ts';

setTracingDisabled(true);

/** What the model asks the tool for next (the stand-in calls the first tool with these). */
let nextArguments: Record<string, unknown> = {};
let provider: TestHttpServer;
before(async () => {
  provider = await startScriptedProviders(0, { toolArguments: () => nextArguments });
});
after(() => provider?.stop());

/** The service environment of one backend: SQLite files in the test's data dir, or a schema of its own. */
function databaseEnv(backend: TestBackend, service: 'OBSERVE' | 'GATE'): Record<string, string> {
  const database = backend.freshDatabase();
  return database.kind === 'postgres' ? { DATABASE_URL: database.url, [`${service}_DB_SCHEMA`]: database.schema } : {};
}

await describeEachDatabase('OpenAI Agents SDK adapter', (backend) => {
  let live: LiveServices;
  let observe: ObserveClient;
  let admin: GateClient;
  let agentGate: GateClient;

  before(async () => {
    live = await startLiveServices({ observeEnv: databaseEnv(backend, 'OBSERVE'), gateEnv: databaseEnv(backend, 'GATE') });
    observe = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey, flushIntervalMs: 50 });
    admin = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
    agentGate = new GateClient({ baseUrl: live.gateUrl, apiKey: await live.gateKey('agents-sdk', ['request:create', 'request:read']) });
    await admin.createPolicy({
      name: 'refunds',
      priority: 10,
      rules: [
        { match: { action: 'issue_refund', amount: { $lt: 100 } }, decision: 'auto_approve' },
        { match: { action: 'issue_refund', amount: { $gte: 10_000 } }, decision: 'auto_deny' },
        { match: { action: 'issue_refund' }, decision: 'route_to_human' },
      ],
    });
  });
  after(async () => {
    await observe?.close();
    await live?.close();
  });

  /** A refund agent whose tool goes through the gate; `refunds` lists what actually ran. */
  async function refundAgent(options: Partial<VigilAgentApprovalsOptions> = {}) {
    const approvals = new VigilAgentApprovals({ gate: agentGate, wait: { pollIntervalMs: 20, timeoutMs: 5000 }, ...options });
    const refunds: Array<{ orderId: string; amount: number }> = [];
    const issueRefund = tool({
      name: 'issue_refund',
      description: 'Refund an order',
      parameters: z.object({ orderId: z.string(), amount: z.number() }),
      needsApproval: approvals.needsApproval('issue_refund'),
      execute: approvals.execute('issue_refund', async (input: { orderId: string; amount: number }) => {
        refunds.push(input);
        return `refunded ${input.amount} on order ${input.orderId}`;
      }),
    });
    // The Responses API, the SDK's default, with its own OpenAI client.
    const model = await new OpenAIProvider({ baseURL: `${provider.url}/v1`, apiKey: 'sk-stand-in' }).getModel('gpt-4o-mini');
    const agent = new Agent({ name: 'refund-agent', instructions: 'Refund what the customer asks for.', model, tools: [issueRefund] });
    return { approvals, agent, refunds };
  }

  async function approvalEvents(sessionId: string) {
    await observe.flush();
    const { events } = await observe.getTimeline(sessionId);
    return events.filter((e) => e.eventType.startsWith('approval_') || e.eventType.startsWith('tool_')).map((e) => e.eventType);
  }

  test('a policy approves at once: no interruption, the tool runs once, the session records request, decision and call once', async () => {
    nextArguments = { orderId: '1042', amount: 49 };
    const { agent, refunds } = await refundAgent();
    const session = observe.startSession({ agentId: 'refund-agent' });
    const result = await session.run(() => run(agent, 'Refund order 1042'));
    await session.end();
    assert.equal(result.interruptions?.length ?? 0, 0);
    assert.deepEqual(refunds, [{ orderId: '1042', amount: 49 }]);
    assert.equal(result.finalOutput, 'Done: refunded 49 on order 1042');
    assert.deepEqual(await approvalEvents(session.id), ['approval_requested', 'approval_granted', 'tool_call', 'tool_response']);
    await agentGate.flush(); // runApproved confirms off the call path
    const [request] = await admin.listRequests({ action: 'issue_refund', status: 'approved' });
    const stored = await admin.getRequest(request!.id);
    assert.match(String(stored.decidedBy), /^policy:/);
    assert.match(String(stored.context.callId), /^call_\d+$/, "the request names the model's call");
    assert.notEqual(stored.confirmedAt, null, 'the gate is told the call ran');
  });

  test('a human approves through the API: the run is interrupted, suspended, and resumed from its RunState with the decision', async () => {
    nextArguments = { orderId: '2077', amount: 349 };
    const { approvals, agent, refunds } = await refundAgent();
    const session = observe.startSession({ agentId: 'refund-agent' });
    const first = await session.run(() => run(agent, 'Refund order 2077'));
    assert.equal(first.interruptions.length, 1);
    const suspended = await session.run(() => approvals.suspend(first));
    assert.deepEqual(refunds, [], 'nothing ran before the decision');
    const [call] = Object.values(suspended.calls);
    assert.equal((await admin.getRequest(call!.requestId)).status, 'pending');
    assert.deepEqual(suspended.session, { id: session.id, agentId: 'refund-agent' });

    await admin.decide(call!.requestId, 'approved', 'customer is right');
    // The stored form only: a JSON round trip, as a database would keep it.
    const state = await session.run(() => approvals.resume(agent, JSON.parse(JSON.stringify(suspended))));
    const second = await session.run(() => run(agent, state));
    await session.end();
    assert.deepEqual(refunds, [{ orderId: '2077', amount: 349 }]);
    assert.equal(second.finalOutput, 'Done: refunded 349 on order 2077');
    assert.deepEqual(await approvalEvents(session.id), ['approval_requested', 'approval_granted', 'tool_call', 'tool_response']);
    await agentGate.flush(); // runApproved confirms off the call path
    const request = await admin.getRequest(call!.requestId);
    assert.equal(request.decidedBy, 'api:admin (GATE_ADMIN_KEY)');
    assert.notEqual(request.confirmedAt, null);
  });

  test('denied by a policy, or by a human: the tool does not run and the model is told why', async () => {
    nextArguments = { orderId: '3001', amount: 25_000 };
    const byPolicy = await refundAgent();
    const session = observe.startSession({ agentId: 'refund-agent' });
    const result = await session.run(() => run(byPolicy.agent, 'Refund order 3001'));
    assert.deepEqual(byPolicy.refunds, []);
    assert.match(
      String(result.finalOutput),
      /^Done: Vigil did not run "issue_refund": Approval request \S+ for "issue_refund" was denied by policy:\S+: Denied by policy "refunds"/,
    );

    nextArguments = { orderId: '3002', amount: 500 };
    const byHuman = await refundAgent();
    const first = await session.run(() => run(byHuman.agent, 'Refund order 3002'));
    const suspended = await session.run(() => byHuman.approvals.suspend(first));
    await admin.decide(Object.values(suspended.calls)[0]!.requestId, 'denied', 'order was never paid');
    const state = await session.run(() => byHuman.approvals.resume(byHuman.agent, suspended));
    const second = await session.run(() => run(byHuman.agent, state));
    await session.end();
    assert.deepEqual(byHuman.refunds, []);
    assert.match(String(second.finalOutput), /^Done: Vigil did not run "issue_refund": request \S+ was denied: order was never paid$/);
    assert.deepEqual(await approvalEvents(session.id), ['approval_requested', 'approval_denied', 'approval_requested', 'approval_denied']);
  });

  test('a request that expires undecided: the resumed run rejects the call, the tool does not run', async () => {
    nextArguments = { orderId: '4004', amount: 700 };
    const { approvals, agent, refunds } = await refundAgent({ expiresInMs: 300 });
    const first = await run(agent, 'Refund order 4004');
    const suspended = await approvals.suspend(first);
    await sleep(400);
    const second = await run(agent, await approvals.resume(agent, suspended));
    assert.deepEqual(refunds, []);
    assert.match(String(second.finalOutput), /Vigil did not run "issue_refund": request \S+ was expired/);
    assert.equal((await admin.getRequest(Object.values(suspended.calls)[0]!.requestId)).status, 'expired');
  });

  test('an unreachable gate: the tool does not run and the model is told the gate could not be asked', async () => {
    nextArguments = { orderId: '5005', amount: 10 };
    const unreachable = new GateClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'gk_unused', retry: false });
    const { agent, refunds } = await refundAgent({ gate: unreachable });
    const result = await run(agent, 'Refund order 5005');
    assert.deepEqual(refunds, []);
    assert.match(String(result.finalOutput), /^Done: Vigil did not run "issue_refund": the gate could not be asked \(/);
  });

  test('arguments changed between the approval and the execution (the stored run edited): refused, the tool does not run', async () => {
    nextArguments = { orderId: '7007', amount: 350 };
    const { approvals, agent, refunds } = await refundAgent();
    const session = observe.startSession({ agentId: 'refund-agent' });
    const first = await session.run(() => run(agent, 'Refund order 7007'));
    const suspended = await session.run(() => approvals.suspend(first));
    await admin.decide(Object.values(suspended.calls)[0]!.requestId, 'approved');
    // Whoever can write where the run is stored raises the amount the human approved.
    const edited = suspended.runState.replaceAll('\\"amount\\":350', '\\"amount\\":35000');
    assert.notEqual(edited, suspended.runState, 'the stored call was edited');
    const second = await session.run(async () => run(agent, await approvals.resume(agent, { ...suspended, runState: edited })));
    await session.end();
    assert.deepEqual(refunds, [], 'the edited call did not run');
    assert.match(String(second.finalOutput), /Vigil did not run "issue_refund": .*the params differ from the ones approved/);
    assert.deepEqual(await approvalEvents(session.id), ['approval_requested', 'approval_granted']);
  });

  test('resume while the human has not decided yet: ApprovalTimeoutError, nothing decided, and a later resume still works', async () => {
    nextArguments = { orderId: '6006', amount: 800 };
    const { approvals, agent, refunds } = await refundAgent({ wait: { pollIntervalMs: 20, timeoutMs: 100 } });
    const first = await run(agent, 'Refund order 6006');
    const suspended = await approvals.suspend(first);
    await assert.rejects(approvals.resume(agent, suspended), { name: 'ApprovalTimeoutError' });
    await admin.decide(Object.values(suspended.calls)[0]!.requestId, 'approved');
    await run(agent, await approvals.resume(agent, suspended));
    assert.deepEqual(refunds, [{ orderId: '6006', amount: 800 }]);
  });
});
