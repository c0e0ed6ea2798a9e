/**
 * `npm run bench` (third part): what @vigil/sdk costs the agent that uses it.
 *
 * 1. The batcher's own ceiling: one process calls `client.track()` BENCH_SDK_EVENTS times
 *    (default 50,000) in a synchronous loop, with the client's default batching, against a fake
 *    observe (another process) that answers 201 at once: events per second sent, and the time of
 *    each track() call.
 * 2. LLM call capture: the client CPU of one `openai` chat completion against a fake provider (a
 *    child process, so its CPU is not counted), bare and through observeOpenAI, taken in turn.
 * 3. End to end against the real observe server (separate process, SQLite unless DATABASE_URL is
 *    set): events per second stored (from the first track() until flush() resolves, i.e. every
 *    batch answered 201; the server's count is checked afterwards) for a burst and for an
 *    agent-like caller that yields to the event loop every 100 events, so sending overlaps
 *    tracking; beside them, the same events posted by hand as pre-serialised batches of batchSize,
 *    one request at a time (the SDK's queue also keeps one request in flight, so that each
 *    session's events stay in order, but sends everything waiting in it, up to 1000 events).
 *
 * 4. Approval receipts: verifyReceipt (Ed25519 over the receipt's canonical JSON by the fastest
 *    verifier the runtime has: libsodium when sodium-native is installed, as here, else node:crypto;
 *    the key imported once and cached) of a receipt signed as the gate signs one, one call at a
 *    time: wall time and process CPU per verification, beside a bare verify of the same bytes by
 *    libsodium and by node:crypto (OpenSSL), the floors of each verifier.
 *
 * BENCH_SDK_BATCH_SIZE sets the client's batchSize (default: the SDK's).
 */
import { spawn } from 'node:child_process';
import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { createRequire } from 'node:module';
import OpenAI from 'openai';
import { canonicalJson, ed25519Verifiers, ObserveClient, receiptKeyId, verifyReceipt, type IncomingEvent, type VigilError } from '../packages/sdk/src/index.ts';
import { observeOpenAI } from '../packages/sdk/src/openai.ts';
import { post } from './observe-workload.ts';
import { createObserveKey, startObserve, stopServer } from './server.ts';
import { checked, percentile, printTable, rate, type Row } from './table.ts';

const EVENTS = Number(process.env.BENCH_SDK_EVENTS ?? 50_000);
/** The client's batchSize; unset, the SDK's default (100), which the raw baseline uses too. */
const BATCH_SIZE = process.env.BENCH_SDK_BATCH_SIZE ? Number(process.env.BENCH_SDK_BATCH_SIZE) : undefined;
const WARMUP_EVENTS = 5000;
const SESSIONS = 50;
const LLM_CALLS = 2000;

interface Percentiles {
  p50: number;
  p95: number;
  p99: number;
  max: number;
  mean: number;
}

function percentiles(samples: ArrayLike<number>): Percentiles {
  const sorted = Float64Array.from(samples).sort();
  return {
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1]!,
    mean: sorted.reduce((a, b) => a + b, 0) / sorted.length,
  };
}

// ---------------------------------------------------------------------------------------------
// Client CPU of a call, against a server faked in another process
// ---------------------------------------------------------------------------------------------

/** An OpenAI-shaped chat completion, what the fake provider answers by default. */
const CHAT_COMPLETION = {
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 1_700_000_000,
  model: 'gpt-4o-mini',
  choices: [{ index: 0, message: { role: 'assistant', content: 'Revenue grew 12% on cloud services.', refusal: null }, finish_reason: 'stop', logprobs: null }],
  usage: { prompt_tokens: 420, completion_tokens: 96, total_tokens: 516 },
};

interface FakeServer {
  /** http://127.0.0.1:<port> */
  origin: string;
  /** origin + '/v1', what the provider libraries take as baseURL. */
  url: string;
  stop(): Promise<void>;
}

/**
 * A fake HTTP server in a child process, so its CPU is not counted as the client's: answers every
 * request, whatever its path, with `body` as JSON and `status`. An LLM provider by default; with
 * 201, an observe that stores nothing.
 */
async function startFakeServer(body: object = CHAT_COMPLETION, status = 200): Promise<FakeServer> {
  const source = `
    const body = process.env.FAKE_BODY;
    const server = require('node:http').createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(Number(process.env.FAKE_STATUS), { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body));
    });
    server.keepAliveTimeout = 60_000;
    server.listen(0, '127.0.0.1', () => console.log(server.address().port));`;
  const child = spawn(process.execPath, ['-e', source], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, NODE_OPTIONS: '', FAKE_BODY: JSON.stringify(body), FAKE_STATUS: String(status) },
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
    child.once('exit', (code) => reject(new Error(`fake server exited with ${code}`)));
  });
  return {
    origin: `http://127.0.0.1:${port}`,
    url: `http://127.0.0.1:${port}/v1`,
    async stop() {
      child.kill('SIGTERM');
      if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
    },
  };
}

/**
 * Client CPU (user + system, µs) of each call of each variant: `calls` awaited calls per variant,
 * taken in turn (bare, wrapped, bare, …) so that a slow patch of the machine hits every variant
 * alike, after `warmup` unmeasured rounds. Whatever else the process does meanwhile (the SDK
 * sending its batches) lands in the samples of the calls it overlaps, so it is counted too.
 */
async function clientCpuPerCall<K extends string>(calls: number, variants: Record<K, () => Promise<unknown>>, warmup = 200): Promise<Record<K, Percentiles>> {
  const entries = Object.entries(variants) as [K, () => Promise<unknown>][];
  const samples = entries.map(() => new Float64Array(calls));
  for (let round = -warmup; round < calls; round++) {
    for (const [v, [, call]] of entries.entries()) {
      const before = process.cpuUsage();
      await call();
      const used = process.cpuUsage(before);
      if (round >= 0) samples[v]![round] = used.user + used.system;
    }
  }
  return Object.fromEntries(entries.map(([name], v) => [name, percentiles(samples[v]!)])) as Record<K, Percentiles>;
}

/**
 * The `openai` client bare beside the same client wrapped by observeOpenAI, both against the fake
 * provider; the events go to `observeUrl` (the fake observe: the client's CPU is the same, the
 * real server's embedding work would not be).
 */
async function benchOpenAICapture(observeUrl: string, rows: Row[]): Promise<void> {
  const provider = await startFakeServer();
  const client = new ObserveClient({ baseUrl: observeUrl, apiKey: 'vgl_bench' });
  const session = client.startSession({ agentId: 'bench-sdk-llm' });
  const bare = new OpenAI({ baseURL: provider.url, apiKey: 'sk-bench', maxRetries: 0 });
  const wrapped = observeOpenAI(new OpenAI({ baseURL: provider.url, apiKey: 'sk-bench', maxRetries: 0 }), { session });
  const request = { model: 'gpt-4o-mini', messages: [{ role: 'user' as const, content: 'Summarise the quarterly revenue report in three bullet points.' }] };
  try {
    const cpuOf = await clientCpuPerCall(LLM_CALLS, {
      bare: () => bare.chat.completions.create(request),
      wrapped: () => wrapped.chat.completions.create(request),
    });
    await session.end();
    await client.close();
    const label = `(${LLM_CALLS.toLocaleString('en-US')} calls to a fake provider)`;
    const cpu = (p: Percentiles): string => `p50 ${p.p50} µs · p95 ${p.p95} µs · mean ${p.mean.toFixed(0)} µs`;
    rows.push([`client CPU of openai chat.completions.create, bare ${label}`, '', cpu(cpuOf.bare)]);
    rows.push([`client CPU of the same call through observeOpenAI (llm_call + llm_response, batched)`, '', cpu(cpuOf.wrapped)]);
    const added = cpuOf.wrapped.p95 - cpuOf.bare.p95;
    rows.push([
      '  CPU the wrapper adds at p95 (and on average)',
      '≤ 1 ms at p95',
      checked(`${added} µs (${(cpuOf.wrapped.mean - cpuOf.bare.mean).toFixed(0)} µs)`, added <= 1000),
    ]);
  } finally {
    await provider.stop();
  }
}

// ---------------------------------------------------------------------------------------------
// The batcher
// ---------------------------------------------------------------------------------------------

function benchEvent(i: number): IncomingEvent {
  return {
    sessionId: `bench-sdk-${i % SESSIONS}`,
    agentId: 'bench-sdk',
    eventType: 'tool_call',
    payload: { toolName: 'web_search', callId: `c${i}`, arguments: { query: `quarterly revenue report ${i}`, maxResults: 10 } },
  };
}

interface BatcherResult {
  /** Per track() call, µs. */
  track: Percentiles;
  /** Time spent inside track() over the whole run, ms. */
  callerMs: number;
  /** Events per second from the first track() until flush() resolved. */
  delivered: number;
}

/** Tracks `count` events (yielding to the event loop every `yieldEvery` events, if given) and flushes. */
async function runBatcher(client: ObserveClient, count: number, offset: number, yieldEvery?: number): Promise<BatcherResult> {
  const samples = new Float64Array(count);
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    const before = performance.now();
    client.track(benchEvent(offset + i));
    samples[i] = (performance.now() - before) * 1000;
    if (yieldEvery !== undefined && i % yieldEvery === yieldEvery - 1) await yieldToEventLoop();
  }
  await client.flush();
  const seconds = (performance.now() - started) / 1000;
  return { track: percentiles(samples), callerMs: samples.reduce((a, b) => a + b, 0) / 1000, delivered: count / seconds };
}

/** The same events as pre-serialised batches of `batchSize`, posted one request at a time; answers events/s. */
async function rawSequential(base: string, key: string, count: number, offset: number, batchSize: number): Promise<number> {
  const bodies: string[] = [];
  for (let first = 0; first < count; first += batchSize) {
    const timestamp = new Date().toISOString();
    const events = Array.from({ length: Math.min(batchSize, count - first) }, (_, i) => ({ ...benchEvent(offset + first + i), timestamp }));
    bodies.push(JSON.stringify({ events }));
  }
  const started = performance.now();
  for (const body of bodies) await post(base, key, body);
  return count / ((performance.now() - started) / 1000);
}

async function storedEvents(base: string, key: string): Promise<number> {
  const response = await fetch(`${base}/api/stats`, { headers: { authorization: `Bearer ${key}` } });
  if (!response.ok) throw new Error(`/api/stats: ${response.status}`);
  return ((await response.json()) as { totalEvents: number }).totalEvents;
}

/** Client options of the bench: a synchronous burst sends nothing until it yields, so the queue must hold all of it. */
function benchClientOptions(failures: VigilError[]) {
  return {
    maxQueueSize: EVENTS + WARMUP_EVENTS,
    onError: (error: VigilError) => failures.push(error),
    ...(BATCH_SIZE !== undefined && { batchSize: BATCH_SIZE }),
  };
}

async function benchBatcher(base: string, key: string, rows: Row[], storage: string): Promise<void> {
  const failures: VigilError[] = [];
  const client = new ObserveClient({ baseUrl: base, apiKey: key, ...benchClientOptions(failures) });
  await runBatcher(client, WARMUP_EVENTS, 0, 100);
  let sent = WARMUP_EVENTS;
  const batchSize = BATCH_SIZE ?? 100;
  const raw = await rawSequential(base, key, EVENTS, sent, batchSize);
  sent += EVENTS;
  rows.push([
    `raw POST /api/events (${storage}), ${EVENTS.toLocaleString('en-US')} events in ${batchSize}-event batches, one request at a time`,
    '',
    `${rate(raw)} events/s stored (the ceiling of one request in flight)`,
  ]);
  for (const [caller, yieldEvery] of [
    ['burst: one synchronous loop', undefined],
    ['agent-like: yields to the event loop every 100 events', 100],
  ] as const) {
    const result = await runBatcher(client, EVENTS, sent, yieldEvery);
    sent += EVENTS;
    const label = `${EVENTS.toLocaleString('en-US')} events, batchSize ${batchSize}, ${caller}`;
    rows.push([
      `SDK batcher → observe (${storage}), ${label}`,
      '≥ 10,000 events/s',
      checked(`${rate(result.delivered)} events/s stored`, result.delivered >= 10_000),
    ]);
    rows.push([
      `  track() per call`,
      'p99 ≤ 50 µs',
      checked(
        `p50 ${result.track.p50.toFixed(1)} µs · p99 ${result.track.p99.toFixed(1)} µs · max ${(result.track.max / 1000).toFixed(1)} ms`,
        result.track.p99 <= 50,
      ),
    ]);
    rows.push([
      `  caller time inside track()`,
      '',
      `${result.callerMs.toFixed(0)} ms in all, ${((result.callerMs * 1000) / EVENTS).toFixed(2)} µs/event on average`,
    ]);
  }
  await client.close();
  if (failures.length > 0) throw new Error(`delivery failures: ${failures.map((f) => f.message).join('; ')}`);
  const stored = await storedEvents(base, key);
  if (stored < sent) throw new Error(`observe holds ${stored} events, ${sent} were sent`);
}

/** The client's own ceiling: the burst against a fake observe (another process) that answers 201 at once. */
async function benchBatcherCeiling(fakeObserveUrl: string, rows: Row[]): Promise<void> {
  const failures: VigilError[] = [];
  const client = new ObserveClient({ baseUrl: fakeObserveUrl, apiKey: 'vgl_bench', ...benchClientOptions(failures) });
  await runBatcher(client, WARMUP_EVENTS, 0);
  const result = await runBatcher(client, EVENTS, 0);
  await client.close();
  if (failures.length > 0) throw new Error(`delivery failures: ${failures.map((f) => f.message).join('; ')}`);
  rows.push([
    `SDK batcher → a fake observe answering 201 at once (the client's own ceiling), ${EVENTS.toLocaleString('en-US')} events, burst, batchSize ${BATCH_SIZE ?? 100}`,
    '≥ 10,000 events/s',
    checked(`${rate(result.delivered)} events/s sent · track() p99 ${result.track.p99.toFixed(1)} µs`, result.delivered >= 10_000),
  ]);
}

const RECEIPT_VERIFICATIONS = 5000;

/** verifyReceipt of one receipt signed as the gate signs (stored-formats/receipt.ts), after a warm-up: µs per call, wall and CPU. */
async function benchReceiptVerification(rows: Row[]): Promise<void> {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');
  const unsigned = {
    v: 1,
    requestId: '01a22660-4902-7a5d-8b7e-2990859443b5',
    action: 'transfer_funds',
    argsDigest: 'a'.repeat(64),
    decision: 'approved',
    decidedBy: { keyId: '01a22660-0000-7000-8000-000000000001', name: 'cfo-bot' },
    policyId: null,
    issuedAt: '2026-11-22T10:00:00.000Z',
    expiresAt: '2026-11-22T10:15:00.000Z',
    nonce: 'b'.repeat(32),
    keyId: await receiptKeyId(raw),
  };
  const receipt = { ...unsigned, signature: sign(null, Buffer.from(canonicalJson(unsigned)), privateKey).toString('base64url') };
  const key = raw.toString('base64');
  for (let i = 0; i < 500; i++) if (!(await verifyReceipt(receipt, key))) throw new Error('the bench receipt does not verify');
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < RECEIPT_VERIFICATIONS; i++) await verifyReceipt(receipt, key);
  const wall = ((performance.now() - started) * 1000) / RECEIPT_VERIFICATIONS;
  const used = process.cpuUsage(cpuBefore);
  const cpu = (used.user + used.system) / RECEIPT_VERIFICATIONS;
  // The floors: one bare Ed25519 verification of the same bytes by each verifier.
  const message = Buffer.from(canonicalJson(unsigned));
  const signature = Buffer.from(receipt.signature, 'base64url');
  const floorOf = (verifyOnce: () => boolean): number => {
    const floorStarted = performance.now();
    for (let i = 0; i < RECEIPT_VERIFICATIONS; i++) verifyOnce();
    return ((performance.now() - floorStarted) * 1000) / RECEIPT_VERIFICATIONS;
  };
  const opensslFloor = floorOf(() => verify(null, message, publicKey, signature));
  const sodium = createRequire(import.meta.url)('sodium-native') as {
    crypto_sign_verify_detached(signature: Buffer, message: Buffer, publicKey: Buffer): boolean;
  };
  const sodiumFloor = floorOf(() => sodium.crypto_sign_verify_detached(signature, message, raw));
  const verifier = ed25519Verifiers()[0]!;
  const floor = verifier === 'libsodium' ? sodiumFloor : opensslFloor;
  rows.push(
    [
      `verifyReceipt (SDK, by ${verifier}: sodium-native when installed, else node:crypto, else Web Crypto), one at a time, ${RECEIPT_VERIFICATIONS.toLocaleString('en-US')} verifications`,
      '≤ 100 µs',
      checked(`${wall.toFixed(1)} µs · process CPU ${cpu.toFixed(1)} µs`, wall <= 100),
    ],
    [`  the floor: a bare ${verifier} Ed25519 verify of the same bytes`, '', `${floor.toFixed(1)} µs (the SDK adds ${(wall - floor).toFixed(1)} µs)`],
    [
      '  beside it: a bare node:crypto (OpenSSL) verify, what the SDK costs without sodium-native',
      '',
      `${opensslFloor.toFixed(1)} µs (libsodium: ${sodiumFloor.toFixed(1)} µs)`,
    ],
  );
}

async function main(): Promise<void> {
  const { child, base, dataDir, schema } = await startObserve('sdk');
  const fakeObserve = await startFakeServer({ accepted: 1 }, 201);
  const rows: Row[] = [];
  try {
    const key = await createObserveKey(base);
    // Client-only measurements first, while the real server is idle (its embedding worker
    // catches up for a while after each load and would share this machine's CPU).
    await benchBatcherCeiling(fakeObserve.origin, rows);
    await benchOpenAICapture(fakeObserve.origin, rows);
    await benchReceiptVerification(rows);
    await benchBatcher(base, key, rows, process.env.DATABASE_URL ? 'PostgreSQL' : 'SQLite');
  } finally {
    await fakeObserve.stop();
    await stopServer(child, dataDir, schema);
  }
  printTable(rows);
}

await main();
