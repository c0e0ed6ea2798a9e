/**
 * `npm run bench` (part): what a framework approval adapter adds to the gate's answer. A real gate
 * and observe in a child process (bench/adapter-services.ts), with a policy that approves the
 * benchmark's action at once. BENCH_ADAPTER_CALLS rounds (default 1000, after 100
 * unmeasured), each taking in turn:
 * - the gate's own POST /api/requests: a bare fetch with the request's JSON;
 * - the OpenAI Agents SDK adapter's whole auto-approved call, in a session: needsApproval for a new
 *   call id (the same POST through GateClient and askApproval, with `redeem: true`, the events
 *   recorded, batched to observe), then execute of a no-op tool (the receipt verified, its
 *   redemption at issue taken, the call recorded; the confirmation sent off the call path and
 *   awaited, GateClient.flush, outside the timed window). The LangGraph adapter takes the same path
 *   (approval-adapters.ts).
 * Wall-clock latency and this process's CPU per call (the servers' CPU is not counted); the target:
 * the adapter's p95 latency at most 2 ms over the POST's.
 */
import { spawn } from 'node:child_process';
import { GateClient, ObserveClient } from '../packages/sdk/src/node.ts';
import { VigilAgentApprovals } from '../packages/sdk/src/openai-agents.ts';
import { checked, percentile, printTable, type Row } from './table.ts';

const CALLS = Number(process.env.BENCH_ADAPTER_CALLS ?? 1000);
const WARMUP = 100;
/** The action bench/adapter-services.ts's policy approves. */
const ACTION = 'bench_refund';

const child = spawn(process.execPath, ['--import', 'tsx', 'bench/adapter-services.ts'], { stdio: ['ignore', 'pipe', 'inherit'] });
const services = await new Promise<{ gateUrl: string; observeUrl: string; observeKey: string; agentKey: string }>((resolve, reject) => {
  child.stdout.once('data', (chunk: Buffer) => resolve(JSON.parse(chunk.toString())));
  child.once('exit', (code) => reject(new Error(`the services exited with ${code}`)));
});

try {
  const observe = new ObserveClient({ baseUrl: services.observeUrl, apiKey: services.observeKey });
  const session = observe.startSession({ agentId: 'bench-agent' });
  const gate = new GateClient({ baseUrl: services.gateUrl, apiKey: services.agentKey });
  const approvals = new VigilAgentApprovals({ gate, session });
  const needsApproval = approvals.needsApproval(ACTION);
  const execute = approvals.execute(ACTION, (input: { orderId: string; amount: number }) => input.orderId);

  const post = async (i: number, redeem = false): Promise<void> => {
    const response = await fetch(`${services.gateUrl}/api/requests`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${services.agentKey}` },
      body: JSON.stringify({
        action: ACTION,
        params: { orderId: String(i), amount: 49 },
        context: { sessionId: session.id, agentId: 'bench-agent' },
        ...(redeem ? { redeem: true } : {}),
      }),
    });
    if (response.status !== 201) throw new Error(`POST /api/requests answered ${response.status}`);
    await response.arrayBuffer();
  };
  const adapter = async (i: number): Promise<void> => {
    const input = { orderId: String(i), amount: 49 };
    if (await needsApproval(undefined as never, input, `call_${i}`)) throw new Error('the policy should have approved');
    if ((await execute(input, undefined, { toolCall: { callId: `call_${i}` } })) !== input.orderId) throw new Error('the approved call did not run');
  };

  const wall = { post: new Float64Array(CALLS), redeem: new Float64Array(CALLS), adapter: new Float64Array(CALLS) };
  const cpu = { post: new Float64Array(CALLS), redeem: new Float64Array(CALLS), adapter: new Float64Array(CALLS) };
  for (let round = -WARMUP; round < CALLS; round++) {
    for (const [name, call] of [
      ['post', post],
      ['redeem', (i: number) => post(CALLS + WARMUP + i, true)],
      ['adapter', adapter],
    ] as const) {
      const started = performance.now();
      const cpuBefore = process.cpuUsage();
      await call(round + WARMUP);
      const elapsed = performance.now() - started;
      const used = process.cpuUsage(cpuBefore);
      // The adapter's confirmation travels off the call path: delivered before the next call, untimed.
      await gate.flush();
      if (round >= 0) {
        wall[name][round] = elapsed;
        cpu[name][round] = (used.user + used.system) / 1000;
      }
    }
  }
  await session.end();
  await observe.close();

  for (const samples of [...Object.values(wall), ...Object.values(cpu)]) samples.sort();
  const ms = (value: number): string => `${value.toFixed(2)} ms`;
  const p = (samples: Float64Array): string => `${ms(percentile(samples, 50))} / ${ms(percentile(samples, 95))}`;
  const added = percentile(wall.adapter, 95) - percentile(wall.post, 95);
  const rows: Row[] = [
    ['gate POST /api/requests, auto-approved: latency p50 / p95', '', p(wall.post)],
    ['the same POST with redeem: true (what the adapter sends): latency p50 / p95', '', p(wall.redeem)],
    [
      'OpenAI Agents adapter needsApproval + execute, auto-approved: latency p50 / p95',
      'p95 ≤ POST p95 + 2 ms',
      checked(`${p(wall.adapter)} (+${ms(added)})`, added <= 2),
    ],
    ['client CPU per call p50 / p95: the POST, the adapter', '', `${p(cpu.post)}, ${p(cpu.adapter)}`],
  ];
  printTable(rows);
} finally {
  child.kill('SIGTERM');
}
