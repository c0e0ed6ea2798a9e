import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import { migrateToLatest, openDatabase } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { observeMigrations } from '../migrations.ts';
import { assertErrorBody, startTestObserve, type TestObserve } from '../testing.ts';
import { OBSERVE_SCOPES, routeScopes, type ObserveScope } from './scopes.ts';

interface KeyBody {
  id: string;
  key?: string;
  name: string;
  scopes: string[];
}

/** The routes that take an API key: every route but the public, service-token and dashboard ones. */
const KEYED_POLICIES = new Set(['required', 'bootstrap', 'signature', 'stream']);

/**
 * A request for the route that, once past authentication, ends in a validation error, a 404 for
 * the unknown id or a harmless read: the walk changes no state that matters to it.
 */
function probe(method: string, url: string): InjectOptions {
  const concrete = url.replace(/:[A-Za-z]+/g, 'no-such-id-0000').replace(/\*/g, 'no-such-path');
  const withBody = method === 'POST' || method === 'PUT' || method === 'PATCH';
  // An open event stream never ends an injected request: a malformed cursor answers 400 after the scope check.
  const query = url === '/api/stream' ? '?lastEventId=not-a-cursor' : '';
  return { method: method as InjectOptions['method'], url: concrete + query, ...(withBody && { payload: {} }) };
}

const withKey = (observe: TestObserve, key: string, request: InjectOptions): Promise<LightMyRequestResponse> =>
  observe.service.app.inject({ ...request, headers: { ...request.headers, authorization: `Bearer ${key}` } });

async function createKey(observe: TestObserve, payload: object, key = observe.key): Promise<KeyBody> {
  const response = await withKey(observe, key, { method: 'POST', url: '/api/keys', payload });
  assert.equal(response.statusCode, 201, response.body);
  return response.json() as KeyBody;
}

async function keyCount(observe: TestObserve): Promise<number> {
  return (await observe.service.context.database.db.selectFrom('api_keys').select('id').execute()).length;
}

const anEvent = (sessionId: string) => ({
  events: [{ sessionId, agentId: 'scoped-agent', eventType: 'custom', payload: { type: 'probe', data: 1 } }],
});

await describeEachDatabase('observe key scopes: route-table walk', (backend) => {
  let observe: TestObserve;
  const keyOf = new Map<ObserveScope, string>();
  /** The scope each route that takes a key declares where it is registered, by `METHOD /url`. */
  let scopeOf: Record<string, ObserveScope | readonly ObserveScope[]>;

  before(async () => {
    observe = await startTestObserve(backend);
    scopeOf = routeScopes(observe.service.app.routeTable);
    for (const scope of OBSERVE_SCOPES) keyOf.set(scope, (await createKey(observe, { name: `only-${scope}`, scopes: [scope] })).key!);
  });
  after(() => observe.close());

  const keyedRoutes = () =>
    observe.service.app.routeTable.filter((r) => KEYED_POLICIES.has(r.auth)).map((r) => ({ method: r.method, url: r.url, id: `${r.method} ${r.url}` }));

  test('every route that takes a key declares one scope, and no other route declares any', () => {
    const ids = keyedRoutes().map((r) => r.id);
    assert.ok(ids.length > 50, `route table too short: ${ids.join(', ')}`);
    assert.equal(new Set(ids).size, ids.length, 'a route is registered twice');
    for (const id of ids) assert.ok(scopeOf[id] !== undefined, `route ${id} declares no scope`);
    for (const id of Object.keys(scopeOf)) assert.ok(ids.includes(id), `${id} declares a scope but takes no key`);
    for (const route of observe.service.app.routeTable) {
      assert.equal(route.takesKey, KEYED_POLICIES.has(route.auth), `${route.method} ${route.url}`);
      if (!route.takesKey) assert.equal(route.scope, undefined, `${route.method} ${route.url} takes no key`);
    }
  });

  test('the scopes of the agent-facing routes and of key management', () => {
    assert.equal(scopeOf['POST /api/events'], 'ingest');
    assert.equal(scopeOf['POST /api/events/ingest'], 'ingest');
    assert.equal(scopeOf['POST /api/events/ingest/batch'], 'ingest');
    assert.equal(scopeOf['POST /v1/traces'], 'ingest');
    assert.deepEqual(scopeOf['GET /api/agents/:id'], ['ingest', 'read']);
    assert.equal(scopeOf['POST /api/keys'], 'admin');
    assert.equal(scopeOf['GET /api/keys'], 'admin');
    assert.equal(scopeOf['DELETE /api/keys/:id'], 'admin');
    // Like the key list, the log of who changed keys, rules and settings is for administrators.
    assert.equal(scopeOf['GET /api/audit/changes'], 'admin');
    // A stream token only opens what its key may read.
    assert.equal(scopeOf['POST /api/stream/tokens'], 'read');
    // MCP takes any key: each tool runs a route, which checks its own scope.
    for (const method of ['POST', 'GET', 'DELETE']) assert.deepEqual(scopeOf[`${method} /mcp`], ['ingest', 'read', 'admin']);
    // Every other GET is a read, every other write is admin.
    for (const [id, scope] of Object.entries(scopeOf)) {
      if (
        [
          'POST /api/events',
          'POST /api/events/ingest',
          'POST /api/events/ingest/batch',
          'POST /v1/traces',
          'GET /api/agents/:id',
          'GET /api/keys',
          'GET /api/audit/changes',
          'POST /api/stream/tokens',
          'POST /mcp',
          'GET /mcp',
          'DELETE /mcp',
        ].includes(id)
      )
        continue;
      assert.equal(scope, id.startsWith('GET ') ? 'read' : 'admin', id);
    }
  });

  test('every route × every scope: 403 naming the scope exactly when the key lacks it, else neither 401 nor 403', async () => {
    let checked = 0;
    for (const route of keyedRoutes()) {
      const required = scopeOf[route.id]!;
      for (const scope of OBSERVE_SCOPES) {
        const granted = scope === 'admin' || [required].flat().includes(scope);
        const response = await withKey(observe, keyOf.get(scope)!, probe(route.method, route.url));
        const context = `${route.id} with a ${scope} key`;
        if (granted) {
          assert.ok(response.statusCode !== 401 && response.statusCode !== 403, `${context}: ${response.statusCode} ${response.body}`);
          // 501: PUT /api/config/health-weights, fixed weights by design.
          assert.ok(response.statusCode < 500 || response.statusCode === 501, `${context}: ${response.statusCode} ${response.body}`);
        } else {
          const message = assertErrorBody(response, 403, context).error;
          assert.match(message, new RegExp(`needs the ${[required].flat().join(' or ')} scope`), context);
        }
        checked += 1;
      }
    }
    assert.equal(checked, keyedRoutes().length * OBSERVE_SCOPES.length);
  });

  test('an ingest key sends events and reads its agent, and nothing else of the sessions', async () => {
    const ingest = keyOf.get('ingest')!;
    const sent = await withKey(observe, ingest, { method: 'POST', url: '/api/events', payload: anEvent('scoped-run') });
    assert.equal(sent.statusCode, 201, sent.body);
    const agent = await withKey(observe, ingest, { method: 'GET', url: '/api/agents/scoped-agent' });
    assert.equal(agent.statusCode, 200, agent.body);
    assert.equal((agent.json() as { pausedAt: string | null }).pausedAt, null);
    for (const url of ['/api/sessions', '/api/sessions/scoped-run', '/api/events', '/api/context?topic=probe']) {
      assertErrorBody(await withKey(observe, ingest, { method: 'GET', url }), 403, url);
    }
    // The read key sees what the ingest key sent, and cannot send.
    const read = keyOf.get('read')!;
    assert.equal((await withKey(observe, read, { method: 'GET', url: '/api/sessions/scoped-run' })).statusCode, 200);
    assert.equal((await withKey(observe, read, { method: 'GET', url: '/api/agents/scoped-agent' })).statusCode, 200, 'a reader sees the agent record');
    assertErrorBody(await withKey(observe, read, { method: 'POST', url: '/api/events', payload: anEvent('scoped-run') }), 403, 'read key ingesting');
    assertErrorBody(await withKey(observe, read, { method: 'PUT', url: '/api/config', payload: {} }), 403, 'read key changing the configuration');
  });
});

await describeEachDatabase('observe key scopes: creation', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  test('the first key has full access and is listed with the admin scope', async () => {
    const listed = (await observe.call({ method: 'GET', url: '/api/keys' })).json() as { keys: KeyBody[] };
    assert.deepEqual(
      listed.keys.map((k) => [k.name, k.scopes]),
      [['test', ['admin']]],
    );
  });

  test('POST /api/keys with scopes answers and lists them; the key has exactly those', async () => {
    const created = await createKey(observe, { name: 'agent', scopes: ['ingest', 'read', 'ingest'] });
    assert.deepEqual(created.scopes, ['ingest', 'read']);
    const listed = ((await observe.call({ method: 'GET', url: '/api/keys' })).json() as { keys: KeyBody[] }).keys.find((k) => k.id === created.id)!;
    assert.deepEqual(listed.scopes, ['ingest', 'read']);
    assert.equal((await withKey(observe, created.key!, { method: 'POST', url: '/api/events', payload: anEvent('two-scopes') })).statusCode, 201);
    assert.equal((await withKey(observe, created.key!, { method: 'GET', url: '/api/sessions/two-scopes' })).statusCode, 200);
    const refused = assertErrorBody(await withKey(observe, created.key!, { method: 'DELETE', url: `/api/keys/${created.id}` }), 403, 'revoking').error;
    assert.match(refused, /admin scope/);
  });

  test('without scopes a new key has full access', async () => {
    assert.deepEqual((await createKey(observe, { name: 'full' })).scopes, ['admin']);
  });

  test('unknown, empty or malformed scopes are 400 and create nothing', async () => {
    const before = await keyCount(observe);
    for (const scopes of [['write'], [], 'read', ['read', 7], null]) {
      const response = await observe.call({ method: 'POST', url: '/api/keys', payload: { name: 'bad', scopes } });
      assert.equal(response.statusCode, 400, `${JSON.stringify(scopes)}: ${response.body}`);
      assert.equal((response.json() as { status: number }).status, 400);
    }
    assert.equal(await keyCount(observe), before);
  });

  test('only an admin key creates keys: a read or ingest key gets 403 naming admin, nothing stored', async () => {
    const reader = await createKey(observe, { name: 'narrow', scopes: ['read'] });
    const ingester = await createKey(observe, { name: 'agent-only', scopes: ['ingest'] });
    const before = await keyCount(observe);
    for (const [creator, scopes] of [
      [reader, ['read']],
      [ingester, ['ingest']],
      [ingester, undefined],
    ] as const) {
      const response = await withKey(observe, creator.key!, { method: 'POST', url: '/api/keys', payload: { name: 'minted', scopes } });
      const message = assertErrorBody(response, 403, `${creator.name} creating ${JSON.stringify(scopes)}`).error;
      assert.match(message, /needs the admin scope/);
    }
    assert.equal(await keyCount(observe), before);
  });

  test('on first start-up the key must have full access: narrower scopes are 400', async () => {
    const fresh = await startTestObserve(backend, { createKey: false });
    try {
      const narrow = await fresh.service.app.inject({ method: 'POST', url: '/api/keys', payload: { name: 'first', scopes: ['read'] } });
      assertErrorBody(narrow, 400, 'a narrow first key');
      assert.equal(await keyCount(fresh), 0);
      const first = await fresh.service.app.inject({ method: 'POST', url: '/api/keys', payload: { name: 'first', scopes: ['admin'] } });
      assert.equal(first.statusCode, 201, first.body);
      assert.deepEqual((first.json() as KeyBody).scopes, ['admin']);
    } finally {
      await fresh.close();
    }
  });

  test('with AUTH_DISABLED any scopes may be created and no scope is checked', async () => {
    const open = await startTestObserve(backend, { env: { AUTH_DISABLED: 'true' }, createKey: false });
    try {
      const created = await open.service.app.inject({ method: 'POST', url: '/api/keys', payload: { name: 'k', scopes: ['ingest'] } });
      assert.equal(created.statusCode, 201, created.body);
      assert.deepEqual((created.json() as KeyBody).scopes, ['ingest']);
      const key = (created.json() as KeyBody).key!;
      assert.equal((await withKey(open, key, { method: 'GET', url: '/api/keys' })).statusCode, 200);
    } finally {
      await open.close();
    }
  });
});

await describeEachDatabase('observe key scopes: keys from before scopes', (backend) => {
  test('a key stored before the scopes migration keeps full access and is listed as admin', async () => {
    // The schema as it was before 0010_key_scopes, with a key in it.
    const { dataDir: _dataDir, ...config } = backend.freshDatabase();
    const raw = 'vgl_legacy-key-0123456789abcdefghijklmnopqrstuv';
    const database = await openDatabase<any>(config);
    try {
      const before = Object.fromEntries(Object.entries(observeMigrations).filter(([name]) => name < '0010_key_scopes'));
      await migrateToLatest(database, before);
      await database.db
        .insertInto('api_keys')
        .values({ id: 'legacy', name: 'legacy', prefix: raw.slice(0, 12), key_hash: createHash('sha256').update(raw).digest('hex'), created_at: 1 })
        .execute();
    } finally {
      await database.close();
    }

    const observe = await startTestObserve(backend, { database: config, createKey: false });
    try {
      const row = await observe.service.context.database.db.selectFrom('api_keys').select('scopes').where('id', '=', 'legacy').executeTakeFirstOrThrow();
      assert.equal(row.scopes, null, 'the migration leaves existing keys unscoped');
      assert.equal((await withKey(observe, raw, { method: 'POST', url: '/api/events', payload: anEvent('legacy-run') })).statusCode, 201);
      for (const url of ['/api/sessions/legacy-run', '/api/keys', '/api/config']) {
        const response = await withKey(observe, raw, { method: 'GET', url });
        assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
      }
      const listed = (await withKey(observe, raw, { method: 'GET', url: '/api/keys' })).json() as { keys: KeyBody[] };
      assert.deepEqual(listed.keys.find((k) => k.id === 'legacy')!.scopes, ['admin']);
      assert.deepEqual((await createKey(observe, { name: 'new-admin', scopes: ['admin'] }, raw)).scopes, ['admin']);
      const revoked = await withKey(observe, raw, { method: 'DELETE', url: '/api/keys/legacy' });
      assert.equal(revoked.statusCode, 200, revoked.body);
    } finally {
      await observe.close();
    }
  });
});
