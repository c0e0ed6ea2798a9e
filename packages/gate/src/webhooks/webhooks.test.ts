import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeEachDatabase } from '@vigil/platform/testing';
import { buildGateService } from '../app.ts';
import { assertGateError, startTestGate, TEST_ADMIN_KEY, type TestGate } from '../testing.ts';
import { signDelivery, verifyGateSignature } from './signature.ts';

const T0 = Date.parse('2026-11-22T10:00:00.000Z');
const SECRET = 'whsec_test_secret_0123456789';
const ADMIN_ACTOR = 'api:admin (GATE_ADMIN_KEY)';
const ALL_EVENTS = ['request.created', 'request.decided', 'request.expired', 'request.confirmed'];

interface Captured {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  receivedAt: number;
}

type Handler = (request: Captured, res: ServerResponse, index: number) => void;

/** A real HTTP server on 127.0.0.1, recording every request it gets. */
class Receiver {
  readonly requests: Captured[] = [];
  answered = 0;
  private readonly sockets = new Set<Socket>();
  private server: Server;
  port = 0;

  constructor(private handler: Handler = (_r, res) => res.writeHead(200).end('ok')) {
    this.server = this.makeServer();
  }

  private makeServer(): Server {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const captured: Captured = {
          method: req.method ?? '',
          path: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString('utf8'),
          receivedAt: Date.now(),
        };
        this.requests.push(captured);
        res.on('finish', () => (this.answered += 1));
        this.handler(captured, res, this.requests.length - 1);
      });
    });
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    return server;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  async start(port = 0): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => resolve());
    });
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    if (this.server.listening) await new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server = this.makeServer();
  }

  on(path: string): Captured[] {
    return this.requests.filter((r) => r.path === path);
  }

  /** Resolves once `count` requests (optionally to `path`) have arrived; fails after `timeoutMs`. */
  async waitFor(count: number, path?: string, timeoutMs = 5000): Promise<Captured[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const seen = path === undefined ? this.requests : this.on(path);
      if (seen.length >= count) return seen;
      if (Date.now() > deadline) assert.fail(`expected ${count} request(s)${path ? ` to ${path}` : ''}, got ${seen.length}`);
      await sleep(10);
    }
  }
}

async function waitUntil<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}: ${JSON.stringify(value)}`);
    await sleep(10);
  }
}

interface Webhook {
  id: string;
  url: string;
  events: string[];
  enabled: boolean;
  hasSecret: boolean;
}

interface Delivery {
  id: string;
  event: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  responseStatus: number | null;
  lastError: string | null;
  nextAttemptAt: string | null;
  deliveredAt: string | null;
}

interface DeliveryBody {
  event: string;
  timestamp: string;
  data: Record<string, unknown>;
}

async function createHook(gate: TestGate, payload: { url: string; events: string[]; secret?: string }): Promise<Webhook> {
  const response = await gate.call({ method: 'POST', url: '/api/webhooks', payload });
  assert.equal(response.statusCode, 201, response.body);
  return response.json() as Webhook;
}

async function deliveriesOf(gate: TestGate, hookId: string): Promise<Delivery[]> {
  const response = await gate.call({ method: 'GET', url: `/api/webhooks/${hookId}/deliveries` });
  assert.equal(response.statusCode, 200, response.body);
  return (response.json() as { deliveries: Delivery[] }).deliveries;
}

async function onlyDelivery(gate: TestGate, hookId: string): Promise<Delivery> {
  const list = await deliveriesOf(gate, hookId);
  assert.equal(list.length, 1, JSON.stringify(list));
  return list[0]!;
}

/** Waits until the hook's single delivery has recorded `attempts` attempts (the attempt has finished). */
function settled(gate: TestGate, hookId: string, attempts: number, timeoutMs = 5000): Promise<Delivery> {
  return waitUntil(
    `delivery with ${attempts} attempt(s)`,
    () => onlyDelivery(gate, hookId),
    (d) => d.attempts >= attempts,
    timeoutMs,
  );
}

async function createRequest(gate: TestGate, payload: object = { action: 'deploy', params: { env: 'prod' } }): Promise<{ id: string }> {
  const response = await gate.call({ method: 'POST', url: '/api/requests', payload });
  assert.equal(response.statusCode, 201, response.body);
  return response.json() as { id: string };
}

const nowSeconds = (gate: TestGate): number => Math.floor(gate.clock.now() / 1000);

/** Checks the four gate headers and the signature, both with verifyGateSignature and by hand. */
function assertSigned(gate: TestGate, captured: Captured, event: string, secret = SECRET, eventAt = gate.clock.now()): DeliveryBody {
  assert.equal(captured.method, 'POST');
  assert.match(String(captured.headers['content-type']), /^application\/json/);
  assert.equal(captured.headers['x-gate-event'], event);
  assert.equal(typeof captured.headers['x-gate-delivery'], 'string');
  assert.ok(String(captured.headers['x-gate-delivery']).length > 0);
  const timestamp = String(captured.headers['x-gate-timestamp']);
  assert.match(timestamp, /^\d+$/, 'X-Gate-Timestamp is Unix seconds');
  assert.equal(Number(timestamp), nowSeconds(gate), 'X-Gate-Timestamp is the time of sending');
  const signature = String(captured.headers['x-gate-signature']);
  const expected = `sha256=${createHmac('sha256', secret).update(`${timestamp}.${captured.body}`).digest('hex')}`;
  assert.equal(signature, expected, 'sha256= + hex HMAC-SHA256 of "<timestamp>.<raw body>"');
  assert.equal(
    verifyGateSignature({ secret, rawBody: captured.body, signature, timestamp, nowSeconds: nowSeconds(gate) }),
    true,
    'verifyGateSignature accepts the delivery',
  );
  assert.equal(verifyGateSignature({ secret: `${secret}x`, rawBody: captured.body, signature, timestamp, nowSeconds: nowSeconds(gate) }), false);
  const body = JSON.parse(captured.body) as DeliveryBody;
  assert.deepEqual(Object.keys(body).sort(), ['data', 'event', 'timestamp']);
  assert.equal(body.event, event);
  assert.equal(body.timestamp, new Date(eventAt).toISOString(), 'the body timestamp is when the event happened');
  assert.deepEqual(Object.keys(body.data).sort(), ['action', 'createdAt', 'decidedAt', 'decidedBy', 'decisionReason', 'id', 'params', 'status']);
  return body;
}

await describeEachDatabase('gate webhooks: registration', (backend) => {
  let gate: TestGate;
  let hookKey: string;
  before(async () => {
    gate = await startTestGate(backend);
    hookKey = await gate.createKey(['webhook:manage']);
  });
  after(() => gate.close());

  const webhookCount = async (): Promise<number> =>
    Number(
      (
        await gate.service.context.database.db
          .selectFrom('webhooks')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  test('POST /api/webhooks answers 201 with hasSecret and never the secret; GET lists it', async () => {
    const response = await gate.call(
      {
        method: 'POST',
        url: '/api/webhooks',
        payload: { url: 'https://example.test/hooks/a', events: ['request.created', 'request.decided'], secret: SECRET },
      },
      hookKey,
    );
    assert.equal(response.statusCode, 201, response.body);
    assert.ok(!response.body.includes(SECRET), 'the secret is returned');
    const hook = response.json() as Webhook & Record<string, unknown>;
    assert.equal(typeof hook.id, 'string');
    assert.equal(hook.url, 'https://example.test/hooks/a');
    assert.deepEqual(hook.events, ['request.created', 'request.decided']);
    assert.equal(hook.enabled, true);
    assert.equal(hook.hasSecret, true);
    assert.equal('secret' in hook, false);

    const plain = await gate.call({ method: 'POST', url: '/api/webhooks', payload: { url: 'http://example.test/b', events: ['request.expired'] } }, hookKey);
    assert.equal(plain.statusCode, 201, plain.body);
    assert.equal((plain.json() as Webhook).hasSecret, false);

    const list = await gate.call({ method: 'GET', url: '/api/webhooks' }, hookKey);
    assert.equal(list.statusCode, 200, list.body);
    assert.ok(!list.body.includes(SECRET), 'the secret is listed');
    const hooks = (list.json() as { webhooks: (Webhook & Record<string, unknown>)[] }).webhooks;
    const listed = hooks.find((h) => h.id === hook.id);
    assert.ok(listed);
    assert.equal(listed.hasSecret, true);
    assert.equal('secret' in listed, false);
    assert.ok(hooks.some((h) => h.id === (plain.json() as Webhook).id));
  });

  test('PATCH changes events and enabled; DELETE removes; unknown ids are 404', async () => {
    const hook = await createHook(gate, { url: 'https://example.test/c', events: ['request.created'], secret: SECRET });
    const patched = await gate.call(
      { method: 'PATCH', url: `/api/webhooks/${hook.id}`, payload: { events: ['request.confirmed', 'request.expired'], enabled: false } },
      hookKey,
    );
    assert.equal(patched.statusCode, 200, patched.body);
    const body = patched.json() as Webhook;
    assert.deepEqual([...body.events].sort(), ['request.confirmed', 'request.expired']);
    assert.equal(body.enabled, false);
    assert.equal(body.hasSecret, true, 'the secret stays when not patched');
    assert.ok(!patched.body.includes(SECRET));

    const reenabled = await gate.call({ method: 'PATCH', url: `/api/webhooks/${hook.id}`, payload: { enabled: true } }, hookKey);
    assert.equal((reenabled.json() as Webhook).enabled, true);
    assert.deepEqual([...(reenabled.json() as Webhook).events].sort(), ['request.confirmed', 'request.expired'], 'events stay when not patched');
    const listed = ((await gate.call({ method: 'GET', url: '/api/webhooks' })).json() as { webhooks: Webhook[] }).webhooks.find((h) => h.id === hook.id);
    assert.equal(listed?.enabled, true);

    const deliveries = await gate.call({ method: 'GET', url: `/api/webhooks/${hook.id}/deliveries` }, hookKey);
    assert.equal(deliveries.statusCode, 200, deliveries.body);
    assert.deepEqual((deliveries.json() as { deliveries: unknown[] }).deliveries, []);

    const deleted = await gate.call({ method: 'DELETE', url: `/api/webhooks/${hook.id}` }, hookKey);
    assert.equal(deleted.statusCode, 200, deleted.body);
    assert.deepEqual(deleted.json(), { id: hook.id, deleted: true });
    const after = ((await gate.call({ method: 'GET', url: '/api/webhooks' })).json() as { webhooks: Webhook[] }).webhooks;
    assert.ok(!after.some((h) => h.id === hook.id));

    assertGateError(await gate.call({ method: 'DELETE', url: `/api/webhooks/${hook.id}` }, hookKey), 404, 'not_found', 'DELETE twice');
    assertGateError(
      await gate.call({ method: 'PATCH', url: `/api/webhooks/${hook.id}`, payload: { enabled: false } }, hookKey),
      404,
      'not_found',
      'PATCH deleted',
    );
    assertGateError(await gate.call({ method: 'PATCH', url: '/api/webhooks/nope', payload: { enabled: false } }, hookKey), 404, 'not_found', 'PATCH unknown');
    assertGateError(await gate.call({ method: 'GET', url: '/api/webhooks/nope/deliveries' }, hookKey), 404, 'not_found', 'deliveries of unknown');
  });

  test('unknown event names, empty events and non-http URLs are 400 bad_request and store nothing', async () => {
    const before = await webhookCount();
    const invalid: object[] = [
      { url: 'https://example.test/x', events: ['request.deleted'] },
      { url: 'https://example.test/x', events: ['request.created', 'request.approved'] },
      { url: 'https://example.test/x', events: [] },
      { url: 'ftp://example.test/x', events: ['request.created'] },
      { url: 'javascript:alert(1)', events: ['request.created'] },
      { url: 'file:///etc/passwd', events: ['request.created'] },
      { url: 'not a url', events: ['request.created'] },
      { events: ['request.created'] },
      { url: 'https://example.test/x' },
    ];
    for (const payload of invalid) {
      assertGateError(await gate.call({ method: 'POST', url: '/api/webhooks', payload }, hookKey), 400, 'bad_request', JSON.stringify(payload));
    }
    assert.equal(await webhookCount(), before);

    const hook = await createHook(gate, { url: 'https://example.test/y', events: ['request.created'] });
    assertGateError(
      await gate.call({ method: 'PATCH', url: `/api/webhooks/${hook.id}`, payload: { events: ['nope'] } }, hookKey),
      400,
      'bad_request',
      'PATCH events',
    );
    assertGateError(
      await gate.call({ method: 'PATCH', url: `/api/webhooks/${hook.id}`, payload: { enabled: 'yes' } }, hookKey),
      400,
      'bad_request',
      'PATCH enabled',
    );
    const listed = ((await gate.call({ method: 'GET', url: '/api/webhooks' })).json() as { webhooks: Webhook[] }).webhooks.find((h) => h.id === hook.id);
    assert.deepEqual(listed?.events, ['request.created']);
  });
});

await describeEachDatabase('gate webhooks: delivery to a real receiver', (backend) => {
  test('signed deliveries for created, decided, confirmed and expired; subscriptions and the enabled flag are honoured', async () => {
    const receiver = await new Receiver().start();
    const gate = await startTestGate(backend);
    try {
      const all = await createHook(gate, { url: receiver.url('/all'), events: ALL_EVENTS, secret: SECRET });
      const decidedOnly = await createHook(gate, { url: receiver.url('/decided'), events: ['request.decided'], secret: 'another_secret_value_42' });
      const disabled = await createHook(gate, { url: receiver.url('/disabled'), events: ALL_EVENTS });
      const off = await gate.call({ method: 'PATCH', url: `/api/webhooks/${disabled.id}`, payload: { enabled: false } });
      assert.equal(off.statusCode, 200, off.body);

      // request.created
      const created = await createRequest(gate, { action: 'db.migrate', params: { table: 'users', rows: 3 }, urgency: 'high' });
      const [first] = await receiver.waitFor(1, '/all');
      const createdBody = assertSigned(gate, first!, 'request.created');
      assert.deepEqual(createdBody.data, {
        id: created.id,
        action: 'db.migrate',
        status: 'pending',
        params: { table: 'users', rows: 3 },
        decidedBy: null,
        decisionReason: null,
        createdAt: '2026-11-22T10:00:00.000Z',
        decidedAt: null,
      });

      // request.decided (approved)
      gate.clock.advance(5000);
      const decide = await gate.call({ method: 'POST', url: `/api/requests/${created.id}/decide`, payload: { decision: 'approved', reason: 'looks fine' } });
      assert.equal(decide.statusCode, 200, decide.body);
      const decidedAll = (await receiver.waitFor(2, '/all'))[1]!;
      const decidedBody = assertSigned(gate, decidedAll, 'request.decided');
      assert.deepEqual(decidedBody.data, {
        id: created.id,
        action: 'db.migrate',
        status: 'approved',
        params: { table: 'users', rows: 3 },
        decidedBy: ADMIN_ACTOR,
        decisionReason: 'looks fine',
        createdAt: '2026-11-22T10:00:00.000Z',
        decidedAt: '2026-11-22T10:00:05.000Z',
      });
      const [decidedOther] = await receiver.waitFor(1, '/decided');
      const otherBody = assertSigned(gate, decidedOther!, 'request.decided', 'another_secret_value_42');
      assert.deepEqual(otherBody.data, decidedBody.data);

      // request.confirmed
      gate.clock.advance(5000);
      const confirm = await gate.call({ method: 'POST', url: `/api/requests/${created.id}/confirm`, payload: { result: { ok: true } } });
      assert.equal(confirm.statusCode, 200, confirm.body);
      const confirmedBody = assertSigned(gate, (await receiver.waitFor(3, '/all'))[2]!, 'request.confirmed');
      assert.equal(confirmedBody.data.id, created.id);
      assert.equal(confirmedBody.data.status, 'approved');
      assert.equal(confirmedBody.data.decidedBy, ADMIN_ACTOR);

      // request.expired (through the expiry scanner)
      const expiring = await createRequest(gate, { action: 'send.email', expiresAt: new Date(gate.clock.now() + 60_000).toISOString() });
      const createdAgain = assertSigned(gate, (await receiver.waitFor(4, '/all'))[3]!, 'request.created');
      assert.equal(createdAgain.data.id, expiring.id);
      gate.clock.advance(61_000);
      assert.equal(await gate.service.jobs.expiry.tick(), true);
      const expiredBody = assertSigned(gate, (await receiver.waitFor(5, '/all'))[4]!, 'request.expired');
      assert.equal(expiredBody.data.id, expiring.id);
      assert.equal(expiredBody.data.status, 'expired');
      assert.equal(expiredBody.data.decidedBy, 'system:expiry');
      assert.equal(expiredBody.data.decidedAt, new Date(gate.clock.now()).toISOString());

      // Let anything stray arrive before counting.
      await sleep(300);
      assert.deepEqual(
        receiver.on('/all').map((r) => r.headers['x-gate-event']),
        ['request.created', 'request.decided', 'request.confirmed', 'request.created', 'request.expired'],
      );
      assert.deepEqual(
        receiver.on('/decided').map((r) => r.headers['x-gate-event']),
        ['request.decided'],
        'the decided-only hook got nothing else',
      );
      assert.equal(receiver.on('/disabled').length, 0, 'the disabled hook got something');
      assert.deepEqual(await deliveriesOf(gate, disabled.id), []);
      const ids = receiver.requests.map((r) => r.headers['x-gate-delivery']);
      assert.equal(new Set(ids).size, ids.length, 'X-Gate-Delivery is unique per delivery');

      const allDeliveries = await deliveriesOf(gate, all.id);
      assert.equal(allDeliveries.length, 5);
      for (const d of allDeliveries) {
        assert.equal(d.status, 'delivered');
        assert.equal(d.attempts, 1);
        assert.equal(d.responseStatus, 200);
        assert.ok(ids.includes(d.id), 'X-Gate-Delivery is the delivery id');
      }
      assert.equal((await deliveriesOf(gate, decidedOnly.id)).length, 1);
    } finally {
      await gate.close();
      await receiver.stop();
    }
  });

  test('a policy auto-decision sends request.decided with decidedBy policy:<id>', async () => {
    const receiver = await new Receiver().start();
    const gate = await startTestGate(backend);
    try {
      await createHook(gate, { url: receiver.url('/all'), events: ALL_EVENTS, secret: SECRET });
      const policy = await gate.call({
        method: 'POST',
        url: '/api/policies',
        payload: { name: 'auto ok', priority: 1, rules: [{ match: { action: 'read.file' }, decision: 'auto_approve' }] },
      });
      assert.equal(policy.statusCode, 201, policy.body);
      const policyId = (policy.json() as { id: string }).id;
      const created = await createRequest(gate, { action: 'read.file' });
      const got = await receiver.waitFor(2, '/all');
      const events = got.map((r) => JSON.parse(r.body) as DeliveryBody);
      const decided = events.find((e) => e.event === 'request.decided');
      assert.ok(decided, JSON.stringify(events.map((e) => e.event)));
      assert.equal(decided.data.id, created.id);
      assert.equal(decided.data.status, 'approved');
      assert.equal(decided.data.decidedBy, `policy:${policyId}`);
      assert.ok(events.some((e) => e.event === 'request.created'));
    } finally {
      await gate.close();
      await receiver.stop();
    }
  });

  test('POST /api/requests answers without waiting for the receiver', async () => {
    const receiver = await new Receiver((_r, res) => setTimeout(() => res.writeHead(200).end('slow'), 2000)).start();
    const gate = await startTestGate(backend);
    try {
      const hook = await createHook(gate, { url: receiver.url('/slow'), events: ['request.created'], secret: SECRET });
      const started = Date.now();
      const response = await gate.call({ method: 'POST', url: '/api/requests', payload: { action: 'deploy' } });
      const elapsed = Date.now() - started;
      assert.equal(response.statusCode, 201, response.body);
      assert.equal(receiver.answered, 0, 'the API answered only after the receiver did');
      assert.ok(elapsed < 1500, `POST /api/requests took ${elapsed} ms`);
      // The delivery still completes in the background.
      const delivered = await waitUntil(
        'the slow delivery',
        () => onlyDelivery(gate, hook.id),
        (d) => d.status === 'delivered',
        6000,
      );
      assert.equal(delivered.attempts, 1);
      assert.equal(receiver.answered, 1);
      assert.ok(receiver.requests[0]!.receivedAt - started < 1500, 'attempt 1 started at once');
    } finally {
      await gate.close();
      await receiver.stop();
    }
  });

  test('any 2xx answer counts as delivered', async () => {
    const receiver = await new Receiver((_r, res, i) => res.writeHead(i === 0 ? 204 : 202).end()).start();
    const gate = await startTestGate(backend);
    try {
      const hook = await createHook(gate, { url: receiver.url('/ok'), events: ['request.created'] });
      await createRequest(gate);
      await createRequest(gate);
      const list = await waitUntil(
        'two deliveries',
        () => deliveriesOf(gate, hook.id),
        (l) => l.length === 2 && l.every((d) => d.status === 'delivered'),
      );
      assert.deepEqual(list.map((d) => d.responseStatus).sort(), [202, 204]);
      // Without a secret there is no signature, but the other headers are there.
      const captured = receiver.requests[0]!;
      assert.equal(captured.headers['x-gate-signature'], undefined);
      assert.equal(captured.headers['x-gate-event'], 'request.created');
      assert.match(String(captured.headers['x-gate-timestamp']), /^\d+$/);
      assert.ok(captured.headers['x-gate-delivery']);
    } finally {
      await gate.close();
      await receiver.stop();
    }
  });
});

await describeEachDatabase('gate webhooks: retries', (backend) => {
  test('500, 500, 200: attempt 1 at once, attempt 2 after 2 s, attempt 3 after 4 more s, then delivered with 3 attempts', async () => {
    const receiver = await new Receiver((_r, res, i) => res.writeHead(i < 2 ? 500 : 200).end()).start();
    const gate = await startTestGate(backend);
    try {
      const hook = await createHook(gate, { url: receiver.url('/flaky'), events: ['request.created'], secret: SECRET });
      await createRequest(gate);

      await receiver.waitFor(1);
      const afterFirst = await settled(gate, hook.id, 1);
      assert.equal(afterFirst.status, 'pending');
      assert.equal(afterFirst.responseStatus, 500);
      assert.match(afterFirst.lastError ?? '', /500/);
      assert.equal(afterFirst.nextAttemptAt, new Date(T0 + 2000).toISOString());

      // Not before 2 s.
      gate.clock.advance(1999);
      assert.equal(await gate.service.jobs.webhooks.tick(), true);
      assert.equal(receiver.requests.length, 1, 'attempt 2 came before its 2 s delay');
      gate.clock.advance(1);
      assert.equal(await gate.service.jobs.webhooks.tick(), true);
      assert.equal(receiver.requests.length, 2, 'attempt 2 is due at +2 s');
      const afterSecond = await settled(gate, hook.id, 2);
      assert.equal(afterSecond.status, 'pending');
      assert.equal(afterSecond.nextAttemptAt, new Date(T0 + 2000 + 4000).toISOString());

      // Not before 4 more seconds.
      gate.clock.advance(3999);
      assert.equal(await gate.service.jobs.webhooks.tick(), true);
      assert.equal(receiver.requests.length, 2, 'attempt 3 came before its 4 s delay');
      gate.clock.advance(1);
      assert.equal(await gate.service.jobs.webhooks.tick(), true);
      assert.equal(receiver.requests.length, 3);
      const final = await settled(gate, hook.id, 3);
      assert.equal(final.status, 'delivered');
      assert.equal(final.attempts, 3);
      assert.equal(final.responseStatus, 200);
      assert.equal(final.lastError, null);
      assert.equal(final.deliveredAt, new Date(T0 + 6000).toISOString());
      assert.equal(final.nextAttemptAt, null);

      // Every attempt is the same delivery with the same body, signed afresh.
      const [a, b, c] = receiver.requests;
      assert.equal(a!.headers['x-gate-delivery'], final.id);
      assert.equal(b!.headers['x-gate-delivery'], final.id);
      assert.equal(c!.headers['x-gate-delivery'], final.id);
      assert.equal(a!.body, c!.body);
      assert.equal(Number(c!.headers['x-gate-timestamp']), Math.floor((T0 + 6000) / 1000));
      assertSigned(gate, c!, 'request.created', SECRET, T0);

      // Nothing more once delivered.
      gate.clock.advance(60_000);
      await gate.service.jobs.webhooks.tick();
      assert.equal(receiver.requests.length, 3);
    } finally {
      await gate.close();
      await receiver.stop();
    }
  });

  for (const [env, attempts] of [
    [undefined, 3],
    ['2', 2],
  ] as const) {
    test(`a receiver that always answers 500 fails permanently after ${attempts} attempts${env ? ` (WEBHOOK_MAX_RETRIES=${env})` : ''}`, async () => {
      const receiver = await new Receiver((_r, res) => res.writeHead(500).end('down')).start();
      const gate = await startTestGate(backend, env ? { env: { WEBHOOK_MAX_RETRIES: env } } : {});
      try {
        const hook = await createHook(gate, { url: receiver.url('/broken'), events: ['request.created'] });
        await createRequest(gate);
        await settled(gate, hook.id, 1);
        for (let n = 2; n <= attempts; n += 1) {
          gate.clock.advance(2 ** (n - 1) * 1000);
          assert.equal(await gate.service.jobs.webhooks.tick(), true);
          await settled(gate, hook.id, n);
        }
        const final = await onlyDelivery(gate, hook.id);
        assert.equal(final.status, 'failed');
        assert.equal(final.attempts, attempts);
        assert.equal(final.responseStatus, 500);
        assert.match(final.lastError ?? '', /500/);
        assert.equal(final.nextAttemptAt, null);
        assert.equal(final.deliveredAt, null);

        // A failed delivery is never tried again.
        for (let i = 0; i < 3; i += 1) {
          gate.clock.advance(60 * 60 * 1000);
          await gate.service.jobs.webhooks.tick();
        }
        assert.equal(receiver.requests.length, attempts);
        assert.equal((await onlyDelivery(gate, hook.id)).attempts, attempts);
      } finally {
        await gate.close();
        await receiver.stop();
      }
    });
  }

  test('a receiver that never answers: the attempt times out after WEBHOOK_TIMEOUT_MS and the error is recorded', async () => {
    const receiver = await new Receiver(() => undefined).start();
    const gate = await startTestGate(backend, { env: { WEBHOOK_TIMEOUT_MS: '300' } });
    try {
      const hook = await createHook(gate, { url: receiver.url('/hang'), events: ['request.created'] });
      const started = Date.now();
      const response = await gate.call({ method: 'POST', url: '/api/requests', payload: { action: 'deploy' } });
      assert.equal(response.statusCode, 201);
      assert.ok(Date.now() - started < 1000, 'the API waited for the hanging receiver');
      const failed = await settled(gate, hook.id, 1, 3000);
      assert.ok(Date.now() - started < 2500, 'the timeout was not applied');
      assert.equal(failed.status, 'pending', 'a timed-out attempt is retried');
      assert.equal(failed.responseStatus, null);
      assert.match(failed.lastError ?? '', /time(d)?[ -]?out|no answer within 300 ms|300 ?ms/i);
    } finally {
      await gate.close();
      await receiver.stop();
    }
  });

  test('a delivery survives a restart: queued while the receiver is down, delivered by the scanner of a new app', async () => {
    // A port that refuses connections now and that the receiver will listen on later.
    const receiver = await new Receiver().start();
    const port = receiver.port;
    await receiver.stop();

    const gate = await startTestGate(backend);
    let closed = false;
    let second: Awaited<ReturnType<typeof buildGateService>> | undefined;
    try {
      const hook = await createHook(gate, { url: `http://127.0.0.1:${port}/durable`, events: ['request.created'], secret: SECRET });
      const created = await createRequest(gate);
      const first = await settled(gate, hook.id, 1);
      assert.equal(first.status, 'pending');
      assert.equal(first.responseStatus, null);
      assert.ok(first.lastError, 'the refused connection is recorded');
      await gate.close();
      closed = true;

      await receiver.start(port);
      second = await buildGateService({ ...gate.config }, { runJobs: false, clock: gate.clock });
      gate.clock.advance(30_000);
      assert.equal(await second.jobs.webhooks.tick(), true);
      const [captured] = await receiver.waitFor(1, '/durable');
      assertSigned(gate, captured!, 'request.created', SECRET, T0);
      assert.equal((JSON.parse(captured!.body) as DeliveryBody).data.id, created.id);
      const delivery = await waitUntil(
        'delivered after the restart',
        async () => {
          const response = await second!.app.inject({
            method: 'GET',
            url: `/api/webhooks/${hook.id}/deliveries`,
            headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` },
          });
          assert.equal(response.statusCode, 200, response.body);
          return (response.json() as { deliveries: Delivery[] }).deliveries[0]!;
        },
        (d) => d.status === 'delivered',
      );
      assert.equal(delivery.attempts, 2);
      assert.equal(receiver.requests.length, 1);
    } finally {
      if (!closed) await gate.close();
      await second?.app.close();
      await receiver.stop();
    }
  });

  test('deleting a webhook drops its pending deliveries', async () => {
    const receiver = await new Receiver((_r, res) => res.writeHead(503).end()).start();
    const gate = await startTestGate(backend);
    try {
      const hook = await createHook(gate, { url: receiver.url('/gone'), events: ['request.created'] });
      await createRequest(gate);
      await settled(gate, hook.id, 1);
      const deleted = await gate.call({ method: 'DELETE', url: `/api/webhooks/${hook.id}` });
      assert.equal(deleted.statusCode, 200);
      gate.clock.advance(60_000);
      await gate.service.jobs.webhooks.tick();
      assert.equal(receiver.requests.length, 1);
      const rows = await gate.service.context.database.db.selectFrom('deliveries').selectAll().where('webhook_id', '=', hook.id).execute();
      assert.equal(rows.length, 1);
      assert.equal(rows[0]!.status, 'failed');
    } finally {
      await gate.close();
      await receiver.stop();
    }
  });
});

describe('verifyGateSignature', () => {
  const body = JSON.stringify({ event: 'request.created', timestamp: '2026-11-22T10:00:00.000Z', data: { id: 'r1' } });
  const now = Math.floor(T0 / 1000);
  const signature = `sha256=${createHmac('sha256', SECRET).update(`${now}.${body}`).digest('hex')}`;
  const valid = { secret: SECRET, rawBody: body, signature, timestamp: String(now), nowSeconds: now };

  test('accepts a delivery signed with the secret, and signDelivery computes the same value', () => {
    assert.equal(verifyGateSignature(valid), true);
    assert.equal(signDelivery(SECRET, now, body), signature);
  });

  test('rejects a wrong secret', () => {
    assert.equal(verifyGateSignature({ ...valid, secret: 'whsec_some_other_secret_000' }), false);
  });

  test('rejects a changed body, even by one character or whitespace', () => {
    assert.equal(verifyGateSignature({ ...valid, rawBody: body.replace('r1', 'r2') }), false);
    assert.equal(verifyGateSignature({ ...valid, rawBody: `${body} ` }), false);
    assert.equal(verifyGateSignature({ ...valid, rawBody: JSON.stringify(JSON.parse(body), null, 2) }), false);
  });

  test('rejects a timestamp that is not the signed one', () => {
    assert.equal(verifyGateSignature({ ...valid, timestamp: String(now + 1), nowSeconds: now + 1 }), false);
  });

  test('rejects stale and far-future timestamps (default tolerance 300 s; configurable)', () => {
    assert.equal(verifyGateSignature({ ...valid, nowSeconds: now + 300 }), true);
    assert.equal(verifyGateSignature({ ...valid, nowSeconds: now + 301 }), false);
    assert.equal(verifyGateSignature({ ...valid, nowSeconds: now - 301 }), false);
    assert.equal(verifyGateSignature({ ...valid, nowSeconds: now + 30, toleranceSeconds: 10 }), false);
    assert.equal(verifyGateSignature({ ...valid, nowSeconds: now + 3000, toleranceSeconds: 3600 }), true);
    // Without nowSeconds it compares with the real clock: a timestamp from 2026-11-22 signed now-ish is judged by Date.now().
    const fresh = Math.floor(Date.now() / 1000);
    assert.equal(verifyGateSignature({ secret: SECRET, rawBody: body, signature: signDelivery(SECRET, fresh, body), timestamp: String(fresh) }), true);
    const stale = fresh - 3600;
    assert.equal(verifyGateSignature({ secret: SECRET, rawBody: body, signature: signDelivery(SECRET, stale, body), timestamp: String(stale) }), false);
  });

  test('rejects missing or malformed headers', () => {
    assert.equal(verifyGateSignature({ ...valid, signature: undefined }), false);
    assert.equal(verifyGateSignature({ ...valid, timestamp: undefined }), false);
    assert.equal(verifyGateSignature({ ...valid, signature: '' }), false);
    assert.equal(verifyGateSignature({ ...valid, timestamp: '' }), false);
    assert.equal(verifyGateSignature({ ...valid, timestamp: `${now}.5` }), false);
    assert.equal(verifyGateSignature({ ...valid, timestamp: 'yesterday' }), false);
    assert.equal(verifyGateSignature({ ...valid, signature: signature.slice('sha256='.length) }), false, 'the sha256= prefix is part of the value');
    assert.equal(verifyGateSignature({ ...valid, signature: signature.toUpperCase() }), false);
  });
});
