/**
 * `npm run bench` (part): what the framework approval adapters (@vigil/sdk/ai-approval; Mastra's
 * shares its code, tool-gate.ts) add to an auto-approved tool call. Against the real gate and
 * observe servers (separate processes, SQLite unless DATABASE_URL is set), one client, taken in
 * turn: the gate's own POST /api/requests that a policy approves at once, and the adapter's whole
 * call of a no-op tool in a session (needsApproval asks the gate, execute runs the call through
 * runApproved and confirms it; the session records request, decision and call). Target: the
 * adapter's p95 at most 2 ms above the POST's p95. The adapter makes more than that one round
 * trip (runApproved awaits the confirmation, and the redemption of the receipt where the gate
 * issues them), so beside it: the adapter's own time, outside its round trips to the gate.
 *
 * BENCH_APPROVAL_CALLS (default 1000) sets the number of calls of each.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gateApprovals } from '../packages/sdk/src/ai-approval.ts';
import { GateClient, ObserveClient } from '../packages/sdk/src/index.ts';
import { createObserveKey, freePort, startObserve, stopServer, vigilCommand, waitForHealth } from './server.ts';
import { checked, percentile, printTable, type Row } from './table.ts';

const CALLS = Number(process.env.BENCH_APPROVAL_CALLS ?? 1000);
const WARMUP = Math.min(200, CALLS);
const ADMIN_KEY = 'gk_bench_framework_approvals_0123456789';

async function startGate() {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'vigil-bench-approvals-'));
  const schema = `bench_approvals_${process.pid}`;
  const child = spawn(process.execPath, vigilCommand('gate', '--port', String(port), '--data-dir', dataDir), {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', GATE_DB_SCHEMA: schema, GATE_ADMIN_KEY: ADMIN_KEY },
  });
  const base = `http://127.0.0.1:${port}`;
  await waitForHealth(base, child, '/health');
  return { base, stop: () => stopServer(child, dataDir, schema) };
}

const gateServer = await startGate();
const observeServer = await startObserve('approvals');
try {
  // Time spent in the gate's round trips (and how many), so the adapter's own time can be told apart.
  let httpMs = 0;
  let roundTrips = 0;
  const timedFetch: typeof fetch = async (input, init) => {
    const started = performance.now();
    try {
      return await fetch(input, init);
    } finally {
      httpMs += performance.now() - started;
      roundTrips += 1;
    }
  };
  const gate = new GateClient({ baseUrl: gateServer.base, apiKey: ADMIN_KEY, fetch: timedFetch });
  await gate.createPolicy({ name: 'bench', priority: 10, rules: [{ match: { action: 'bench_tool' }, decision: 'auto_approve' }] });
  const observe = new ObserveClient({ baseUrl: observeServer.base, apiKey: await createObserveKey(observeServer.base) });
  const session = observe.startSession({ agentId: 'bench-approvals' });
  const approvals = gateApprovals({ gate, session });
  type Hooks = {
    needsApproval: (input: unknown, options: { toolCallId: string; messages: [] }) => Promise<boolean>;
    execute: (input: unknown, options: { toolCallId: string; messages: [] }) => Promise<unknown>;
  };
  const tool = approvals.tools({ bench_tool: { inputSchema: undefined as never, execute: async (input: unknown) => input } }).bench_tool as unknown as Hooks;

  const post: number[] = [];
  const adapter: number[] = [];
  const own: number[] = [];
  let adapterTrips = 0;
  for (let i = 0; i < WARMUP + CALLS; i++) {
    const input = { orderId: `o-${i}`, amount: i % 100 };
    let started = performance.now();
    await gate.createRequest({ action: 'bench_tool', params: input });
    const postMs = performance.now() - started;
    httpMs = 0;
    roundTrips = 0;
    started = performance.now();
    const options = { toolCallId: `call_${i}`, messages: [] as [] };
    if (await tool.needsApproval(input, options)) throw new Error('an auto-approved call was handed to the user');
    await tool.execute(input, options);
    const adapterMs = performance.now() - started;
    if (i >= WARMUP) {
      post.push(postMs);
      adapter.push(adapterMs);
      own.push(adapterMs - httpMs);
      adapterTrips = roundTrips;
    }
  }
  await session.end();
  await observe.close();
  post.sort((a, b) => a - b);
  adapter.sort((a, b) => a - b);
  own.sort((a, b) => a - b);
  const added = percentile(adapter, 95) - percentile(post, 95);
  const rows: Row[] = [
    [`gate POST /api/requests, auto-approved (p50 / p95, ${CALLS} calls)`, '', `${percentile(post, 50).toFixed(2)} / ${percentile(post, 95).toFixed(2)} ms`],
    [
      `AI SDK adapter: needsApproval + execute of a no-op tool, ${adapterTrips} gate round trips (p50 / p95)`,
      '',
      `${percentile(adapter, 50).toFixed(2)} / ${percentile(adapter, 95).toFixed(2)} ms`,
    ],
    ['adapter p95 over the POST p95', '≤ 2 ms', checked(`${added.toFixed(2)} ms`, added <= 2)],
    [
      "adapter's own time, outside its gate round trips (p50 / p95)",
      '≤ 2 ms',
      checked(`${percentile(own, 50).toFixed(2)} / ${percentile(own, 95).toFixed(2)} ms`, percentile(own, 95) <= 2),
    ],
  ];
  printTable(rows);
} finally {
  await stopServer(observeServer.child, observeServer.dataDir, observeServer.schema);
  await gateServer.stop();
}
