/**
 * A small agent loop instrumented with @vigil/sdk: a support agent refunds a damaged order. The
 * session is ambient (withSession), the tools are traced (traceTool), every LLM call is recorded
 * with its cost, and the refund — a risky action — runs only once the gate approves it
 * (withApproval), which records the request and the decision in the session.
 *
 * No LLM is needed: `plan()` below stands in for the model, deterministically.
 *
 * Run it against `npm start` (observe on :3400, gate on :3000) with the keys docs/guide/curl.md creates:
 *
 *   VIGIL_API_KEY=<observe key> VIGIL_GATE_API_KEY=<gate agent key> npm run example -w @vigil/sdk
 *
 * (or `node --import tsx examples/agent-loop.ts`). On a fresh observe without keys, the example
 * creates the first key and prints it. When a human must decide, it prints where and how (the
 * dashboard, or a curl with a key that has request:decide) and waits. `--auto-approve` makes the
 * example approve its own request after a second, in the role of the human: the gate key then
 * needs the request:decide scope (the admin key has it); without it the example says so and waits.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ApprovalDeniedError,
  GateClient,
  ObserveClient,
  VigilApiError,
  VigilNetworkError,
  VigilPermissionError,
  traceTool,
  withApproval,
  type ApprovalOutcome,
  type VigilSession,
} from '@vigil/sdk/node';

const AGENT_ID = 'refund-agent';
const MODEL = { provider: 'openai', model: 'gpt-4o-mini' } as const;
const autoApprove = process.argv.includes('--auto-approve');

// ----------------------------------------------------------------------------------------------
// The world the agent acts on (stand-ins for real systems)

const orders: Record<string, { customer: string; item: string; amount: number; delivered: string }> = {
  '1042': { customer: 'Dana Reyes', item: 'espresso machine', amount: 349, delivered: '2026-11-18' },
};

// Each tool call is recorded in the ambient session: tool_call, then tool_response or tool_error.
const tools = {
  lookup_order: traceTool('lookup_order', async ({ orderId }: { orderId: string }) => {
    await sleep(40);
    const order = orders[orderId];
    if (!order) throw Object.assign(new Error(`order ${orderId} not found`), { code: 'NOT_FOUND' });
    return { orderId, ...order };
  }),
  check_refund_policy: traceTool('check_refund_policy', async ({ amount, delivered }: { amount: number; delivered: string }) => {
    await sleep(20);
    const days = Math.floor((Date.now() - Date.parse(delivered)) / 86_400_000);
    return { eligible: days <= 30, needsApproval: amount > 100, daysSinceDelivery: days };
  }),
  // Not traced: withApproval records the refund as a tool call once it is approved.
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
  const response = await fetch(`${url}/api/keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'example' }),
  }).catch(() => {
    console.error(`Cannot reach observe at ${url}: start Vigil with \`npm start\` (or set VIGIL_URL).`);
    process.exit(2);
  });
  if (response.status !== 201) {
    console.error('Set VIGIL_API_KEY to an observe API key (this observe already has keys).');
    process.exit(2);
  }
  const { key } = (await response.json()) as { key: string };
  console.log(`Created the first observe API key (shown once, keep it): ${key}\n`);
  return key;
}

/** Where and how a human approves the request: the dashboard, or the API with a key that may decide. */
function printHowToApprove(gate: GateClient, observeUrl: string, requestId: string): void {
  console.log(`Waiting for a human to approve refund request ${requestId}: in the dashboard (${observeUrl}/ → Approvals), or with`);
  console.log(`a gate key that has request:decide (the admin key printed at the gate's first start has it):\n`);
  console.log(`  curl -X POST ${gate.baseUrl}/api/requests/${requestId}/decide -H "Authorization: Bearer <gate admin key>" \\`);
  console.log(`       -H 'content-type: application/json' -d '{"decision":"approved","reason":"damaged on delivery"}'\n`);
}

/** --auto-approve: the example plays the human, if its gate key may decide. */
async function approveAsHuman(gate: GateClient, requestId: string): Promise<void> {
  await sleep(1000);
  try {
    await gate.decide(requestId, 'approved', 'auto-approved by the example (--auto-approve)');
  } catch (error) {
    if (!(error instanceof VigilPermissionError)) throw error;
    console.log('--auto-approve needs a gate key with the request:decide scope (the admin key has it); this key may only ask.');
    console.log('Approve the request as shown above: the example keeps waiting.\n');
  }
}

async function runTool(gate: GateClient, observeUrl: string, name: ToolName, args: Record<string, unknown>): Promise<string> {
  if (name !== 'issue_refund') return `${name}:${JSON.stringify(await (tools[name] as (a: unknown) => Promise<unknown>)(args))}`;
  // A risky action: ask the gate first. A policy may decide at once; otherwise a human does.
  try {
    const refund = (outcome: ApprovalOutcome) => {
      console.log(`Refund ${outcome.status} by ${outcome.decidedBy}${outcome.decisionReason ? `: ${outcome.decisionReason}` : ''}`);
      return tools.issue_refund(args as { orderId: string; amount: number });
    };
    const result = await withApproval(gate, 'refund', args, refund, {
      toolName: 'issue_refund',
      wait: {
        timeoutMs: 10 * 60_000,
        onPending: (request) => {
          printHowToApprove(gate, observeUrl, request.id);
          if (autoApprove) void approveAsHuman(gate, request.id).catch((error: unknown) => console.error(`Could not approve: ${(error as Error).message}`));
        },
      },
    });
    return `${name}:${JSON.stringify(result)}`;
  } catch (error) {
    if (!(error instanceof ApprovalDeniedError)) throw error;
    const { status, decidedBy, decisionReason } = error.outcome;
    console.log(`Refund ${status}${decidedBy ? ` by ${decidedBy}` : ''}${decisionReason ? `: ${decisionReason}` : ''}`);
    return `approval: ${status}`;
  }
}

// ----------------------------------------------------------------------------------------------
// The loop

/** Asks the (simulated) LLM for the next step until it answers; answers its final text. */
async function agentLoop(session: VigilSession, gate: GateClient, observeUrl: string): Promise<string> {
  const messages: Message[] = [
    { role: 'system', content: 'You are a support agent. Use tools; refunds over $100 need approval.' },
    { role: 'user', content: 'My espresso machine from order 1042 arrived broken. I want a refund.' },
  ];
  for (let turn = 0; turn < 8; turn++) {
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
    if ('final' in reply.step) return reply.step.final;
    messages.push({ role: 'tool', content: await runTool(gate, observeUrl, reply.step.tool, reply.step.args) });
  }
  throw new Error('no answer after 8 turns');
}

async function main(): Promise<void> {
  const observeUrl = process.env.VIGIL_URL ?? 'http://localhost:3400';
  const observe = new ObserveClient({ baseUrl: observeUrl, apiKey: await observeKey(observeUrl) });
  if (!process.env.VIGIL_GATE_API_KEY) {
    console.error('Set VIGIL_GATE_API_KEY to a gate key with request:create and request:read (the admin key printed at the gate’s first start works).');
    process.exit(2);
  }
  const gate = new GateClient();

  let sessionId = '';
  const answer = await observe.withSession({ agentId: AGENT_ID, agentName: 'Refund agent', tags: ['example', 'support'] }, async (session) => {
    sessionId = session.id;
    console.log(`Session ${session.id} started\n`);
    return agentLoop(session, gate, observeUrl);
  });
  await observe.close();

  const stored = await observe.getSession(sessionId);
  console.log(`\nAnswer: ${answer}`);
  console.log(
    `Stored: ${stored.eventCount} events, ${stored.toolCallCount} tool calls, ${stored.errorCount} errors, $${stored.totalCostUsd.toFixed(6)}, status ${stored.status}`,
  );
  console.log(`Timeline: ${observeUrl}/ → Sessions, or curl -H "Authorization: Bearer <observe key>" ${observe.baseUrl}/api/sessions/${sessionId}/timeline`);
}

main().catch((error: unknown) => {
  if (error instanceof VigilApiError) console.error(`${error.service} answered ${error.status}: ${error.message}`);
  else if (error instanceof VigilNetworkError) console.error(`${error.message}: is Vigil running (\`npm start\`)?`);
  else console.error(error);
  process.exit(1);
});
