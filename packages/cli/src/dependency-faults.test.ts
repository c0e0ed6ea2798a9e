// Dependency faults against real listening servers. The services reach PostgreSQL and Redis through
// a TCP proxy (node:net) that the tests cut (sockets reset or closed, new connections refused),
// turn into a black hole (connections accepted, nothing forwarded) and restore, under load; the
// real PostgreSQL and Redis servers are never touched. Webhook receivers that accept and never
// answer check that both services stay responsive while deliveries time out.
//
// Outcomes asserted: during a fault clients get 503 in the service's own error body (never a 500,
// never a hang beyond the connect timeout); afterwards the same process serves again without a
// restart, and every write it acknowledged is in the database (chains gapless); Redis down makes
// the gate fall back to per-instance rate-limit windows with deep health reporting `redis: error`;
// deliveries to a hanging receiver end `pending` (retry) and then `failed` as documented.
// PostgreSQL/Redis tests are skipped when unreachable unless REQUIRE_SERVICES=1.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { Redis } from 'ioredis';
import { ManualClock } from '@vigil/platform';
import { postgresReachable, redisReachable, sendJson, serviceSkip, TEST_POSTGRES_URL, TEST_REDIS_URL, TestHttpServer } from '@vigil/platform/testing';
import { buildGateService, gateConfigFromEnvironment, type GateService } from '@vigil/gate';
import { buildObserveService, observeConfigFromEnvironment, type ObserveService } from '@vigil/observe';
import { TcpProxy } from './tcp-proxy.ts';

/** A request that takes longer than this has hung (the services' own deadlines are far shorter). */
const REQUEST_DEADLINE_MS = 15_000;
/** The database connect timeout the services get here (DATABASE_CONNECT_TIMEOUT_MS). */
const CONNECT_TIMEOUT_MS = 1000;
/** Slack for a loaded CI machine on top of a service deadline. */
const SLACK_MS = 4000;
const ADMIN_KEY = 'gk_faults_admin_key_0123456789abcdef';

const postgresSkip = serviceSkip(`PostgreSQL at ${TEST_POSTGRES_URL}`, await postgresReachable());
const redisSkip = serviceSkip(`Redis at ${TEST_REDIS_URL}`, await redisReachable());

// ---------------------------------------------------------------- load

interface Outcome {
  phase: string;
  label: string;
  /** HTTP status, or null when the server never answered within REQUEST_DEADLINE_MS. */
  status: number | null;
  body: string;
  /** The Retry-After header, if any. */
  retryAfter: string | null;
  ms: number;
}

/** Waits until `done()` holds, checking every 50 ms; fails after `timeoutMs`. */
async function waitFor(done: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}

/** Clients sending requests in a loop; every outcome is recorded with the phase it started in. */
class Load {
  readonly outcomes: Outcome[] = [];
  phase = 'up';
  private stopping = false;
  private workers: Promise<void>[] = [];

  constructor(
    private readonly clients: number,
    private readonly step: (client: number, iteration: number) => Promise<{ label: string; response: Response }>,
  ) {}

  start(): this {
    this.workers = Array.from({ length: this.clients }, (_, c) => this.run(c));
    return this;
  }

  private async run(client: number): Promise<void> {
    for (let i = 0; !this.stopping; i++) {
      const phase = this.phase;
      const started = performance.now();
      try {
        const { label, response } = await this.step(client, i);
        const body = await response.text();
        this.outcomes.push({ phase, label, status: response.status, body, retryAfter: response.headers.get('retry-after'), ms: performance.now() - started });
        // A refusing dependency answers at once; do not spin the CPU the service needs.
        if (response.status >= 500) await sleep(20);
      } catch (error) {
        this.outcomes.push({ phase, label: 'request', status: null, body: String(error), retryAfter: null, ms: performance.now() - started });
        await sleep(20);
      }
    }
  }

  in(phase: string): Outcome[] {
    return this.outcomes.filter((o) => o.phase === phase);
  }

  until(done: () => boolean, timeoutMs: number, what: string): Promise<void> {
    return waitFor(done, timeoutMs, what);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.workers);
  }

  summary(): string {
    const counts = new Map<string, number>();
    for (const o of this.outcomes) counts.set(`${o.phase} ${o.status ?? 'no answer'}`, (counts.get(`${o.phase} ${o.status ?? 'no answer'}`) ?? 0) + 1);
    return [...counts].map(([k, v]) => `${k}: ${v}`).join(', ');
  }
}

async function http(url: string, init: RequestInit = {}): Promise<Response> {
  return fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_DEADLINE_MS) });
}

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
}

/** Observe's first key, created over HTTP (no key exists yet). */
async function firstObserveKey(base: string, name: string): Promise<string> {
  const created = await http(`${base}/api/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name }) });
  assert.equal(created.status, 201);
  return ((await created.json()) as { key: string }).key;
}

function addressOf(service: { app: { server: { address(): unknown } } }): string {
  return `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`;
}

/** Every outcome is a 2xx or the service's 503 with Retry-After (clients back off by it); none hung, none took longer than `boundMs`. */
function assertOnly2xxOr503(load: Load, expected503: unknown, boundMs: number): void {
  const context = load.summary();
  const unanswered = load.outcomes.filter((o) => o.status === null);
  assert.deepEqual(
    unanswered.map((o) => `${o.phase} ${o.label}: ${o.body}`),
    [],
    `every request was answered (${context})`,
  );
  const wrong = load.outcomes.filter((o) => o.status !== null && !(o.status < 300 || o.status === 503));
  assert.deepEqual(
    wrong.map((o) => `${o.phase} ${o.label} → ${o.status} ${o.body.slice(0, 200)}`),
    [],
    `only 2xx or 503 (${context})`,
  );
  for (const o of load.outcomes.filter((x) => x.status === 503)) {
    assert.deepEqual(JSON.parse(o.body), expected503, `503 body of ${o.label}`);
    assert.equal(o.retryAfter, '1', `Retry-After of ${o.label}'s 503`);
  }
  const slow = load.outcomes.filter((o) => o.ms > boundMs);
  assert.deepEqual(
    slow.map((o) => `${o.phase} ${o.label} → ${o.status} in ${Math.round(o.ms)} ms`),
    [],
    `every answer within ${boundMs} ms`,
  );
}

const dirs: string[] = [];
function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-faults-'));
  dirs.push(dir);
  return dir;
}
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------- PostgreSQL cut under load

describe('PostgreSQL behind a failing proxy', { skip: postgresSkip }, () => {
  const direct = new pg.Client({ connectionString: TEST_POSTGRES_URL });
  const schemas: string[] = [];
  let proxy: TcpProxy;

  before(async () => {
    await direct.connect();
    const target = new URL(TEST_POSTGRES_URL);
    proxy = await new TcpProxy({ host: target.hostname, port: Number(target.port || 5432) }).start();
  });
  after(async () => {
    await proxy?.stop();
    for (const schema of schemas) await direct.query(`drop schema if exists "${schema}" cascade`).catch(() => undefined);
    await direct.end().catch(() => undefined);
  });

  function proxiedUrl(): string {
    const url = new URL(TEST_POSTGRES_URL);
    url.host = proxy.url;
    return url.toString();
  }
  function freshSchema(prefix: string): string {
    const schema = `${prefix}_${randomBytes(5).toString('hex')}`;
    schemas.push(schema);
    return schema;
  }

  /**
   * The fault script both services go through, under load: up → cut with RST → restored →
   * cut with FIN → a black hole (connections accepted, nothing answered) → restored.
   */
  async function faultScript(load: Load, acks: () => number, health: () => Promise<Response>, unhealthy: (r: Response, body: unknown) => void): Promise<void> {
    load.phase = 'up';
    await load.until(() => acks() >= 15, 30_000, '15 acknowledged writes before the fault');
    for (const [phase, fault] of [
      ['cut-reset', () => proxy.cut('reset')],
      ['cut-close', () => proxy.cut('close')],
      ['blackhole', () => proxy.restore('blackhole')],
    ] as const) {
      load.phase = phase;
      await fault();
      // The fault is felt: answers from the database-less service to requests sent during the fault
      // (any 5xx here; which ones is asserted at the end). Requests in flight when it struck fail too,
      // but count for the phase they started in, so they alone must not end this one.
      await load.until(() => load.in(phase).filter((o) => o.status === null || o.status >= 500).length >= 5, 20_000, `failed answers in ${phase}`);
      const { value: response, ms } = await timed(health);
      unhealthy(response, await response.json());
      assert.ok(ms < CONNECT_TIMEOUT_MS + SLACK_MS, `health answered in ${Math.round(ms)} ms during ${phase}`);
      load.phase = `restored-after-${phase}`;
      const ackedBefore = acks();
      await proxy.restore();
      // The same process serves again: no restart.
      await load.until(() => acks() >= ackedBefore + 10, 30_000, `10 acknowledged writes after ${phase}`);
      assert.equal((await health()).status, 200, `healthy again after ${phase}`);
    }
  }

  test('observe: 503 during the outage, serving again after it, every acknowledged event stored in a gapless chain', async () => {
    const schema = freshSchema('faults_observe');
    const config = observeConfigFromEnvironment(
      {
        LOG_LEVEL: 'silent',
        DATABASE_URL: proxiedUrl(),
        OBSERVE_DB_SCHEMA: schema,
        DATABASE_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
        // Background jobs run (and fail, and recover) during the outage too.
        ALERT_EVAL_INTERVAL_MS: '300',
        RETENTION_INTERVAL_MS: '500',
        RETENTION_DAYS: '30',
      },
      { dataDir: dataDir() },
    );
    const service: ObserveService = await buildObserveService(config, { runJobs: true });
    try {
      await service.app.listen({ port: 0, host: '127.0.0.1' });
      const base = addressOf(service);
      const key = await firstObserveKey(base, 'faults');
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const acked: { id: string; sessionId: string }[] = [];
      const sessions = Array.from({ length: 6 }, (_, c) => `faults-session-${c}`);

      const load = new Load(6, async (c, i) => {
        if (i % 4 === 3) return { label: `GET session ${c}`, response: await http(`${base}/api/sessions/${sessions[c]}`, { headers }) };
        const response = await http(`${base}/api/events`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ events: [{ sessionId: sessions[c], agentId: 'faults-agent', eventType: 'custom', payload: { type: 'n', data: { c, i } } }] }),
        });
        if (response.status === 201) {
          const body = (await response.clone().json()) as { events: { id: string }[] };
          for (const event of body.events) acked.push({ id: event.id, sessionId: sessions[c]! });
        }
        return { label: `POST event ${c}/${i}`, response };
      }).start();
      try {
        await faultScript(
          load,
          () => acked.length,
          () => http(`${base}/api/health`),
          (response, body) => {
            assert.equal(response.status, 503);
            assert.deepEqual(body, { status: 'degraded', version: (body as { version: string }).version, db: { ok: false, latencyMs: null } });
          },
        );
      } finally {
        await load.stop();
      }
      console.log(`observe under PostgreSQL faults: ${load.summary()}; slowest ${Math.round(Math.max(...load.outcomes.map((o) => o.ms)))} ms`);
      assertOnly2xxOr503(load, { error: 'The database is unavailable; retry shortly', code: 'unavailable', status: 503 }, CONNECT_TIMEOUT_MS + SLACK_MS);
      for (const phase of ['cut-reset', 'cut-close', 'blackhole'])
        assert.ok(
          load.in(phase).some((o) => o.status === 503),
          `${phase} was felt`,
        );

      // Durability: every acknowledged event is stored; every chain is gapless and verifies.
      const stored = await direct.query(`select id from "${schema}".events where id = any($1)`, [acked.map((a) => a.id)]);
      assert.equal(stored.rowCount, acked.length, `all ${acked.length} acknowledged events are stored`);
      for (const sessionId of sessions) {
        const seqs = (await direct.query(`select seq from "${schema}".events where session_id = $1 order by seq`, [sessionId])).rows.map((r) => Number(r.seq));
        assert.deepEqual(
          seqs,
          seqs.map((_, i) => i),
          `${sessionId}: seq is gapless`,
        );
        const verify = await http(`${base}/api/audit/verify?sessionId=${sessionId}`, { headers });
        assert.equal(((await verify.json()) as { valid: boolean }).valid, true, `${sessionId}: chain verifies`);
      }
    } finally {
      await service.app.close();
    }
  });

  test('observe: an outage is logged once when it starts (with its cause) and once when it ends; 503s carry Retry-After and are counted in /metrics', async () => {
    const schema = freshSchema('faults_logs');
    const config = observeConfigFromEnvironment(
      { LOG_LEVEL: 'info', DATABASE_URL: proxiedUrl(), OBSERVE_DB_SCHEMA: schema, DATABASE_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS) },
      { dataDir: dataDir() },
    );
    const lines: { level: number; msg: string; cause?: string }[] = [];
    const logStream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line) as (typeof lines)[number]);
        done();
      },
    });
    const service = await buildObserveService(config, { runJobs: false, logStream });
    try {
      await service.app.listen({ port: 0, host: '127.0.0.1' });
      const base = addressOf(service);
      const key = await firstObserveKey(base, 'logs');
      const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
      const post = () =>
        http(`${base}/api/events`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ events: [{ sessionId: 'logs-session', agentId: 'logs-agent', eventType: 'custom', payload: { type: 'n', data: {} } }] }),
        });
      assert.equal((await post()).status, 201);
      const before = lines.length;

      await proxy.cut('close');
      const failures = 40;
      for (let i = 0; i < failures; i += 10) {
        const answers = await Promise.all(Array.from({ length: 10 }, post));
        for (const answer of answers) {
          const body = await answer.text();
          assert.equal(answer.status, 503, body);
          assert.equal(answer.headers.get('retry-after'), '1', body);
        }
      }
      const metrics = await (await http(`${base}/metrics`)).text();
      assert.match(metrics, new RegExp(`^vigil_http_failed_requests_total\\{status="503",cause="database_unavailable"\\} ${failures}$`, 'm'));

      await proxy.restore();
      await waitFor(() => lines.some((line) => /available again/.test(line.msg)), 15_000, 'the outage logged as over');
      assert.equal((await post()).status, 201);
      // The event stream's cross-instance notifier reports its own lost connection once (it is not a request).
      const outageLines = lines.slice(before).filter((line) => line.msg !== 'could not notify other instances of new events');
      assert.deepEqual(
        outageLines.map((line) => line.msg.replace(/ \(.*\)|\b\d+(\.\d+)?\b(?= s;| requests)/g, '#')),
        ['database unavailable#: requests that need it are answered 503 until it is back', 'database available again after # s; # requests failed meanwhile'],
        JSON.stringify(outageLines),
      );
      assert.match(outageLines[0]!.cause!, /ECONNREFUSED|Connection terminated|ECONNRESET/);
      assert.match(outageLines[1]!.msg, new RegExp(`; ${failures} requests failed`));
    } finally {
      await service.app.close();
    }
  });

  test('gate: 503 during the outage, serving again after it, every acknowledged request stored and its webhook delivered', async () => {
    const schema = freshSchema('faults_gate');
    const receiver = await new TestHttpServer((_request, res) => sendJson(res, 200, { ok: true })).start();
    const config = gateConfigFromEnvironment(
      {
        LOG_LEVEL: 'silent',
        DATABASE_URL: proxiedUrl(),
        GATE_DB_SCHEMA: schema,
        GATE_ADMIN_KEY: ADMIN_KEY,
        DATABASE_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
        EXPIRY_SCAN_INTERVAL_MS: '200',
        WEBHOOK_SCAN_INTERVAL_MS: '300',
        WEBHOOK_TIMEOUT_MS: '2000',
        WEBHOOK_MAX_RETRIES: '20',
      },
      { dataDir: dataDir() },
    );
    const service: GateService = await buildGateService(config, { runJobs: true });
    try {
      await service.app.listen({ port: 0, host: '127.0.0.1' });
      const base = addressOf(service);
      const headers = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' };
      const hook = await http(`${base}/api/webhooks`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ url: `${receiver.url}/hook`, events: ['request.created'] }),
      });
      assert.equal(hook.status, 201);
      const acked: string[] = [];

      const load = new Load(6, async (c, i) => {
        if (i % 4 === 3 && acked.length > 0) {
          return { label: `GET request ${c}`, response: await http(`${base}/api/requests/${acked[acked.length - 1]}`, { headers }) };
        }
        const response = await http(`${base}/api/requests`, { method: 'POST', headers, body: JSON.stringify({ action: `deploy-${c}-${i}` }) });
        if (response.status === 201) acked.push(((await response.clone().json()) as { id: string }).id);
        return { label: `POST request ${c}/${i}`, response };
      }).start();
      try {
        await faultScript(
          load,
          () => acked.length,
          () => http(`${base}/health?deep=true`),
          (response, body) => {
            assert.equal(response.status, 503);
            assert.deepEqual((body as { status: string; checks: unknown }).checks, { database: 'error' });
            assert.equal((body as { status: string }).status, 'degraded');
          },
        );
      } finally {
        await load.stop();
      }
      console.log(`gate under PostgreSQL faults: ${load.summary()}; slowest ${Math.round(Math.max(...load.outcomes.map((o) => o.ms)))} ms`);
      assertOnly2xxOr503(load, { error: { code: 'unavailable', message: 'A dependency is unavailable; retry shortly' } }, CONNECT_TIMEOUT_MS + SLACK_MS);

      const stored = await direct.query(`select id from "${schema}".requests where id = any($1)`, [acked]);
      assert.equal(stored.rowCount, acked.length, `all ${acked.length} acknowledged requests are stored`);
      const audited = await direct.query(`select distinct request_id from "${schema}".audit_entries where request_id = any($1)`, [acked]);
      assert.equal(audited.rowCount, acked.length, 'each with its audit entry');
      // At-least-once: the created webhook of every acknowledged request arrives, outage or not
      // (attempts that failed while the database was away are picked up by the scanner).
      const delivered = () => new Set(receiver.requests.map((r) => (JSON.parse(r.body) as { data: { id: string } }).data.id));
      const deadline = Date.now() + 30_000;
      while (acked.some((id) => !delivered().has(id)) && Date.now() < deadline) await sleep(100);
      assert.deepEqual(
        acked.filter((id) => !delivered().has(id)),
        [],
        'every acknowledged request.created was delivered',
      );
    } finally {
      await service.app.close();
      await receiver.stop();
    }
  });
});

// ---------------------------------------------------------------- Redis cut

describe('Redis behind a failing proxy', { skip: redisSkip }, () => {
  let proxy: TcpProxy;
  let direct: Redis;
  let service: GateService;
  let base: string;

  before(async () => {
    const target = new URL(TEST_REDIS_URL);
    proxy = await new TcpProxy({ host: target.hostname, port: Number(target.port || 6379) }).start();
    direct = new Redis(TEST_REDIS_URL);
    const config = gateConfigFromEnvironment({ LOG_LEVEL: 'silent', GATE_ADMIN_KEY: ADMIN_KEY, REDIS_URL: `redis://${proxy.url}` }, { dataDir: dataDir() });
    service = await buildGateService(config, { runJobs: false });
    await service.app.listen({ port: 0, host: '127.0.0.1' });
    base = addressOf(service);
  });
  after(async () => {
    await service?.app.close();
    direct?.disconnect();
    await proxy?.stop();
  });

  async function limitedKey(rateLimit: number): Promise<{ id: string; key: string }> {
    const response = await http(`${base}/api/api-keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `limited-${rateLimit}-${randomBytes(3).toString('hex')}`, scopes: ['request:read'], rateLimit }),
    });
    assert.equal(response.status, 201);
    return (await response.json()) as { id: string; key: string };
  }
  const list = (key: string) => http(`${base}/api/requests`, { headers: { authorization: `Bearer ${key}` } });
  const windowSize = (id: string) => direct.zcard(`vigil:gate:rate:${id}`);

  test('Redis down: requests keep being served on per-instance windows (still enforced), deep health says redis error; back: shared windows again', async () => {
    // Limited, so every request consumes from a window, with a budget the load below cannot
    // spend: the per-instance fallback window starts empty when Redis goes, and at 1,000 a minute
    // the 1,001st request of the load was refused 429 once the machine was quick enough to send
    // that many in its second (a rerun on a quiet machine; 15 s of it under load got there too).
    const shared = await limitedKey(1_000_000);
    for (let i = 0; i < 3; i++) assert.equal((await list(shared.key)).status, 200);
    assert.equal(await windowSize(shared.id), 3, 'the window lives in Redis');
    const healthy = await http(`${base}/health?deep=true`);
    assert.equal(healthy.status, 200);
    assert.deepEqual(((await healthy.json()) as { checks: unknown }).checks, { database: 'ok', redis: 'ok' });

    await proxy.cut('reset');
    // Under load while Redis is away: every answer a 200, promptly (no offline queue, no waiting on Redis).
    const load = new Load(4, async () => ({ label: 'GET /api/requests', response: await list(shared.key) })).start();
    await sleep(1000);
    await load.stop();
    assert.ok(load.outcomes.length > 10, load.summary());
    assert.deepEqual(
      load.outcomes.filter((o) => o.status !== 200).map((o) => `${o.status} ${o.body}`),
      [],
      'served during the Redis outage',
    );
    assert.ok(Math.max(...load.outcomes.map((o) => o.ms)) < 1000 + SLACK_MS, 'promptly');
    assert.equal(await windowSize(shared.id), 3, 'not counted in Redis meanwhile');

    const strict = await limitedKey(3);
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await list(strict.key)).status);
    assert.deepEqual(statuses, [200, 200, 200, 429], 'the per-instance fallback still enforces the limit');

    const { value: degraded, ms } = await timed(() => http(`${base}/health?deep=true`));
    assert.equal(degraded.status, 503);
    assert.deepEqual(((await degraded.json()) as { checks: unknown }).checks, { database: 'ok', redis: 'error' });
    assert.ok(ms < 2000 + SLACK_MS, `deep health answered in ${Math.round(ms)} ms`);

    await proxy.restore();
    // ioredis reconnects on its own (backoff up to 2 s): no restart.
    const deadline = Date.now() + 20_000;
    let recovered: Response | undefined;
    while (Date.now() < deadline) {
      recovered = await http(`${base}/health?deep=true`);
      if (recovered.status === 200) break;
      await sleep(200);
    }
    assert.equal(recovered?.status, 200, 'deep health recovers');
    assert.equal((await list(shared.key)).status, 200);
    assert.equal(await windowSize(shared.id), 4, 'counted in the shared Redis window again');
  });
});

// ---------------------------------------------------------------- receivers that never answer

/** Accepts connections and reads requests, never answers. Counts the requests it swallowed, in all and by path. */
class HangingReceiver {
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  requests = 0;
  readonly byPath = new Map<string, number>();
  url = '';

  constructor() {
    this.server = net.createServer((socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
      socket.on('error', () => undefined);
      socket.on('data', (chunk: Buffer) => {
        for (const [, path] of chunk.toString('latin1').matchAll(/^POST (\S+)/gm)) {
          this.requests += 1;
          this.byPath.set(path!, (this.byPath.get(path!) ?? 0) + 1);
        }
      });
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

describe('a webhook receiver that accepts and never answers', () => {
  test('gate: the API answers at once while deliveries time out, are retried and end failed', async () => {
    const receiver = await new HangingReceiver().start();
    // Long enough that a loaded machine answers 20 concurrent requests within it, so an answer
    // that waited for a delivery attempt would show.
    const timeoutMs = 2500;
    const config = gateConfigFromEnvironment(
      {
        LOG_LEVEL: 'silent',
        GATE_ADMIN_KEY: ADMIN_KEY,
        WEBHOOK_TIMEOUT_MS: String(timeoutMs),
        WEBHOOK_MAX_RETRIES: '2',
        WEBHOOK_SCAN_INTERVAL_MS: '500',
        // The forwarding to observe hangs too.
        OBSERVE_URL: receiver.url,
        OBSERVE_WEBHOOK_SECRET: 'faults-observe-secret',
      },
      { dataDir: dataDir() },
    );
    const service = await buildGateService(config, { runJobs: true });
    try {
      await service.app.listen({ port: 0, host: '127.0.0.1' });
      const base = addressOf(service);
      const headers = { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' };
      const hook = await http(`${base}/api/webhooks`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ url: `${receiver.url}/hook`, events: ['request.created', 'request.decided'] }),
      });
      const hookId = ((await hook.json()) as { id: string }).id;

      // Every answer comes well before the first attempt could even time out.
      const answers = await Promise.all([
        ...Array.from({ length: 10 }, (_, i) =>
          timed(() => http(`${base}/api/requests`, { method: 'POST', headers, body: JSON.stringify({ action: `hang-${i}` }) })),
        ),
        ...Array.from({ length: 5 }, () => timed(() => http(`${base}/health?deep=true`))),
        ...Array.from({ length: 5 }, () => timed(() => http(`${base}/api/requests`, { headers }))),
      ]);
      assert.deepEqual(answers.map((a) => a.value.status).sort(), [...Array(10).fill(200), ...Array(10).fill(201)].sort());
      const slowest = Math.max(...answers.map((a) => a.ms));
      assert.ok(slowest < timeoutMs, `slowest answer ${Math.round(slowest)} ms, below the ${timeoutMs} ms delivery timeout`);

      type Delivery = { status: string; attempts: number; lastError: string | null };
      const deliveries = async () =>
        ((await (await http(`${base}/api/webhooks/${hookId}/deliveries?limit=100`, { headers })).json()) as { deliveries: Delivery[] }).deliveries;
      // Attempt 1 times out: the delivery waits for its retry (2 s later).
      let sawRetry = false;
      const deadline = Date.now() + 30_000;
      let current = await deliveries();
      while (Date.now() < deadline && !(current.length === 10 && current.every((d) => d.status === 'failed'))) {
        sawRetry ||= current.some((d) => d.status === 'pending' && d.attempts === 1 && d.lastError === `no answer within ${timeoutMs} ms`);
        // Meanwhile the API stays responsive.
        const { ms } = await timed(() => http(`${base}/health`));
        assert.ok(ms < timeoutMs, `health answered in ${Math.round(ms)} ms while deliveries hang`);
        await sleep(100);
        current = await deliveries();
      }
      assert.ok(sawRetry, 'a timed-out delivery was pending its retry');
      assert.equal(current.length, 10);
      for (const d of current) {
        assert.equal(d.status, 'failed');
        assert.equal(d.attempts, 2, 'WEBHOOK_MAX_RETRIES attempts');
        assert.equal(d.lastError, `no answer within ${timeoutMs} ms`);
      }
      const forwarded = await service.context.database.db.selectFrom('deliveries').select(['status', 'attempts']).where('kind', '=', 'observe').execute();
      assert.equal(forwarded.length, 10, 'the forwarding to observe was queued for each request');
      const forwardDeadline = Date.now() + 10_000;
      while (Date.now() < forwardDeadline) {
        const rows = await service.context.database.db.selectFrom('deliveries').select(['status']).where('kind', '=', 'observe').execute();
        if (rows.every((r) => r.status === 'failed')) break;
        await sleep(100);
      }
      const settled = await service.context.database.db.selectFrom('deliveries').select(['status', 'attempts']).where('kind', '=', 'observe').execute();
      assert.ok(
        settled.every((r) => r.status === 'failed' && r.attempts === 2),
        'and it failed the same way',
      );
      // Webhook deliveries go one per request; the forwarding sends its due events in batches, so
      // its attempts are counted by the rows above, and here only as requests that arrived.
      const hookRequests = receiver.byPath.get('/hook') ?? 0;
      assert.ok(hookRequests >= 20, `each of the 10 webhook deliveries was attempted twice (${hookRequests} requests received)`);
      assert.ok(receiver.requests - hookRequests >= 2, `the forwarding's batches reached the receiver twice (${[...receiver.byPath]})`);
    } finally {
      const closing = timed(() => service.app.close());
      assert.ok((await closing).ms < timeoutMs + SLACK_MS, 'shutdown does not wait on the hanging receiver beyond the timeout');
      await receiver.stop();
    }
  });

  test('observe: alert notifications to it time out off the request path, are retried and end failed', async () => {
    const receiver = await new HangingReceiver().start();
    const clock = new ManualClock(Date.parse('2026-11-22T10:00:00.000Z'));
    const service = await buildObserveService(observeConfigFromEnvironment({ LOG_LEVEL: 'silent', AUTH_DISABLED: 'true' }, { dataDir: dataDir() }), {
      clock,
      runJobs: false,
    });
    try {
      await service.app.listen({ port: 0, host: '127.0.0.1' });
      const base = addressOf(service);
      const json = { 'content-type': 'application/json' };
      const rule = await http(`${base}/api/alerts/rules`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ name: 'hangs', condition: 'event_count_exceeds', threshold: 0, windowMinutes: 5, notifyChannels: [`${receiver.url}/alert`] }),
      });
      assert.equal(rule.status, 201, await rule.clone().text());
      const ingest = () =>
        http(`${base}/api/events`, {
          method: 'POST',
          headers: json,
          body: JSON.stringify({ events: [{ sessionId: 'hang', agentId: 'a', eventType: 'custom', payload: { type: 't', data: 1 } }] }),
        });
      assert.equal((await ingest()).status, 201);

      type Row = { status: string; attempts: number; last_error: string | null };
      const row = async () =>
        (await service.context.database.db.selectFrom('alert_deliveries').select(['status', 'attempts', 'last_error']).executeTakeFirstOrThrow()) as Row;
      const expectations: [number, string][] = [
        [1, 'pending'],
        [2, 'pending'],
        [3, 'failed'],
      ];
      for (const [attempt, status] of expectations) {
        // The evaluation job fires the rule and sends the notification, which hangs for 5 s …
        const tick = timed(() => service.jobs.alerts.tick());
        await sleep(300);
        // … while requests are answered at once.
        for (const request of [ingest, () => http(`${base}/api/health`), () => http(`${base}/api/alerts/history`), () => http(`${base}/api/sessions/hang`)]) {
          const { value, ms } = await timed(request);
          assert.ok(value.status < 300, `${value.status}`);
          // Well inside the 4.7 s the attempt still hangs: nothing waits for it.
          assert.ok(ms < 2500, `answered in ${Math.round(ms)} ms while the notification hangs`);
        }
        const { value: ran, ms } = await tick;
        assert.equal(ran, true);
        assert.ok(ms >= 4500 && ms < 5000 + SLACK_MS, `the attempt gave up after the 5 s timeout (${Math.round(ms)} ms)`);
        const delivery = await row();
        assert.deepEqual({ status: delivery.status, attempts: delivery.attempts }, { status, attempts: attempt }, `after attempt ${attempt}`);
        assert.match(delivery.last_error ?? '', /no answer within 5000 ms/);
        // Attempt n+1 is due 2^n s after attempt n.
        clock.advance(2 ** attempt * 1000);
      }
      assert.equal(receiver.requests, 3, 'three attempts reached the receiver');
      const history = (await (await http(`${base}/api/alerts/history`)).json()) as { entries?: { notified: boolean }[] } | { notified: boolean }[];
      const entries = Array.isArray(history) ? history : (history.entries ?? []);
      assert.ok(entries.length > 0 && entries.every((e) => e.notified === false), 'the alert is not marked notified');
    } finally {
      await service.app.close();
      await receiver.stop();
    }
  });
});
