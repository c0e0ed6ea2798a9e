/**
 * `npm run bench` (last part): what `npm start` (`vigil up`: observe and the gate in one process,
 * SQLite) holds in memory. VmRSS of the process right after both services answer, and again after
 * the ingest workload of bench/ingest-and-query.ts (100-event batches, 8 clients,
 * BENCH_MEMORY_EVENTS events, default 200,000) once the embedding queue has drained.
 * Targets: ≤ 200 MB after start, and ≤ 1.5 × that after the ingest.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { batchBody, ingest } from './observe-workload.ts';
import { freePort, residentMegabytes, waitForHealth } from './server.ts';
import { checked, printTable, type Row } from './table.ts';

const EVENTS = Number(process.env.BENCH_MEMORY_EVENTS ?? 200_000);

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vigil-bench-up-'));
  const [observePort, gatePort] = [await freePort(), await freePort()];
  const observe = `http://127.0.0.1:${observePort}`;
  // What `npm start` runs once its build step is done, with its defaults (SQLite).
  const { DATABASE_URL: _postgres, ...env } = process.env;
  const child = spawn(process.execPath, ['packages/cli/bin/vigil.mjs', 'up', '--data-dir', dataDir], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', OBSERVE_PORT: String(observePort), GATE_PORT: String(gatePort) },
  });
  const rows: Row[] = [];
  try {
    await waitForHealth(observe, child);
    await waitForHealth(`http://127.0.0.1:${gatePort}`, child, '/health');
    const afterStart = residentMegabytes(child.pid!);
    if (afterStart === null) throw new Error('no /proc/<pid>/status here: the memory part needs Linux');
    rows.push(['`npm start` (vigil up) RSS after start', '≤ 200 MB', checked(`${afterStart.toFixed(0)} MB`, afterStart <= 200)]);

    const keyResponse = await fetch(`${observe}/api/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'bench' }),
    });
    const { key } = (await keyResponse.json()) as { key: string };
    const bodies = Array.from({ length: 400 }, (_, s) => batchBody(`bench-session-${s}`, 100));
    const batches = Math.max(1, Math.round(EVENTS / 100));
    const now = Date.now();
    await ingest(observe, key, bodies, 100, batches, now - 86_400_000, 86_400_000);
    for (;;) {
      const status = (await (await fetch(`${observe}/api/recall/status`, { headers: { authorization: `Bearer ${key}` } })).json()) as {
        queue: { depth: number };
      };
      if (status.queue.depth === 0) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    const afterIngest = residentMegabytes(child.pid!)!;
    rows.push([
      `\`npm start\` RSS after the ingest bench (${(batches * 100).toLocaleString('en-US')} events, embeddings drained)`,
      `≤ 1.5 × after start (${(1.5 * afterStart).toFixed(0)} MB)`,
      checked(`${afterIngest.toFixed(0)} MB (${(afterIngest / afterStart).toFixed(2)} ×)`, afterIngest <= 1.5 * afterStart),
    ]);
  } finally {
    // No PostgreSQL schema to drop: the part runs on SQLite whatever DATABASE_URL says.
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
    rmSync(dataDir, { recursive: true, force: true });
  }
  printTable(rows);
}

await main();
