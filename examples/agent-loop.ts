/**
 * A small agent loop instrumented with @vigil/sdk: a support agent refunds a damaged order. Every
 * LLM call (with its cost), every tool call (with its duration) and the session itself go to
 * observe; the refund, a risky action, waits for a human decision on the gate.
 *
 * No LLM is needed: `plan()` below stands in for the model, deterministically.
 *
 * Run it against `npm start` (observe on :3400, gate on :3000):
 *
 *   VIGIL_API_KEY=<observe key> VIGIL_GATE_API_KEY=<gate admin key> npm run example -w @vigil/sdk
 *
 * (or `node --import tsx examples/agent-loop.ts`). On a fresh observe without keys, the example
 * creates the first key and prints it. It prints the curl command that approves the refund and
 * waits for it; `--auto-approve` makes the example approve its own request after a second, in
 * the role of the human (the gate key then needs the request:decide scope, as the admin key has).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { GateClient, ObserveClient, VigilApiError, VigilNetworkError, type VigilSession } from '@vigil/sdk';

const AGENT_ID = 'refund-agent';
const MODEL = { provider: 'openai', model: 'gpt-4o-mini' } as const;
const autoApprove = process.argv.includes('--auto-approve');

// ----------------------------------------------------------------------------------------------
// The world the agent acts on (stand-ins for real systems)

const orders: Record<string, { customer: string; item: string; amount: number; delivered: string }> = {
  '1042': { customer: 'Dana Reyes', item: 'espresso machine', amount: 349, delivered: '2026-11-18' },
};

const tools = {
  lookup_order: async ({ orderId }: { orderId: string }) => {
    await sleep(40);
    const order = orders[orderId];
    if (!order) throw Object.assign(new Error(`order ${orderId} not found`), { code: 'NOT_FOUND' });
    return { orderId, ...order };
  },
  check_refund_policy: async ({ amount, delivered }: { amount: number; delivered: string }) => {
    await sleep(20);
    const days = Math.floor((Date.now() - Date.parse(delivered)) / 86_400_000);
    return { eligible: days <= 30, needsApproval: amount > 100, daysSinceDelivery: days };
  },
  issue_refund: async ({ orderId, amount }: { orderId: string; amount: number }) => {
    await sleep(60);
    return { refundId: `rf_${orderId}_${Date.now().toString(36)}`, amount, currency: 'USD' };
  },
};
type ToolName = keyof typeof tools;

// ----------------------------------------------------------------------------------------------
// The simulated LLM: decides the next step from what the conversation holds so far

interface Message {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
}
type Step = { tool: ToolName; args: Record<string, unknown>; text: string } | { final: string };

function plan(messages: Message[]): Step {
  const seen = (tool: string) => messages.find((m) => m.role === 'tool' && m.content.startsWith(`${tool}:`));
  const order = seen('lookup_order');
  if (!order) return { tool: 'lookup_order', args: { orderId: '1042' }, text: 'Let me look the order up.' };
  const details = JSON.parse(order.content.slice('lookup_order:'.length)) as { amount: number; delivered: string; orderId: string };
  if (!seen('check_refund_policy')) {
    return { tool: 'check_refund_policy', args: { amount: details.amount, delivered: details.delivered }, text: 'Checking the refund policy.' };
  }
  const refund = seen('issue_refund');
  if (!refund) {
    const denied = messages.some((m) => m.role === 'tool' && m.content.startsWith('approval: denied'));
    if (denied) return { final: 'A supervisor declined the refund; I have escalated the case to the support team.' };
    return { tool: 'issue_refund', args: { orderId: details.orderId, amount: details.amount }, text: 'Issuing the refund.' };
  }
  return { final: `Refund issued (${refund.content.slice('issue_refund:'.length)}). Sorry about the damaged machine!` };
}

async function simulatedLlm(messages: Message[]): Promise<{ step: Step; completion: string; inputTokens: number; outputTokens: number }> {
  await sleep(80 + Math.random() * 40);
  const step = plan(messages);
  const completion = 'final' in step ? step.final : step.text;
  const tokens = (text: string) => Math.ceil(text.length / 4);
  return { step, completion, inputTokens: messages.reduce((n, m) => n + tokens(m.content) + 4, 0), outputTokens: tokens(completion) + 20 };
}

// ----------------------------------------------------------------------------------------------
// Setup

async function observeKey(url: string): Promise<string> {
  if (process.env.VIGIL_API_KEY) return process.env.VIGIL_API_KEY;
  // A fresh observe accepts its first key without credentials.
  const response = await fetch(`${url}/api/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'example' }) }).catch(
    () => {
      console.error(`Cannot reach observe at ${url}: start Vigil with \`npm start\` (or set VIGIL_URL).`);
      process.exit(2);
    },
  );
  if (response.status !== 201) {
    console.error('Set VIGIL_API_KEY to an observe API key (this observe already has keys).');
    process.exit(2);
  }
  const { key } = (await response.json()) as { key: string };
  console.log(`Created the first observe API key (shown once, keep it): ${key}\n`);
  return key;
}

async function runTool(session: VigilSession, gate: GateClient, name: ToolName, args: Record<string, unknown>): Promise<string> {
  if (name === 'issue_refund') {
    // A risky action: ask the gate first. A policy may decide at once; otherwise a human does.
    const decision = await gate.requestApproval(
      { action: 'refund', params: args, urgency: 'normal', context: { sessionId: session.id, agentId: AGENT_ID } },
      {
        timeoutMs: 10 * 60_000,
        onPending: (request) => {
          console.log(`Waiting for a human to approve refund request ${request.id}. Approve it with:\n`);
          console.log(`  curl -X POST ${gate.baseUrl}/api/requests/${request.id}/decide -H "Authorization: Bearer $VIGIL_GATE_API_KEY" \\`);
          console.log(`       -H 'content-type: application/json' -d '{"decision":"approved","reason":"damaged on delivery"}'\n`);
          if (autoApprove) {
            void sleep(1000).then(() => gate.decide(request.id, 'approved', 'auto-approved by the example (--auto-approve)'));
          }
        },
      },
    );
    console.log(`Refund ${decision.status} by ${decision.decidedBy}${decision.decisionReason ? `: ${decision.decisionReason}` : ''}`);
    session.custom('approval_outcome', { requestId: decision.id, status: decision.status, decidedBy: decision.decidedBy });
    if (!decision.approved) return `approval: ${decision.status}`;
    const result = await session.wrapToolCall(name, args, () => tools.issue_refund(args as { orderId: string; amount: number }));
    await gate.confirm(decision.id, result);
    return `${name}:${JSON.stringify(result)}`;
  }
  const result = await session.wrapToolCall(name, args, () => (tools[name] as (a: unknown) => Promise<unknown>)(args));
  return `${name}:${JSON.stringify(result)}`;
}

// ----------------------------------------------------------------------------------------------
// The loop

async function main(): Promise<void> {
  const observeUrl = process.env.VIGIL_URL ?? 'http://localhost:3400';
  const observe = new ObserveClient({ baseUrl: observeUrl, apiKey: await observeKey(observeUrl) });
  if (!process.env.VIGIL_GATE_API_KEY) {
    console.error('Set VIGIL_GATE_API_KEY to a gate key with request:create and request:read (the admin key printed at the gate’s first start works).');
    process.exit(2);
  }
  const gate = new GateClient();

  const session = observe.startSession({ agentId: AGENT_ID, agentName: 'Refund agent', tags: ['example', 'support'] });
  console.log(`Session ${session.id} started\n`);
  const messages: Message[] = [
    { role: 'system', content: 'You are a support agent. Use tools; refunds over $100 need approval.' },
    { role: 'user', content: 'My espresso machine from order 1042 arrived broken. I want a refund.' },
  ];

  let answer = '';
  for (let turn = 0; turn < 8 && answer === ''; turn++) {
    const call = session.recordLlmCall({ ...MODEL, messages: [...messages] });
    const reply = await simulatedLlm(messages);
    const isTool = !('final' in reply.step);
    const { costUsd } = session.recordLlmResponse(call, {
      completion: reply.completion,
      usage: { inputTokens: reply.inputTokens, outputTokens: reply.outputTokens },
      finishReason: isTool ? 'tool_calls' : 'stop',
      ...(isTool && { toolCalls: [{ name: (reply.step as { tool: string }).tool, arguments: (reply.step as { args: unknown }).args }] }),
    });
    console.log(`LLM: ${reply.completion}  ($${costUsd.toFixed(6)})`);
    messages.push({ role: 'assistant', content: reply.completion });
    if ('final' in reply.step) {
      answer = reply.step.final;
    } else {
      messages.push({ role: 'tool', content: await runTool(session, gate, reply.step.tool, reply.step.args) });
    }
  }

  await session.end({ reason: answer === '' ? 'timeout' : 'completed', summary: answer });
  await observe.close();

  const stored = await observe.getSession(session.id);
  console.log(`\nAnswer: ${answer}`);
  console.log(
    `Stored: ${stored.eventCount} events, ${stored.toolCallCount} tool calls, ${stored.errorCount} errors, $${stored.totalCostUsd.toFixed(6)}, status ${stored.status}`,
  );
  console.log(`Timeline: curl -H "Authorization: Bearer $VIGIL_API_KEY" ${observe.baseUrl}/api/sessions/${session.id}/timeline`);
}

main().catch((error: unknown) => {
  if (error instanceof VigilApiError) console.error(`${error.service} answered ${error.status}: ${error.message}`);
  else if (error instanceof VigilNetworkError) console.error(`${error.message}: is Vigil running (\`npm start\`)?`);
  else console.error(error);
  process.exit(1);
});
