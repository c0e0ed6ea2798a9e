/**
 * `npm run bench` (part): several observe instances writing to one PostgreSQL (issue 43 part 5).
 * For 1, 2 and 4 instances on one schema (the same signing key, as docs/deploy.md asks), CLIENTS
 * concurrent clients per instance send 100-event batches, each instance's clients to sessions of
 * their own (a load balancer spreads agents, and an agent's batches are its sessions'); then the
 * same with every instance's clients writing the same sessions, the worst case for the session
 * rows' locks; then four instances sent 1,000-event batches, the larger transactions a broker's
 * consumer could write (what a broker would buy, measured before one is built). Printed per run:
 * events/s, CPU per 1,000 events of all observe processes and of the PostgreSQL backends serving
 * them, and how often a backend of the run waited on a lock (sampled from pg_stat_activity every
 * 20 ms). docs/scale.md turns these into the capacity model.
 *
 * BENCH_MULTI_EVENTS (default 100,000) events per run; BENCH_POSTGRES_URL (default the test
 * database); BENCH_MULTI_WAITS=1 also prints what the waiting backends waited on, by statement.
 * Every instance runs as `npm start` runs it, with the embedder and full text on.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { postgresAnswers } from '@vigil/platform/test-services';
import { batchBody, CLIENTS, post, TIMESTAMP_TOKEN } from './observe-workload.ts';
import { createObserveKey, freePort, postgresBackendsOf, postgresCpuByPid, processCpuMs, vigilCommand, waitForHealth } from './server.ts';
import { printTable, rate, type Row } from './table.ts';

const URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const EVENTS = Number(process.env.BENCH_MULTI_EVENTS ?? 100_000);
const BATCH = 100;
/** The batches a consumer of a broker (NATS JetStream, say) could gather before writing: measured before any broker is built. */
const BIG_BATCH = 1000;
const SESSIONS_PER_INSTANCE = 200;
const SAMPLE_MS = 20;
// The run's connections name themselves, so that the sampler counts them alone (tests may share the database).
const APPLICATION = `vigil-bench-multi-${process.pid}`;
const runUrl = `${URL}${URL.includes('?') ? '&' : '?'}application_name=${APPLICATION}`;

interface Instance {
  child: ChildProcess;
  base: string;
  dataDir: string;
}

interface Run {
  perSecond: number;
  observeMsPer1k: number;
  postgresMsPer1k: number;
  /** Of the sampled active backends of the run, the share waiting on a heavyweight lock, and on any lock (LWLocks too). */
  lockWaits: number;
  anyWaits: number;
}

async function startInstances(count: number, schema: string, signingKey: string): Promise<Instance[]> {
  const instances: Instance[] = [];
  const start = async (): Promise<Instance> => {
    const port = await freePort();
    const dataDir = mkdtempSync(join(tmpdir(), 'vigil-bench-multi-'));
    const child = spawn(process.execPath, vigilCommand('observe', '--port', String(port), '--data-dir', dataDir), {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', DATABASE_URL: runUrl, OBSERVE_DB_SCHEMA: schema, AUDIT_SIGNING_KEY: signingKey },
    });
    const instance = { child, base: `http://127.0.0.1:${port}`, dataDir };
    instances.push(instance);
    await waitForHealth(instance.base, child);
    return instance;
  };
  // The first migrates the schema; the others start on it together.
  await start();
  await Promise.all(Array.from({ length: count - 1 }, start));
  return instances;
}

async function stopInstances(instances: readonly Instance[], schema: string): Promise<void> {
  await Promise.all(
    instances.map(async ({ child, dataDir }) => {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((resolve) => child.once('exit', resolve));
      }
      rmSync(dataDir, { recursive: true, force: true });
    }),
  );
  const client = new pg.Client({ connectionString: URL });
  await client.connect();
  await client.query(`drop schema if exists "${schema}" cascade`);
  await client.end();
}

/** Samples the run's backends (by their application name) until `stop` resolves. */
async function sampleWaits(stop: Promise<unknown>): Promise<{ lock: number; any: number }> {
  const client = new pg.Client({ connectionString: URL });
  await client.connect();
  let active = 0;
  let lock = 0;
  let any = 0;
  let done = false;
  void stop.finally(() => (done = true));
  while (!done) {
    const { rows } = await client.query<{ wait_event_type: string | null; wait_event: string | null; query: string }>(
      `select wait_event_type, wait_event, left(query, 60) as query from pg_stat_activity where application_name = $1 and state = 'active'`,
      [APPLICATION],
    );
    for (const row of rows) {
      active += 1;
      if (row.wait_event_type === 'Lock') lock += 1;
      if (process.env.BENCH_MULTI_WAITS)
        waitsSeen.set(
          `${row.wait_event_type}/${row.wait_event}: ${row.query}`,
          (waitsSeen.get(`${row.wait_event_type}/${row.wait_event}: ${row.query}`) ?? 0) + 1,
        );
      if (row.wait_event_type === 'Lock' || row.wait_event_type === 'LWLock') any += 1;
    }
    await new Promise((resolve) => setTimeout(resolve, SAMPLE_MS));
  }
  await client.end();
  return { lock: active === 0 ? 0 : lock / active, any: active === 0 ? 0 : any / active };
}

async function run(count: number, sharedSessions: boolean, batch: number, signingKey: string): Promise<Run> {
  const schema = `bench_multi_${count}_${process.pid}`;
  const instances = await startInstances(count, schema, signingKey);
  try {
    const key = await createObserveKey(instances[0]!.base);
    const bodies = instances.map((_, i) =>
      Array.from({ length: SESSIONS_PER_INSTANCE }, (_, s) => batchBody(`multi-${sharedSessions ? 0 : i}-${s}`.padEnd(16 + (s % 7), 'x'), batch)),
    );
    // Warm-up: each instance's keys, statements and JIT.
    await Promise.all(instances.map((instance, i) => post(instance.base, key, bodies[i]![0]!.replaceAll(TIMESTAMP_TOKEN, new Date().toISOString()))));
    const batches = Math.ceil(EVENTS / batch);
    let next = 0;
    const pids = instances.map((instance) => instance.child.pid!);
    const observeCpu = () => pids.reduce((sum, pid) => sum + (processCpuMs(pid) ?? 0), 0);
    const cpuBefore = observeCpu();
    const databaseBefore = postgresCpuByPid();
    const started = performance.now();
    const load = Promise.all(
      instances.flatMap((instance, i) =>
        Array.from({ length: CLIENTS }, async (_, c) => {
          // Client c writes sessions c, c + CLIENTS, …: a session's batches come one after another, as an agent sends them.
          for (let sent = 0; next < batches; sent += 1) {
            next += 1;
            const body = bodies[i]![(c + sent * CLIENTS) % SESSIONS_PER_INSTANCE]!;
            await post(instance.base, key, body.replaceAll(TIMESTAMP_TOKEN, new Date().toISOString()));
          }
        }),
      ),
    );
    const waits = await sampleWaits(load);
    await load;
    const seconds = (performance.now() - started) / 1000;
    // The run's own database work: the backends of the instances' connections (the server may serve others too).
    const databaseAfter = postgresCpuByPid();
    const backends = (await Promise.all(pids.map((pid) => postgresBackendsOf(pid, URL)))).flat();
    const databaseMs = backends.reduce((sum, backend) => sum + (databaseAfter.get(backend) ?? 0) - (databaseBefore.get(backend) ?? 0), 0);
    const events = batches * batch;
    return {
      perSecond: events / seconds,
      observeMsPer1k: (observeCpu() - cpuBefore) / (events / 1000),
      postgresMsPer1k: databaseMs / (events / 1000),
      lockWaits: waits.lock,
      anyWaits: waits.any,
    };
  } finally {
    await stopInstances(instances, schema);
  }
}

const waitsSeen = new Map<string, number>();
const rows: Row[] = [];
const label = (count: number, shared: boolean, batch: number) =>
  `${count} observe instance${count === 1 ? '' : 's'} on one PostgreSQL, ${CLIENTS} clients each, ${batch}-event batches${shared ? ', all writing the same sessions' : ''}${batch === BIG_BATCH ? " (what a broker's consumer would write)" : ''}`;
if (!(await postgresAnswers(URL))) {
  rows.push([label(1, false, BATCH), '', `not measured: no PostgreSQL answers at ${URL} (BENCH_POSTGRES_URL) ✗`]);
} else {
  const signingKey = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const percent = (share: number) => `${(100 * share).toFixed(1)} %`;
  for (const [count, shared, batch] of [
    [1, false, BATCH],
    [2, false, BATCH],
    [4, false, BATCH],
    [4, true, BATCH],
    [4, false, BIG_BATCH],
  ] as const) {
    const result = await run(count, shared, batch, signingKey);
    rows.push([
      label(count, shared, batch),
      '',
      `${rate(result.perSecond)} events/s · CPU per 1,000 events: observe ${result.observeMsPer1k.toFixed(1)} ms, PostgreSQL ${result.postgresMsPer1k.toFixed(1)} ms · backends waiting on a lock ${percent(result.lockWaits)} (any lock, LWLocks too: ${percent(result.anyWaits)})`,
    ]);
  }
}
printTable(rows);
if (process.env.BENCH_MULTI_WAITS) console.log([...waitsSeen].sort((a, b) => b[1] - a[1]).slice(0, 15));
