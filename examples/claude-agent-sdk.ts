/**
 * A Claude Agent SDK agent whose tool calls the Vigil gate decides: vigilPermissions is the
 * query's canUseTool (each call an approval request the gate's policies or a human decide; allowed
 * with exactly the approved input, denied with the gate's reason) and records, in the observe
 * session, each request, its decision and the call once. Run it against `npm start`:
 *
 *   VIGIL_API_KEY=<observe key> VIGIL_GATE_API_KEY=<gate key> ANTHROPIC_API_KEY=<key> node --import tsx examples/claude-agent-sdk.ts
 *
 * CLAUDE_CODE_PATH names the Claude Code executable when the Agent SDK does not find its own.
 */
import { query } from '@anthropic-ai/claude-agent-sdk';
import { vigilPermissions } from '@vigil/sdk/claude-agent-sdk';
import { GateClient, ObserveClient } from '@vigil/sdk/node';

const vigil = new ObserveClient(); // VIGIL_URL (default http://localhost:3400), VIGIL_API_KEY
const gate = new GateClient(); // VIGIL_GATE_URL (default http://localhost:3000), VIGIL_GATE_API_KEY

await vigil.withSession({ agentId: 'claude-agent', tags: ['example', 'claude-agent-sdk'] }, async (session) => {
  console.log(`Session ${session.id} started`);
  const run = query({
    prompt: 'Write the date into today.txt',
    options: {
      // Reading needs no approval; every other tool asks the gate, waiting up to 2 minutes for a human.
      ...vigilPermissions(gate, { session, allowTools: ['Read', 'Glob', 'Grep'], wait: { timeoutMs: 120_000 } }),
      ...(process.env.CLAUDE_CODE_PATH !== undefined && { pathToClaudeCodeExecutable: process.env.CLAUDE_CODE_PATH }),
    },
  });
  for await (const message of run) {
    if (message.type !== 'result') continue;
    for (const denial of message.permission_denials) console.log(`Denied: ${denial.tool_name} ${JSON.stringify(denial.tool_input)}`);
    console.log(`Result: ${message.subtype === 'success' ? message.result : message.subtype}`);
  }
});
await vigil.close();
