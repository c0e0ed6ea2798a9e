/**
 * `npm run bench` (part): what the audit log costs and how fast its proofs are.
 *
 * 1. Ingest with the log on and off: two observe servers (separate processes, SQLite unless
 *    DATABASE_URL is set), one appending every event's leaf and one not (bench/observe-server.ts),
 *    fed the same 1,000-event batches by 8 clients in alternating rounds so that both see the same
 *    database sizes. Target: with the log, within 10 % of the throughput without it.
 * 2. Inclusion proofs at a million leaves: a log of BENCH_AUDIT_LEAVES (default 1,000,000) leaves
 *    appended in 10,000-leaf transactions straight through the platform's log on the server's
 *    database, a checkpoint, then GET /api/audit/inclusion for random leaves over HTTP. Target:
 *    p95 ≤ 5 ms.
 * 2b. What committing the sessions' heads costs (docs/audit.md, "Session heads"): two servers with
 *    the log on, one ending each checkpoint (every AUDIT_CHECKPOINT_EVENTS = 1,000 events, each
 *    batch 50 new sessions) with a heads leaf and one without (BENCH_AUDIT_HEADS=off), fed alike.
 *    Target: with the commitment, within 5 % of the throughput without it (issue 40).
 * 3. Verifying an exported 10,000-event session bundle (`vigil verify BUNDLE`'s check, in a fresh
 *    process as the command runs, after the file is read: bench/verify-bundle.ts). Target: ≤ 100 ms.
 *
 * BENCH_AUDIT_EVENTS (default 200,000) sets the events each ingest server receives;
 * BENCH_AUDIT_PARTS (default "ingest,heads,inclusion,bundle") which of them run.
 */
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { appendLeaves, openDatabase, type AuditLogTables } from '@vigil/platform';
import { createObserveKey, startObserve, stopServer, type BenchObserve } from './server.ts';
import { CLIENTS } from './observe-workload.ts';
import { checked, percentile, printTable, rate, type Row } from './table.ts';

const INGEST_EVENTS = Number(process.env.BENCH_AUDIT_EVENTS ?? 200_000);
const PROOF_LEAVES = Number(process.env.BENCH_AUDIT_LEAVES ?? 1_000_000);
const EVENTS_PER_BATCH = 1000;
const ROUNDS = 4;
const PROOF_SAMPLES = 500;
const BUNDLE_EVENTS = 10_000;
const BUNDLE_RUNS = 7;

interface Server extends BenchObserve {
  key: string;
}

/** Observe from bench/observe-server.ts (BENCH_PROF=<dir>: profiled), with its first key. */
async function startServer(name: string, env: Record<string, string> = {}): Promise<Server> {
  const profiling = process.env.BENCH_PROF ? ['--cpu-prof', '--cpu-prof-dir=' + process.env.BENCH_PROF] : [];
  const nodeArgs = (port: number, dataDir: string) => [...profiling, '--import', 'tsx', 'bench/observe-server.ts', String(port), dataDir];
  const server = await startObserve(name, { nodeArgs, env });
  return { ...server, key: await createObserveKey(server.base) };
}

function batch(prefix: string, b: number, startMs: number): string {
  const events = [];
  for (let i = 0; i < EVENTS_PER_BATCH; i++) {
    const sessionId = `${prefix}-${b}-${i % 50}`;
    events.push({
      sessionId,
      agentId: `agent-${b % 7}`,
      eventType: i % 2 === 0 ? 'tool_call' : 'tool_response',
      timestamp: new Date(startMs + i).toISOString(),
      payload:
        i % 2 === 0
          ? { toolName: 'web_search', callId: `c${i}`, arguments: { query: `quarterly revenue ${i}` } }
          : { toolName: 'web_search', callId: `c${i - 1}`, result: { hits: 10 }, durationMs: 120 },
    });
  }
  return JSON.stringify({ events });
}

async function post(server: Server, path: string, body: string): Promise<unknown> {
  const response = await fetch(`${server.base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${server.key}` },
    body,
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${path}: ${response.status} ${text.slice(0, 300)}`);
  return text === '' ? null : JSON.parse(text);
}

async function send(server: Server, bodies: readonly string[]): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < bodies.length) await post(server, '/api/events', bodies[next++]!);
    }),
  );
  return (performance.now() - started) / 1000;
}

/** The same batches sent to two servers in alternating rounds (so both see the same database sizes): events/s of each. */
async function compareIngest(a: Server, b: Server): Promise<{ events: number; aRate: number; bRate: number }> {
  const batches = Math.max(ROUNDS, Math.round(INGEST_EVENTS / EVENTS_PER_BATCH));
  const now = Date.now() - 3_600_000;
  const bodies = Array.from({ length: batches }, (_, n) => batch('s', n, now + n));
  let aSeconds = 0;
  let bSeconds = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const slice = bodies.slice((round * batches) / ROUNDS, ((round + 1) * batches) / ROUNDS);
    // Alternate which goes first, so neither always meets the other's leftover I/O.
    if (round % 2 === 0) {
      bSeconds += await send(b, slice);
      aSeconds += await send(a, slice);
    } else {
      aSeconds += await send(a, slice);
      bSeconds += await send(b, slice);
    }
  }
  const events = batches * EVENTS_PER_BATCH;
  return { events, aRate: events / aSeconds, bRate: events / bSeconds };
}

async function ingestOnOff(rows: Row[]): Promise<void> {
  const on = await startServer('audit-on');
  const off = await startServer('audit-off', { BENCH_AUDIT_LEAVES: 'off' });
  try {
    const { events, aRate: onRate, bRate: offRate } = await compareIngest(on, off);
    rows.push([`ingest, audit log off (${events.toLocaleString('en-US')} events, 1,000-event batches, ${CLIENTS} clients)`, '', `${rate(offRate)} events/s`]);
    rows.push(['ingest, audit log on (same batches, alternating rounds)', '', `${rate(onRate)} events/s`]);
    const share = (100 * onRate) / offRate;
    rows.push(['ingest with the log, as a share of without', '≥ 90 %', checked(`${share.toFixed(1)} %`, share >= 90)]);
  } finally {
    await stopServer(on.child, on.dataDir, on.schema);
    await stopServer(off.child, off.dataDir, off.schema);
  }
}

async function headsOnOff(rows: Row[]): Promise<void> {
  const on = await startServer('audit-heads-on');
  const off = await startServer('audit-heads-off', { BENCH_AUDIT_HEADS: 'off' });
  try {
    const { events, aRate: onRate, bRate: offRate } = await compareIngest(on, off);
    rows.push([
      `ingest, log on, no session heads committed (${events.toLocaleString('en-US')} events, a checkpoint per 1,000, 50 new sessions each)`,
      '',
      `${rate(offRate)} events/s`,
    ]);
    rows.push(["ingest, each checkpoint committing the sessions' heads (same batches, alternating rounds)", '', `${rate(onRate)} events/s`]);
    const share = (100 * onRate) / offRate;
    rows.push(['ingest with the heads committed, as a share of without', '≥ 95 %', checked(`${share.toFixed(1)} %`, share >= 95)]);
  } finally {
    await stopServer(on.child, on.dataDir, on.schema);
    await stopServer(off.child, off.dataDir, off.schema);
  }
}

async function inclusionAtScale(rows: Row[]): Promise<void> {
  const server = await startServer('audit-proofs');
  try {
    const database = await openDatabase<AuditLogTables>(
      process.env.DATABASE_URL
        ? { kind: 'postgres', url: process.env.DATABASE_URL, schema: server.schema, poolMax: 2 }
        : { kind: 'sqlite', file: join(server.dataDir, 'observe.db'), synchronous: 'NORMAL' },
    );
    const loadStarted = performance.now();
    const chunk = 10_000;
    for (let start = 0; start < PROOF_LEAVES; start += chunk) {
      const leaves = Array.from({ length: Math.min(chunk, PROOF_LEAVES - start) }, (_, i) => {
        const n = start + i;
        return { itemId: `leaf-${n}`, scopeId: `s-${Math.floor(n / 100)}`, kind: 'event', data: Buffer.from(n.toString(16).padStart(64, '0'), 'hex') };
      });
      await database.db.transaction().execute((trx) => appendLeaves(trx, database.dialect, leaves));
    }
    const loadSeconds = (performance.now() - loadStarted) / 1000;
    await database.close();
    await post(server, '/api/audit/checkpoint', '');
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const timings: number[] = [];
    for (let i = 0; i < PROOF_SAMPLES; i++) {
      const leaf = Math.floor(random() * PROOF_LEAVES);
      const started = performance.now();
      const response = await fetch(`${server.base}/api/audit/inclusion?eventId=leaf-${leaf}`, { headers: { authorization: `Bearer ${server.key}` } });
      const body = (await response.json()) as { proof: string[] };
      timings.push(performance.now() - started);
      if (!response.ok || body.proof.length === 0) throw new Error(`inclusion of leaf ${leaf}: ${response.status}`);
    }
    timings.sort((a, b) => a - b);
    // The same server's floor for any authenticated GET, to tell the proof's cost from the HTTP stack's.
    const floor: number[] = [];
    for (let i = 0; i < PROOF_SAMPLES; i++) {
      const started = performance.now();
      const response = await fetch(`${server.base}/api/audit/checkpoint`, { headers: { authorization: `Bearer ${server.key}` } });
      await response.arrayBuffer();
      floor.push(performance.now() - started);
    }
    floor.sort((a, b) => a - b);
    rows.push([
      `audit log of ${PROOF_LEAVES.toLocaleString('en-US')} leaves appended in 10,000-leaf transactions`,
      '',
      `${Math.round(PROOF_LEAVES / loadSeconds).toLocaleString('en-US')} leaves/s`,
    ]);
    rows.push([
      `GET /api/audit/inclusion at ${PROOF_LEAVES.toLocaleString('en-US')} leaves, p50 / p95 (${PROOF_SAMPLES} random leaves)`,
      'p95 ≤ 5 ms',
      checked(`${percentile(timings, 50).toFixed(2)} / ${percentile(timings, 95).toFixed(2)} ms`, percentile(timings, 95) <= 5),
    ]);
    rows.push([
      'GET /api/audit/checkpoint on the same server (the floor of an authenticated GET), p50 / p95',
      '',
      `${percentile(floor, 50).toFixed(2)} / ${percentile(floor, 95).toFixed(2)} ms`,
    ]);
  } finally {
    await stopServer(server.child, server.dataDir, server.schema);
  }
}

async function bundleVerification(rows: Row[]): Promise<void> {
  const server = await startServer('audit-bundle');
  try {
    const now = Date.now() - 3_600_000;
    for (let b = 0; b < BUNDLE_EVENTS / EVENTS_PER_BATCH; b++) {
      // One session of 10,000 events, interleaved with others so its leaves are not one run.
      const events = JSON.parse(batch('other', b, now + b * EVENTS_PER_BATCH)) as { events: { sessionId: string }[] };
      for (const event of events.events) event.sessionId = 'bundle-session';
      await post(server, '/api/events', JSON.stringify(events));
      await post(server, '/api/events', batch('noise', b, now + b * EVENTS_PER_BATCH));
    }
    const response = await fetch(`${server.base}/api/audit/export?sessionId=bundle-session`, { headers: { authorization: `Bearer ${server.key}` } });
    const text = await response.text();
    if (!response.ok) throw new Error(`export: ${response.status} ${text.slice(0, 300)}`);
    // The server's background work after ingest (embeddings, checkpoints) would share the cores: it stops first.
    await stopServer(server.child, server.dataDir, server.schema);
    // Verified in a process of its own, as `vigil verify` runs: this one's heap holds the bench's earlier work.
    const file = join(tmpdir(), `vigil-bench-bundle-${process.pid}.json`);
    writeFileSync(file, text);
    let measured: { readMs: number; runs: number[] };
    try {
      const child = spawnSync(process.execPath, ['--import', 'tsx', 'bench/verify-bundle.ts', file, String(BUNDLE_RUNS)], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      if (child.status !== 0) throw new Error(`bench/verify-bundle.ts exited ${child.status}`);
      measured = JSON.parse(child.stdout) as { readMs: number; runs: number[] };
    } finally {
      rmSync(file, { force: true });
    }
    const { readMs, runs: timings } = measured;
    timings.sort((a, b) => a - b);
    rows.push([
      `verify a ${BUNDLE_EVENTS.toLocaleString('en-US')}-event session bundle (${(text.length / 1e6).toFixed(1)} MB; reading it: ${readMs.toFixed(0)} ms), median of ${BUNDLE_RUNS}`,
      '≤ 100 ms',
      checked(`${percentile(timings, 50).toFixed(1)} ms`, percentile(timings, 50) <= 100),
    ]);
  } finally {
    await stopServer(server.child, server.dataDir, server.schema);
  }
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  const parts = new Set((process.env.BENCH_AUDIT_PARTS ?? 'ingest,heads,inclusion,bundle').split(','));
  if (parts.has('ingest')) await ingestOnOff(rows);
  if (parts.has('heads')) await headsOnOff(rows);
  if (parts.has('inclusion')) await inclusionAtScale(rows);
  if (parts.has('bundle')) await bundleVerification(rows);
  printTable(rows);
}

await main();
