/**
 * `npm run bench`: starts the real observe server (separate process, SQLite unless DATABASE_URL is
 * set), measures ingest throughput and query latency, and prints a table.
 *
 * BENCH_EVENTS (default 1,000,000) sets how many events are loaded before the query measurements.
 * The batches are spread evenly over the last 30 days (every event of a batch carries the batch's
 * timestamp), so the analytics measurements see a month of history.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

const TOTAL_EVENTS = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const CLIENTS = 8;
const QUERY_SAMPLES = 300;
const TIMELINE_EVENTS = 2000;
const SPAN_MS = 30 * 86_400_000;
const ANALYTICS: [string, string][] = [
  ['/api/analytics', '/api/analytics'],
  ['/api/analytics?granularity=day', '/api/analytics?granularity=day'],
  ['/api/analytics/llm', '/api/analytics/llm'],
  ['/api/analytics/costs', '/api/analytics/costs'],
  ['/api/analytics/agents', '/api/analytics/agents'],
  ['/api/analytics/tools', '/api/analytics/tools'],
];
const TIMESTAMP_TOKEN = '__BENCH_TS__';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

async function waitForHealth(base: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${base}/api/health`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('server did not start');
}

const agentOf = (sessionId: string): string => `agent-${sessionId.length % 7}`;

function event(sessionId: string, i: number): object {
  const agentId = agentOf(sessionId);
  switch (i % 4) {
    case 0:
      return { sessionId, agentId, eventType: 'tool_call', payload: { toolName: 'web_search', callId: `c${i}`, arguments: { query: `quarterly revenue report ${i}`, maxResults: 10 } } };
    case 1:
      return { sessionId, agentId, eventType: 'tool_response', payload: { toolName: 'web_search', callId: `c${i - 1}`, result: { hits: 10, top: 'https://example.com/report' }, durationMs: 120 + (i % 50) } };
    case 2:
      return { sessionId, agentId, eventType: 'llm_call', payload: { callId: `l${i}`, provider: 'openai', model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Summarise the quarterly revenue report in three bullet points.' }] } };
    default:
      return {
        sessionId,
        agentId,
        eventType: 'llm_response',
        severity: i % 40 === 3 ? 'error' : 'info',
        payload: { callId: `l${i - 1}`, provider: 'openai', model: 'gpt-4o-mini', completion: 'Revenue grew 12% on cloud services.', finishReason: 'stop', usage: { inputTokens: 420, outputTokens: 96 }, costUsd: 0.00012, latencyMs: 850 },
      };
  }
}

function batchBody(sessionId: string, size: number, timestamp = TIMESTAMP_TOKEN): string {
  return JSON.stringify({ events: Array.from({ length: size }, (_, i) => ({ ...event(sessionId, i), timestamp })) });
}

async function post(base: string, key: string, body: string): Promise<void> {
  const response = await fetch(`${base}/api/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body,
  });
  if (response.status !== 201) throw new Error(`ingest failed: ${response.status} ${await response.text()}`);
  await response.arrayBuffer();
}

/**
 * Sends `batches` pre-built bodies from CLIENTS concurrent clients, batch k stamped at the k-th
 * step of [start, start + span); returns events per second.
 */
async function ingest(base: string, key: string, bodies: string[], batchSize: number, batches: number, start: number, span: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (next < batches) {
        const k = next++;
        const timestamp = new Date(start + Math.floor((k * span) / batches)).toISOString();
        await post(base, key, bodies[k % bodies.length]!.replaceAll(TIMESTAMP_TOKEN, timestamp));
      }
    }),
  );
  return (batches * batchSize) / ((performance.now() - started) / 1000);
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function latency(base: string, key: string, path: string): Promise<{ p50: number; p95: number }> {
  const samples: number[] = [];
  for (let i = 0; i < QUERY_SAMPLES + 20; i++) {
    const started = performance.now();
    const response = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } });
    if (!response.ok) throw new Error(`${path}: ${response.status}`);
    await response.arrayBuffer();
    if (i >= 20) samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), p95: percentile(samples, 95) };
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'vigil-bench-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const schema = `bench_${process.pid}`;
  const child = spawn(process.execPath, [...(process.env.BENCH_SERVER_PROFILE ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_SERVER_PROFILE] : []), 'packages/cli/bin/vigil.mjs', 'observe', '--port', String(port), '--data-dir', dataDir], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', OBSERVE_DB_SCHEMA: schema },
  });
  const rows: [string, string][] = [];
  try {
    await waitForHealth(base, child);
    const keyResponse = await fetch(`${base}/api/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bench' }) });
    const { key } = (await keyResponse.json()) as { key: string };
    const storage = process.env.DATABASE_URL ? 'PostgreSQL' : 'SQLite';

    const small = Array.from({ length: 400 }, (_, s) => batchBody(`bench-session-${s}`, 100));
    const smallBatches = Math.min(2000, Math.floor(TOTAL_EVENTS / 2 / 100));
    const now = Date.now();
    // The first part of the load covers days 30 to 15 ago, the second the last 15 days.
    const smallRate = await ingest(base, key, small, 100, smallBatches, now - SPAN_MS, SPAN_MS / 2);
    rows.push([`ingest, 100-event batches, ${CLIENTS} clients (${storage})`, `${Math.round(smallRate).toLocaleString('en-US')} events/s`]);

    const large = Array.from({ length: 100 }, (_, s) => batchBody(`bench-large-${s}`, 1000));
    const loaded = smallBatches * 100;
    const largeBatches = Math.max(1, Math.floor((TOTAL_EVENTS - loaded - TIMELINE_EVENTS) / 1000));
    const largeRate = await ingest(base, key, large, 1000, largeBatches, now - SPAN_MS / 2, SPAN_MS / 2 - 60_000);
    rows.push([`ingest, 1000-event batches, ${CLIENTS} clients (${storage})`, `${Math.round(largeRate).toLocaleString('en-US')} events/s`]);

    const timelineAt = new Date(now).toISOString();
    await post(base, key, batchBody('bench-timeline', 1000, timelineAt));
    await post(base, key, batchBody('bench-timeline', 1000, timelineAt));
    const stats = (await (await fetch(`${base}/api/stats`, { headers: { authorization: `Bearer ${key}` } })).json()) as { totalEvents: number; storageSizeBytes: number };
    rows.push(['events stored before queries', stats.totalEvents.toLocaleString('en-US')]);
    rows.push(['database size', `${(stats.storageSizeBytes / 1024 / 1024).toFixed(0)} MiB`]);

    for (const [label, path] of [
      ['GET /api/events?limit=50', '/api/events?limit=50'],
      ['GET /api/events?sessionId=…&limit=50', '/api/events?sessionId=bench-session-7&limit=50'],
      ['GET /api/events?eventType=llm_response&limit=50', '/api/events?eventType=llm_response&limit=50'],
      [`GET /api/sessions/:id/timeline (${TIMELINE_EVENTS} events)`, '/api/sessions/bench-timeline/timeline'],
      ...ANALYTICS.flatMap(([name, path]) => [
        [`GET ${name}, last 24 h`, path] as const,
        [`GET ${name}, last 30 days`, `${path}${path.includes('?') ? '&' : '?'}from=${new Date(now - SPAN_MS).toISOString()}`] as const,
      ]),
      ['GET /api/agents/:id/health (7-day window)', `/api/agents/${agentOf('bench-timeline')}/health`],
      ['GET /api/agents/:id/health?window=30', `/api/agents/${agentOf('bench-session-7')}/health?window=30`],
      ['GET /api/health/overview', '/api/health/overview'],
      ['GET /api/optimize/recommendations?period=30', '/api/optimize/recommendations?period=30'],
    ] as const) {
      const { p50, p95 } = await latency(base, key, path);
      rows.push([label, `p50 ${p50.toFixed(1)} ms · p95 ${p95.toFixed(1)} ms`]);
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    rmSync(dataDir, { recursive: true, force: true });
    if (process.env.DATABASE_URL) {
      const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
      await client.connect();
      await client.query(`drop schema if exists "${schema}" cascade`);
      await client.end();
    }
  }
  const width = Math.max(...rows.map(([label]) => label.length));
  console.log(`\n| ${'measurement'.padEnd(width)} | result |\n|${'-'.repeat(width + 2)}|--------|`);
  for (const [label, value] of rows) console.log(`| ${label.padEnd(width)} | ${value} |`);
}

await main();
