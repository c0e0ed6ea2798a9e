/**
 * `npm run bench` (part): GET /api/analytics/agents when every event lies in the current hour
 * (issue 43: the main load spreads its events over 30 days and never sees this shape). The default
 * "last 24 h" range cuts the current hour at now; its rollup row holds exactly the part inside the
 * range, so the report must not grow with the events of that hour (analytics/aggregate.ts
 * rangeConditions). Observe runs as its own process (SQLite unless DATABASE_URL is set).
 *
 * BENCH_HOUR_EVENTS (default 1,000,000) events, 100 per batch, in BENCH_HOUR_SESSIONS (default
 * 10,000) sessions of seven agents, stamped from the start of the hour up to the start of the load.
 * A load that runs past the end of the hour says so in the row (its events then lie in a whole
 * hour of the range instead).
 */
import { HOUR_MS } from '@vigil/platform';
import { batchBody, ingest } from './observe-workload.ts';
import { createObserveKey, processCpuMs, startObserve, stopServer, waitForIdle } from './server.ts';
import { checked, percentile, printTable, rate, type Row } from './table.ts';

const EVENTS = Number(process.env.BENCH_HOUR_EVENTS ?? 1_000_000);
const SESSIONS = Number(process.env.BENCH_HOUR_SESSIONS ?? 10_000);
const BATCH = 100;
const SAMPLES = 1000;
/**
 * Requests sent before the samples: right after the load neither the client's HTTP stack nor the
 * route is warm yet (on this machine the first few hundred answers of any route, /api/health
 * included, run about twice as slow as later ones), and the samples measure the route, not that.
 */
const WARM_UP = 500;
const TARGET_P95_MS = 2;

const server = await startObserve('analytics-hour');
const rows: Row[] = [];
try {
  const key = await createObserveKey(server.base);
  const hourStart = Math.floor(Date.now() / HOUR_MS) * HOUR_MS;
  // Timestamps from the hour's start to now: none in the future, all in the hour the reads are in.
  const span = Math.max(1, Date.now() - hourStart);
  const batches = Math.ceil(EVENTS / BATCH);
  // The workload names the agent by the session id's length: ids of seven lengths, seven agents.
  const sessionBody = (k: number) => {
    const session = k % SESSIONS;
    return batchBody(`hour-${session}-`.padEnd(16 + (session % 7), 'x'), BATCH);
  };
  const ingestRate = await ingest(server.base, key, sessionBody, BATCH, batches, hourStart, span);
  const pid = server.child.pid ?? null;
  if (pid !== null) await waitForIdle(pid);
  const sameHour = Math.floor(Date.now() / HOUR_MS) * HOUR_MS === hourStart;

  const samples: number[] = [];
  const cpuStart = pid === null ? null : processCpuMs(pid);
  for (let i = 0; i < SAMPLES + WARM_UP; i++) {
    const t0 = performance.now();
    const response = await fetch(`${server.base}/api/analytics/agents`, { headers: { authorization: `Bearer ${key}` } });
    if (!response.ok) throw new Error(`/api/analytics/agents: ${response.status}`);
    const body = (await response.json()) as { agents: { totalEvents: number }[] };
    if (i === 0 && body.agents.reduce((sum, a) => sum + a.totalEvents, 0) < batches * BATCH)
      throw new Error('the report does not count every event of the load');
    if (i >= WARM_UP) samples.push(performance.now() - t0);
  }
  const cpuEnd = pid === null ? null : processCpuMs(pid);
  samples.sort((a, b) => a - b);
  const p95 = percentile(samples, 95);
  const cpu = cpuStart !== null && cpuEnd !== null ? ` · server CPU ${((cpuEnd - cpuStart) / (SAMPLES + WARM_UP)).toFixed(2)} ms/request` : '';
  const shape = sameHour ? 'every event in the current hour' : 'the hour ended during the load: its events lie in a whole hour of the range';
  rows.push([
    `load: ${(batches * BATCH).toLocaleString('en-US')} events in ${SESSIONS.toLocaleString('en-US')} sessions (${shape})`,
    '',
    `${rate(ingestRate)} events/s`,
  ]);
  rows.push([
    `GET /api/analytics/agents, last 24 h (${SAMPLES} samples)`,
    `p95 ≤ ${TARGET_P95_MS} ms`,
    checked(`p50 ${percentile(samples, 50).toFixed(2)} ms · p95 ${p95.toFixed(2)} ms${cpu}`, p95 <= TARGET_P95_MS),
  ]);
} finally {
  await stopServer(server.child, server.dataDir, server.schema);
}
printTable(rows);
