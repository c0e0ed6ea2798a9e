/**
 * An OpenAI Agents SDK agent whose refunds wait for Vigil's gate — across restarts. The tool's
 * needsApproval asks the gate: a refund a policy approves runs at once; one routed to a human
 * interrupts the run, which is stored in refund-run.json (REFUND_RUN_FILE) while the program waits
 * for the decision. Stop the program and start it again: it resumes the stored run, with the
 * decision taken meanwhile. The tool runs only for the arguments the gate approved. Run it against
 * `npm start`:
 *
 *   VIGIL_API_KEY=<observe key> VIGIL_GATE_API_KEY=<gate key: request:create, request:read> \
 *   OPENAI_API_KEY=<key> node --import tsx examples/openai-agents.ts
 *
 * OPENAI_BASE_URL points it at any server speaking OpenAI's Responses API instead.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, run, tool } from '@openai/agents';
import { z } from 'zod';
import { GateClient, ObserveClient } from '@vigil/sdk/node';
import { VigilAgentApprovals, type SuspendedRun } from '@vigil/sdk/openai-agents';

const vigil = new ObserveClient(); // VIGIL_URL (default http://localhost:3400), VIGIL_API_KEY
const gate = new GateClient(); // VIGIL_GATE_URL (default http://localhost:3000), VIGIL_GATE_API_KEY
const file = process.env.REFUND_RUN_FILE ?? 'refund-run.json';

const approvals = new VigilAgentApprovals({
  gate,
  wait: { timeoutMs: 60 * 60_000, onPending: (request) => console.log(`Waiting for a decision on request ${request.id} (${request.action})`) },
});

const issueRefund = tool({
  name: 'issue_refund',
  description: 'Refund an order to the customer',
  parameters: z.object({ orderId: z.string(), amount: z.number() }),
  needsApproval: approvals.needsApproval('issue_refund'),
  execute: approvals.execute('issue_refund', async ({ orderId, amount }: { orderId: string; amount: number }) => {
    return `refunded ${amount} EUR on order ${orderId}`;
  }),
});

const agent = new Agent({
  name: 'refund-agent',
  instructions: 'You handle refunds for damaged deliveries.',
  model: 'gpt-4o-mini',
  tools: [issueRefund],
});

/** Waits for the gate's decisions on a stored run, runs it to its end, and forgets it. */
async function finish(suspended: SuspendedRun): Promise<string> {
  const result = await run(agent, await approvals.resume(agent, suspended));
  rmSync(file, { force: true });
  return String(result.finalOutput);
}

let answer: string;
if (existsSync(file)) {
  const suspended = JSON.parse(readFileSync(file, 'utf8')) as SuspendedRun;
  console.log(`Resuming the run stored in ${file}`);
  // The requests were recorded in the session of the run that stopped: record the rest there too.
  const session = suspended.session ?? { id: undefined, agentId: 'refund-agent' };
  answer = await vigil.withSession({ agentId: session.agentId, sessionId: session.id, continues: session.id !== undefined }, () => finish(suspended));
} else {
  answer = await vigil.withSession({ agentId: 'refund-agent', tags: ['example', 'openai-agents'] }, async (session) => {
    console.log(`Session ${session.id} started`);
    const result = await run(agent, 'Please refund order 1042: 349 EUR, the espresso machine arrived broken.');
    if (result.interruptions.length === 0) return String(result.finalOutput);
    writeFileSync(file, JSON.stringify(await approvals.suspend(result)));
    console.log(`Stored the interrupted run in ${file}`);
    return finish(JSON.parse(readFileSync(file, 'utf8')) as SuspendedRun);
  });
}
console.log(`Answer: ${answer}`);
await vigil.close();
