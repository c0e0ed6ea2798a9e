/**
 * A Vercel AI SDK agent whose risky tool asks the Vigil gate first: gateApprovals answers the AI
 * SDK's tool approval from the gate (its policies, or a human deciding in the dashboard or
 * through the API) and runs issue_refund only for the call the gate approved. The session records
 * the request, the decision and the refund, each once. Run it against `npm start`:
 *
 *   VIGIL_API_KEY=<observe key> VIGIL_GATE_API_KEY=<gate key> OPENAI_API_KEY=<key> node --import tsx examples/vercel-ai-approval.ts
 *
 * With ai 7, also pass `toolApproval: approvals.toolApproval` to generateText (docs/guide/framework-approvals.md).
 */
import { openai } from '@ai-sdk/openai';
import { generateText, stepCountIs, tool } from 'ai';
import { z } from 'zod';
import { GateClient, ObserveClient } from '@vigil/sdk/node';
import { gateApprovals } from '@vigil/sdk/ai-approval';

const vigil = new ObserveClient(); // VIGIL_URL (default http://localhost:3400), VIGIL_API_KEY
const gate = new GateClient(); // VIGIL_GATE_URL (default http://localhost:3000), VIGIL_GATE_API_KEY
const approvals = gateApprovals({
  gate,
  actions: { issue_refund: 'refund' },
  wait: { onPending: (request) => console.log(`Refund request ${request.id} waits for a human: approve it in the dashboard`) },
});

const tools = approvals.tools({
  issue_refund: tool({
    description: 'Refund an order',
    inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
    execute: async ({ orderId, amount }) => ({ refundId: `rf_${orderId}`, amount }),
  }),
});

const answer = await vigil.withSession({ agentId: 'refund-agent', tags: ['example', 'vercel-ai'] }, async (session) => {
  console.log(`Session ${session.id} started`);
  const { text, steps } = await generateText({
    model: openai.chat('gpt-4o-mini'),
    tools,
    stopWhen: stepCountIs(5),
    prompt: 'Order 1042 arrived broken: refund its 25 EUR.',
  });
  for (const part of steps.flatMap((step) => step.content)) {
    if (part.type === 'tool-result') console.log(`Refund issued: ${JSON.stringify(part.output)}`);
    if (part.type === 'tool-error') console.log(`Refund not issued: ${String(part.error)}`);
  }
  return text;
});
console.log(`Answer: ${answer}`);
await vigil.close();
