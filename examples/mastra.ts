/**
 * A Mastra agent whose risky tool asks the Vigil gate first: gateApprovals answers Mastra's
 * tool-call approval (requireApproval) from the gate's policies or a human deciding in the
 * dashboard, and runs issue_refund only for the call the gate approved. The session records the
 * request, the decision and the refund, each once. Needs Node >= 22.13 (@mastra/core). Run it
 * against `npm start`:
 *
 *   VIGIL_API_KEY=<observe key> VIGIL_GATE_API_KEY=<gate key> OPENAI_API_KEY=<key> node --import tsx examples/mastra.ts
 */
import { openai } from '@ai-sdk/openai';
import { Agent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { z } from 'zod';
import { GateClient, ObserveClient } from '@vigil/sdk/node';
import { gateApprovals } from '@vigil/sdk/mastra';

const vigil = new ObserveClient(); // VIGIL_URL (default http://localhost:3400), VIGIL_API_KEY
const gate = new GateClient(); // VIGIL_GATE_URL (default http://localhost:3000), VIGIL_GATE_API_KEY
const approvals = gateApprovals({
  gate,
  actions: { issue_refund: 'refund' },
  wait: { onPending: (request) => console.log(`Refund request ${request.id} waits for a human: approve it in the dashboard`) },
});

const agent = new Agent({
  id: 'refund-agent',
  name: 'Refund agent',
  instructions: 'You handle refunds.',
  model: openai.chat('gpt-4o-mini'),
  tools: {
    issue_refund: createTool(
      approvals.tool({
        id: 'issue_refund',
        description: 'Refund an order',
        inputSchema: z.object({ orderId: z.string(), amount: z.number() }),
        execute: async ({ orderId, amount }: { orderId: string; amount: number }) => ({ refundId: `rf_${orderId}`, amount }),
      }),
    ),
  },
});

const answer = await vigil.withSession({ agentId: 'refund-agent', tags: ['example', 'mastra'] }, async (session) => {
  console.log(`Session ${session.id} started`);
  const result = await agent.generate('Order 1042 arrived broken: refund its 25 EUR.');
  for (const part of result.toolResults) console.log(`Refund: ${JSON.stringify(part.payload.result)}`);
  return result.text;
});
console.log(`Answer: ${answer}`);
await vigil.close();
