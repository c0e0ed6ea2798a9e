/**
 * @vigil/sdk/langgraph end to end: a real LangGraph.js ReAct agent (createReactAgent, ToolNode,
 * MemorySaver) whose tool pauses with interrupt(), a ChatOpenAI model against a local stand-in of
 * OpenAI, and a real gate and observe on each database deciding how the graph resumes.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { HumanMessage, type BaseMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { Command, MemorySaver } from '@langchain/langgraph';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';
import { startLiveServices, type LiveServices } from '@vigil/cli/testing';
import { describeEachDatabase, type TestBackend, type TestHttpServer } from '@vigil/platform/testing';
import { askApproval, GateClient, ObserveClient, type VigilSession } from './node.ts';
import { VigilGraphApprovals, type VigilGraphApprovalsOptions } from './langgraph.ts';
import { startScriptedProviders } from './provider-fixtures.ts';

/** What the model asks the tool for next. */
let nextArguments: Record<string, unknown> = {};
let provider: TestHttpServer;
before(async () => {
  provider = await startScriptedProviders(0, { toolArguments: () => nextArguments });
});
after(() => provider?.stop());

function databaseEnv(backend: TestBackend, service: 'OBSERVE' | 'GATE'): Record<string, string> {
  const database = backend.freshDatabase();
  return database.kind === 'postgres' ? { DATABASE_URL: database.url, [`${service}_DB_SCHEMA`]: database.schema } : {};
}

let threads = 0;

await describeEachDatabase('LangGraph.js adapter', (backend) => {
  let live: LiveServices;
  let observe: ObserveClient;
  let admin: GateClient;
  let agentGate: GateClient;

  before(async () => {
    live = await startLiveServices({ observeEnv: databaseEnv(backend, 'OBSERVE'), gateEnv: databaseEnv(backend, 'GATE') });
    observe = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey, flushIntervalMs: 50 });
    admin = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
    agentGate = new GateClient({ baseUrl: live.gateUrl, apiKey: await live.gateKey('langgraph', ['request:create', 'request:read']) });
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

  /** A ReAct agent whose refund tool waits for the gate; `refunds` lists what actually ran. */
  function refundGraph(options: Partial<VigilGraphApprovalsOptions> = {}) {
    const approvals = new VigilGraphApprovals({ gate: agentGate, wait: { pollIntervalMs: 20, timeoutMs: 5000 }, ...options });
    const refunds: Array<{ orderId: string; amount: number }> = [];
    const issueRefund = tool(
      (args) =>
        approvals.run('issue_refund', args, async (approved) => {
          refunds.push(approved);
          return `refunded ${approved.amount} on order ${approved.orderId}`;
        }),
      { name: 'issue_refund', description: 'Refund an order', schema: z.object({ orderId: z.string(), amount: z.number() }) },
    );
    const model = new ChatOpenAI({ model: 'gpt-4o-mini', apiKey: 'sk-stand-in', configuration: { baseURL: `${provider.url}/v1` } });
    const graph = createReactAgent({ llm: model, tools: [issueRefund], checkpointer: new MemorySaver() });
    const config = { configurable: { thread_id: `thread-${++threads}` } };
    return { approvals, graph, config, refunds };
  }

  function lastMessage(state: { messages: BaseMessage[] } | undefined): string {
    return String(state?.messages.at(-1)?.content);
  }

  async function approvalEvents(session: VigilSession) {
    await observe.flush();
    const { events } = await observe.getTimeline(session.id);
    return events.filter((e) => e.eventType.startsWith('approval_') || e.eventType.startsWith('tool_')).map((e) => e.eventType);
  }

  test('the interrupt becomes a gate request a policy approves: resumed with accept, the tool runs once, recorded once', async () => {
    nextArguments = { orderId: '1042', amount: 49 };
    const { approvals, graph, config, refunds } = refundGraph();
    const session = observe.startSession({ agentId: 'refund-graph' });
    const paused = await session.run(() => graph.invoke({ messages: [new HumanMessage('Refund order 1042')] }, config));
    assert.deepEqual(refunds, [], 'paused before the tool ran');
    assert.equal((paused as { __interrupt__?: unknown[] }).__interrupt__?.length, 1);
    const [pending] = await approvals.pending(graph, config);
    assert.deepEqual({ action: pending!.action, args: pending!.args }, { action: 'issue_refund', args: { orderId: '1042', amount: 49 } });

    const done = await session.run(() => approvals.resume(graph, config));
    await session.end();
    assert.deepEqual(refunds, [{ orderId: '1042', amount: 49 }]);
    assert.equal(lastMessage(done), 'Done: refunded 49 on order 1042');
    assert.deepEqual(await approvalEvents(session), ['approval_requested', 'approval_granted', 'tool_call', 'tool_response']);
    await agentGate.flush(); // runApproved confirms off the call path
    const [request] = await admin.listRequests({ action: 'issue_refund', status: 'approved' });
    const stored = await admin.getRequest(request!.id);
    assert.match(String(stored.decidedBy), /^policy:/);
    assert.equal(stored.context.interruptId, pending!.interruptId);
    assert.notEqual(stored.confirmedAt, null);
  });

  test('a human approves through the API while resume waits: the graph goes on with accept', async () => {
    nextArguments = { orderId: '2077', amount: 349 };
    let requestId = '';
    const { approvals, graph, config, refunds } = refundGraph({
      wait: {
        pollIntervalMs: 20,
        timeoutMs: 5000,
        onPending: (request) => {
          requestId = request.id;
          void admin.decide(request.id, 'approved', 'customer is right');
        },
      },
    });
    const session = observe.startSession({ agentId: 'refund-graph' });
    await session.run(() => graph.invoke({ messages: [new HumanMessage('Refund order 2077')] }, config));
    const done = await session.run(() => approvals.resume(graph, config));
    await session.end();
    assert.deepEqual(refunds, [{ orderId: '2077', amount: 349 }]);
    assert.equal(lastMessage(done), 'Done: refunded 349 on order 2077');
    assert.equal((await admin.getRequest(requestId)).decidedBy, 'api:admin (GATE_ADMIN_KEY)');
    assert.deepEqual(await approvalEvents(session), ['approval_requested', 'approval_granted', 'tool_call', 'tool_response']);
  });

  test("a human's edit: the gate is asked for the edited arguments, and the graph resumes with edit and runs those", async () => {
    nextArguments = { orderId: '2080', amount: 349 };
    const { approvals, graph, config, refunds } = refundGraph();
    await graph.invoke({ messages: [new HumanMessage('Refund order 2080')] }, config);
    const [pending] = await approvals.pending(graph, config);
    // The reviewer lowers the amount; the policy approves the edited call at once.
    const done = await approvals.resume(graph, config, { edits: { [pending!.interruptId]: { orderId: '2080', amount: 45 } } });
    assert.deepEqual(refunds, [{ orderId: '2080', amount: 45 }]);
    assert.equal(lastMessage(done), 'Done: refunded 45 on order 2080');
    const [request] = await admin.listRequests({ action: 'issue_refund', status: 'approved', limit: 1 });
    const stored = await admin.getRequest(request!.id);
    assert.deepEqual(stored.params, { orderId: '2080', amount: 45 });
    assert.deepEqual(stored.context.editedFrom, { orderId: '2080', amount: 349 });
  });

  test('denied by a policy, or by a human: resumed with the reason, the tool does not run', async () => {
    nextArguments = { orderId: '3001', amount: 25_000 };
    const byPolicy = refundGraph();
    await byPolicy.graph.invoke({ messages: [new HumanMessage('Refund order 3001')] }, byPolicy.config);
    const denied = await byPolicy.approvals.resume(byPolicy.graph, byPolicy.config);
    assert.deepEqual(byPolicy.refunds, []);
    assert.match(lastMessage(denied), /^Done: Vigil did not run "issue_refund": request \S+ was denied: Denied by policy "refunds"/);

    nextArguments = { orderId: '3002', amount: 500 };
    const byHuman = refundGraph({ wait: { pollIntervalMs: 20, timeoutMs: 5000, onPending: (r) => void admin.decide(r.id, 'denied', 'never paid') } });
    await byHuman.graph.invoke({ messages: [new HumanMessage('Refund order 3002')] }, byHuman.config);
    const rejected = await byHuman.approvals.resume(byHuman.graph, byHuman.config);
    assert.deepEqual(byHuman.refunds, []);
    assert.match(lastMessage(rejected), /^Done: Vigil did not run "issue_refund": request \S+ was denied: never paid$/);
  });

  test('a request that expires while resume waits: resumed with the reason, the tool does not run', async () => {
    nextArguments = { orderId: '4004', amount: 700 };
    const { approvals, graph, config, refunds } = refundGraph({ expiresInMs: 300, wait: { pollIntervalMs: 50, timeoutMs: 5000 } });
    await graph.invoke({ messages: [new HumanMessage('Refund order 4004')] }, config);
    const done = await approvals.resume(graph, config);
    assert.deepEqual(refunds, []);
    assert.match(lastMessage(done), /Vigil did not run "issue_refund": request \S+ was expired/);
  });

  test('an unreachable gate: resumed with the reason, the tool does not run', async () => {
    nextArguments = { orderId: '5005', amount: 10 };
    const unreachable = new GateClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'gk_unused', retry: false });
    const { approvals, graph, config, refunds } = refundGraph({ gate: unreachable });
    await graph.invoke({ messages: [new HumanMessage('Refund order 5005')] }, config);
    const done = await approvals.resume(graph, config);
    assert.deepEqual(refunds, []);
    assert.match(lastMessage(done), /^Done: Vigil did not run "issue_refund": the gate could not be asked \(/);
  });

  test("arguments changed between the approval and the execution (an edit resumed with another call's approval): refused", async () => {
    nextArguments = { orderId: '7007', amount: 40 };
    const { approvals, graph, config, refunds } = refundGraph();
    await graph.invoke({ messages: [new HumanMessage('Refund order 7007')] }, config);
    const [pending] = await approvals.pending(graph, config);
    // An approval the policy gave for 40, carried into a resume that runs 4000.
    const approved = await askApproval(agentGate, 'issue_refund', { orderId: '7007', amount: 40 });
    assert.equal(approved.approved, true);
    const edit = { type: 'edit', args: { action: 'issue_refund', args: { orderId: '7007', amount: 4000 } }, outcome: approved };
    const done = await graph.invoke(new Command({ resume: { [pending!.interruptId]: edit } }), config);
    assert.deepEqual(refunds, [], 'the changed call did not run');
    assert.match(lastMessage(done), /Vigil did not run "issue_refund": .*the params differ from the ones approved/);

    // The approval is still good for what it approved, once: a replay of it is refused by the gate.
    nextArguments = { orderId: '7007', amount: 40 };
    const again = refundGraph();
    await again.graph.invoke({ messages: [new HumanMessage('Refund order 7007')] }, again.config);
    const [next] = await again.approvals.pending(again.graph, again.config);
    const accept = { type: 'accept', args: null, outcome: approved };
    await again.graph.invoke(new Command({ resume: { [next!.interruptId]: accept } }), again.config);
    assert.deepEqual(again.refunds, [{ orderId: '7007', amount: 40 }]);
    const replay = refundGraph();
    await replay.graph.invoke({ messages: [new HumanMessage('Refund order 7007')] }, replay.config);
    const [third] = await replay.approvals.pending(replay.graph, replay.config);
    const replayed = await replay.graph.invoke(new Command({ resume: { [third!.interruptId]: accept } }), replay.config);
    assert.deepEqual(replay.refunds, [], 'a redeemed approval does not run a second call');
    assert.match(lastMessage(replayed), /Vigil did not run "issue_refund": .*redeem/);
  });

  test('resumed without the gate (a bare Command): the tool does not run', async () => {
    nextArguments = { orderId: '6006', amount: 10 };
    const { approvals, graph, config, refunds } = refundGraph();
    await graph.invoke({ messages: [new HumanMessage('Refund order 6006')] }, config);
    const [pending] = await approvals.pending(graph, config);
    const done = await graph.invoke(new Command({ resume: { [pending!.interruptId]: { type: 'accept', args: null } } }), config);
    assert.deepEqual(refunds, []);
    assert.match(lastMessage(done), /Vigil did not run "issue_refund": the graph was resumed without the gate’s decision/);
  });
});
