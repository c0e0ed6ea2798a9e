/** What the benchmark scripts need to run a real server in its own process. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

let compiled = false;

/**
 * The arguments after `node` that run `vigil <args>` as `npm start` runs it: the root
 * package.json's `start` script names the node flags (V8 heap settings) and the CLI entry, which
 * runs the compiled build. The build is brought up to date here first, so a server's memory and
 * start are measured without a build inside it.
 */
export function vigilCommand(...args: string[]): string[] {
  const start = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { start: string } }).scripts.start.split(/\s+/);
  const entry = start.findIndex((word) => word.endsWith('/vigil.mjs'));
  if (start[0] !== 'node' || entry === -1) throw new Error(`the start script is not node <flags> …/vigil.mjs: ${start.join(' ')}`);
  if (!compiled) {
    const built = spawnSync(process.execPath, [start[entry]!, '--version'], { stdio: ['ignore', 'ignore', 'inherit'] });
    if (built.status !== 0) throw new Error('the CLI could not be built');
    compiled = true;
  }
  return [...start.slice(1, entry + 1), ...args];
}

/**
 * How a bench server is profiled, from the environment: its node flags (before vigilCommand's) and
 * its stdout. BENCH_SERVER_PROFILE=<dir>: --cpu-prof into that folder; BENCH_SERVER_HEAP_PROFILE=<dir>:
 * every allocation sampled, freed ones included (bench/heap-sampling.mjs; read it with
 * `node bench/heap-top.mjs <file>`); BENCH_SERVER_TRACE_GC=<file>: the --trace-gc lines, which node
 * prints on stdout, go to that file.
 */
export function serverProfiling(): { nodeFlags: string[]; stdout: 'ignore' | number } {
  const { BENCH_SERVER_PROFILE: cpu, BENCH_SERVER_HEAP_PROFILE: heap, BENCH_SERVER_TRACE_GC: gc } = process.env;
  return {
    nodeFlags: [
      ...(cpu ? ['--cpu-prof', '--cpu-prof-dir', cpu] : []),
      ...(heap ? ['--import', new URL('./heap-sampling.mjs', import.meta.url).href] : []),
      ...(gc ? ['--trace-gc'] : []),
    ],
    stdout: gc ? openSync(gc, 'w') : 'ignore',
  };
}

/** Stops a bench server and removes its data (its SQLite directory or its schema on `databaseUrl`, default DATABASE_URL). */
export async function stopServer(child: ChildProcess, dataDir: string, schema: string, databaseUrl = process.env.DATABASE_URL): Promise<void> {
  if (child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
  rmSync(dataDir, { recursive: true, force: true });
  if (databaseUrl) {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    await client.query(`drop schema if exists "${schema}" cascade`);
    await client.end();
  }
}

/** A bench observe server: its process, address, data folder and PostgreSQL schema (what stopServer removes). */
export interface BenchObserve {
  child: ChildProcess;
  base: string;
  dataDir: string;
  schema: string;
}

export interface BenchObserveOptions {
  /** The node arguments that run the server on `port` with `dataDir` (default: `vigil observe`). */
  nodeArgs?: (port: number, dataDir: string) => string[];
  /** Variables added to the server's environment. */
  env?: Record<string, string>;
  /** What answers once it is up (default observe's `/api/health`). */
  healthPath?: string;
}

/**
 * Starts observe on a free port, its data in a new temporary folder and, on DATABASE_URL, in a
 * schema of its own (`name` tells both apart from other runs'); resolves once it answers.
 */
export async function startObserve(name: string, options: BenchObserveOptions = {}): Promise<BenchObserve> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const dataDir = mkdtempSync(join(tmpdir(), `vigil-bench-${name}-`));
  const schema = `bench_${name.replace(/-/g, '_')}_${process.pid}`;
  const nodeArgs = options.nodeArgs?.(port, dataDir) ?? ['packages/cli/bin/vigil.mjs', 'observe', '--port', String(port), '--data-dir', dataDir];
  const child = spawn(process.execPath, nodeArgs, {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', OBSERVE_DB_SCHEMA: schema, ...options.env },
  });
  try {
    await waitForHealth(base, child, options.healthPath);
  } catch (error) {
    await stopServer(child, dataDir, schema);
    throw error;
  }
  return { child, base, dataDir, schema };
}

/** Starts a gate the way startObserve starts observe (its schema in GATE_DB_SCHEMA), with `adminKey` installed. */
export function startGate(name: string, adminKey: string, env: Record<string, string> = {}): Promise<BenchObserve> {
  const schema = `bench_${name.replace(/-/g, '_')}_${process.pid}`;
  return startObserve(name, {
    nodeArgs: (port, dataDir) => ['packages/cli/bin/vigil.mjs', 'gate', '--port', String(port), '--data-dir', dataDir],
    env: { GATE_ADMIN_KEY: adminKey, GATE_DB_SCHEMA: schema, ...env },
    healthPath: '/health',
  });
}

/** Creates the first observe key of a fresh server (the first needs none) and returns its secret. */
export async function createObserveKey(base: string): Promise<string> {
  const response = await fetch(`${base}/api/keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench' }),
  });
  return ((await response.json()) as { key: string }).key;
}

/** Waits until the server at `base` answers GET `path` (fails when the process exits first). */
export async function waitForHealth(base: string, child: ChildProcess, path = '/api/health'): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${base}${path}`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('server did not start');
}

/**
 * Resident memory of a server process in MiB (VmRSS of /proc/<pid>/status; Linux only), or null
 * where /proc is not there.
 */
export function residentMegabytes(pid: number): number | null {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** CPU time (user + system) a process has used so far, in ms (/proc/<pid>/stat, 100 ticks per second), or null. */
export function processCpuMs(pid: number): number | null {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after "pid (comm) ".
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

/**
 * Waits until a process has been idle (under 2 % of a core over one second) after a load: its
 * background work (the reflect state job's first pass, WAL checkpoints) done, so that a read
 * measured next is the read's cost, not the load's tail. Returns the seconds waited (at most
 * `limitMs`), or null without /proc.
 */
export async function waitForIdle(pid: number, limitMs = 120_000): Promise<number | null> {
  const started = performance.now();
  let before = processCpuMs(pid);
  if (before === null) return null;
  while (performance.now() - started < limitMs) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const now = processCpuMs(pid);
    if (now === null) return null;
    if (now - before < 20) break;
    before = now;
  }
  return (performance.now() - started) / 1000;
}

/**
 * CPU time (user + system, ms) used so far by each process named `postgres` on this machine (a
 * local PostgreSQL's backends, writer and checkpointer), by pid; empty without /proc.
 */
export function postgresCpuByPid(): Map<number, number> {
  const cpu = new Map<number, number>();
  try {
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      let stat: string;
      try {
        stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      } catch {
        continue; // exited meanwhile
      }
      if (!stat.includes('(postgres)')) continue;
      const fields = stat.split(') ')[1]!.split(' ');
      cpu.set(Number(pid), (Number(fields[11]) + Number(fields[12])) * 10);
    }
  } catch {
    return cpu;
  }
  return cpu;
}

/** CPU time (ms) used so far by every process named `postgres` on this machine; null without /proc. */
export function postgresCpuMs(): number | null {
  const cpu = postgresCpuByPid();
  return cpu.size === 0 ? null : [...cpu.values()].reduce((sum, ms) => sum + ms, 0);
}

/**
 * The PostgreSQL backends serving process `pid`'s connections to `url`'s server on this machine:
 * its TCP sockets (from /proc/<pid>/fd) matched by local port to pg_stat_activity's client_port.
 * Their CPU is the database work of that process alone, whatever else the same server serves.
 */
export async function postgresBackendsOf(pid: number, url: string): Promise<number[]> {
  const inodes = new Set<string>();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const link = readlinkSync(`/proc/${pid}/fd/${fd}`);
        const inode = /^socket:\[(\d+)\]$/.exec(link)?.[1];
        if (inode) inodes.add(inode);
      } catch {
        continue; // closed meanwhile
      }
    }
  } catch {
    return [];
  }
  const ports = new Set<number>();
  for (const table of ['tcp', 'tcp6']) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/net/${table}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || !inodes.has(fields[9]!)) continue;
      ports.add(parseInt(fields[1]!.split(':')[1]!, 16));
    }
  }
  if (ports.size === 0) return [];
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('select pid from pg_stat_activity where client_port = any($1::int[])', [[...ports]]);
    return rows.map((row) => row.pid);
  } finally {
    await client.end();
  }
}

/**
 * The servers a part benchmarks when `npm run bench -- --url <observe> --key <key>` (and
 * `--gate-url <gate> --gate-key <key>`) points it at servers that are already running, anywhere:
 * the same workload then runs against them instead of against servers the bench starts.
 */
export interface RemoteTargets {
  observe: { base: string; key: string } | null;
  gate: { base: string; key: string } | null;
}

export function remoteTargets(argv: readonly string[] = process.argv.slice(2)): RemoteTargets {
  const value = (flag: string): string | undefined => {
    const i = argv.indexOf(flag);
    return i === -1 ? undefined : argv[i + 1];
  };
  const pair = (urlFlag: string, keyFlag: string): { base: string; key: string } | null => {
    const url = value(urlFlag);
    if (url === undefined) return null;
    const key = value(keyFlag);
    if (!key) throw new Error(`${urlFlag} needs ${keyFlag} <api key>`);
    return { base: url.replace(/\/+$/, ''), key };
  };
  return { observe: pair('--url', '--key'), gate: pair('--gate-url', '--gate-key') };
}

/** Whether any --url / --gate-url was given: parts that need a server of their own then do not run. */
export const remoteMode = (targets: RemoteTargets): boolean => targets.observe !== null || targets.gate !== null;

/** DELETE /api/subjects/:id of a bench server, timed: the seconds until the signed receipt was answered, and the receipt (a failure throws). */
export async function timedErasure<Receipt>(base: string, headers: Record<string, string>, subject: string): Promise<{ seconds: number; receipt: Receipt }> {
  const started = performance.now();
  const response = await fetch(`${base}/api/subjects/${encodeURIComponent(subject)}`, { method: 'DELETE', headers, body: JSON.stringify({ reason: 'bench' }) });
  const seconds = (performance.now() - started) / 1000;
  const receipt = (await response.json()) as Receipt;
  if (!response.ok) throw new Error(`DELETE /api/subjects: ${response.status} ${JSON.stringify(receipt).slice(0, 300)}`);
  return { seconds, receipt };
}
