// @vigil/sdk/mastra: Mastra's tool-call approval backed by the gate, with the real @mastra/core agent and @ai-sdk/openai
// against a fake OpenAI server, a real gate and observe on SQLite and PostgreSQL.
// Mastra needs Node >= 22.13: on older Node this file says so and runs nothing (CI runs the suite on Node 24 too).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createOpenAI } from '@ai-sdk/openai';
import { z } from 'zod';
import { dropSchemas, eventually, newSchemaName, POSTGRES_URL, servicesSkipReason, startLiveServices, type LiveServices } from '@vigil/cli/testing';
import { startFakeOpenAI, type FakeOpenAI } from './fake-openai-harness.ts';
import { gateApprovals, type ToolGateOptions } from './mastra.ts';
import { GateClient, ObserveClient } from './node.ts';

const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];

if (major < 22 || (major === 22 && minor < 13)) {
  test('Mastra tool-call approval backed by the gate', { skip: `@mastra/core needs Node >= 22.13; this is Node ${process.versions.node}` }, () => {});
} else {
  const { Agent } = await import('@mastra/core/agent');
  const { Mastra } = await import('@mastra/core/mastra');
  const { InMemoryStore } = await import('@mastra/core/storage');
  const { createTool } = await import('@mastra/core/tools');

  for (const backend of ['sqlite', 'postgres'] as const) {
    describe(`Mastra tool-call approval backed by the gate, on ${backend}`, () => {
      const schemas = [newSchemaName('mastra_observe'), newSchemaName('mastra_gate')];
      let live: LiveServices;
      let fake: FakeOpenAI;
      let observe: ObserveClient;
      let agentGate: GateClient;
      let supervisor: GateClient;
      const executed: Array<{ tool: string; input: unknown }> = [];

      before(async () => {
        if (backend === 'postgres') {
          const skip = await servicesSkipReason(false);
          if (skip) throw new Error(skip);
        }
        live = await startLiveServices(
          backend === 'postgres'
            ? {
                observeEnv: { DATABASE_URL: POSTGRES_URL, OBSERVE_DB_SCHEMA: schemas[0]! },
                gateEnv: { DATABASE_URL: POSTGRES_URL, GATE_DB_SCHEMA: schemas[1]! },
              }
            : {},
        );
        fake = await startFakeOpenAI();
        observe = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey, flushIntervalMs: 50 });
        agentGate = new GateClient({ baseUrl: live.gateUrl, apiKey: await live.gateKey('mastra-agent', ['request:create', 'request:read']) });
        supervisor = new GateClient({ baseUrl: live.gateUrl, apiKey: await live.gateKey('supervisor', ['request:read', 'request:decide']) });
        await new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey }).createPolicy({
          name: 'mastra-test',
          priority: 10,
          rules: [
            { match: { action: 'small_refund' }, decision: 'auto_approve' },
            { match: { action: { $regex: '^delete_' } }, decision: 'auto_deny' },
            { match: { action: 'refund' }, decision: 'route_to_human' },
          ],
        });
      });

      after(async () => {
        await observe?.close();
        await fake?.stop();
        await live?.close();
        if (backend === 'postgres') await dropSchemas(...schemas);
      });

      /** An agent whose three tools ask the gate, in a Mastra with storage (a suspended run is kept there). */
      function agentWith(options: Partial<ToolGateOptions>) {
        const approvals = gateApprovals({ gate: agentGate, wait: { pollIntervalMs: 30, maxPollIntervalMs: 60, timeoutMs: 10_000 }, ...options });
        const make = (id: string) =>
          createTool(
            approvals.tool({
              id,
              description: id,
              // The currency default is filled in before execute: the gate is asked about the call as it runs.
              inputSchema: z.object({ orderId: z.string(), amount: z.number().optional(), currency: z.string().default('EUR') }),
              execute: async (input: { orderId: string }) => {
                executed.push({ tool: id, input });
                return { done: id };
              },
            }),
          );
        const mastra = new Mastra({
          agents: {
            clerk: new Agent({
              id: 'clerk',
              name: 'clerk',
              instructions: 'You help with orders.',
              model: createOpenAI({ baseURL: fake.url, apiKey: 'sk-test' }).chat('gpt-4o-mini'),
              tools: { small_refund: make('small_refund'), refund: make('refund'), delete_order: make('delete_order') },
            }),
          },
          storage: new InMemoryStore(),
          logger: false,
        });
        return { agent: mastra.getAgent('clerk'), approvals };
      }

      function scriptCall(name: string, args: Record<string, unknown>, callId: string): void {
        fake.script(
          { kind: 'message', model: 'gpt-4o-mini', toolCalls: [{ id: callId, name, arguments: JSON.stringify(args) }], promptTokens: 10, completionTokens: 5 },
          { kind: 'message', model: 'gpt-4o-mini', content: 'All done.', promptTokens: 20, completionTokens: 3 },
        );
      }

      /** The session's approval and tool events, and the receipt's redemption (a custom event) as `redeemed`. */
      async function sessionTypes(sessionId: string): Promise<string[]> {
        await observe.flush();
        const { events } = await observe.listEvents({ sessionId, order: 'asc', limit: 100 });
        return events
          .map((e) => (e.eventType === 'custom' && e.payload.type === 'approval_redeemed' ? 'redeemed' : e.eventType))
          .filter((t) => /^(approval_|tool_|redeemed)/.test(t));
      }

      /** The pending refund request of an order. */
      async function pendingRefund(orderId: string) {
        const pending = await supervisor.listRequests({ action: 'refund', status: 'pending' });
        const request = pending.find((r) => (r.params as { orderId: string }).orderId === orderId);
        assert.ok(request, `a pending refund of ${orderId} among ${JSON.stringify(pending.map((r) => r.params))}`);
        return request;
      }

      async function runCase(agentId: string, options: Partial<ToolGateOptions>, name: string, args: Record<string, unknown>) {
        scriptCall(name, args, `call_${agentId}`);
        const { agent } = agentWith(options);
        const before = executed.length;
        const { result, sessionId } = await observe.withSession({ agentId }, async (session) => ({
          result: await agent.generate(`Please ${name}.`),
          sessionId: session.id,
        }));
        return { result, sessionId, ran: executed.slice(before), lastSent: JSON.stringify(fake.requests.at(-1)!.json.messages) };
      }

      test('policy auto-approve: the tool runs once with the input as validated; the session holds request, decision and call once', async () => {
        const run = await runCase(`auto-${backend}`, {}, 'small_refund', { orderId: 'A-1', amount: 5 });
        assert.deepEqual(run.ran, [{ tool: 'small_refund', input: { orderId: 'A-1', amount: 5, currency: 'EUR' } }]);
        assert.equal(run.result.text, 'All done.');
        assert.deepEqual(await sessionTypes(run.sessionId), ['approval_requested', 'approval_granted', 'redeemed', 'tool_call', 'tool_response']);
        const [request] = await supervisor.listRequests({ action: 'small_refund' });
        assert.deepEqual(request!.params, { amount: 5, currency: 'EUR', orderId: 'A-1' });
        await agentGate.flush(); // runApproved confirms off the call path
        assert.notEqual((await supervisor.getRequest(request!.id)).confirmedAt, null, 'the gate is told the call ran');
      });

      test('a human approves through the gate API while the hook waits: the tool runs', async () => {
        const running = runCase(`human-${backend}`, {}, 'refund', { orderId: 'H-1', amount: 300 });
        const [pending] = await eventually(
          () => supervisor.listRequests({ action: 'refund', status: 'pending' }),
          (list) => list.length === 1,
          10_000,
          'the pending refund',
        );
        await supervisor.decide(pending!.id, 'approved', 'customer verified');
        const run = await running;
        assert.deepEqual(run.ran, [{ tool: 'refund', input: { orderId: 'H-1', amount: 300, currency: 'EUR' } }]);
        assert.deepEqual(await sessionTypes(run.sessionId), ['approval_requested', 'approval_granted', 'redeemed', 'tool_call', 'tool_response']);
      });

      test('deny: the tool does not run and the model is told why', async () => {
        const run = await runCase(`deny-${backend}`, {}, 'delete_order', { orderId: 'D-1' });
        assert.deepEqual(run.ran, []);
        assert.match(run.lastSent, /denied/);
        assert.deepEqual(await sessionTypes(run.sessionId), ['approval_requested', 'approval_denied']);
      });

      test('expiry: a request nobody decides expires on the gate; the tool does not run', async () => {
        const run = await runCase(`expire-${backend}`, { expiresInMs: 300 }, 'refund', { orderId: 'E-1', amount: 40 });
        assert.deepEqual(run.ran, []);
        assert.match(run.lastSent, /expired/);
        assert.deepEqual(await sessionTypes(run.sessionId), ['approval_requested', 'approval_expired']);
      });

      test('gate unreachable: the tool does not run and the model is told the gate could not be asked', async () => {
        const down = new GateClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'gk_unreachable', retry: false });
        const run = await runCase(`down-${backend}`, { gate: down }, 'small_refund', { orderId: 'U-1', amount: 5 });
        assert.deepEqual(run.ran, []);
        assert.match(run.lastSent, /could not be asked/);
        assert.deepEqual(await sessionTypes(run.sessionId), []);
      });

      test("ask the user: an undecided request suspends the run; the gate's decision resumes it, and the call runs", async () => {
        const agentId = `ask-${backend}`;
        scriptCall('refund', { orderId: 'S-1', amount: 20 }, `call_${agentId}`);
        const { agent, approvals } = agentWith({ askAfterMs: 0 });
        const before = executed.length;
        const sessionId = await observe.withSession({ agentId }, async (session) => {
          const first = await agent.generate('Refund order S-1.');
          assert.equal(first.finishReason, 'suspended');
          const suspended = first.suspendPayload as { toolCallId: string; toolName: string; args: unknown };
          const pending = await pendingRefund('S-1');
          await supervisor.decide(pending.id, 'approved', 'ok');
          const answer = await approvals.decision(suspended);
          assert.equal(answer.approved, true);
          const resumed = await agent.approveToolCallGenerate({ runId: first.runId!, toolCallId: suspended.toolCallId });
          assert.equal(resumed.text, 'All done.');
          return session.id;
        });
        assert.deepEqual(executed.slice(before), [{ tool: 'refund', input: { orderId: 'S-1', amount: 20, currency: 'EUR' } }]);
        assert.deepEqual(await sessionTypes(sessionId), ['approval_requested', 'approval_granted', 'redeemed', 'tool_call', 'tool_response']);
      });

      test('execute handed other arguments than the approval hook was asked about: refused by the receipt, the tool does not run', async () => {
        // What Mastra calls, in its order, with the arguments changed in between (20 becomes 2000).
        const approvals = gateApprovals({ gate: agentGate, wait: { pollIntervalMs: 30, timeoutMs: 10_000 } });
        const definition = approvals.tool({
          id: 'small_refund',
          description: 'small_refund',
          inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
          execute: async (input: { orderId: string }) => {
            executed.push({ tool: 'small_refund', input });
            return { done: true };
          },
        }) as unknown as { requireApproval: (input: unknown) => Promise<boolean>; execute: (input: unknown, context: unknown) => Promise<unknown> };
        const before = executed.length;
        let sessionId = '';
        await observe.withSession({ agentId: `edited-${backend}` }, async (session) => {
          sessionId = session.id;
          assert.equal(await definition.requireApproval({ orderId: 'C-1', amount: 20 }), false, 'the policy approved at once');
          await assert.rejects(definition.execute({ orderId: 'C-1', amount: 2000 }, {}), /not run: .*the params differ from the ones approved/);
        });
        assert.deepEqual(executed.slice(before), [], 'the edited call did not run');
        assert.deepEqual(await sessionTypes(sessionId), ['approval_requested', 'approval_granted']);
      });
    });
  }
}
