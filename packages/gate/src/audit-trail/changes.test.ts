import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import { sha256Hex, type AdminChange, type AdminChangePage } from '@vigil/platform';
import { adminChangeReader, assertChangeBy, describeEachDatabase } from '@vigil/platform/testing';
import { sql } from 'kysely';
import { gateMigrations } from '../migrations.ts';
import { assertGateError, startTestGate, TEST_ADMIN_KEY, type TestGate } from '../testing.ts';

test('the admin-changes migration runs after the audit-key step', () => {
  const names = Object.keys(gateMigrations);
  assert.ok(names.indexOf('0004_admin_changes') > names.indexOf('0003_audit_key_actor'));
});

await describeEachDatabase('gate admin changes: every policy, key and webhook change audited', (backend) => {
  let gate: TestGate;
  /** A named admin key that makes the changes, and its id. */
  let admin: string;
  let adminId: string;
  beforeEach(async () => {
    gate = await startTestGate(backend);
    admin = await gate.createKey(['admin'], null, 'ops-admin');
    adminId = await gate.keyIdOf(admin);
  });
  afterEach(() => gate.close());

  const { changes, historyOf } = adminChangeReader((request) => gate.call(request, admin));
  const send = async (method: 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: object, expected = 200) => {
    const response = await gate.call({ method, url, ...(payload && { payload }) }, admin);
    assert.equal(response.statusCode, expected, response.body);
    return response.json() as { id: string; key?: string };
  };
  const assertByAdmin = (entry: AdminChange | undefined, resource: string, action: string) =>
    assertChangeBy(entry, resource, action, { name: 'ops-admin', id: adminId });

  test('a policy: created, updated, disabled, enabled and deleted, each with its before and after', async () => {
    const rules = [{ match: { action: 'deploy' }, decision: 'auto_approve' }];
    const { id } = await send('POST', '/api/policies', { name: 'deploys', priority: 10, rules }, 201);
    await send('PUT', `/api/policies/${id}`, { priority: 20 });
    await send('PUT', `/api/policies/${id}`, { enabled: false });
    await send('PUT', `/api/policies/${id}`, { enabled: true });
    await send('DELETE', `/api/policies/${id}`);
    const [created, updated, disabled, enabled, deleted] = await historyOf(id);
    assertByAdmin(created, 'policy', 'created');
    assert.equal(created!.resourceId, id);
    assert.equal(created!.before, null);
    const after = created!.after!;
    assert.deepEqual([after.id, after.name, after.priority, after.enabled], [id, 'deploys', 10, true]);
    assert.deepEqual(after.rules, [{ match: { action: 'deploy' }, decision: 'auto_approve' }]);
    assertByAdmin(updated, 'policy', 'updated');
    assert.equal(updated!.before!.priority, 10);
    assert.equal(updated!.after!.priority, 20);
    assertByAdmin(disabled, 'policy', 'disabled');
    assert.equal(disabled!.before!.enabled, true);
    assert.equal(disabled!.after!.enabled, false);
    assertByAdmin(enabled, 'policy', 'enabled');
    assertByAdmin(deleted, 'policy', 'deleted');
    assert.equal(deleted!.before!.name, 'deploys');
    assert.equal(deleted!.after, null);
  });

  test('a policy change refused (validation, unknown id) or changing nothing writes no row', async () => {
    const { id } = await send('POST', '/api/policies', { name: 'p', rules: [] }, 201);
    const unsafe = await gate.call(
      { method: 'PUT', url: `/api/policies/${id}`, payload: { rules: [{ match: { 'params.command': { $regex: '^(a+)+$' } }, decision: 'auto_deny' }] } },
      admin,
    );
    assert.equal(unsafe.statusCode, 400, unsafe.body);
    assertGateError(await gate.call({ method: 'PUT', url: '/api/policies/nope', payload: { priority: 1 } }, admin), 404, 'not_found');
    assertGateError(await gate.call({ method: 'DELETE', url: '/api/policies/nope' }, admin), 404, 'not_found');
    assert.equal((await gate.call({ method: 'POST', url: '/api/policies', payload: { name: '', rules: [] } }, admin)).statusCode, 400);
    await send('PUT', `/api/policies/${id}`, { name: 'p' });
    const all = await changes('?resource=policy');
    assert.deepEqual(
      all.entries.map((e) => e.action),
      ['created'],
    );
  });

  test('an API key: created, updated and revoked, never with its hash or raw value; the bootstrap key by system', async () => {
    const { id, key } = await send('POST', '/api/api-keys', { name: 'ci', scopes: ['request:create'] }, 201);
    await send('PATCH', `/api/api-keys/${id}`, { name: 'ci-2', rateLimit: 30 });
    await send('DELETE', `/api/api-keys/${id}`);
    await send('DELETE', `/api/api-keys/${id}`);
    const [created, updated, revoked, ...rest] = await historyOf(id);
    assert.equal(rest.length, 0, 'revoking a revoked key records nothing');
    assertByAdmin(created, 'api_key', 'created');
    assert.equal(created!.after!.name, 'ci');
    assert.deepEqual(created!.after!.scopes, ['request:create']);
    assertByAdmin(updated, 'api_key', 'updated');
    assert.deepEqual([updated!.before!.name, updated!.after!.name, updated!.after!.rateLimit], ['ci', 'ci-2', 30]);
    assertByAdmin(revoked, 'api_key', 'revoked');
    assert.equal(revoked!.before!.revokedAt, null);
    assert.equal(typeof revoked!.after!.revokedAt, 'string');

    const body = JSON.stringify(await changes('?limit=500'));
    for (const secret of [key!, sha256Hex(key!), TEST_ADMIN_KEY, sha256Hex(TEST_ADMIN_KEY), admin, sha256Hex(admin)]) {
      assert.ok(!body.includes(secret), 'no raw key or key hash in the change log');
    }
    assert.ok(!body.includes('key_hash') && !body.includes('keyHash'));

    const bootstrap = (await changes('?resource=api_key&action=created')).entries.find((e) => e.after?.name === 'admin (GATE_ADMIN_KEY)');
    assert.ok(bootstrap, 'the GATE_ADMIN_KEY installed at start is recorded');
    assert.deepEqual([bootstrap.actor, bootstrap.actorKeyId, bootstrap.actorKeyName], ['system', null, null]);
  });

  test('a webhook: created, disabled, secret changed and deleted, never with its secret', async () => {
    const secret = 'whsec-0123456789abcdef';
    const rotated = 'whsec-fedcba9876543210';
    const { id } = await send('POST', '/api/webhooks', { url: 'https://hooks.example/a', events: ['request.created'], secret }, 201);
    await send('PATCH', `/api/webhooks/${id}`, { enabled: false });
    await send('PATCH', `/api/webhooks/${id}`, { secret: rotated });
    await send('DELETE', `/api/webhooks/${id}`);
    const [created, disabled, rekeyed, deleted] = await historyOf(id);
    assertByAdmin(created, 'webhook', 'created');
    assert.equal(created!.after!.url, 'https://hooks.example/a');
    assert.equal(created!.after!.hasSecret, true);
    assertByAdmin(disabled, 'webhook', 'disabled');
    assertByAdmin(rekeyed, 'webhook', 'updated');
    assertByAdmin(deleted, 'webhook', 'deleted');
    const body = JSON.stringify(await changes());
    assert.ok(!body.includes(secret) && !body.includes(rotated), 'no webhook secret in the change log');
  });

  test('a webhook manager (not admin) is recorded as itself', async () => {
    const manager = await gate.createKey(['webhook:manage'], null, 'hooks');
    const response = await gate.call(
      { method: 'POST', url: '/api/webhooks', payload: { url: 'https://hooks.example/b', events: ['request.decided'] } },
      manager,
    );
    assert.equal(response.statusCode, 201, response.body);
    const [entry] = (await changes('?resource=webhook')).entries;
    assert.deepEqual([entry?.actor, entry?.actorKeyId, entry?.actorKeyName], ['api:hooks', await gate.keyIdOf(manager), 'hooks']);
  });

  test('the change and its row are one transaction: when the row cannot be written, the change is not made', async () => {
    const { db } = gate.service.context.database;
    await sql`alter table admin_changes rename to admin_changes_away`.execute(db);
    try {
      const response = await gate.call({ method: 'POST', url: '/api/policies', payload: { name: 'orphan', rules: [] } }, admin);
      assert.ok(response.statusCode >= 500, response.body);
    } finally {
      await sql`alter table admin_changes_away rename to admin_changes`.execute(db);
    }
    const policies = await gate.call({ method: 'GET', url: '/api/policies' }, admin);
    assert.equal((policies.json() as { policies: unknown[] }).policies.length, 0, 'the policy was rolled back with its row');
  });

  test('filters (resource, resourceId, action, keyId, from, to) and cursor pages', async () => {
    const other = await gate.createKey(['admin'], null, 'other-admin');
    const otherId = await gate.keyIdOf(other);
    const first = await send('POST', '/api/policies', { name: 'a', rules: [] }, 201);
    gate.clock.advance(60_000);
    const second = await send('POST', '/api/policies', { name: 'b', rules: [] }, 201);
    await send('DELETE', `/api/policies/${first.id}`);
    gate.clock.advance(60_000);
    const hook = await gate.call({ method: 'POST', url: '/api/webhooks', payload: { url: 'https://hooks.example/c', events: ['request.created'] } }, other);
    assert.equal(hook.statusCode, 201);

    assert.deepEqual(
      (await changes('?resource=policy')).entries.map((e) => e.action),
      ['deleted', 'created', 'created'],
    );
    assert.deepEqual(
      (await changes(`?resourceId=${second.id}`)).entries.map((e) => e.resourceId),
      [second.id],
    );
    assert.deepEqual(
      (await changes('?resource=policy&action=deleted')).entries.map((e) => e.resourceId),
      [first.id],
    );
    assert.deepEqual(
      (await changes(`?keyId=${otherId}`)).entries.map((e) => e.resource),
      ['webhook'],
    );
    const t0 = Date.parse('2026-11-22T10:00:00.000Z');
    const window = await changes(`?from=${new Date(t0 + 60_000).toISOString()}&to=${new Date(t0 + 60_000).toISOString()}`);
    assert.deepEqual(
      window.entries.map((e) => e.action),
      ['deleted', 'created'],
    );

    const all = await changes('?limit=500');
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: AdminChangePage = await changes(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      assert.ok(page.entries.length <= 2);
      assert.equal(page.hasMore, page.nextCursor !== null);
      seen.push(...page.entries.map((e) => e.id));
      cursor = page.nextCursor;
    } while (cursor !== null);
    assert.deepEqual(
      seen,
      all.entries.map((e) => e.id),
      'the pages hold every entry once, newest first',
    );
    assert.ok(all.entries.length >= 6);
    const times = all.entries.map((e) => Date.parse(e.timestamp));
    assert.deepEqual(
      times,
      [...times].sort((a, b) => b - a),
    );
  });

  test('a bad query is a 400 in the gate error body; a key without admin gets 403', async () => {
    for (const query of [
      '?resource=robot',
      '?action=exploded',
      '?limit=0',
      '?limit=501',
      '?cursor=not-ours',
      '?colour=red',
      '?from=yesterday',
      '?from=2026-11-23T00:00:00Z&to=2026-11-22T00:00:00Z',
    ]) {
      assertGateError(await gate.call({ method: 'GET', url: `/api/audit/changes${query}` }, admin), 400, 'bad_request', query);
    }
    for (const scope of ['request:create', 'request:read', 'request:decide', 'webhook:manage']) {
      const key = await gate.createKey([scope], null, `only-${scope}`);
      assertGateError(await gate.call({ method: 'GET', url: '/api/audit/changes' }, key), 403, 'forbidden', scope);
    }
  });
});
