/**
 * Issue 36's doors of the change logs and the rows they govern, on both databases: an attacker
 * with write access to the database edits or inserts a gate policy, inserts an API key (either
 * service), inserts a retention setting, or deletes / edits a change-log row. A running service
 * refuses a governed row that is not as its last logged change left it; `vigil verify` (a real
 * process) reports a change-log row deleted or edited after the auditor saved a checkpoint.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { buildGateService, gateConfigFromEnvironment } from '@vigil/gate';
import { gateMigrations, startTestGate, TEST_ADMIN_KEY, type GateSchema, type TestGate } from '@vigil/gate/testing';
import { ManualClock, migrateToLatest, openDatabase, sha256Hex, type Checkpoint, type DatabaseConfig, type MigrationStep } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { sql } from 'kysely';
import type { ObserveSchema } from '@vigil/observe';
import { clockOf, observeMigrations, started, startTestObserve, TEST_NOW } from '@vigil/observe/testing';
import { world, type World } from './tamper-observe-testkit.ts';
import { runVerify, type Report } from './verify-testkit.ts';

const DAY_MS = 86_400_000;

interface PolicyList {
  policies: { id: string }[];
  refused: { id: string; name: string; reason: string }[];
}

/** The rules an attacker wants: every payment approved without a human. */
const ATTACKER_RULES = JSON.stringify([{ match: { action: 'pay' }, decision: 'auto_approve' }]);

async function gateOk<T>(gate: TestGate, method: 'GET' | 'POST', url: string, payload?: object, status = 200): Promise<T> {
  const response = await gate.call({ method, url, ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }) });
  assert.equal(response.statusCode, status, `${method} ${url}: ${response.body}`);
  return response.json<T>();
}

/** Payments go to a human, by a policy created through the API. */
async function paymentsToHumans(gate: TestGate): Promise<string> {
  const policy = await gateOk<{ id: string }>(
    gate,
    'POST',
    '/api/policies',
    { name: 'payments need a human', priority: 10, rules: [{ match: { action: 'pay' }, decision: 'route_to_human', approvers: ['finance'] }] },
    201,
  );
  return policy.id;
}

/** What a payment of 1,000,000 to the attacker gets: its status and who decided it. */
async function pay(gate: TestGate): Promise<{ status: string; decidedBy: string | null }> {
  return gateOk(gate, 'POST', '/api/requests', { action: 'pay', params: { amount: 1_000_000, to: 'attacker' } }, 201);
}

/**
 * A direct write moves the policy version too, as an attacker would, so every instance reloads its
 * policies once its cache is due.
 */
async function bumpPolicyVersion(gate: TestGate): Promise<void> {
  await gate.service.context.database.db
    .updateTable('counters')
    .set((eb) => ({ value: eb('value', '+', 1) }))
    .where('name', '=', 'policies')
    .execute();
  gate.clock.advance(gate.config.cacheRefreshMs + 1);
}

/** Verify with the saved checkpoint: tampered (exit 1), with a finding of `check` that names the leaf. */
async function assertChangeFinding(url: string, saved: string, key: string, check: string): Promise<void> {
  const result = await runVerify<Report>(['--url', url, '--checkpoint', saved], key);
  assert.equal(result.status, 1, `exit 1 (tampered): ${result.stderr}\n${JSON.stringify(result.report)}`);
  const finding = result.report.findings.find((f) => f.check === check);
  assert.ok(finding, `a ${check} finding: ${JSON.stringify(result.report.findings)}`);
  assert.equal(typeof finding.leafIndex, 'number', 'the finding names the leaf');
}

await describeEachDatabase('tamper doors: the gate refuses policies and keys whose rows are not as logged', (backend) => {
  test('a policy edited in the database is not applied, and is listed as refused', async () => {
    const gate = await startTestGate(backend);
    try {
      const id = await paymentsToHumans(gate);
      assert.equal((await pay(gate)).status, 'pending');
      await gate.service.context.database.db.updateTable('policies').set({ rules: ATTACKER_RULES }).where('id', '=', id).execute();
      await bumpPolicyVersion(gate);
      const payment = await pay(gate);
      assert.notEqual(payment.status, 'approved', `the edited policy approved it: ${JSON.stringify(payment)}`);
      assert.notEqual(payment.decidedBy, `policy:${id}`);
      const list = await gateOk<PolicyList>(gate, 'GET', '/api/policies');
      assert.deepEqual(
        list.refused.map((policy) => policy.id),
        [id],
      );
      assert.match(list.refused[0]!.reason, /differs from its last logged change/);
    } finally {
      await gate.close();
    }
  });

  test('a policy inserted in the database is not applied, and is listed as refused', async () => {
    const gate = await startTestGate(backend);
    try {
      await paymentsToHumans(gate);
      const now = gate.clock.now();
      await gate.service.context.database.db
        .insertInto('policies')
        .values({ id: 'forged-policy', name: 'forged', priority: 0, enabled: 1, rules: ATTACKER_RULES, created_at: now, updated_at: now })
        .execute();
      await bumpPolicyVersion(gate);
      const payment = await pay(gate);
      assert.notEqual(payment.status, 'approved', `the inserted policy approved it: ${JSON.stringify(payment)}`);
      const list = await gateOk<PolicyList>(gate, 'GET', '/api/policies');
      assert.deepEqual(
        list.refused.map((policy) => policy.id),
        ['forged-policy'],
      );
      assert.match(list.refused[0]!.reason, /no logged change/);
    } finally {
      await gate.close();
    }
  });

  test('a policy changed through the API is applied as changed (the logged state moves with it)', async () => {
    const gate = await startTestGate(backend);
    try {
      const id = await paymentsToHumans(gate);
      const response = await gate.call({ method: 'PUT', url: `/api/policies/${id}`, payload: { rules: JSON.parse(ATTACKER_RULES) as unknown[] } });
      assert.equal(response.statusCode, 200, response.body);
      const payment = await pay(gate);
      assert.equal(payment.status, 'approved');
      assert.equal(payment.decidedBy, `policy:${id}`);
      assert.deepEqual((await gateOk<PolicyList>(gate, 'GET', '/api/policies')).refused, []);
    } finally {
      await gate.close();
    }
  });

  test('an API key inserted in the database does not authenticate; one whose scopes were edited neither', async () => {
    const gate = await startTestGate(backend);
    try {
      const raw = 'gk_forged_key_0123456789abcdef';
      await gate.service.context.database.db
        .insertInto('api_keys')
        .values({
          id: 'forged-key',
          name: 'forged',
          prefix: raw.slice(0, 11),
          key_hash: sha256Hex(raw),
          scopes: JSON.stringify(['admin']),
          rate_limit: null,
          created_at: gate.clock.now(),
          last_used_at: null,
          revoked_at: null,
        })
        .execute();
      assert.equal((await gate.call({ method: 'GET', url: '/api/policies' }, raw)).statusCode, 401);

      const reader = await gate.createKey(['request:read']);
      assert.equal((await gate.call({ method: 'GET', url: '/api/policies' }, reader)).statusCode, 403);
      const readerId = await gate.keyIdOf(reader);
      await gate.service.context.database.db
        .updateTable('api_keys')
        .set({ scopes: JSON.stringify(['admin']) })
        .where('id', '=', readerId)
        .execute();
      gate.clock.advance(gate.config.cacheRefreshMs + 1);
      assert.equal((await gate.call({ method: 'GET', url: '/api/policies' }, reader)).statusCode, 401);
      // The admin key, created through the log, still works.
      assert.equal((await gate.call({ method: 'GET', url: '/api/policies' })).statusCode, 200);
    } finally {
      await gate.close();
    }
  });
});

await describeEachDatabase("tamper doors: vigil verify reports the gate's change-log rows deleted or edited", (backend) => {
  for (const door of [
    { name: 'a deleted change-log row', check: 'change-deleted', tamper: 'delete' },
    { name: 'an edited change-log row', check: 'change', tamper: 'edit' },
  ] as const) {
    test(`${door.name}: a ${door.check} finding, exit 1`, async () => {
      const gate = await startTestGate(backend);
      const dir = mkdtempSync(join(tmpdir(), 'vigil-change-doors-'));
      try {
        await gate.service.app.listen({ host: '127.0.0.1', port: 0 });
        const url = `http://127.0.0.1:${(gate.service.app.server.address() as AddressInfo).port}`;
        const policyId = await paymentsToHumans(gate);
        const saved = join(dir, 'saved-checkpoint.json');
        writeFileSync(saved, JSON.stringify(await gateOk<Checkpoint>(gate, 'POST', '/api/audit/checkpoint', undefined, 201)));
        const valid = await runVerify<Report>(['--url', url, '--checkpoint', saved], TEST_ADMIN_KEY);
        assert.equal(valid.status, 0, `valid before the tampering: ${JSON.stringify(valid.report.findings)}`);
        const db = gate.service.context.database.db;
        if (door.tamper === 'delete') await db.deleteFrom('admin_changes').where('resource_id', '=', policyId).execute();
        else await db.updateTable('admin_changes').set({ actor: 'api:someone-else' }).where('resource_id', '=', policyId).execute();
        await assertChangeFinding(url, saved, TEST_ADMIN_KEY, door.check);
      } finally {
        await gate.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});

await describeEachDatabase('tamper doors: observe refuses keys and a retention setting written around its change log', (backend) => {
  function inWorld(name: string, run: (w: World) => Promise<void>): void {
    test(name, async () => {
      const w = await world(backend);
      try {
        await run(w);
      } finally {
        await w.observe.close();
        rmSync(w.dir, { recursive: true, force: true });
      }
    });
  }

  inWorld('an API key inserted in the database does not authenticate', async (w) => {
    const raw = 'vk_forged_key_0123456789abcdef';
    await w.observe.service.context.database.db
      .insertInto('api_keys')
      .values({
        id: 'forged-key',
        name: 'forged',
        prefix: raw.slice(0, 11),
        key_hash: sha256Hex(raw),
        scopes: null,
        created_at: w.observe.clock.now(),
        last_used_at: null,
        revoked_at: null,
      })
      .execute();
    const forged = await w.observe.service.app.inject({ method: 'GET', url: '/api/sessions', headers: { authorization: `Bearer ${raw}` } });
    assert.equal(forged.statusCode, 401, forged.body);
    assert.equal((await w.observe.call({ method: 'GET', url: '/api/sessions' })).statusCode, 200, 'the key created through the API still works');
  });

  inWorld('a retention setting inserted in the database deletes nothing; one set through the API does', async (w) => {
    const db = w.observe.service.context.database.db;
    const sessions = async () =>
      Number(
        (
          await db
            .selectFrom('sessions')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    assert.equal(await sessions(), 3);
    await db.insertInto('settings').values({ key: 'retentionDays', value: '1', updated_at: w.observe.clock.now() }).execute();
    clockOf(w.observe).advance(3 * DAY_MS);
    assert.equal(await w.observe.service.jobs.retention.tick(), true);
    assert.equal(await sessions(), 3, 'the inserted setting deleted sessions');

    const response = await w.observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 1 } });
    assert.equal(response.statusCode, 200, response.body);
    assert.equal(await w.observe.service.jobs.retention.tick(), true);
    assert.equal(await sessions(), 0, 'the logged setting applies');
  });

  inWorld('a deleted change-log row: a change-deleted finding of vigil verify, exit 1', async (w) => {
    const response = await w.observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 400 } });
    assert.equal(response.statusCode, 200, response.body);
    await w.observe.service.context.database.db.deleteFrom('admin_changes').where('resource', '=', 'settings').execute();
    await assertChangeFinding(w.url, w.saved, w.observe.key, 'change-deleted');
  });
});

/** The steps of a service before `first`: the database as the previous release left it. */
function stepsBefore(steps: Record<string, MigrationStep>, first: string): Record<string, MigrationStep> {
  return Object.fromEntries(Object.entries(steps).filter(([name]) => name < first));
}

await describeEachDatabase('tamper doors: an upgraded install keeps its keys, policies and retention setting', (backend) => {
  test('the gate: a key and a policy stored before the upgrade are taken as logged at it, by system:upgrade', async () => {
    const { dataDir, ...database } = backend.freshDatabase();
    const now = Date.parse('2026-11-22T10:00:00.000Z');
    const raw = 'gk_old_release_key_0123456789ab';
    const old = await openDatabase<GateSchema>(database as DatabaseConfig);
    await migrateToLatest(old, stepsBefore(gateMigrations, '0010'));
    await old.db
      .insertInto('api_keys')
      .values({
        id: 'old-key',
        name: 'old',
        prefix: raw.slice(0, 11),
        key_hash: sha256Hex(raw),
        scopes: JSON.stringify(['admin']),
        rate_limit: null,
        created_at: now,
        last_used_at: null,
        revoked_at: null,
      })
      .execute();
    await old.db
      .insertInto('policies')
      .values({ id: 'old-policy', name: 'old', priority: 0, enabled: 1, rules: ATTACKER_RULES, created_at: now, updated_at: now })
      .execute();
    // The key's creation as the previous release recorded it: no state hash (no such column yet), no leaf.
    await sql`insert into admin_changes (id, ts, resource, resource_id, action, actor, after) values ('old-change', ${now}, 'api_key', 'old-key', 'created', 'system', '{}')`.execute(
      old.db,
    );
    await old.close();

    const config = { ...gateConfigFromEnvironment({ LOG_LEVEL: 'silent' }, { dataDir }), database: database as DatabaseConfig };
    const service = await buildGateService(config, { clock: new ManualClock(now), runJobs: false });
    try {
      await service.app.listen({ host: '127.0.0.1', port: 0 });
      const url = `http://127.0.0.1:${(service.app.server.address() as AddressInfo).port}`;
      const call = (method: 'GET' | 'POST', path: string, payload?: Record<string, unknown>) =>
        service.app.inject({ method, url: path, headers: { authorization: `Bearer ${raw}` }, ...(payload === undefined ? {} : { payload }) });
      const policies = await call('GET', '/api/policies');
      assert.equal(policies.statusCode, 200, policies.body);
      assert.deepEqual(policies.json<PolicyList>().refused, []);
      const payment = (await call('POST', '/api/requests', { action: 'pay', params: { amount: 5 } })).json<{ status: string; decidedBy: string }>();
      assert.deepEqual([payment.status, payment.decidedBy], ['approved', 'policy:old-policy']);
      const changes = (await call('GET', '/api/audit/changes?limit=50')).json<{ entries: { resource: string; resourceId: string; actor: string }[] }>();
      assert.deepEqual(
        changes.entries
          .filter((entry) => entry.actor === 'system:upgrade')
          .map((entry) => `${entry.resource}:${entry.resourceId}`)
          .sort(),
        ['api_key:old-key', 'policy:old-policy'],
      );
      assert.equal((await call('POST', '/api/audit/checkpoint')).statusCode, 201);
      const { publicKey } = (await call('GET', '/api/audit/public-key')).json<{ publicKey: string }>();
      const result = await runVerify<Report>(['--url', url, '--public-key', publicKey], raw);
      assert.equal(result.status, 0, `the upgraded log verifies: ${result.stderr}\n${JSON.stringify(result.report)}`);
    } finally {
      await service.app.close();
    }
  });

  test('observe: a key and a retention setting stored before the upgrade keep working', async () => {
    const { dataDir: _dataDir, ...database } = backend.freshDatabase();
    const raw = 'vk_old_release_key_0123456789ab';
    const old = await openDatabase<ObserveSchema>(database as DatabaseConfig);
    await migrateToLatest(old, stepsBefore(observeMigrations, '0026'));
    await old.db
      .insertInto('api_keys')
      .values({
        id: 'old-key',
        name: 'old',
        prefix: raw.slice(0, 11),
        key_hash: sha256Hex(raw),
        scopes: null,
        created_at: TEST_NOW,
        last_used_at: null,
        revoked_at: null,
      })
      .execute();
    await old.db.insertInto('settings').values({ key: 'retentionDays', value: '1', updated_at: TEST_NOW }).execute();
    await old.close();

    const observe = await startTestObserve(backend, { database: database as DatabaseConfig, createKey: false });
    try {
      const auth = { authorization: `Bearer ${raw}` };
      const ingest = await observe.service.app.inject({
        method: 'POST',
        url: '/api/events',
        headers: auth,
        payload: { events: [started('old-s', 'agent-o', new Date(TEST_NOW).toISOString())] },
      });
      assert.ok(ingest.statusCode < 300, ingest.body);
      clockOf(observe).advance(3 * DAY_MS);
      assert.equal(await observe.service.jobs.retention.tick(), true);
      const session = await observe.service.app.inject({ method: 'GET', url: '/api/sessions/old-s', headers: auth });
      assert.equal(session.statusCode, 404, 'the retention setting stored before the upgrade still applies');
    } finally {
      await observe.close();
    }
  });
});
