import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import { sha256Hex, type AdminChange, type AdminChangePage } from '@vigil/platform';
import { adminChangeReader, assertChangeBy, describeEachDatabase } from '@vigil/platform/testing';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import { observeMigrations } from './migrations.ts';
import { startTestObserve, type TestObserve } from './testing.ts';

function assertObserveError(response: LightMyRequestResponse, status: number, context = ''): void {
  assert.equal(response.statusCode, status, `${context}: ${response.body}`);
  const body = response.json() as Record<string, unknown>;
  assert.equal(typeof body.error, 'string', context);
  assert.equal(body.status, status, context);
  for (const key of Object.keys(body)) assert.ok(['error', 'code', 'status', 'details'].includes(key), `${context}: unexpected key ${key}`);
}

test('the admin-changes migration follows every step before it', () => {
  const names = Object.keys(observeMigrations).sort();
  assert.equal(names.indexOf('0013_admin_changes'), names.indexOf('0012_session_idle') + 1);
});

await describeEachDatabase('observe admin changes: every key, rule, guardrail and settings change audited', (backend) => {
  let observe: TestObserve;
  /** A named admin key that makes the changes, and its id. */
  let admin: string;
  let adminId: string;
  beforeEach(async () => {
    observe = await startTestObserve(backend);
    const response = await observe.call({ method: 'POST', url: '/api/keys', payload: { name: 'ops-admin', scopes: ['admin'] } });
    assert.equal(response.statusCode, 201, response.body);
    ({ key: admin, id: adminId } = response.json() as { key: string; id: string });
  });
  afterEach(() => observe.close());

  const as = (key: string, options: InjectOptions) => observe.service.app.inject({ ...options, headers: { authorization: `Bearer ${key}` } });
  const send = async (method: 'POST' | 'PUT' | 'DELETE', url: string, payload?: object, expected = 200) => {
    const response = await as(admin, { method, url, ...(payload && { payload }) });
    assert.equal(response.statusCode, expected, response.body);
    return response.json() as { id: string; key?: string };
  };
  const { changes, historyOf } = adminChangeReader((request) => as(admin, request));
  const assertByAdmin = (entry: AdminChange | undefined, resource: string, action: string) =>
    assertChangeBy(entry, resource, action, { name: 'ops-admin', id: adminId });

  test('an API key: created and revoked (once), never with its hash or raw value; the first key by bootstrap', async () => {
    const { id, key } = await send('POST', '/api/keys', { name: 'ingester', scopes: ['ingest'] }, 201);
    await send('DELETE', `/api/keys/${id}`);
    await send('DELETE', `/api/keys/${id}`);
    const [created, revoked, ...rest] = await historyOf(id);
    assert.equal(rest.length, 0, 'revoking a revoked key records nothing');
    assertByAdmin(created, 'api_key', 'created');
    assert.equal(created!.before, null);
    assert.deepEqual([created!.after!.name, created!.after!.scopes], ['ingester', ['ingest']]);
    assertByAdmin(revoked, 'api_key', 'revoked');
    assert.equal(revoked!.before!.revokedAt, null);
    assert.equal(typeof revoked!.after!.revokedAt, 'string');

    const first = (await changes('?resource=api_key&action=created')).entries.find((e) => e.after?.name === 'test');
    assert.ok(first, 'the first key, created without credentials, is recorded');
    assert.deepEqual([first.actor, first.actorKeyId, first.actorKeyName], ['bootstrap', null, null]);

    const body = JSON.stringify(await changes('?limit=500'));
    for (const secret of [key!, sha256Hex(key!), observe.key, sha256Hex(observe.key), admin, sha256Hex(admin)]) {
      assert.ok(!body.includes(secret), 'no raw key or key hash in the change log');
    }
  });

  test('an alert rule: created, updated, disabled, enabled, deleted; a refused change writes nothing', async () => {
    const { id } = await send('POST', '/api/alerts/rules', { name: 'errors', condition: 'error_rate_exceeds', threshold: 0.2, windowMinutes: 5 }, 201);
    await send('PUT', `/api/alerts/rules/${id}`, { threshold: 0.3 });
    assertObserveError(await as(admin, { method: 'PUT', url: `/api/alerts/rules/${id}`, payload: { windowMinutes: -1 } }), 400, 'bad window');
    assertObserveError(await as(admin, { method: 'PUT', url: '/api/alerts/rules/nope', payload: { threshold: 1 } }), 404, 'unknown rule');
    await send('PUT', `/api/alerts/rules/${id}`, { threshold: 0.3 });
    await send('PUT', `/api/alerts/rules/${id}`, { enabled: false });
    await send('PUT', `/api/alerts/rules/${id}`, { enabled: true });
    await send('DELETE', `/api/alerts/rules/${id}`);
    const [created, updated, disabled, enabled, deleted, ...rest] = await historyOf(id);
    assert.equal(rest.length, 0, 'the refused and the idle change wrote no row');
    assertByAdmin(created, 'alert_rule', 'created');
    assert.deepEqual([created!.after!.name, created!.after!.threshold, created!.after!.enabled], ['errors', 0.2, true]);
    assertByAdmin(updated, 'alert_rule', 'updated');
    assert.deepEqual([updated!.before!.threshold, updated!.after!.threshold], [0.2, 0.3]);
    assertByAdmin(disabled, 'alert_rule', 'disabled');
    assertByAdmin(enabled, 'alert_rule', 'enabled');
    assertByAdmin(deleted, 'alert_rule', 'deleted');
    assert.equal(deleted!.before!.name, 'errors');
    assert.equal(deleted!.after, null);
  });

  test('a guardrail: created, updated, disabled, deleted; a refused change writes nothing', async () => {
    const body = {
      name: 'too many errors',
      conditionType: 'error_rate_threshold',
      conditionConfig: { threshold: 50 },
      actionType: 'pause_agent',
      actionConfig: { reason: 'errors' },
    };
    const { id } = await send('POST', '/api/guardrails', body, 201);
    await send('PUT', `/api/guardrails/${id}`, { cooldownMinutes: 30 });
    assertObserveError(
      await as(admin, { method: 'PUT', url: `/api/guardrails/${id}`, payload: { actionType: 'notify_webhook' } }),
      400,
      'action without its config',
    );
    await send('PUT', `/api/guardrails/${id}`, { enabled: false });
    await send('DELETE', `/api/guardrails/${id}`);
    const [created, updated, disabled, deleted, ...rest] = await historyOf(id);
    assert.equal(rest.length, 0, 'the refused change wrote no row');
    assertByAdmin(created, 'guardrail', 'created');
    assert.equal((created!.after!.conditionConfig as { threshold: number }).threshold, 50);
    assertByAdmin(updated, 'guardrail', 'updated');
    assert.notEqual(updated!.before!.cooldownMinutes, 30);
    assert.equal(updated!.after!.cooldownMinutes, 30);
    assertByAdmin(disabled, 'guardrail', 'disabled');
    assertByAdmin(deleted, 'guardrail', 'deleted');
    assert.equal(deleted!.after, null);
  });

  test('settings: a change is recorded with whether each secret is set, never the secret', async () => {
    const secret = 'gate-secret-0123456789abcdef';
    await send('PUT', '/api/config', { retentionDays: 30, approvalGateWebhookSecret: secret });
    await send('PUT', '/api/config', { retentionDays: 30 });
    assertObserveError(await as(admin, { method: 'PUT', url: '/api/config', payload: { retentionDays: -1 } }), 400, 'negative retention');
    const entries = (await changes('?resource=settings')).entries;
    assert.equal(entries.length, 1, 'the unchanged and the refused PUT wrote no row');
    const [entry] = entries;
    assertByAdmin(entry, 'settings', 'updated');
    assert.equal(entry!.resourceId, null);
    assert.equal(entry!.before!.approvalGateSecretSet, false);
    assert.deepEqual(entry!.after, { retentionDays: 30, approvalGateSecretSet: true, formServiceSecretSet: false });
    assert.ok(!JSON.stringify(entries).includes(secret), 'no secret in the change log');
  });

  test('with AUTH_DISABLED a change is recorded as anonymous, without a key', async () => {
    const open = await startTestObserve(backend, { env: { AUTH_DISABLED: 'true' }, createKey: false });
    try {
      const changed = await open.service.app.inject({ method: 'PUT', url: '/api/config', payload: { retentionDays: 7 } });
      assert.equal(changed.statusCode, 200, changed.body);
      const response = await open.service.app.inject({ method: 'GET', url: '/api/audit/changes' });
      assert.equal(response.statusCode, 200, response.body);
      const [entry] = (response.json() as AdminChangePage).entries;
      assert.deepEqual([entry?.resource, entry?.actor, entry?.actorKeyId, entry?.actorKeyName], ['settings', 'anonymous', null, null]);
    } finally {
      await open.close();
    }
  });

  test('the change and its row are one transaction: when the row cannot be written, the change is not made', async () => {
    const { db } = observe.service.context.database;
    await sql`alter table admin_changes rename to admin_changes_away`.execute(db);
    try {
      const response = await as(admin, {
        method: 'POST',
        url: '/api/alerts/rules',
        payload: { name: 'orphan', condition: 'cost_exceeds', threshold: 1, windowMinutes: 5 },
      });
      assert.ok(response.statusCode >= 500, response.body);
    } finally {
      await sql`alter table admin_changes_away rename to admin_changes`.execute(db);
    }
    const rules = await as(admin, { method: 'GET', url: '/api/alerts/rules' });
    assert.deepEqual((rules.json() as { rules: unknown[] }).rules, [], 'the rule was rolled back with its row');
  });

  test('filters and cursor pages; a bad query is a 400 in the observe error body; read and ingest keys get 403', async () => {
    const rule = await send('POST', '/api/alerts/rules', { name: 'cost', condition: 'cost_exceeds', threshold: 1, windowMinutes: 5 }, 201);
    (observe.clock as { advance(ms: number): void }).advance(60_000);
    await send('DELETE', `/api/alerts/rules/${rule.id}`);
    const reader = await send('POST', '/api/keys', { name: 'reader', scopes: ['read'] }, 201);
    const ingester = await send('POST', '/api/keys', { name: 'ingester', scopes: ['ingest'] }, 201);

    assert.deepEqual(
      (await changes('?resource=alert_rule')).entries.map((e) => e.action),
      ['deleted', 'created'],
    );
    assert.deepEqual(
      (await changes('?action=deleted')).entries.map((e) => e.resourceId),
      [rule.id],
    );
    assert.deepEqual(
      (await changes(`?resourceId=${reader.id}`)).entries.map((e) => e.action),
      ['created'],
    );
    const byAdmin = await changes(`?keyId=${adminId}`);
    assert.ok(byAdmin.entries.length === 4 && byAdmin.entries.every((e) => e.actorKeyId === adminId));
    const t0 = Date.parse('2026-11-22T10:00:00.000Z');
    assert.deepEqual(
      (await changes(`?to=${new Date(t0).toISOString()}`)).entries.map((e) => e.action),
      ['created', 'created', 'created'],
    );
    assert.equal((await changes(`?from=${new Date(t0 + 1).toISOString()}`)).entries.length, 3);

    const all = await changes();
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: AdminChangePage = await changes(`?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      assert.equal(page.hasMore, page.nextCursor !== null);
      seen.push(...page.entries.map((e) => e.id));
      cursor = page.nextCursor;
    } while (cursor !== null);
    assert.deepEqual(
      seen,
      all.entries.map((e) => e.id),
    );
    assert.equal(seen.length, 6);

    for (const query of ['?resource=robot', '?action=exploded', '?limit=0', '?limit=501', '?cursor=not-ours', '?colour=red', '?to=tomorrow']) {
      assertObserveError(await as(admin, { method: 'GET', url: `/api/audit/changes${query}` }), 400, query);
    }
    for (const key of [reader.key!, ingester.key!]) assertObserveError(await as(key, { method: 'GET', url: '/api/audit/changes' }), 403);
  });
});
