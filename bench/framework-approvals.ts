/**
 * `npm run bench` (part): what the framework approval adapters (@vigil/sdk/ai-approval; Mastra's
 * shares its code, tool-gate.ts) add to an auto-approved tool call. Against the real gate and
 * observe servers (separate processes, SQLite unless DATABASE_URL is set), one client, taken in
 * turn: the gate's own POST /api/requests that a policy approves at once, and the adapter's whole
 * call of a no-op tool in a session (needsApproval asks the gate with `redeem: true`, execute
 * verifies the receipt, takes its redemption at issue and runs the call through runApproved; the
 * session records request, decision, redemption and call). The execution's confirmation is sent
 * off the call path: it is awaited (GateClient.flush) outside the timed window. Targets: the
 * adapter's p95 at most 2 ms above the POST's p95; receipt verification (verifyReceipt: Ed25519
 * over the RFC 8785 canonical JSON, the imported key cached) at most 100 µs, a micro-benchmark's
 * median per operation. Beside them, each step of one auto-approved call timed on its own (the
 * separate redeem too, which the redemption at issue saves).
 *
 * BENCH_APPROVAL_CALLS (default 1000) sets the number of calls of each.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gateApprovals } from '../packages/sdk/src/ai-approval.ts';
import { GateClient, ObserveClient, verifyReceipt, type ApprovalReceipt } from '../packages/sdk/src/index.ts';
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

/**
 * Median per-operation time (µs) of `op` over `batches` timed batches of `size`, after a warm-up:
 * wall clock, and this process's CPU (which a loaded machine inflates less).
 */
async function microBenchmark(op: () => unknown, batches = 9, size = 2000): Promise<{ medianUs: number; cpuUs: number }> {
  for (let i = 0; i < size; i++) await op();
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let batch = 0; batch < batches; batch++) {
    const cpuBefore = process.cpuUsage();
    const started = process.hrtime.bigint();
    for (let i = 0; i < size; i++) await op();
    wall.push(Number(process.hrtime.bigint() - started) / 1000 / size);
    const used = process.cpuUsage(cpuBefore);
    cpu.push((used.user + used.system) / size);
  }
  wall.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  return { medianUs: percentile(wall, 50), cpuUs: percentile(cpu, 50) };
}

const STEP_WARMUP = 50;

/** p50 / p95 (ms) of `step`, timed alone over `count` calls after a warm-up. */
async function stepTimes(step: (i: number) => Promise<unknown>, count: number): Promise<string> {
  for (let i = 0; i < STEP_WARMUP; i++) await step(-1 - i);
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await step(i);
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  return `${percentile(samples, 50).toFixed(2)} / ${percentile(samples, 95).toFixed(2)} ms`;
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

  // Each step of one auto-approved call, timed on its own (the agent's key).
  const stepCount = Math.min(300, CALLS);
  const stepParams = (i: number) => ({ orderId: `s-${i}`, amount: 7 });
  const plainReceipts: { receipt: ApprovalReceipt; params: Record<string, unknown> }[] = [];
  const steps: [string, string][] = [
    [
      'POST /api/requests (the gate decides by policy)',
      await stepTimes(async (i) => {
        const created = await gate.createRequest({ action: 'bench_tool', params: stepParams(i) });
        plainReceipts.push({ receipt: created.receipt!, params: stepParams(i) });
      }, stepCount),
    ],
    [
      'POST /api/requests with redeem: true (the receipt redeemed in the same transaction)',
      await stepTimes((i) => gate.createRequest({ action: 'bench_tool', params: stepParams(i), redeem: true }), stepCount),
    ],
    [
      'POST /api/receipts/redeem (the separate redeem, saved by redeem: true)',
      await stepTimes((i) => gate.redeemReceipt({ ...plainReceipts[i + STEP_WARMUP]!, action: 'bench_tool' }), stepCount),
    ],
    [
      'POST /api/requests/:id/confirm (sent off the call path)',
      await stepTimes((i) => gate.confirm(plainReceipts[i + STEP_WARMUP]!.receipt.requestId, { ok: true }), stepCount),
    ],
    [
      "observe recording: a tool call's events queued in the session",
      await stepTimes(async () => session.wrapToolCall('bench_step', { a: 1 }, () => 1), stepCount),
    ],
  ];
  const keys = await gate.receiptKeys();
  const sample = plainReceipts[0]!.receipt;
  if (!(await verifyReceipt(sample, keys))) throw new Error('the benchmark receipt does not verify');
  const verifyRuns = [
    await microBenchmark(() => verifyReceipt(sample, keys)),
    await microBenchmark(() => verifyReceipt(sample, keys)),
    await microBenchmark(() => verifyReceipt(sample, keys)),
  ];
  const verifyUs = verifyRuns.map((run) => run.medianUs).sort((a, b) => a - b)[1]!;
  const verifyCpuUs = verifyRuns.map((run) => run.cpuUs).sort((a, b) => a - b)[1]!;

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
    // Before the confirmation (started on the path, finishing off it) is counted.
    const tripsOnPath = roundTrips;
    const httpOnPathMs = httpMs;
    // The confirmation travels off the call path: delivered before the next round, outside the timed window.
    await gate.flush();
    if (i >= WARMUP) {
      post.push(postMs);
      adapter.push(adapterMs);
      own.push(adapterMs - httpOnPathMs);
      adapterTrips = tripsOnPath;
    }
  }
  await session.end();
  await observe.close();
  post.sort((a, b) => a - b);
  adapter.sort((a, b) => a - b);
  own.sort((a, b) => a - b);
  const added = percentile(adapter, 95) - percentile(post, 95);
  const rows: Row[] = [
    ...steps.map(([name, result]): Row => [`step alone: ${name} (p50 / p95)`, '', result]),
    ['step alone: verifyReceipt, local (the micro-benchmark below)', '', `${verifyUs.toFixed(1)} µs`],
    [`gate POST /api/requests, auto-approved (p50 / p95, ${CALLS} calls)`, '', `${percentile(post, 50).toFixed(2)} / ${percentile(post, 95).toFixed(2)} ms`],
    [
      `AI SDK adapter: needsApproval + execute of a no-op tool, ${adapterTrips} gate round trip(s) on the call path (p50 / p95)`,
      '',
      `${percentile(adapter, 50).toFixed(2)} / ${percentile(adapter, 95).toFixed(2)} ms`,
    ],
    ['adapter p95 over the POST p95', '≤ 2 ms', checked(`${added.toFixed(2)} ms`, added <= 2)],
    [
      "adapter's own time, outside its gate round trips (p50 / p95)",
      '≤ 2 ms',
      checked(`${percentile(own, 50).toFixed(2)} / ${percentile(own, 95).toFixed(2)} ms`, percentile(own, 95) <= 2),
    ],
    [
      'receipt verification (verifyReceipt, Ed25519 + RFC 8785): median per op, middle of 3 micro-benchmarks of 9 × 2000 ops (wall; CPU)',
      '≤ 100 µs',
      checked(`${verifyUs.toFixed(1)} µs; CPU ${verifyCpuUs.toFixed(1)} µs`, verifyUs <= 100),
    ],
  ];
  printTable(rows);
} finally {
  await stopServer(observeServer.child, observeServer.dataDir, observeServer.schema);
  await gateServer.stop();
}
