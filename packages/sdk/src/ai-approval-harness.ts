/**
 * The end-to-end cases of `@vigil/sdk/ai-approval`, run by ai-approval.test.ts (ai 6, needsApproval)
 * and ai-approval-v7.test.ts (ai 7, toolApproval): the framework's real package and OpenAI
 * provider against a local fake OpenAI server, a real gate and observe on SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ToolSet } from 'ai';
import { dropSchemas, eventually, newSchemaName, POSTGRES_URL, servicesSkipReason, startLiveServices, type LiveServices } from '@vigil/cli/testing';
import { gateApprovals, type GateApprovals, type ToolGateOptions } from './ai-approval.ts';
import { startFakeOpenAI, type FakeOpenAI } from './fake-openai-harness.ts';
import { GateClient, ObserveClient } from './node.ts';

/** What the cases need of one AI SDK major. */
export interface AiKit {
  label: string;
  /** 'needsApproval' (ai 6) or 'toolApproval' (ai 7): which hook the cases pass to generateText. */
  hook: 'needsApproval' | 'toolApproval';
  tool: (definition: Record<string, unknown>) => unknown;
  jsonSchema: (schema: Record<string, unknown>) => unknown;
  stepCountIs: (steps: number) => unknown;
  generateText: (
    options: Record<string, unknown>,
  ) => Promise<{ content: unknown[]; text: string; response: { messages?: unknown[] }; responseMessages?: unknown[] }>;
  chatModel: (baseURL: string) => unknown;
}

export function aiApprovalCases(kit: AiKit): void {
  for (const backend of ['sqlite', 'postgres'] as const) {
    describe(`${kit.label} tool approval backed by the gate, on ${backend}`, () => {
      const schemas = [newSchemaName('aiap_observe'), newSchemaName('aiap_gate')];
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
        agentGate = new GateClient({ baseUrl: live.gateUrl, apiKey: await live.gateKey('ai-agent', ['request:create', 'request:read']) });
        supervisor = new GateClient({ baseUrl: live.gateUrl, apiKey: await live.gateKey('supervisor', ['request:read', 'request:decide']) });
        await new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey }).createPolicy({
          name: 'ai-approval-test',
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

      const schema = {
        type: 'object',
        properties: { orderId: { type: 'string' }, amount: { type: 'number' } },
        required: ['orderId'],
        additionalProperties: false,
      };
      function toolSet() {
        const make = (name: string) =>
          kit.tool({
            description: name,
            inputSchema: kit.jsonSchema(schema),
            execute: async (input: unknown) => {
              executed.push({ tool: name, input });
              return { done: name, input };
            },
          });
        return { small_refund: make('small_refund'), refund: make('refund'), delete_order: make('delete_order') };
      }

      function scriptCall(name: string, args: Record<string, unknown>, callId: string): void {
        fake.script(
          { kind: 'message', model: 'gpt-4o-mini', toolCalls: [{ id: callId, name, arguments: JSON.stringify(args) }], promptTokens: 10, completionTokens: 5 },
          { kind: 'message', model: 'gpt-4o-mini', content: 'All done.', promptTokens: 20, completionTokens: 3 },
        );
      }

      /** generateText with the gated tools and the kit's hook. */
      function generate(approvals: GateApprovals, extra: Record<string, unknown>) {
        return kit.generateText({
          model: kit.chatModel(fake.url),
          tools: approvals.tools(toolSet() as ToolSet),
          ...(kit.hook === 'toolApproval' && { toolApproval: approvals.toolApproval }),
          stopWhen: kit.stepCountIs(5),
          ...extra,
        });
      }

      /** The session's approval and tool events, and the receipt's redemption (a custom event) as `redeemed`. */
      async function sessionTypes(sessionId: string): Promise<string[]> {
        await observe.flush();
        const { events } = await observe.listEvents({ sessionId, order: 'asc', limit: 100 });
        return events
          .map((e) => (e.eventType === 'custom' && e.payload.type === 'approval_redeemed' ? 'redeemed' : e.eventType))
          .filter((t) => /^(approval_|tool_|redeemed)/.test(t));
      }

      /** One prompt through generateText in a session: the result, what the model was sent last, the session's approval and tool events. */
      async function runCase(agentId: string, options: Partial<ToolGateOptions>, name: string, args: Record<string, unknown>) {
        const callId = `call_${agentId}`;
        scriptCall(name, args, callId);
        const approvals = gateApprovals({ gate: agentGate, wait: { pollIntervalMs: 30, maxPollIntervalMs: 60, timeoutMs: 10_000 }, ...options });
        const before = executed.length;
        const { result, sessionId } = await observe.withSession({ agentId }, async (session) => ({
          result: await generate(approvals, { prompt: `Please ${name}.` }),
          sessionId: session.id,
        }));
        return { result, sessionId, ran: executed.slice(before), lastSent: JSON.stringify(fake.requests.at(-1)!.json.messages) };
      }

      test('policy auto-approve: the tool runs once; the session holds the request, the decision and the call, each once', async () => {
        const run = await runCase(`auto-${backend}`, {}, 'small_refund', { orderId: 'A-1', amount: 5 });
        assert.deepEqual(run.ran, [{ tool: 'small_refund', input: { orderId: 'A-1', amount: 5 } }]);
        assert.equal(run.result.text, 'All done.');
        assert.deepEqual(await sessionTypes(run.sessionId), ['approval_requested', 'approval_granted', 'redeemed', 'tool_call', 'tool_response']);
        const [request] = await supervisor.listRequests({ action: 'small_refund' });
        assert.equal(request!.status, 'approved');
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
        assert.deepEqual(pending!.params, { amount: 300, orderId: 'H-1' });
        await supervisor.decide(pending!.id, 'approved', 'customer verified');
        const run = await running;
        assert.deepEqual(run.ran, [{ tool: 'refund', input: { orderId: 'H-1', amount: 300 } }]);
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

      /**
       * A refund handed to the AI SDK's approval flow (askAfterMs 0): the supervisor approves it on the
       * gate, `responses` answers the approval, and the conversation resumes, its call edited or not.
       */
      async function askTheUser(agentId: string, edit: (messages: string) => string) {
        scriptCall('refund', { orderId: agentId, amount: 20 }, `call_${agentId}`);
        const approvals = gateApprovals({ gate: agentGate, askAfterMs: 0, wait: { pollIntervalMs: 30, timeoutMs: 10_000 } });
        const before = executed.length;
        const sessionId = await observe.withSession({ agentId }, async (session) => {
          const first = await generate(approvals, { prompt: `Refund order ${agentId}.` });
          const asked = first.content.filter((part) => (part as { type: string }).type === 'tool-approval-request');
          assert.equal(asked.length, 1, 'the call waits for approval');
          const pending = (await supervisor.listRequests({ action: 'refund', status: 'pending' })).find(
            (r) => (r.params as { orderId: string }).orderId === agentId,
          );
          await supervisor.decide(pending!.id, 'approved');
          const responses = await approvals.responses(first.content);
          assert.deepEqual(
            responses.map((r) => r.approved),
            [true],
          );
          const history = [{ role: 'user', content: `Refund order ${agentId}.` }, ...(first.responseMessages ?? first.response.messages!)];
          const messages = JSON.parse(edit(JSON.stringify(history))) as unknown[];
          await generate(approvals, { messages: [...messages, { role: 'tool', content: responses }] });
          return session.id;
        });
        return { sessionId, ran: executed.slice(before), lastSent: JSON.stringify(fake.requests.at(-1)!.json.messages) };
      }

      test("ask the user: a pending request goes to the AI SDK's approval flow; the gate's decision resumes it and the call runs", async () => {
        const agentId = `asked-${backend}`;
        const run = await askTheUser(agentId, (messages) => messages);
        assert.deepEqual(run.ran, [{ tool: 'refund', input: { orderId: agentId, amount: 20 } }]);
        assert.deepEqual(await sessionTypes(run.sessionId), ['approval_requested', 'approval_granted', 'redeemed', 'tool_call', 'tool_response']);
      });

      test('arguments changed between the approval and the execution: refused, the tool does not run', async () => {
        // Someone edits the approved call in the conversation before it runs: 20 becomes 2000.
        const run = await askTheUser(`edited-${backend}`, (messages) => messages.replace('"amount":20', '"amount":2000'));
        assert.deepEqual(run.ran, [], 'the edited call did not run');
        assert.match(run.lastSent, /not run: .*the params differ from the ones approved/);
        assert.deepEqual(await sessionTypes(run.sessionId), ['approval_requested', 'approval_granted']);
      });
    });
  }
}
