/**
 * Crash scenarios: a real service process is killed with SIGKILL at a chosen moment, started
 * again on the same data, and what it had acknowledged or queued is checked. Each scenario
 * returns the problems it found (an empty list is a pass) and a few figures; the crash-*.test.ts
 * files run one variant of each once and `npm run chaos` (scripts/chaos.mjs) loops them all.
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { TestHttpServer, type ReceivedRequest } from '@vigil/platform/testing';
import {
  call,
  dropSchemas,
  expectStatus,
  firstObserveKey,
  newSchemaName,
  POSTGRES_URL,
  removeDir,
  ServiceProcess,
  sleep,
  tempDir,
  waitFor,
} from './cluster.ts';

export interface ScenarioResult {
  scenario: string;
  /** Empty when every check passed. */
  problems: string[];
  /** What happened (batches acknowledged, in flight at the kill, seconds to recover, ...). */
  stats: Record<string, number | string | boolean>;
  durationMs: number;
}

export type Backend = 'sqlite' | 'postgres';

interface Workspace {
  dataDir: string;
  schemas: string[];
  env: Record<string, string>;
}

function workspace(backend: Backend, schemaVariable: 'OBSERVE_DB_SCHEMA' | 'GATE_DB_SCHEMA', prefix: string): Workspace {
  const dataDir = tempDir();
  if (backend === 'sqlite') return { dataDir, schemas: [], env: {} };
  const schema = newSchemaName(prefix);
  return { dataDir, schemas: [schema], env: { DATABASE_URL: POSTGRES_URL, [schemaVariable]: schema } };
}

async function cleanUp(space: Workspace, ...services: ServiceProcess[]): Promise<void> {
  for (const service of services) await service.kill().catch(() => undefined);
  removeDir(space.dataDir);
  await dropSchemas(...space.schemas).catch(() => undefined);
}

async function scenario(name: string, body: (problems: string[], stats: ScenarioResult['stats']) => Promise<void>): Promise<ScenarioResult> {
  const started = Date.now();
  const problems: string[] = [];
  const stats: ScenarioResult['stats'] = {};
  try {
    await body(problems, stats);
  } catch (error) {
    problems.push(`aborted: ${(error as Error).stack ?? String(error)}`);
  }
  return { scenario: name, problems, stats, durationMs: Date.now() - started };
}

const random = (min: number, max: number): number => min + Math.floor(Math.random() * (max - min + 1));

// ---- chains ----

interface TimelineEvent {
  id: string;
  seq: number;
  sessionId: string;
  payload: { type?: string; data?: { marker?: string; i?: number } };
}

/**
 * Reads every session through the API and checks its chain: `/api/audit/verify` valid with the
 * session's event count, the timeline's chain valid and its seq exactly 0..n-1. Returns the events.
 */
export async function verifyChains(base: string, key: string, sessionIds: readonly string[], problems: string[]): Promise<TimelineEvent[]> {
  const all: TimelineEvent[] = [];
  for (const sessionId of sessionIds) {
    const timeline = await call<{ events: TimelineEvent[]; chainValid: boolean }>(base, 'GET', `/api/sessions/${encodeURIComponent(sessionId)}/timeline`, {
      key,
    });
    if (timeline.status === 404) continue; // nothing of it was ever stored
    if (timeline.status !== 200) {
      problems.push(`timeline of ${sessionId}: HTTP ${timeline.status}`);
      continue;
    }
    const events = timeline.body.events;
    if (!timeline.body.chainValid) problems.push(`timeline of ${sessionId}: chainValid false`);
    const seqs = events.map((e) => e.seq).sort((a, b) => a - b);
    const gap = seqs.findIndex((seq, index) => seq !== index);
    if (gap !== -1) problems.push(`session ${sessionId}: seq not gapless 0..${seqs.length - 1} (position ${gap} holds ${seqs[gap]})`);
    const verdict = await call<{ valid: boolean; eventCount: number; brokenAt: unknown }>(
      base,
      'GET',
      `/api/audit/verify?sessionId=${encodeURIComponent(sessionId)}`,
      { key },
    );
    if (verdict.status !== 200 || !verdict.body.valid || verdict.body.eventCount !== events.length) {
      problems.push(`audit/verify of ${sessionId}: HTTP ${verdict.status} ${JSON.stringify(verdict.body)} (timeline has ${events.length} events)`);
    }
    all.push(...events);
  }
  return all;
}

/** What one batch became: acknowledged (201 with ids), refused (another answer), or in flight when the server died. */
export interface BatchOutcome {
  marker: string;
  size: number;
  outcome: 'acked' | 'refused' | 'in_flight';
  ids: string[];
  status?: number;
}

export function batchOf(marker: string, size: number, sessionIds: readonly string[], agentId: string): object[] {
  return Array.from({ length: size }, (_, i) => ({
    sessionId: sessionIds[i % sessionIds.length],
    agentId,
    eventType: 'custom',
    payload: { type: 'load', data: { marker, i, text: `batch ${marker} event ${i}` } },
  }));
}

/**
 * Checks the stored events against what the clients were told: every event of an acknowledged
 * batch is stored under the id it was given, a batch in flight at the kill is stored whole or
 * not at all, a refused batch not at all, and nothing else is stored.
 */
export function checkBatches(
  stored: readonly TimelineEvent[],
  batches: readonly BatchOutcome[],
  problems: string[],
  extraMarkers: ReadonlySet<string> = new Set(),
): { inFlightStored: number } {
  const byMarker = new Map<string, TimelineEvent[]>();
  for (const event of stored) {
    const marker = event.payload.data?.marker ?? '(none)';
    const list = byMarker.get(marker) ?? [];
    list.push(event);
    byMarker.set(marker, list);
  }
  let inFlightStored = 0;
  const known = new Set(batches.map((b) => b.marker));
  for (const batch of batches) {
    const events = byMarker.get(batch.marker) ?? [];
    if (events.length !== 0 && events.length !== batch.size)
      problems.push(`batch ${batch.marker} (${batch.outcome}) is half-stored: ${events.length} of ${batch.size} events`);
    if (batch.outcome === 'acked') {
      const ids = new Set(events.map((e) => e.id));
      const missing = batch.ids.filter((id) => !ids.has(id));
      if (missing.length > 0 || events.length !== batch.size)
        problems.push(`acknowledged batch ${batch.marker}: ${missing.length} of its ${batch.size} events missing`);
    } else if (batch.outcome === 'refused' && events.length > 0) {
      problems.push(`refused batch ${batch.marker} (HTTP ${batch.status}) was stored`);
    } else if (batch.outcome === 'in_flight' && events.length === batch.size) {
      inFlightStored += 1;
    }
  }
  for (const marker of byMarker.keys()) {
    if (!known.has(marker) && !extraMarkers.has(marker)) problems.push(`events of an unknown batch ${marker} are stored`);
  }
  return { inFlightStored };
}

// ---- 1. observe killed under sustained ingest ----

export interface IngestCrashOptions {
  backend: Backend;
  clients?: number;
  sessions?: number;
  batchSize?: number;
}

/**
 * Several clients post batches (each spanning three of the shared sessions, each with a unique
 * marker) as fast as the server takes them; after a random stretch of load the server is killed
 * with SIGKILL, restarted, and every batch is checked: acknowledged ones whole, none half-stored,
 * every chain valid and gapless, and the chains keep growing after the restart.
 */
export function ingestCrash(options: IngestCrashOptions): Promise<ScenarioResult> {
  const { backend, clients = 6, sessions = 8, batchSize = 30 } = options;
  return scenario(`ingest-${backend}`, async (problems, stats) => {
    const space = workspace(backend, 'OBSERVE_DB_SCHEMA', 'chaos_ingest');
    const observe = await ServiceProcess.create('observe', space.env, space.dataDir);
    /** Set just before the kill: from then on a failed request is a batch in flight, and the clients stop. */
    let killed = false;
    try {
      await observe.start();
      const key = await firstObserveKey(observe.base);
      const run = randomBytes(4).toString('hex');
      const sessionIds = Array.from({ length: sessions }, (_, k) => `crash-${run}-${k}`);
      const batches: BatchOutcome[] = [];
      let acked = 0;

      const client = async (c: number): Promise<void> => {
        for (let n = 0; !killed; n++) {
          const marker = `${run}-c${c}-b${n}`;
          const touched = [0, 1, 2].map((j) => sessionIds[(c * 3 + n + j) % sessions]!);
          const batch: BatchOutcome = { marker, size: batchSize, outcome: 'in_flight', ids: [] };
          batches.push(batch);
          try {
            const answer = await call<{ events: { id: string }[] }>(observe.base, 'POST', '/api/events', {
              key,
              body: { events: batchOf(marker, batchSize, touched, `agent-${c}`) },
            });
            batch.status = answer.status;
            if (answer.status === 201) {
              batch.outcome = 'acked';
              batch.ids = answer.body.events.map((e) => e.id);
              acked += 1;
            } else {
              batch.outcome = 'refused';
              problems.push(`batch ${marker}: HTTP ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
            }
          } catch (error) {
            // The connection died with the server: the batch stays "in flight" (stored whole or not at all).
            if (!killed) problems.push(`batch ${marker} failed before the kill: ${(error as Error).message}`);
            return;
          }
        }
      };

      const load = Array.from({ length: clients }, (_, c) => client(c));
      await waitFor('the first acknowledged batches', 60_000, async () => acked >= clients * 2);
      const loadMs = random(200, 2500);
      await sleep(loadMs);
      killed = true;
      await observe.kill();
      await Promise.all(load);
      stats.loadMs = loadMs;
      stats.batches = batches.length;
      stats.acked = batches.filter((b) => b.outcome === 'acked').length;
      stats.inFlight = batches.filter((b) => b.outcome === 'in_flight').length;

      const restartedAt = Date.now();
      await observe.start();
      stats.restartMs = Date.now() - restartedAt;
      const stored = await verifyChains(observe.base, key, sessionIds, problems);
      stats.storedEvents = stored.length;
      stats.inFlightStored = checkBatches(stored, batches, problems).inFlightStored;

      // The chains continue after the restart: one more batch on every session, then all verify again.
      const after = `${run}-after`;
      await expectStatus(201, observe.base, 'POST', '/api/events', { key, body: { events: batchOf(after, sessions, sessionIds, 'agent-after') } });
      const again = await verifyChains(observe.base, key, sessionIds, problems);
      if (again.length !== stored.length + sessions) problems.push(`after the restart ${again.length} events, expected ${stored.length + sessions}`);
      await observe.stop();
    } finally {
      killed = true;
      await cleanUp(space, observe);
    }
  });
}

// ---- 2. gate killed between a decision and its webhook delivery ----

export type GateCrashVariant = 'in-flight' | 'after-response';

/**
 * A request is decided; the gate is killed with SIGKILL either while the receiver holds the
 * webhook's first attempt unanswered (`in-flight`) or right after the decide answer (`after-response`,
 * before or after the attempt, whichever the race gives). After the restart the delivery scanner
 * must deliver the `request.decided` webhook, and the decision itself must have survived.
 */
export function gateWebhookCrash(options: { backend?: Backend; variant: GateCrashVariant }): Promise<ScenarioResult> {
  const { backend = 'sqlite', variant } = options;
  return scenario(`gate-webhook-${backend}-${variant}`, async (problems, stats) => {
    const space = workspace(backend, 'GATE_DB_SCHEMA', 'chaos_gate');
    const held: ServerResponse[] = [];
    let holdFirst = variant === 'in-flight';
    let firstSeen: () => void = () => undefined;
    const firstAttempt = new Promise<void>((done) => (firstSeen = done));
    const answered: ReceivedRequest[] = [];
    const receiver = await new TestHttpServer((request, res) => {
      firstSeen();
      if (holdFirst) {
        holdFirst = false;
        held.push(res); // never answered: the gate dies with this attempt in flight
        return;
      }
      answered.push(request);
      res.writeHead(200).end('ok');
    }).start();
    const adminKey = `gk_chaos_${randomBytes(12).toString('hex')}`;
    const gate = await ServiceProcess.create(
      'gate',
      {
        ...space.env,
        GATE_ADMIN_KEY: adminKey,
        // WEBHOOK_TIMEOUT_MS keeps its default (5 s): the attempt in flight must not time out before
        // the kill, and its claim lapses 5 s after that deadline, when a scanner takes the delivery.
        WEBHOOK_SCAN_INTERVAL_MS: '250',
      },
      space.dataDir,
    );
    try {
      await gate.start();
      const hook = await expectStatus<{ id: string }>(201, gate.base, 'POST', '/api/webhooks', {
        key: adminKey,
        body: { url: `${receiver.url}/hook`, events: ['request.decided'] },
      });
      const request = await expectStatus<{ id: string; status: string }>(201, gate.base, 'POST', '/api/requests', {
        key: adminKey,
        body: { action: 'chaos_transfer', params: { amount: random(1, 10_000) } },
      });
      if (request.status !== 'pending') problems.push(`the request was ${request.status}, expected pending`);
      await expectStatus(200, gate.base, 'POST', `/api/requests/${request.id}/decide`, { key: adminKey, body: { decision: 'approved', reason: 'chaos' } });
      if (variant === 'in-flight') {
        await Promise.race([firstAttempt, sleep(15_000).then(() => Promise.reject(new Error('the first webhook attempt never arrived')))]);
      }
      await gate.kill();
      stats.deliveredBeforeKill = answered.length > 0;
      for (const res of held) res.destroy();

      const restartedAt = Date.now();
      await gate.start();
      const status = await expectStatus<{ status: string }>(200, gate.base, 'GET', `/api/requests/${request.id}`, { key: adminKey });
      if (status.status !== 'approved') problems.push(`after the restart the request is ${status.status}, expected approved`);
      const delivery = await waitFor('the request.decided delivery to be delivered', 30_000, async () => {
        const { deliveries } = await expectStatus<{ deliveries: { id: string; status: string; attempts: number; event: string }[] }>(
          200,
          gate.base,
          'GET',
          `/api/webhooks/${hook.id}/deliveries`,
          { key: adminKey },
        );
        const decided = deliveries.filter((d) => d.event === 'request.decided');
        if (decided.length !== 1) return undefined;
        return decided[0]!.status === 'delivered' ? decided[0] : undefined;
      });
      stats.recoverMs = Date.now() - restartedAt;
      stats.attempts = delivery.attempts;
      const received = answered.filter((r) => r.headers['x-gate-delivery'] === delivery.id);
      if (received.length === 0) problems.push(`delivery ${delivery.id} is "delivered" but the receiver answered none of its attempts`);
      for (const r of received) {
        const body = JSON.parse(r.body) as { event: string; data: { id: string; status: string } };
        if (body.event !== 'request.decided' || body.data.id !== request.id || body.data.status !== 'approved') {
          problems.push(`unexpected webhook body ${r.body.slice(0, 300)}`);
        }
      }
      if (variant === 'in-flight' && stats.deliveredBeforeKill) problems.push('the in-flight attempt was answered before the kill');
      await gate.stop();
    } finally {
      await cleanUp(space, gate);
      await receiver.stop();
    }
  });
}

// ---- 3. observe killed before the embedding queue drained ----

export type EmbeddingCrashVariant = 'held-backend' | 'local';

/** A bag-of-words embedder for the fake backend: one bucket per word, so a query for a word matches exactly the texts holding it. */
export function bagOfWords(text: string, dims = 256): number[] {
  const vector = new Array<number>(dims).fill(0);
  for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    let hash = 0x811c9dc5;
    for (let i = 0; i < word.length; i++) hash = Math.imul(hash ^ word.charCodeAt(i), 0x01000193) >>> 0;
    vector[hash % dims]! += 1;
  }
  if (!vector.some((v) => v > 0)) vector[0] = 1;
  return vector;
}

/**
 * Events are ingested and acknowledged; the process is killed before its embedding worker stored
 * their vectors: `held-backend` keeps the embeddings API's answer back until the kill (the rows
 * are provably claimed and unfinished), `local` (the built-in embedder) kills right after the 201
 * of a large batch. After the restart every acknowledged event must become searchable through
 * GET /api/recall.
 */
export function embeddingCrash(options: { variant: EmbeddingCrashVariant; events?: number }): Promise<ScenarioResult> {
  const { variant, events: count = variant === 'local' ? 400 : 60 } = options;
  return scenario(`embeddings-sqlite-${variant}`, async (problems, stats) => {
    const space = workspace('sqlite', 'OBSERVE_DB_SCHEMA', 'chaos_embed');
    let answering = variant !== 'held-backend';
    const held: ServerResponse[] = [];
    let calls = 0;
    const backend = await new TestHttpServer((request, res) => {
      calls += 1;
      if (!answering) {
        held.push(res);
        return;
      }
      const { input } = JSON.parse(request.body) as { input: string[] };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ data: input.map((text, index) => ({ index, embedding: bagOfWords(text) })) }));
    }).start();
    const env: Record<string, string> =
      variant === 'held-backend' ? { EMBEDDINGS_URL: backend.url, EMBEDDINGS_MODEL: 'chaos-bag-of-words', EMBEDDINGS_TIMEOUT_MS: '60000' } : {};
    const observe = await ServiceProcess.create('observe', { ...space.env, ...env }, space.dataDir);
    try {
      await observe.start();
      const key = await firstObserveKey(observe.base);
      const marker = `zq${randomBytes(5).toString('hex')}`;
      const sessionId = `embed-${marker}`;
      const body = {
        events: Array.from({ length: count }, () => ({
          sessionId,
          agentId: 'embedder',
          eventType: 'custom',
          // One text for all: the local embedder's signed hashing can cancel a shared word against a differing
          // one (a per-event number), and this scenario is about the queue, not about ranking.
          payload: { type: 'note', data: { text: `chaos note ${marker} about refunds` } },
        })),
      };
      const answer = await expectStatus<{ events: { id: string }[] }>(201, observe.base, 'POST', '/api/events', { key, body });
      const ids = new Set(answer.events.map((e) => e.id));
      if (variant === 'held-backend') {
        await waitFor('the worker to call the embeddings API', 15_000, async () => calls > 0);
        const status = await expectStatus<{ queue: { depth: number } }>(200, observe.base, 'GET', '/api/recall/status', { key });
        stats.queuedAtKill = status.queue.depth;
        if (status.queue.depth < count) problems.push(`queue depth ${status.queue.depth} before the kill, expected at least ${count}`);
      }
      await observe.kill();
      for (const res of held) res.destroy();
      answering = true;

      const restartedAt = Date.now();
      await observe.start();
      const left = await expectStatus<{ queue: { depth: number } }>(200, observe.base, 'GET', '/api/recall/status', { key });
      stats.queuedAfterRestart = left.queue.depth;
      // Well within the minute a dead worker's claim would otherwise hold the rows (SQLite releases them at start).
      const found = await waitFor(
        `all ${count} events to be searchable`,
        30_000,
        async () => {
          const result = await expectStatus<{ totalResults: number; results: { sourceId: string; text: string }[] }>(
            200,
            observe.base,
            'GET',
            `/api/recall?query=${marker}&scope=events&limit=100`,
            { key },
          );
          return result.totalResults >= count ? result : undefined;
        },
        250,
      ).catch(async (error: unknown) => {
        // What the queue and the index held, and what the service logged: a slow recovery is told apart from a lost row.
        const status = await expectStatus(200, observe.base, 'GET', '/api/recall/status', { key }).catch((failed: unknown) => String(failed));
        throw new Error(`${(error as Error).message}; recall status ${JSON.stringify(status)}; observe's output:\n${observe.output.slice(-4000)}`);
      });
      stats.recoverMs = Date.now() - restartedAt;
      if (found.totalResults !== count) problems.push(`recall found ${found.totalResults} events, expected ${count}`);
      for (const result of found.results) {
        if (!ids.has(result.sourceId)) problems.push(`recall returned ${result.sourceId}, not one of the acknowledged events`);
        if (!result.text.includes(marker)) problems.push(`recall result text ${JSON.stringify(result.text)} lacks the marker`);
      }
      await waitFor(
        'the embedding queue to drain',
        30_000,
        async () => {
          const status = await expectStatus<{ queue: { depth: number } }>(200, observe.base, 'GET', '/api/recall/status', { key });
          return status.queue.depth === 0;
        },
        250,
      );
      await observe.stop();
    } finally {
      await cleanUp(space, observe);
      await backend.stop();
    }
  });
}

/** Every scenario with its variants, as `npm run chaos` loops them (iteration i picks variant i mod n). */
export const SCENARIOS: Record<string, (iteration: number) => Promise<ScenarioResult>> = {
  'ingest-postgres': () => ingestCrash({ backend: 'postgres' }),
  'ingest-sqlite': () => ingestCrash({ backend: 'sqlite' }),
  'gate-webhook-sqlite': (i) => gateWebhookCrash({ variant: i % 2 === 0 ? 'in-flight' : 'after-response' }),
  'embeddings-sqlite': (i) => embeddingCrash({ variant: i % 2 === 0 ? 'held-backend' : 'local' }),
};
