import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import type { InjectOptions } from 'fastify';
import { buildGateService } from '../app.ts';
import { assertGateError, CHAT_CONFIGURED_ENV, startTestGate, TEST_ADMIN_KEY, type TestGate } from '../testing.ts';
import { routeScopes, SCOPES, type Scope } from './scopes.ts';

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

interface KeyBody {
  id: string;
  key?: string;
  name: string;
  scopes: string[];
  rateLimit: number | null;
}

/**
 * A request for the route that, once past authentication, can only end in a validation error or a
 * 404 (unknown id): the walk never changes any state that matters to it.
 */
function probe(method: string, url: string): InjectOptions {
  const concrete = url.replace(/:[A-Za-z]+/g, 'no-such-id-0000');
  const withBody = method === 'POST' || method === 'PUT' || method === 'PATCH';
  return { method: method as InjectOptions['method'], url: concrete, ...(withBody && { payload: {} }) };
}

/** The scope each route of the gate needs (docs/reference/api.md shows it per operation). */
const EXPECTED_SCOPES: Record<string, Scope | 'public' | 'any'> = {
  'GET /health': 'public',
  'POST /api/requests': 'request:create',
  'GET /api/requests': 'request:read',
  'GET /api/requests/:id': 'request:read',
  'POST /api/requests/:id/decide': 'request:decide',
  'POST /api/requests/:id/confirm': 'request:create',
  'GET /api/requests/:id/audit': 'request:read',
  'GET /api/audit/public-key': 'request:read',
  'GET /api/audit/checkpoint': 'request:read',
  'POST /api/audit/checkpoint': 'admin',
  'GET /api/audit/consistency': 'request:read',
  'GET /api/audit/inclusion': 'request:read',
  'GET /api/policies': 'admin',
  'POST /api/policies': 'admin',
  'PUT /api/policies/:id': 'admin',
  'DELETE /api/policies/:id': 'admin',
  'POST /api/api-keys': 'admin',
  'GET /api/api-keys': 'admin',
  'PATCH /api/api-keys/:id': 'admin',
  'DELETE /api/api-keys/:id': 'admin',
  'GET /api/webhooks': 'webhook:manage',
  'POST /api/webhooks': 'webhook:manage',
  'PATCH /api/webhooks/:id': 'webhook:manage',
  'DELETE /api/webhooks/:id': 'webhook:manage',
  'DELETE /api/subjects/:id': 'admin',
  'GET /api/erasures/:id': 'request:read',
  'GET /api/audit/erasures': 'request:read',
};

/** Public routes authenticated by a chat platform's signature instead of a key (chat/routes.ts). */
const SIGNED_BY_PLATFORM = new Set(['POST /api/chat/slack/interactions', 'POST /api/chat/discord/interactions']);

await describeEachDatabase('gate authentication and scopes', (backend) => {
  let gate: TestGate;
  let keyOf: Map<Scope, string>;
  /** The scope each route declares where it is registered (`public`: it takes no key), by `METHOD /url`. */
  let scopeOf: Record<string, Scope | 'public' | 'any'>;

  before(async () => {
    // Both chat platforms configured, so their interaction routes are walked too.
    gate = await startTestGate(backend, { env: CHAT_CONFIGURED_ENV });
    scopeOf = routeScopes(gate.service.app.routeTable);
    keyOf = await gate.keyPerScope();
  });
  after(() => gate.close());

  const routes = (): { method: string; url: string; id: string }[] =>
    gate.service.app.routeTable.map((r) => ({ method: r.method, url: r.url, id: `${r.method} ${r.url}` }));

  test('every route of the app that takes a key declares its scope, and every other route none', () => {
    const table = routes().map((r) => r.id);
    assert.ok(table.length >= Object.keys(EXPECTED_SCOPES).length, `route table too short: ${table.join(', ')}`);
    assert.equal(new Set(table).size, table.length, 'a route is registered twice');
    for (const route of gate.service.app.routeTable) {
      const id = `${route.method} ${route.url}`;
      assert.equal(route.takesKey, route.auth === 'required', id);
      if (route.takesKey) assert.ok(route.scope !== undefined, `route ${id} declares no scope`);
      else assert.equal(route.scope, undefined, `route ${id} takes no key but declares a scope`);
    }
  });

  test('the routes declare the scope each endpoint needs', () => {
    for (const [id, scope] of Object.entries(EXPECTED_SCOPES)) {
      assert.equal(scopeOf[id], scope, id);
    }
    // Anything beyond those endpoints still needs a key, but for the OpenAPI document (schemas only, no data).
    for (const [id, scope] of Object.entries(scopeOf)) {
      if (!(id in EXPECTED_SCOPES) && id !== 'GET /api/openapi.json' && id !== 'GET /metrics' && !SIGNED_BY_PLATFORM.has(id)) {
        assert.notEqual(scope, 'public', `${id} is public though only /health is`);
      }
    }
    assert.equal(scopeOf['GET /api/openapi.json'], 'public');
  });

  test('every route × every scope: 403 forbidden exactly when the scope does not grant the route', async () => {
    let checked = 0;
    for (const route of routes()) {
      const required = scopeOf[route.id];
      assert.ok(required !== undefined, route.id);
      for (const scope of SCOPES) {
        const granted = required === 'public' || required === 'any' || scope === 'admin' || scope === required;
        const response = await gate.call(probe(route.method, route.url), keyOf.get(scope)!);
        const context = `${route.id} with a ${scope} key`;
        if (SIGNED_BY_PLATFORM.has(route.id)) {
          // No key opens these: only the chat platform's signature, which the probe lacks.
          assertGateError(response, 401, 'unauthorized', context);
        } else if (granted) {
          assert.ok(response.statusCode !== 401 && response.statusCode !== 403, `${context}: ${response.statusCode} ${response.body}`);
          assert.ok(response.statusCode < 500, `${context}: ${response.statusCode} ${response.body}`);
        } else {
          assertGateError(response, 403, 'forbidden', context);
        }
        checked += 1;
      }
    }
    assert.equal(checked, routes().length * SCOPES.length);
  });

  test('every non-public route answers 401 unauthorized without a key, with a wrong key and with a malformed header', async () => {
    for (const route of routes()) {
      if (scopeOf[route.id] === 'public') continue;
      const request = probe(route.method, route.url);
      const missing = await gate.service.app.inject(request);
      assertGateError(missing, 401, 'unauthorized', `${route.id} without a key`);
      const wrong = await gate.call(request, 'gk_this_key_does_not_exist_0000000000');
      assertGateError(wrong, 401, 'unauthorized', `${route.id} with a wrong key`);
      const malformed = await gate.service.app.inject({ ...request, headers: { authorization: `Basic ${TEST_ADMIN_KEY}` } });
      assertGateError(malformed, 401, 'unauthorized', `${route.id} with a non-bearer header`);
    }
  });

  test('GET /health needs no key', async () => {
    const response = await gate.service.app.inject({ method: 'GET', url: '/health' });
    assert.equal(response.statusCode, 200, response.body);
    assert.equal((response.json() as { status: string }).status, 'ok');
    const deep = await gate.service.app.inject({ method: 'GET', url: '/health?deep=true' });
    assert.equal(deep.statusCode, 200, deep.body);
  });

  test('request:create does not grant decide; PUT and DELETE /api/policies/:id need admin', async () => {
    const creator = keyOf.get('request:create')!;
    const created = await gate.call({ method: 'POST', url: '/api/requests', payload: { action: 'deploy' } }, creator);
    assert.equal(created.statusCode, 201, created.body);
    const id = (created.json() as { id: string }).id;
    const decide = await gate.call({ method: 'POST', url: `/api/requests/${id}/decide`, payload: { decision: 'approved' } }, creator);
    assertGateError(decide, 403, 'forbidden', 'request:create deciding');
    const still = await gate.call({ method: 'GET', url: `/api/requests/${id}` });
    assert.equal((still.json() as { status: string }).status, 'pending');

    const policy = await gate.call({
      method: 'POST',
      url: '/api/policies',
      payload: { name: 'p', priority: 10, rules: [{ match: { action: 'never-matches' }, decision: 'route_to_human' }] },
    });
    assert.equal(policy.statusCode, 201, policy.body);
    const policyId = (policy.json() as { id: string }).id;
    for (const scope of SCOPES.filter((s) => s !== 'admin')) {
      const put = await gate.call({ method: 'PUT', url: `/api/policies/${policyId}`, payload: { name: 'renamed' } }, keyOf.get(scope)!);
      assertGateError(put, 403, 'forbidden', `PUT with ${scope}`);
      const del = await gate.call({ method: 'DELETE', url: `/api/policies/${policyId}` }, keyOf.get(scope)!);
      assertGateError(del, 403, 'forbidden', `DELETE with ${scope}`);
    }
    const put = await gate.call({ method: 'PUT', url: `/api/policies/${policyId}`, payload: { name: 'renamed' } }, keyOf.get('admin')!);
    assert.equal(put.statusCode, 200, put.body);
    assert.equal((put.json() as { name: string }).name, 'renamed');
    const del = await gate.call({ method: 'DELETE', url: `/api/policies/${policyId}` }, keyOf.get('admin')!);
    assert.equal(del.statusCode, 200, del.body);
  });

  test('decidedBy of a decision taken with a key is api:<key name>', async () => {
    const created = await gate.call({ method: 'POST', url: '/api/requests', payload: { action: 'deploy' } });
    const id = (created.json() as { id: string }).id;
    const decided = await gate.call(
      { method: 'POST', url: `/api/requests/${id}/decide`, payload: { decision: 'denied', reason: 'no' } },
      keyOf.get('request:decide')!,
    );
    assert.equal(decided.statusCode, 200, decided.body);
    assert.equal((decided.json() as { decidedBy: string }).decidedBy, 'api:only-request:decide');
  });
});

await describeEachDatabase('gate API keys', (backend) => {
  let gate: TestGate;
  before(async () => {
    gate = await startTestGate(backend);
  });
  after(() => gate.close());

  const keyCount = async (): Promise<number> =>
    Number(
      (
        await gate.service.context.database.db
          .selectFrom('api_keys')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  test('POST /api/api-keys answers 201 {id, key, name, scopes, rateLimit}; the key is shown once and stored as SHA-256 only', async () => {
    const response = await gate.call({
      method: 'POST',
      url: '/api/api-keys',
      payload: { name: 'ci-bot', scopes: ['request:create', 'request:read'], rateLimit: 120 },
    });
    assert.equal(response.statusCode, 201, response.body);
    const body = response.json() as KeyBody;
    assert.equal(typeof body.id, 'string');
    assert.ok(body.id.length > 0);
    assert.equal(typeof body.key, 'string');
    assert.ok(body.key!.length >= 32, 'the key is long and random');
    assert.equal(body.name, 'ci-bot');
    assert.deepEqual([...body.scopes].sort(), ['request:create', 'request:read']);
    assert.equal(body.rateLimit, 120);

    // The raw key works.
    const use = await gate.call({ method: 'GET', url: '/api/requests' }, body.key);
    assert.equal(use.statusCode, 200, use.body);

    // Stored as its SHA-256 only: no column holds the raw key.
    const row = await gate.service.context.database.db.selectFrom('api_keys').selectAll().where('id', '=', body.id).executeTakeFirstOrThrow();
    assert.equal(row.key_hash, sha256(body.key!));
    for (const [column, value] of Object.entries(row)) {
      assert.ok(!String(value).includes(body.key!), `column ${column} holds the raw key`);
    }

    // Listing shows the key without any secret.
    const list = await gate.call({ method: 'GET', url: '/api/api-keys' });
    assert.equal(list.statusCode, 200, list.body);
    assert.ok(!list.body.includes(body.key!), 'the raw key is listed');
    assert.ok(!list.body.includes(row.key_hash), 'the key hash is listed');
    const keys = (list.json() as { keys: (KeyBody & Record<string, unknown>)[] }).keys;
    const listed = keys.find((k) => k.id === body.id);
    assert.ok(listed, 'the new key is listed');
    assert.equal(listed.name, 'ci-bot');
    assert.equal(listed.rateLimit, 120);
    assert.deepEqual([...listed.scopes].sort(), ['request:create', 'request:read']);
    assert.equal('key' in listed, false);
    assert.equal('keyHash' in listed, false);
    assert.equal('key_hash' in listed, false);
    // The bootstrap admin key is listed too, without its secret.
    assert.ok(!list.body.includes(TEST_ADMIN_KEY));
    assert.ok(keys.some((k) => k.scopes.includes('admin')));
  });

  test('rateLimit omitted means null (unlimited)', async () => {
    const response = await gate.call({ method: 'POST', url: '/api/api-keys', payload: { name: 'unlimited', scopes: ['request:read'] } });
    assert.equal(response.statusCode, 201, response.body);
    assert.equal((response.json() as KeyBody).rateLimit, null);
  });

  test('PATCH changes name, scopes and rateLimit; a scope change takes effect on the next request', async () => {
    const created = (await gate.call({ method: 'POST', url: '/api/api-keys', payload: { name: 'reader', scopes: ['request:read'] } })).json() as KeyBody;
    const key = created.key!;
    assert.equal((await gate.call({ method: 'GET', url: '/api/requests' }, key)).statusCode, 200);
    assertGateError(await gate.call({ method: 'GET', url: '/api/webhooks' }, key), 403, 'forbidden', 'before the change');

    const patched = await gate.call({
      method: 'PATCH',
      url: `/api/api-keys/${created.id}`,
      payload: { name: 'hook-admin', scopes: ['webhook:manage'], rateLimit: 50 },
    });
    assert.equal(patched.statusCode, 200, patched.body);
    const body = patched.json() as KeyBody;
    assert.equal(body.id, created.id);
    assert.equal(body.name, 'hook-admin');
    assert.deepEqual(body.scopes, ['webhook:manage']);
    assert.equal(body.rateLimit, 50);
    assert.equal('key' in body, false, 'PATCH never returns the key');

    // The very next requests see the new scopes.
    assert.equal((await gate.call({ method: 'GET', url: '/api/webhooks' }, key)).statusCode, 200);
    assertGateError(await gate.call({ method: 'GET', url: '/api/requests' }, key), 403, 'forbidden', 'after the change');

    // A subset: only the name.
    const renamed = await gate.call({ method: 'PATCH', url: `/api/api-keys/${created.id}`, payload: { name: 'renamed' } });
    assert.equal(renamed.statusCode, 200, renamed.body);
    assert.deepEqual((renamed.json() as KeyBody).scopes, ['webhook:manage']);
    assert.equal((renamed.json() as KeyBody).rateLimit, 50);
    // rateLimit back to unlimited.
    const unlimited = await gate.call({ method: 'PATCH', url: `/api/api-keys/${created.id}`, payload: { rateLimit: null } });
    assert.equal(unlimited.statusCode, 200, unlimited.body);
    assert.equal((unlimited.json() as KeyBody).rateLimit, null);
    const list = (await gate.call({ method: 'GET', url: '/api/api-keys' })).json() as { keys: KeyBody[] };
    assert.equal(list.keys.find((k) => k.id === created.id)?.name, 'renamed');
  });

  test('DELETE revokes: the revoked key gets 401 at once', async () => {
    const created = (await gate.call({ method: 'POST', url: '/api/api-keys', payload: { name: 'doomed', scopes: ['admin'] } })).json() as KeyBody;
    assert.equal((await gate.call({ method: 'GET', url: '/api/api-keys' }, created.key)).statusCode, 200);
    const revoked = await gate.call({ method: 'DELETE', url: `/api/api-keys/${created.id}` });
    assert.equal(revoked.statusCode, 200, revoked.body);
    assert.deepEqual(revoked.json(), { id: created.id, revoked: true });
    assertGateError(await gate.call({ method: 'GET', url: '/api/api-keys' }, created.key), 401, 'unauthorized', 'revoked key');
    assertGateError(await gate.call({ method: 'GET', url: '/api/requests' }, created.key), 401, 'unauthorized', 'revoked key on another route');
    const listed = ((await gate.call({ method: 'GET', url: '/api/api-keys' })).json() as { keys: (KeyBody & { revokedAt: string | null })[] }).keys.find(
      (k) => k.id === created.id,
    );
    assert.ok(listed?.revokedAt, 'the list shows when the key was revoked');
  });

  if (backend.kind === 'postgres') {
    test('two instances: a key revoked or narrowed through A stops working on B within GATE_CACHE_REFRESH_MS', async () => {
      const other = await buildGateService({ ...gate.config }, { runJobs: false, clock: gate.clock });
      const viaB = (request: InjectOptions, key: string) => other.app.inject({ ...request, headers: { authorization: `Bearer ${key}` } });
      try {
        const created = (await gate.call({ method: 'POST', url: '/api/api-keys', payload: { name: 'roaming', scopes: ['admin'] } })).json() as KeyBody;
        // A key created anywhere works everywhere at once (unknown keys are never cached).
        assert.equal((await viaB({ method: 'GET', url: '/api/api-keys' }, created.key!)).statusCode, 200);

        assert.equal((await gate.call({ method: 'PATCH', url: `/api/api-keys/${created.id}`, payload: { scopes: ['request:read'] } })).statusCode, 200);
        assertGateError(await gate.call({ method: 'GET', url: '/api/api-keys' }, created.key), 403, 'forbidden', 'narrowed key on A at once');
        gate.clock.advance(gate.config.cacheRefreshMs);
        assertGateError(await viaB({ method: 'GET', url: '/api/api-keys' }, created.key!), 403, 'forbidden', 'narrowed key on B after the interval');

        assert.equal((await gate.call({ method: 'DELETE', url: `/api/api-keys/${created.id}` })).statusCode, 200);
        assertGateError(await gate.call({ method: 'GET', url: '/api/requests' }, created.key), 401, 'unauthorized', 'revoked key on A at once');
        gate.clock.advance(gate.config.cacheRefreshMs);
        assertGateError(await viaB({ method: 'GET', url: '/api/requests' }, created.key!), 401, 'unauthorized', 'revoked key on B after the interval');
      } finally {
        await other.app.close();
      }
    });
  }

  test('PATCH and DELETE of an unknown key are 404 not_found', async () => {
    assertGateError(await gate.call({ method: 'PATCH', url: '/api/api-keys/no-such-key', payload: { name: 'x' } }), 404, 'not_found', 'PATCH');
    assertGateError(await gate.call({ method: 'DELETE', url: '/api/api-keys/no-such-key' }), 404, 'not_found', 'DELETE');
  });

  test('invalid bodies are 400 bad_request and store nothing', async () => {
    const before = await keyCount();
    const invalid: object[] = [
      { name: 'x', scopes: ['request:everything'] },
      { name: 'x', scopes: [] },
      { name: 'x', scopes: ['request:read'], rateLimit: 0 },
      { name: 'x', scopes: ['request:read'], rateLimit: -5 },
      { name: 'x', scopes: ['request:read'], rateLimit: 1.5 },
      { name: '', scopes: ['request:read'] },
      { scopes: ['request:read'] },
      { name: 'x' },
    ];
    for (const payload of invalid) {
      assertGateError(await gate.call({ method: 'POST', url: '/api/api-keys', payload }), 400, 'bad_request', JSON.stringify(payload));
    }
    assert.equal(await keyCount(), before, 'an invalid key was stored');

    const target = (await gate.call({ method: 'POST', url: '/api/api-keys', payload: { name: 'target', scopes: ['request:read'] } })).json() as KeyBody;
    for (const payload of [{ scopes: ['nope'] }, { scopes: [] }, { rateLimit: 0 }]) {
      assertGateError(await gate.call({ method: 'PATCH', url: `/api/api-keys/${target.id}`, payload }), 400, 'bad_request', `PATCH ${JSON.stringify(payload)}`);
    }
    const unchanged = ((await gate.call({ method: 'GET', url: '/api/api-keys' })).json() as { keys: KeyBody[] }).keys.find((k) => k.id === target.id)!;
    assert.deepEqual(unchanged.scopes, ['request:read']);
    assert.equal(unchanged.rateLimit, null);
  });

  test('GATE_ADMIN_KEY is installed as an admin key', async () => {
    // The test gate was started with GATE_ADMIN_KEY = TEST_ADMIN_KEY.
    const response = await gate.service.app.inject({ method: 'GET', url: '/api/api-keys', headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } });
    assert.equal(response.statusCode, 200, response.body);
    const row = await gate.service.context.database.db
      .selectFrom('api_keys')
      .selectAll()
      .where('key_hash', '=', sha256(TEST_ADMIN_KEY))
      .executeTakeFirstOrThrow();
    assert.deepEqual(JSON.parse(row.scopes), ['admin']);
    assert.equal(gate.service.generatedAdminKey, null, 'no key is generated when GATE_ADMIN_KEY is set');
  });
});

await describeEachDatabase('gate admin key bootstrap', (backend) => {
  test('another GATE_ADMIN_KEY value works as admin for every admin route', async () => {
    const adminKey = 'gk_bootstrap_custom_admin_key_42424242';
    const other = await startTestGate(backend, { env: { GATE_ADMIN_KEY: adminKey } });
    try {
      const created = await other.call({ method: 'POST', url: '/api/api-keys', payload: { name: 'k', scopes: ['request:read'] } }, adminKey);
      assert.equal(created.statusCode, 201, created.body);
      const policies = await other.call({ method: 'GET', url: '/api/policies' }, adminKey);
      assert.equal(policies.statusCode, 200, policies.body);
      const hooks = await other.call({ method: 'GET', url: '/api/webhooks' }, adminKey);
      assert.equal(hooks.statusCode, 200, hooks.body);
      assertGateError(await other.call({ method: 'GET', url: '/api/policies' }, TEST_ADMIN_KEY), 401, 'unauthorized', 'the default test key is not installed');
    } finally {
      await other.close();
    }
  });

  test('without GATE_ADMIN_KEY and with no key, an admin key is generated once', async () => {
    const other = await startTestGate(backend, { env: { GATE_ADMIN_KEY: '' } });
    try {
      const generated = other.service.generatedAdminKey;
      assert.equal(typeof generated, 'string');
      const response = await other.call({ method: 'GET', url: '/api/api-keys' }, generated!);
      assert.equal(response.statusCode, 200, response.body);
      const keys = (response.json() as { keys: KeyBody[] }).keys;
      assert.equal(keys.length, 1);
      assert.deepEqual(keys[0]!.scopes, ['admin']);
      assert.ok(!response.body.includes(generated!));
    } finally {
      await other.close();
    }
  });
});

describe('scope table shape', () => {
  test('SCOPES are exactly the five of docs/api.md', () => {
    assert.deepEqual([...SCOPES].sort(), ['admin', 'request:create', 'request:decide', 'request:read', 'webhook:manage']);
  });
});
