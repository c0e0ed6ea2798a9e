/**
 * `npm run bench` part: an evidence pack (`vigil evidence`) of a period holding
 * BENCH_EVIDENCE_EVENTS events (default 1,000,000; the target size) on real services
 * (SQLite) and BENCH_EVIDENCE_REQUESTS gate requests (default 2,000: the oversight part), built and
 * then verified offline (`vigil verify evidence`), each as a real CLI process.
 * Targets (issue 40): build ≤ 60 s and verify ≤ 30 s for 1M events.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startLiveServices } from '@vigil/cli/testing';
import { batchBody, ingest } from './observe-workload.ts';
import { checked, printTable, rate, type Row } from './table.ts';

const EVENTS = Number(process.env.BENCH_EVIDENCE_EVENTS ?? 1_000_000);
const BATCH = 1000;
const REQUESTS = Number(process.env.BENCH_EVIDENCE_REQUESTS ?? 2000);
const bin = resolve(import.meta.dirname, '../packages/cli/bin/vigil.mjs');
const dir = mkdtempSync(join(tmpdir(), 'vigil-bench-evidence-'));
// A checkpoint every 10,000 events: 100 checkpoints (and 99 consistency proofs) in a 1M-event pack.
const services = await startLiveServices({ observeEnv: { AUDIT_CHECKPOINT_EVENTS: '10000' } });
try {
  const from = new Date(Date.now() - 60_000).toISOString();
  // Seeded as the 1M ingest bench seeds (observe-workload.ts): CLIENTS concurrent clients, one session a batch.
  const batches = Math.ceil(EVENTS / BATCH);
  const seeded = await ingest(services.observeUrl, services.observeKey, (k) => batchBody(`evidence-${k}`, BATCH), BATCH, batches, Date.now() - 30_000, 30_000);
  // Human oversight in the period: REQUESTS gate requests of 7 agents, each read back with its trail.
  for (let i = 0; i < REQUESTS; i++) {
    const response = await fetch(`${services.gateUrl}/api/requests`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${services.gateAdminKey}` },
      body: JSON.stringify({ action: 'refund', params: { amount: i }, context: { agentId: `agent-${i % 7}` } }),
    });
    if (response.status !== 201) throw new Error(`gate request: ${response.status} ${await response.text()}`);
  }
  await fetch(`${services.observeUrl}/api/audit/checkpoint`, { method: 'POST', headers: { authorization: `Bearer ${services.observeKey}` } });
  await fetch(`${services.gateUrl}/api/audit/checkpoint`, { method: 'POST', headers: { authorization: `Bearer ${services.gateAdminKey}` } });
  const to = new Date(Date.now() + 60_000).toISOString();
  const out = join(dir, 'pack.jsonl');
  const env = { ...process.env, VIGIL_API_KEY: services.observeKey, VIGIL_GATE_API_KEY: services.gateAdminKey };

  // The CLI runs as its own process while the services answer in this one (a blocking spawn would stall them).
  const run = (args: string[]) =>
    new Promise<{ ms: number; status: number | null; output: string }>((done) => {
      const started = performance.now();
      const proc = spawn(process.execPath, [bin, ...args], { env });
      let output = '';
      proc.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      proc.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      proc.on('close', (status) => done({ ms: performance.now() - started, status, output }));
    });
  const built = await run(['evidence', '--from', from, '--to', to, '--out', out, '--url', services.observeUrl, '--gate-url', services.gateUrl]);
  if (built.status !== 0) throw new Error(`vigil evidence: ${built.output}`);
  const key = (
    (await (await fetch(`${services.observeUrl}/api/audit/public-key`, { headers: { authorization: `Bearer ${services.observeKey}` } })).json()) as {
      publicKey: string;
    }
  ).publicKey;
  const verified = await run(['verify', 'evidence', out, '--public-key', key]);
  if (verified.status !== 0) throw new Error(`vigil verify evidence: ${verified.output}`);
  const scale = 1_000_000 / EVENTS;
  const rows: Row[] = [
    [
      `evidence pack of ${EVENTS.toLocaleString('en-US')} events, ${REQUESTS.toLocaleString('en-US')} gate requests: build (vigil evidence)`,
      '≤ 60 s for 1M',
      checked(`${(built.ms / 1000).toFixed(2)} s`, built.ms * scale <= 60_000),
    ],
    [`evidence pack: verify offline (vigil verify evidence)`, '≤ 30 s for 1M', checked(`${(verified.ms / 1000).toFixed(2)} s`, verified.ms * scale <= 30_000)],
    ['evidence pack size', '', `${(statSync(out).size / 1024).toFixed(0)} KiB`],
    ['(seeding: events ingested per second)', '', `${rate(seeded)}/s`],
  ];
  if (EVENTS !== 1_000_000) rows.push(['(scaled run: ✓/✗ judge the time × 1M / events)', '', `BENCH_EVIDENCE_EVENTS=${EVENTS}`]);
  printTable(rows);
} finally {
  await services.close();
  rmSync(dir, { recursive: true, force: true });
}
