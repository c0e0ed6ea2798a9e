/**
 * A LangGraph.js ReAct agent whose refunds wait for Vigil's gate: the tool pauses the graph with
 * LangGraph's interrupt(); `approvals.resume` turns the pause into a gate request, waits for the
 * decision (a policy's at once, a human's in the dashboard or through the API) and resumes the
 * graph with Command({ resume }). The tool runs only for the arguments the gate approved. Run it
 * against `npm start`:
 *
 *   VIGIL_API_KEY=<observe key> VIGIL_GATE_API_KEY=<gate key: request:create, request:read> \
 *   OPENAI_API_KEY=<key> node --import tsx examples/langgraph.ts
 *
 * OPENAI_BASE_URL points it at any OpenAI-compatible server instead; any LangChain chat model works.
 */
import { HumanMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { MemorySaver } from '@langchain/langgraph';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';
import { GateClient, ObserveClient } from '@vigil/sdk/node';
import { VigilGraphApprovals } from '@vigil/sdk/langgraph';

const vigil = new ObserveClient(); // VIGIL_URL (default http://localhost:3400), VIGIL_API_KEY
const approvals = new VigilGraphApprovals({
  gate: new GateClient(), // VIGIL_GATE_URL (default http://localhost:3000), VIGIL_GATE_API_KEY
  wait: { timeoutMs: 30 * 60_000, onPending: (request) => console.log(`Waiting for a decision on request ${request.id} (${request.action})`) },
});

const issueRefund = tool((args) => approvals.run('issue_refund', args, async ({ orderId, amount }) => `refunded ${amount} EUR on order ${orderId}`), {
  name: 'issue_refund',
  description: 'Refund an order to the customer',
  schema: z.object({ orderId: z.string(), amount: z.number() }),
});
const agent = createReactAgent({
  llm: new ChatOpenAI({ model: 'gpt-4o-mini' }), // OPENAI_API_KEY, OPENAI_BASE_URL
  tools: [issueRefund],
  checkpointer: new MemorySaver(), // a persistent checkpointer lets another process resume the thread
});
const config = { configurable: { thread_id: `refund-1042-${Date.now()}` } };

const answer = await vigil.withSession({ agentId: 'refund-graph', tags: ['example', 'langgraph'] }, async (session) => {
  console.log(`Session ${session.id} started`);
  let state = await agent.invoke({ messages: [new HumanMessage('Please refund order 1042: 349 EUR, the espresso machine arrived broken.')] }, config);
  // Each pause for the gate: ask it, wait for the decision, resume — until the graph finishes.
  for (let resumed = await approvals.resume(agent, config); resumed !== undefined; resumed = await approvals.resume(agent, config)) state = resumed;
  return String(state.messages.at(-1)?.content);
});
console.log(`Answer: ${answer}`);
await vigil.close();
