/**
 * `npm run bench` (part): checkpoint lag under full ingest load on PostgreSQL with two observe
 * instances on one schema (issue 43: "checkpoint lag p99 ≤ 2 s under full load"). The lag of an
 * acknowledged batch is the time from its acknowledgement to the first signed checkpoint that
 * covers its last leaf, as GET /api/audit/checkpoint shows it: a poller reads the route every
 * POLL_MS and records when each tree size first appeared; after the load, each batch's leaf indices
 * are read from the schema and matched to the first checkpoint past them.
 *
 * CLIENTS clients post 100-event batches, alternating between the two instances, for
 * BENCH_LAG_SECONDS (default 20). PostgreSQL: DATABASE_URL, else BENCH_POSTGRES_URL (default the
 * test server); the row says so when none answers.
 */
import { generateKeyPairSync } from 'node:crypto';
import pg from 'pg';
import { postgresAnswers } from '@vigil/platform/test-services';
import { batchBody, CLIENTS, TIMESTAMP_TOKEN } from './observe-workload.ts';
import { createObserveKey, postgresCpuMs, processCpuMs, startObserve, stopServer, type BenchObserve } from './server.ts';
import { checked, percentile, printTable, rate, type Row } from './table.ts';

const SECONDS = Number(process.env.BENCH_LAG_SECONDS ?? 20);
const BATCH = 100;
const POLL_MS = 20;
const TARGET_P99_MS = 2000;
const LABEL = `checkpoint lag (ack → first signed checkpoint covering it), 2 observe instances on PostgreSQL, ${CLIENTS} clients at full rate`;

interface Acked {
  ids: string[];
  at: number;
}

async function main(): Promise<void> {
  const rows: Row[] = [];
  const url = process.env.DATABASE_URL ?? process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  if (!(await postgresAnswers(url))) {
    rows.push([`${LABEL}: p99`, '≤ 2,000 ms', `not measured: no PostgreSQL answers at ${url} (BENCH_POSTGRES_URL) ✗`]);
    printTable(rows);
    return;
  }
  const schema = `bench_checkpoint_lag_${process.pid}`;
  // One signing key for both, as docs/deploy.md asks of several instances.
  const signingKey = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const env = { DATABASE_URL: url, OBSERVE_DB_SCHEMA: schema, AUDIT_SIGNING_KEY: signingKey };
  const servers: BenchObserve[] = [];
  try {
    servers.push(await startObserve('checkpoint-lag-a', { env }));
    servers.push(await startObserve('checkpoint-lag-b', { env }));
    const key = await createObserveKey(servers[0]!.base);
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${key}` };

    // The poller: when each checkpoint size was first seen.
    const seen: { size: number; at: number }[] = [];
    let polling = true;
    const poller = (async () => {
      let k = 0;
      while (polling) {
        const base = servers[k++ % 2]!.base;
        const response = await fetch(`${base}/api/audit/checkpoint`, { headers });
        if (response.ok) {
          const { treeSize } = (await response.json()) as { treeSize: number };
          const at = performance.now();
          if (seen.length === 0 || treeSize > seen[seen.length - 1]!.size) seen.push({ size: treeSize, at });
        } else await response.arrayBuffer();
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    })();

    const pids = servers.map((server) => server.child.pid!);
    const cpuBefore = pids.map(processCpuMs);
    const databaseCpuBefore = postgresCpuMs();
    const acked: Acked[] = [];
    const bodies = Array.from({ length: 400 }, (_, s) => batchBody(`lag-session-${s}`, BATCH));
    const started = performance.now();
    const until = started + SECONDS * 1000;
    let next = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, c) => {
        while (performance.now() < until) {
          const k = next++;
          const body = bodies[k % bodies.length]!.replaceAll(TIMESTAMP_TOKEN, new Date().toISOString());
          const response = await fetch(`${servers[(c + k) % 2]!.base}/api/events`, { method: 'POST', headers, body });
          const text = await response.text();
          if (response.status !== 201) throw new Error(`ingest failed: ${response.status} ${text.slice(0, 300)}`);
          acked.push({ ids: (JSON.parse(text) as { events: { id: string }[] }).events.map((event) => event.id), at: performance.now() });
        }
      }),
    );
    const elapsed = (performance.now() - started) / 1000;
    const cpuAfter = pids.map(processCpuMs);
    const databaseCpuAfter = postgresCpuMs();

    // Each batch's last leaf, read from the schema.
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const lastLeaf = new Map<string, number>();
    try {
      const ids = acked.flatMap((batch) => batch.ids);
      for (let i = 0; i < ids.length; i += 10_000) {
        const { rows: leaves } = await client.query<{ item_id: string; idx: string }>(
          `select item_id, idx from "${schema}".audit_log_leaves where item_id = any($1)`,
          [ids.slice(i, i + 10_000)],
        );
        for (const leaf of leaves) lastLeaf.set(leaf.item_id, Number(leaf.idx));
      }
    } finally {
      await client.end();
    }
    const needed = acked.map((batch) => Math.max(...batch.ids.map((id) => lastLeaf.get(id) ?? Number.POSITIVE_INFINITY)));
    const highest = Math.max(...needed);
    // Until the checkpoints cover the last batch (at most 60 s more).
    const deadline = performance.now() + 60_000;
    while (Number.isFinite(highest) && (seen.at(-1)?.size ?? 0) <= highest && performance.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    polling = false;
    await poller;

    const lags = acked
      .map((batch, i) => {
        const covering = seen.find((checkpoint) => checkpoint.size > needed[i]!);
        return covering === undefined ? Number.POSITIVE_INFINITY : Math.max(0, covering.at - batch.at);
      })
      .sort((a, b) => a - b);
    const events = acked.length * BATCH;
    const p50 = percentile(lags, 50);
    const p99 = percentile(lags, 99);
    const ms = (value: number): string => (Number.isFinite(value) ? `${Math.round(value).toLocaleString('en-US')} ms` : 'never');
    rows.push([`${LABEL}: p50`, '', ms(p50)]);
    rows.push([`${LABEL}: p99`, '≤ 2,000 ms', checked(ms(p99), p99 <= TARGET_P99_MS)]);
    rows.push([
      'that load: events/s through both instances · checkpoints seen (by polling every 20 ms)',
      '',
      `${rate(events / elapsed)} events/s · ${seen.length}`,
    ]);
    if (cpuBefore.every((v) => v !== null) && cpuAfter.every((v) => v !== null) && databaseCpuBefore !== null && databaseCpuAfter !== null) {
      // A backend that exits during the load takes its CPU out of the sum: then there is no PostgreSQL figure.
      const per1k = (spent: number): string => (spent < 0 ? 'not measured' : `${(spent / (events / 1000)).toFixed(1)} ms`);
      rows.push([
        'CPU per 1,000 events in that load: observe A · observe B · every postgres process of this machine',
        '',
        `${per1k(cpuAfter[0]! - cpuBefore[0]!)} · ${per1k(cpuAfter[1]! - cpuBefore[1]!)} · ${per1k(databaseCpuAfter - databaseCpuBefore)}`,
      ]);
    }
  } finally {
    for (const server of servers.reverse()) await stopServer(server.child, server.dataDir, schema, url);
  }
  printTable(rows);
}

await main();
