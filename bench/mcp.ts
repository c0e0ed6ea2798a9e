/**
 * `npm run bench` (MCP part).
 *
 * 1. What /mcp adds over calling the route it wraps. Against a real observe
 * server (its own process, SQLite unless DATABASE_URL is set), one request at a time: GET
 * /api/sessions?limit=1 directly, then the query_sessions tool doing the same through /mcp, as a
 * 2026-07-28 request (no handshake) and as a 2025-11-25 one (a stateless server answers each
 * 2025 request without one too), taken in turn. BENCH_MCP_CALLS calls each (default 2,000, after 200
 * warm-up rounds).
 *
 * 2. What `vigil mcp-gateway` adds to an allowed tool call (target: ≤ 3 ms p95 over calling the
 * upstream directly). One MCP SDK client calls server-everything's `echo` over stdio directly, and
 * another the same tool through the gateway (`node packages/cli/bin/vigil.mjs mcp-gateway`, as the
 * guide configures clients to start it, over stdio; its upstream the same server), taken in turn;
 * a real gate (a policy approves `echo`) and observe (every call recorded) in their own
 * processes. The gate's decision is one round trip on the call's path (POST /api/requests with
 * `redeem: true`), so beside it that POST's own latency, measured alone in the same rounds with the
 * gateway's HTTP client (it follows the gateway's call, so it shares the gate with that call's
 * confirmation). And the CPU each process spends per call (/proc): the gateway's own, the gate's
 * per round (the gateway's POST and confirmation, and the POST alone), observe's.
 * BENCH_MCP_GATEWAY_CALLS calls each (default 1,000), after BENCH_MCP_GATEWAY_WARM_UP rounds (default
 * 2,000): a gateway and a gate run for days, and until a few thousand requests have passed V8 is
 * still compiling their hot paths (measured: the gate's CPU per lone POST fell from 1.78 to 1.07 ms
 * between the first few hundred and the 5,000th, 0.45 ms of it TurboFan on V8's helper threads), so
 * the target is judged on the calls after that; the first 1,000 rounds after start are printed too.
 * BENCH_SERVER_PROFILE=<dir> profiles the gateway (server.ts serverProfiling).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { keepAliveFetch } from '../packages/cli/src/mcp-gateway/http-fetch.ts';
import { GateClient } from '../packages/sdk/src/index.ts';
import { createObserveKey, freePort, processCpuMs, serverProfiling, startObserve, stopServer, vigilCommand, waitForHealth } from './server.ts';
import { checked, percentile, printTable, type Row } from './table.ts';

const CALLS = Number(process.env.BENCH_MCP_CALLS ?? 2_000);
const WARM_UP = 200;
const GATEWAY_CALLS = Number(process.env.BENCH_MCP_GATEWAY_CALLS ?? 1_000);
const GATEWAY_WARM_UP = Number(process.env.BENCH_MCP_GATEWAY_WARM_UP ?? 2_000);
/** The rounds right after start, printed beside the target's (the warm-up's first ones, or measured ones too when the warm-up is shorter). */
const COLD_CALLS = Math.min(1_000, GATEWAY_WARM_UP + GATEWAY_CALLS);
const GATE_ADMIN_KEY = 'gk_bench_mcp_gateway_admin_0123456789';
const ADDED_P95_TARGET_MS = 3;

const observe = await startObserve('mcp');
try {
  const key = await createObserveKey(observe.base);
  const auth = { authorization: `Bearer ${key}` };
  const mcpHeaders = { ...auth, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const toolCall = (version: string) => ({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: {
      name: 'query_sessions',
      arguments: { limit: 1 },
      ...(version === '2026-07-28' && {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': version,
          'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      }),
    },
  });
  const cases: Array<[string, () => Promise<Response>]> = [
    ['GET /api/sessions?limit=1', () => fetch(`${observe.base}/api/sessions?limit=1`, { headers: auth })],
    ...['2026-07-28', '2025-11-25'].map((version): [string, () => Promise<Response>] => {
      const body = JSON.stringify(toolCall(version));
      const headers = {
        ...mcpHeaders,
        'mcp-protocol-version': version,
        ...(version === '2026-07-28' && { 'mcp-method': 'tools/call', 'mcp-name': 'query_sessions' }),
      };
      return [`/mcp tools/call query_sessions (${version})`, () => fetch(`${observe.base}/mcp`, { method: 'POST', headers, body })];
    }),
  ];
  // Round robin, so that whatever else the server (or the machine) does meanwhile weighs on each alike.
  const times = cases.map((): number[] => []);
  for (let i = 0; i < WARM_UP + CALLS; i++) {
    for (const [c, [name, call]] of cases.entries()) {
      const started = performance.now();
      const response = await call();
      const text = await response.text();
      if (response.status !== 200 || text.includes('"isError":true')) throw new Error(`${name}: ${response.status} ${text}`);
      if (i >= WARM_UP) times[c]!.push(performance.now() - started);
    }
  }
  const rows: Row[] = cases.map(([name], c) => {
    const sorted = times[c]!.sort((x, y) => x - y);
    const added = c === 0 ? '' : `, +${(percentile(sorted, 50) - percentile(times[0]!, 50)).toFixed(2)} ms p50`;
    return [`${name}: p50 / p95`, '', `${percentile(sorted, 50).toFixed(2)} / ${percentile(sorted, 95).toFixed(2)} ms${added}`];
  });
  printTable(rows);
} finally {
  await stopServer(observe.child, observe.dataDir, observe.schema);
}

async function startGate() {
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'vigil-bench-mcp-gateway-'));
  const schema = `bench_mcp_gateway_${process.pid}`;
  const child = spawn(process.execPath, vigilCommand('gate', '--port', String(port), '--data-dir', dataDir), {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', GATE_DB_SCHEMA: schema, GATE_ADMIN_KEY },
  });
  const base = `http://127.0.0.1:${port}`;
  await waitForHealth(base, child, '/health');
  return { base, pid: child.pid, stop: () => stopServer(child, dataDir, schema) };
}

const sorted = (samples: number[]): number[] => samples.sort((x, y) => x - y);
const p50p95 = (samples: number[]): string => `${percentile(samples, 50).toFixed(2)} / ${percentile(samples, 95).toFixed(2)} ms`;

const gateServer = await startGate();
const gatewayObserve = await startObserve('mcp-gateway');
const configDir = mkdtempSync(join(tmpdir(), 'vigil-bench-mcp-gateway-config-'));
const clients: Client[] = [];
try {
  const admin = new GateClient({ baseUrl: gateServer.base, apiKey: GATE_ADMIN_KEY });
  await admin.createPolicy({ name: 'echo is fine', priority: 10, rules: [{ match: { action: 'echo' }, decision: 'auto_approve' }] });
  const gatewayKey = (await admin.createApiKey({ name: 'mcp-gateway', scopes: ['request:create', 'request:read'], rateLimit: null })).key;
  const http = keepAliveFetch();
  const gate = new GateClient({ baseUrl: gateServer.base, apiKey: gatewayKey, fetch: http.fetch });
  const everything = join(
    dirname(createRequire(join(process.cwd(), 'packages/cli/package.json')).resolve('@modelcontextprotocol/server-everything/package.json')),
    'dist/index.js',
  );
  const config = join(configDir, 'gateway.json');
  writeFileSync(
    config,
    JSON.stringify({
      upstreams: { everything: { command: process.execPath, args: [everything, 'stdio'] } },
      gate: { url: gateServer.base, apiKey: gatewayKey },
      observe: { url: gatewayObserve.base, apiKey: await createObserveKey(gatewayObserve.base) },
      agentId: 'bench-mcp-gateway',
    }),
  );
  const connect = async (name: string, args: string[]): Promise<{ client: Client; pid: number | null }> => {
    const client = new Client({ name, version: '1.0.0' });
    clients.push(client);
    const env = { ...(process.env as Record<string, string>), LOG_LEVEL: 'warn' };
    const transport = new StdioClientTransport({ command: process.execPath, args, env, stderr: 'inherit' });
    await client.connect(transport);
    return { client, pid: transport.pid };
  };
  const { client: direct } = await connect('bench-direct', [everything, 'stdio']);
  vigilCommand(); // the CLI built before it starts
  const gateway = await connect('bench-gateway', [...serverProfiling().nodeFlags, 'packages/cli/bin/vigil.mjs', 'mcp-gateway', '--config', config]);
  const throughGateway = gateway.client;
  const cpu = (): Array<number | null> =>
    [gateway.pid, gateServer.pid, gatewayObserve.child.pid].map((pid) => (pid === null || pid === undefined ? null : processCpuMs(pid)));
  let cpuStart = cpu();

  const times = { direct: [] as number[], gateway: [] as number[], post: [] as number[] };
  const cold = { direct: [] as number[], gateway: [] as number[] };
  const echo = async (client: Client, message: string): Promise<number> => {
    const started = performance.now();
    const answer = (await client.callTool({ name: 'echo', arguments: { message } })) as { isError?: boolean; content: Array<{ text?: string }> };
    const ms = performance.now() - started;
    if (answer.isError || !answer.content[0]?.text?.includes(message)) throw new Error(`echo answered ${JSON.stringify(answer)}`);
    return ms;
  };
  for (let i = 0; i < GATEWAY_WARM_UP + GATEWAY_CALLS; i++) {
    if (i === GATEWAY_WARM_UP) cpuStart = cpu();
    const message = `bench ${i}`;
    const directMs = await echo(direct, message);
    const gatewayMs = await echo(throughGateway, message);
    const started = performance.now();
    await gate.createRequest({ action: 'echo', params: { message }, redeem: true });
    const postMs = performance.now() - started;
    if (i < COLD_CALLS) {
      cold.direct.push(directMs);
      cold.gateway.push(gatewayMs);
    }
    if (i >= GATEWAY_WARM_UP) {
      times.direct.push(directMs);
      times.gateway.push(gatewayMs);
      times.post.push(postMs);
    }
  }
  const perCall = cpu().map((end, p) => (end === null || cpuStart[p] === null ? 'n/a' : `${((end - cpuStart[p]!) / GATEWAY_CALLS).toFixed(2)} ms`));
  http.close();
  const [directTimes, gatewayTimes, postTimes] = [sorted(times.direct), sorted(times.gateway), sorted(times.post)];
  const added = percentile(gatewayTimes, 95) - percentile(directTimes, 95);
  const beyondDecision = added - percentile(postTimes, 95);
  const beyondAtMedian = percentile(gatewayTimes, 50) - percentile(directTimes, 50) - percentile(postTimes, 50);
  const [coldDirect, coldGateway] = [sorted(cold.direct), sorted(cold.gateway)];
  printTable([
    [
      `the first ${COLD_CALLS.toLocaleString('en-US')} rounds after start: directly; through the gateway (p50 / p95); added at p95`,
      '',
      `${p50p95(coldDirect)}; ${p50p95(coldGateway)}; ${(percentile(coldGateway, 95) - percentile(coldDirect, 95)).toFixed(2)} ms`,
    ],
    [
      `MCP tools/call echo, directly to server-everything over stdio (p50 / p95, ${GATEWAY_CALLS} calls after ${GATEWAY_WARM_UP.toLocaleString('en-US')} rounds)`,
      '',
      p50p95(directTimes),
    ],
    ['the same call through vigil mcp-gateway over stdio, allowed by a gate policy (p50 / p95)', '', p50p95(gatewayTimes)],
    [`gateway's added latency (p95 through it − p95 direct)`, `≤ ${ADDED_P95_TARGET_MS} ms`, checked(`${added.toFixed(2)} ms`, added <= ADDED_P95_TARGET_MS)],
    ["of which the gate's decision: POST /api/requests auto-approved, alone (p50 / p95)", '', p50p95(postTimes)],
    [
      'added beyond that decision round trip (added − POST p95; at p50: added p50 − POST p50)',
      '',
      `${beyondDecision.toFixed(2)} ms; ${beyondAtMedian.toFixed(2)} ms`,
    ],
    ["CPU per call: the gateway process's own (all its threads)", '', perCall[0]!],
    ["CPU per round: the gate's (the gateway's POST and confirmation, the POST alone); observe's (the call's events)", '', `${perCall[1]}; ${perCall[2]}`],
  ]);
} finally {
  for (const client of clients) await client.close().catch(() => undefined);
  rmSync(configDir, { recursive: true, force: true });
  await stopServer(gatewayObserve.child, gatewayObserve.dataDir, gatewayObserve.schema);
  await gateServer.stop();
}
