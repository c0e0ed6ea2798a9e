/**
 * `npm run bench` (last part): how fast the CLI starts and what `npm start` holds in memory.
 *
 * 1. `vigil --help` and `vigil verify --help`, each a whole process: its CPU time (user + system,
 *    steady on a shared machine; checked against the target) and wall time, over BENCH_CLI_RUNS
 *    (default 9) runs after the compiled build is brought up to date, beside bare `node -e 0`.
 * 2. Each service alone (`vigil observe`, `vigil gate`, SQLite, the start script's node flags):
 *    VmRSS once it answers its health check, BENCH_SERVICE_STARTS (default 5) starts each,
 *    alternating; the median is checked against the target, the range printed beside it.
 * 3. `npm start` as its script runs it (`vigil up`: observe and the gate in one process, SQLite,
 *    the compiled build, its node flags): VmRSS right after both services answer; then after the
 *    ingest workload of bench/ingest-and-query.ts (100-event batches, 8 clients,
 *    BENCH_MEMORY_EVENTS events, default 200,000) once the embedding queue has drained, followed by
 *    the gate workload of bench/gate.ts (its server part, BENCH_GATE_REQUESTS POSTs and twice as
 *    many GETs) against the same process.
 * Targets: the CLI under 300 ms (issue 22); one service ≤ 90 MiB after start (issue 22); `npm start`
 * ≤ 200 MiB after start (issue 21), ≤ 300 MiB after the ingest workload (issue 21: 1.5 × its
 * after-start target, not × the measured start, whose ratio is printed beside) and ≤ 250 MiB after
 * both workloads (issue 22; the binding one there, issue 21's 300 being looser).
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { batchBody, ingest } from './observe-workload.ts';
import { createObserveKey, freePort, processCpuMs, residentMegabytes, vigilCommand, waitForHealth } from './server.ts';
import { checked, printTable, type Row } from './table.ts';

const EVENTS = Number(process.env.BENCH_MEMORY_EVENTS ?? 200_000);
const CLI_RUNS = Number(process.env.BENCH_CLI_RUNS ?? 9);
const SERVICE_STARTS = Number(process.env.BENCH_SERVICE_STARTS ?? 5);
/** `npm start`'s RSS targets: issue 21's after start (after the ingest bench: 1.5 × it), issue 22's after both workloads. */
const ISSUE_21_AFTER_START_MB = 200;
const AFTER_BOTH_MB = 250;

/** CPU time (user + system) of this process's finished children so far, in ms (/proc/self/stat, 100 ticks per second). */
function childrenCpuMs(): number {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  // cutime and cstime are fields 16 and 17 of the line, 14 and 15 after "pid (comm) ".
  return (Number(fields[13]) + Number(fields[14])) * 10;
}

/** `node <args>` run CLI_RUNS times: mean CPU ms per run, median and fastest wall ms. */
function processStart(args: string[]): { cpu: number; median: number; min: number } {
  const times: number[] = [];
  const cpuBefore = childrenCpuMs();
  for (let i = 0; i < CLI_RUNS; i++) {
    const started = performance.now();
    const { status } = spawnSync(process.execPath, args, { stdio: 'ignore' });
    times.push(performance.now() - started);
    if (status !== 0) throw new Error(`node ${args.join(' ')} exited ${status}`);
  }
  times.sort((a, b) => a - b);
  return { cpu: (childrenCpuMs() - cpuBefore) / CLI_RUNS, median: times[Math.floor(times.length / 2)]!, min: times[0]! };
}

const startFigures = ({ cpu, median, min }: { cpu: number; median: number; min: number }): string =>
  `CPU ${cpu.toFixed(0)} ms · wall median ${median.toFixed(0)} ms (fastest ${min.toFixed(0)} ms)`;

/** VmRSS of `vigil <service>` on SQLite once its health check answers, in MiB; the process is stopped after. */
async function serviceAfterStart(service: 'observe' | 'gate'): Promise<number> {
  const dataDir = mkdtempSync(join(tmpdir(), `vigil-bench-${service}-`));
  const port = await freePort();
  const { DATABASE_URL: _postgres, ...env } = process.env;
  const child = spawn(process.execPath, vigilCommand(service, '--data-dir', dataDir), {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', OBSERVE_PORT: String(port), GATE_PORT: String(port), GATE_ADMIN_KEY: randomBytes(24).toString('hex') },
  });
  try {
    await waitForHealth(`http://127.0.0.1:${port}`, child, service === 'gate' ? '/health' : '/api/health');
    const resident = residentMegabytes(child.pid!);
    if (resident === null) throw new Error('no /proc/<pid>/status here: the memory part needs Linux');
    return resident;
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  for (const args of [['--help'], ['verify', '--help']]) {
    const figures = processStart(vigilCommand(...args));
    rows.push([`\`vigil ${args.join(' ')}\`, whole process (${CLI_RUNS} runs)`, '< 300 ms', checked(startFigures(figures), figures.cpu < 300)]);
  }
  rows.push([`\`node -e 0\`: Node's own start here (${CLI_RUNS} runs)`, '', startFigures(processStart(['-e', '0']))]);

  const starts: Record<'observe' | 'gate', number[]> = { observe: [], gate: [] };
  for (let i = 0; i < SERVICE_STARTS; i++) for (const service of ['observe', 'gate'] as const) starts[service].push(await serviceAfterStart(service));
  for (const service of ['observe', 'gate'] as const) {
    const sorted = starts[service].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)]!;
    const figures = `${median.toFixed(0)} MiB median (${sorted[0]!.toFixed(0)}–${sorted.at(-1)!.toFixed(0)})`;
    rows.push([
      `\`vigil ${service}\` alone (compiled, SQLite) RSS after start, ${SERVICE_STARTS} starts`,
      '≤ 90 MiB (issue 22)',
      checked(figures, median <= 90),
    ]);
  }

  const dataDir = mkdtempSync(join(tmpdir(), 'vigil-bench-up-'));
  const [observePort, gatePort] = [await freePort(), await freePort()];
  const observe = `http://127.0.0.1:${observePort}`;
  const gate = `http://127.0.0.1:${gatePort}`;
  const gateKey = `bench-${randomBytes(16).toString('hex')}`;
  // What `npm start` runs once its build step is done, with its defaults (SQLite).
  const { DATABASE_URL: _postgres, ...env } = process.env;
  const child = spawn(process.execPath, vigilCommand('up', '--data-dir', dataDir), {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', OBSERVE_PORT: String(observePort), GATE_PORT: String(gatePort), GATE_ADMIN_KEY: gateKey },
  });
  try {
    await waitForHealth(observe, child);
    await waitForHealth(gate, child, '/health');
    const afterStart = residentMegabytes(child.pid!);
    if (afterStart === null) throw new Error('no /proc/<pid>/status here: the memory part needs Linux');
    rows.push([
      '`npm start` (vigil up, compiled) RSS after start',
      `≤ ${ISSUE_21_AFTER_START_MB} MiB (issue 21)`,
      checked(`${afterStart.toFixed(0)} MiB`, afterStart <= ISSUE_21_AFTER_START_MB),
    ]);

    const key = await createObserveKey(observe);
    const bodies = Array.from({ length: 400 }, (_, s) => batchBody(`bench-session-${s}`, 100));
    const batches = Math.max(1, Math.round(EVENTS / 100));
    const now = Date.now();
    const cpuBeforeIngest = processCpuMs(child.pid!)!;
    await ingest(observe, key, bodies, 100, batches, now - 86_400_000, 86_400_000);
    for (;;) {
      const status = (await (await fetch(`${observe}/api/recall/status`, { headers: { authorization: `Bearer ${key}` } })).json()) as {
        queue: { depth: number };
      };
      if (status.queue.depth === 0) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    const afterIngest = residentMegabytes(child.pid!)!;
    const cpuAfterIngest = processCpuMs(child.pid!)!;
    // The gate part's server workload (20 policies, POST and GET /api/requests), aimed at this process.
    const gateLoad = spawnSync(process.execPath, ['--import', 'tsx', 'bench/gate.ts', '--gate-url', gate, '--gate-key', gateKey], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    if (gateLoad.status !== 0) throw new Error(`the gate workload failed (exit ${gateLoad.status})`);
    const afterBoth = residentMegabytes(child.pid!)!;
    const gateCpuMs = processCpuMs(child.pid!)! - cpuAfterIngest;
    rows.push([
      `\`npm start\` RSS after the ingest bench (${(batches * 100).toLocaleString('en-US')} events, embeddings drained)`,
      `≤ ${1.5 * ISSUE_21_AFTER_START_MB} MiB (issue 21: 1.5 × its ${ISSUE_21_AFTER_START_MB} MB after-start target)`,
      checked(`${afterIngest.toFixed(0)} MiB (${(afterIngest / afterStart).toFixed(2)} × after start)`, afterIngest <= 1.5 * ISSUE_21_AFTER_START_MB),
    ]);
    rows.push([
      '`npm start` RSS after the ingest and gate benches',
      `≤ ${AFTER_BOTH_MB} MiB (issue 22)`,
      checked(`${afterBoth.toFixed(0)} MiB (${(afterBoth / afterStart).toFixed(2)} × after start)`, afterBoth <= AFTER_BOTH_MB),
    ]);
    // What the memory settings cost in CPU, the steadier measure on a shared machine (the heap's growth factor sets how often V8 collects).
    rows.push([
      '`npm start` process CPU over the workloads',
      '',
      `ingest ${(((cpuAfterIngest - cpuBeforeIngest) / (batches * 100)) * 1000).toFixed(0)} ms per 1,000 events (embeddings included) · gate workload ${(gateCpuMs / 1000).toFixed(1)} s`,
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
