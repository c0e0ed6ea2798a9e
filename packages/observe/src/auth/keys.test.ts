import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, mock, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { assertErrorBody, startTestObserve, type TestObserve } from '../testing.ts';
import type { ApiKey } from './store.ts';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const NOW_ISO = '2026-11-22T10:00:00.000Z';

interface CreatedKey {
  id: string;
  name: string;
  prefix: string;
  createdAt: string;
  scopes: string[];
  key: string;
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** Unauthenticated request through the real app (headers given are the only ones sent). */
const anonymous = (observe: TestObserve, options: InjectOptions): Promise<LightMyRequestResponse> => observe.service.app.inject(options);

async function createKey(observe: TestObserve, name: string, headers: Record<string, string> = {}): Promise<CreatedKey> {
  const response = await observe.service.app.inject({
    method: 'POST',
    url: '/api/keys',
    payload: { name },
    headers: { authorization: `Bearer ${observe.key}`, ...headers },
  });
  assert.equal(response.statusCode, 201, response.body);
  return response.json() as CreatedKey;
}

async function listKeys(observe: TestObserve): Promise<{ body: { keys: ApiKey[] }; raw: string }> {
  const response = await observe.call({ method: 'GET', url: '/api/keys' });
  assert.equal(response.statusCode, 200, response.body);
  return { body: response.json() as { keys: ApiKey[] }, raw: response.body };
}

async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 3000;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  assert.fail(`timed out waiting for ${what}`);
}

await describeEachDatabase('API keys: first start-up', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend, { createKey: false });
  });
  after(() => observe.close());

  test('while no active key exists, POST /api/keys needs no Authorization; afterwards it does', async () => {
    // Nothing but key creation is open on first start-up.
    assertErrorBody(await anonymous(observe, { method: 'GET', url: '/api/keys' }), 401, 'GET /api/keys before any key');
    assertErrorBody(await anonymous(observe, { method: 'GET', url: '/api/sessions' }), 401, 'GET /api/sessions before any key');

    const first = await anonymous(observe, { method: 'POST', url: '/api/keys', payload: { name: 'first' } });
    assert.equal(first.statusCode, 201, first.body);
    const created = first.json() as CreatedKey;
    assert.equal(first.body.includes(sha256(created.key)), false, 'the hash is not returned');
    for (const field of ['id', 'name', 'prefix', 'createdAt', 'key'] as const) assert.equal(typeof created[field], 'string', field);
    assert.deepEqual(created.scopes, ['admin'], 'the first key has full access');
    assert.equal(created.name, 'first');
    assert.equal(created.createdAt, NOW_ISO);
    assert.ok(created.key.length >= 32, 'the raw key is long');
    assert.ok(created.key.startsWith(created.prefix), 'the prefix is the start of the raw key');
    assert.ok(created.prefix.length < created.key.length, 'the prefix is not the whole key');

    // Now a key exists: no header is 401, a valid key is 201.
    assertErrorBody(await anonymous(observe, { method: 'POST', url: '/api/keys', payload: { name: 'second' } }), 401, 'second anonymous POST');
    assertErrorBody(
      await anonymous(observe, { method: 'POST', url: '/api/keys', payload: { name: 'second' }, headers: { authorization: 'Bearer vgl_wrong' } }),
      401,
      'POST with a wrong key',
    );
    const second = await anonymous(observe, {
      method: 'POST',
      url: '/api/keys',
      payload: { name: 'second' },
      headers: { authorization: `Bearer ${created.key}` },
    });
    assert.equal(second.statusCode, 201, second.body);
    const secondKey = second.json() as CreatedKey;
    assert.notEqual(secondKey.key, created.key);
    assert.notEqual(secondKey.id, created.id);

    // The new keys work.
    for (const key of [created.key, secondKey.key]) {
      const response = await anonymous(observe, { method: 'GET', url: '/api/sessions', headers: { authorization: `Bearer ${key}` } });
      assert.equal(response.statusCode, 200, response.body);
    }
  });

  test('a wrong key is 401 even while no active key exists', async () => {
    const fresh = await startTestObserve(backend, { createKey: false });
    try {
      assertErrorBody(await anonymous(fresh, { method: 'POST', url: '/api/keys', payload: { name: 'x' }, headers: { authorization: 'Bearer nope' } }), 401);
      // A bad body is still a 400 on the open bootstrap route, and creates nothing.
      assertErrorBody(await anonymous(fresh, { method: 'POST', url: '/api/keys', payload: { name: '' } }), 400);
      const ok = await anonymous(fresh, { method: 'POST', url: '/api/keys', payload: { name: 'first' } });
      assert.equal(ok.statusCode, 201, ok.body);
    } finally {
      await fresh.close();
    }
  });

  test('concurrent anonymous key creations on first start-up: exactly one succeeds', async () => {
    // "Allowed only while no active key exists": the check and the insert must be one atomic step,
    // or several racing callers all get a key without credentials.
    const fresh = await startTestObserve(backend, { createKey: false });
    try {
      const responses = await Promise.all([1, 2, 3, 4, 5].map((i) => anonymous(fresh, { method: 'POST', url: '/api/keys', payload: { name: `racer-${i}` } })));
      const statuses = responses.map((r) => r.statusCode).sort();
      assert.deepEqual(statuses, [201, 401, 401, 401, 401], `statuses: ${statuses.join(',')}`);
      const rows = await fresh.service.context.database.db.selectFrom('api_keys').select('id').execute();
      assert.equal(rows.length, 1);
    } finally {
      await fresh.close();
    }
  });

  test('once every key is revoked, key creation without Authorization is open again, which the answer and the log say', async () => {
    const fresh = await startTestObserve(backend);
    try {
      const { body } = await listKeys(fresh);
      assert.equal(body.keys.length, 1);
      const warn = mock.method(fresh.service.app.log, 'warn');
      const revoked = await fresh.call({ method: 'DELETE', url: `/api/keys/${body.keys[0]!.id}` });
      assert.equal(revoked.statusCode, 200, revoked.body);
      const { warning } = revoked.json() as { warning?: string };
      assert.match(warning ?? '', /no active API key is left.*POST \/api\/keys without credentials/);
      assert.deepEqual(
        warn.mock.calls.map((call) => call.arguments[1]),
        [warning],
      );
      const reopened = await anonymous(fresh, { method: 'POST', url: '/api/keys', payload: { name: 'recovery' } });
      assert.equal(reopened.statusCode, 201, reopened.body);
      assertErrorBody(await anonymous(fresh, { method: 'POST', url: '/api/keys', payload: { name: 'again' } }), 401);
    } finally {
      await fresh.close();
    }
  });

  test('while observe listens beyond loopback, revoking the last key is refused (409 last_key) unless forced', async () => {
    const exposed = await startTestObserve(backend, { env: { HOST: '0.0.0.0' } });
    try {
      const first = (await listKeys(exposed)).body.keys[0]!;
      const second = await createKey(exposed, 'second');
      // Another key stays active: no warning.
      const revokedSecond = await exposed.call({ method: 'DELETE', url: `/api/keys/${second.id}` });
      assert.deepEqual(revokedSecond.json(), { id: second.id, revoked: true });

      const refused = assertErrorBody(await exposed.call({ method: 'DELETE', url: `/api/keys/${first.id}` }), 409, 'revoking the last key');
      assert.match(refused.error, /last active API key.*\?force=true/);
      assertErrorBody(await exposed.call({ method: 'DELETE', url: `/api/keys/${first.id}?force=yes` }), 400, 'force=yes');
      // Nothing changed: the key works and the bootstrap stays closed.
      assert.equal((await listKeys(exposed)).body.keys.find((key) => key.id === first.id)!.revokedAt, null);
      assertErrorBody(await anonymous(exposed, { method: 'POST', url: '/api/keys', payload: { name: 'intruder' } }), 401);

      const forced = await exposed.call({ method: 'DELETE', url: `/api/keys/${first.id}?force=true` });
      assert.equal(forced.statusCode, 200, forced.body);
      assert.match((forced.json() as { warning?: string }).warning ?? '', /listens beyond this machine \(0\.0\.0\.0\)/);
    } finally {
      await exposed.close();
    }
  });
});

await describeEachDatabase('API keys: list, revoke, storage', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  test('GET /api/keys lists metadata only, never the raw key or its hash', async () => {
    const extra = await createKey(observe, 'ci');
    const { body, raw } = await listKeys(observe);
    assert.deepEqual(Object.keys(body), ['keys']);
    assert.equal(body.keys.length, 2);
    for (const key of body.keys) {
      assert.deepEqual(Object.keys(key).sort(), ['createdAt', 'id', 'lastUsedAt', 'name', 'prefix', 'revokedAt', 'scopes']);
      assert.match(key.createdAt, ISO_MS);
      assert.equal(key.revokedAt, null);
    }
    const byName = new Map(body.keys.map((k) => [k.name, k]));
    assert.equal(byName.get('ci')!.id, extra.id);
    assert.equal(byName.get('ci')!.prefix, extra.prefix);
    assert.equal(byName.get('ci')!.createdAt, extra.createdAt);
    assert.ok(byName.has('test'));
    for (const secret of [observe.key, extra.key]) {
      assert.equal(raw.includes(secret), false, 'raw key in the list');
      assert.equal(raw.includes(sha256(secret)), false, 'key hash in the list');
    }
  });

  test('lastUsedAt records the use of a key', async () => {
    const key = await createKey(observe, 'used');
    const before = (await listKeys(observe)).body.keys.find((k) => k.id === key.id)!;
    assert.equal(before.lastUsedAt, null);
    const use = await anonymous(observe, { method: 'GET', url: '/api/sessions', headers: { authorization: `Bearer ${key.key}` } });
    assert.equal(use.statusCode, 200);
    await waitFor(async () => (await listKeys(observe)).body.keys.find((k) => k.id === key.id)!.lastUsedAt === NOW_ISO, 'lastUsedAt');
  });

  test('DELETE /api/keys/:id revokes the key: it then gets 401, other keys keep working', async () => {
    const victim = await createKey(observe, 'to-revoke');
    const before = await anonymous(observe, { method: 'GET', url: '/api/agents', headers: { authorization: `Bearer ${victim.key}` } });
    assert.equal(before.statusCode, 200);

    const response = await observe.call({ method: 'DELETE', url: `/api/keys/${victim.id}` });
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json(), { id: victim.id, revoked: true });

    for (const [method, url] of [
      ['GET', '/api/agents'],
      ['GET', '/api/keys'],
      ['POST', '/api/keys'],
    ] as const) {
      assertErrorBody(
        await anonymous(observe, { method, url, payload: method === 'POST' ? { name: 'x' } : undefined, headers: { authorization: `Bearer ${victim.key}` } }),
        401,
        `${method} ${url} with a revoked key`,
      );
    }
    const listed = (await listKeys(observe)).body.keys.find((k) => k.id === victim.id)!;
    assert.equal(listed.revokedAt, NOW_ISO);
    assert.equal((await observe.call({ method: 'GET', url: '/api/agents' })).statusCode, 200);
  });

  test('DELETE of an unknown key is 404 in the service error body', async () => {
    assertErrorBody(await observe.call({ method: 'DELETE', url: '/api/keys/01JUNKNOWNKEY0000000000000' }), 404);
  });

  test('a missing or invalid bearer is 401 { error, status: 401 }', async () => {
    const cases: Array<Record<string, string>> = [
      {},
      { authorization: '' },
      { authorization: 'Bearer' },
      { authorization: 'Bearer ' },
      { authorization: 'Bearer vgl_not-a-real-key' },
      { authorization: `Basic ${Buffer.from(`user:${observe.key}`).toString('base64')}` },
      { authorization: observe.key },
      { authorization: `Bearer ${observe.key}x` },
      { authorization: `Bearer ${observe.key.slice(0, -1)}` },
      { authorization: `Bearer ${sha256(observe.key)}` },
    ];
    for (const headers of cases) {
      const response = await anonymous(observe, { method: 'GET', url: '/api/sessions', headers });
      assertErrorBody(response, 401, JSON.stringify(headers));
      assert.deepEqual(Object.keys(response.json() as object).sort(), ['code', 'error', 'status']);
    }
  });

  test('the key is stored only as its SHA-256 hex digest', async () => {
    const created = await createKey(observe, 'stored');
    const row = await observe.service.context.database.db.selectFrom('api_keys').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
    assert.equal(row.key_hash, sha256(created.key));
    assert.match(row.key_hash, /^[0-9a-f]{64}$/);
    assert.equal(JSON.stringify(row).includes(created.key), false, 'raw key stored in the row');
    for (const value of Object.values(row)) {
      if (typeof value === 'string') assert.notEqual(value, created.key);
    }
    assert.equal(row.name, 'stored');
    assert.equal(row.prefix, created.prefix);
    // Also none of the other keys is stored raw anywhere in the table.
    const all = JSON.stringify(await observe.service.context.database.db.selectFrom('api_keys').selectAll().execute());
    assert.equal(all.includes(observe.key), false);
  });
});

await describeEachDatabase('AUTH_DISABLED=true', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend, { env: { AUTH_DISABLED: 'true' }, createKey: false });
  });
  after(() => observe.close());

  test('requests without a key succeed', async () => {
    const ingest = await anonymous(observe, {
      method: 'POST',
      url: '/api/events',
      payload: { events: [{ sessionId: 's-open', agentId: 'a', eventType: 'custom', payload: { type: 't', data: 1 } }] },
    });
    assert.equal(ingest.statusCode, 201, ingest.body);
    for (const url of ['/api/sessions', '/api/sessions/s-open', '/api/agents', '/api/keys', '/api/config', '/api/stats']) {
      const response = await anonymous(observe, { method: 'GET', url });
      assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
    }
    const key = await anonymous(observe, { method: 'POST', url: '/api/keys', payload: { name: 'k' } });
    assert.equal(key.statusCode, 201, key.body);
    // Still open after a key exists.
    assert.equal((await anonymous(observe, { method: 'GET', url: '/api/sessions' })).statusCode, 200);
    assert.equal((await anonymous(observe, { method: 'POST', url: '/api/keys', payload: { name: 'k2' } })).statusCode, 201);
  });
});

await describeEachDatabase('authentication: route-table walk', (backend) => {
  let observe: TestObserve;
  before(async () => {
    // With a service token configured, the service-token route answers 401 like the others (503 without one).
    // The dashboard's gate proxy points at a closed port, so its public routes answer without any gate.
    observe = await startTestObserve(backend, {
      env: { INTERNAL_SERVICE_TOKEN: 'route-walk-service-token-0123456789', GATE_URL: 'http://127.0.0.1:9' },
    });
  });
  after(() => observe.close());

  const concrete = (url: string): string => url.replace(/:[A-Za-z_][A-Za-z0-9_]*/g, 'x').replace(/\*/g, 'x');
  const bodyFor = (method: string): object | undefined => (['POST', 'PUT', 'PATCH'].includes(method) ? {} : undefined);

  const isApi = (url: string): boolean => url === '/api' || url.startsWith('/api/');

  test('the only public API routes are GET /api/health and the OpenAPI document; the only bootstrap route is POST /api/keys', () => {
    const table = observe.service.app.routeTable;
    assert.ok(table.length > 10, 'the route table lists the routes');
    const publicRoutes = table.filter((r) => r.auth === 'public' && isApi(r.url)).map((r) => `${r.method} ${r.url}`);
    assert.deepEqual(publicRoutes.sort(), ['GET /api/health', 'GET /api/openapi.json']);
    // Outside /api: the OTLP trace receiver (a key required, at the path OTLP exporters post to), and
    // the dashboard's files and its gate proxy (the gate authenticates those calls), public; /metrics checks its own access;
    // MCP over Streamable HTTP (any key; each tool then needs its route's scope).
    const dashboardRoutes = table
      .filter((r) => !isApi(r.url) && r.auth !== 'metrics')
      .map((r) => `${r.method} ${r.url} ${r.auth}`)
      .sort();
    assert.deepEqual(dashboardRoutes, [
      'DELETE /gate/api/* public',
      'DELETE /mcp required',
      'GET / public',
      'GET /* public',
      'GET /assets/* public',
      'GET /gate/api/* public',
      'GET /mcp required',
      'PATCH /gate/api/* public',
      'POST /gate/api/* public',
      'POST /mcp required',
      'POST /v1/traces required',
      'PUT /gate/api/* public',
    ]);
    const bootstrapRoutes = table.filter((r) => r.auth === 'bootstrap').map((r) => `${r.method} ${r.url}`);
    assert.deepEqual(bootstrapRoutes, ['POST /api/keys']);
    const signedRoutes = table.filter((r) => r.auth === 'signature').map((r) => `${r.method} ${r.url}`);
    assert.deepEqual(signedRoutes, ['POST /api/events/ingest', 'POST /api/events/ingest/batch']);
    const serviceRoutes = table.filter((r) => r.auth === 'service').map((r) => `${r.method} ${r.url}`);
    // The gate's link (INTERNAL_SERVICE_TOKEN): breach reports, budget spend reads, agent pauses.
    assert.deepEqual(serviceRoutes, ['POST /api/internal/agents/:id/pause', 'POST /api/internal/eval/guardrail-breach', 'POST /api/internal/spend']);
    // The event stream also takes a short-lived stream token (?token=), for browsers' EventSource.
    const streamRoutes = table.filter((r) => r.auth === 'stream').map((r) => `${r.method} ${r.url}`);
    assert.deepEqual(streamRoutes, ['GET /api/stream']);
    // The Prometheus scrape: admitted by client address or METRICS_TOKEN, never by an API key (system/metrics.test.ts).
    const metricsRoutes = table.filter((r) => r.auth === 'metrics').map((r) => `${r.method} ${r.url}`);
    assert.deepEqual(metricsRoutes, ['GET /metrics']);
    assert.ok(table.every((r) => ['public', 'bootstrap', 'required', 'signature', 'service', 'stream', 'metrics'].includes(r.auth)));
    // The table covers the routes the tests below rely on.
    for (const route of [
      'GET /api/sessions',
      'DELETE /api/keys/:id',
      'POST /api/agents/:id/resume',
      'PUT /api/config',
      'GET /api/memory/*',
      'POST /api/eval/sessions/:sessionId/compliance',
      'POST /api/eval/sessions/:sessionId/score',
      'POST /api/datasets/:id/runs',
      'GET /api/runs/:id',
    ]) {
      assert.ok(
        table.some((r) => `${r.method} ${r.url}` === route),
        route,
      );
    }
  });

  test('without Authorization every non-public route is 401 (key creation too, once a key exists)', async () => {
    for (const route of observe.service.app.routeTable) {
      const url = concrete(route.url);
      // From outside the metrics allow-list (loopback by default), so the scrape needs its token too.
      const response = await anonymous(observe, {
        method: route.method as InjectOptions['method'],
        url,
        payload: bodyFor(route.method),
        remoteAddress: '203.0.113.50',
      });
      const label = `${route.method} ${route.url}`;
      if (route.auth === 'public' && !isApi(route.url)) {
        // Dashboard files (200, 404 for an unknown asset, 503 while unbuilt) and the gate proxy (502: no gate here).
        assert.notEqual(response.statusCode, 401, label);
        if (route.url.startsWith('/gate/')) assert.equal(response.statusCode, 502, `${label}: ${response.body}`);
      } else if (route.auth === 'public') {
        assert.equal(response.statusCode, 200, label);
      } else {
        assertErrorBody(response, 401, label);
      }
    }
  });

  test('with a wrong key every non-public route is 401', async () => {
    for (const route of observe.service.app.routeTable) {
      if (route.auth === 'public') continue;
      const response = await anonymous(observe, {
        method: route.method as InjectOptions['method'],
        url: concrete(route.url),
        payload: bodyFor(route.method),
        headers: { authorization: 'Bearer vgl_wrong-key-0000000000000000000000000000' },
        remoteAddress: '203.0.113.50',
      });
      assertErrorBody(response, 401, `${route.method} ${route.url}`);
    }
  });

  test('GET /api/health says whether the open first-key bootstrap is closed, loopback-only or exposed', async () => {
    const bootstrapOf = async (service: TestObserve) =>
      ((await anonymous(service, { method: 'GET', url: '/api/health' })).json() as { firstKeyBootstrap: string }).firstKeyBootstrap;
    const local = await startTestObserve(backend, { createKey: false, env: { HOST: '127.0.0.1' } });
    const exposed = await startTestObserve(backend, { createKey: false, env: { HOST: '0.0.0.0' } });
    try {
      assert.equal(await bootstrapOf(local), 'loopback');
      assert.equal(await bootstrapOf(exposed), 'exposed');
      const first = await anonymous(exposed, { method: 'POST', url: '/api/keys', payload: { name: 'first' } });
      assert.equal(first.statusCode, 201, first.body);
      assert.equal(await bootstrapOf(exposed), 'closed', 'a key exists: the bootstrap is closed');
    } finally {
      await local.close();
      await exposed.close();
    }
  });

  test('GET /api/health needs no key', async () => {
    const response = await anonymous(observe, { method: 'GET', url: '/api/health' });
    assert.equal(response.statusCode, 200);
    assert.equal((response.json() as { status: string }).status, 'ok');
  });
});
