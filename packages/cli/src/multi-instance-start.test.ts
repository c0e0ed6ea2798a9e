// Several instances of each service starting at once on one fresh PostgreSQL schema (a rolling
// deploy, or a cluster coming up): migrations run exactly once under an advisory lock, the gate's
// first admin key is installed or generated exactly once, and every instance then serves the same
// data. Needs PostgreSQL (skipped when unreachable unless REQUIRE_SERVICES=1).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { migrateToLatest, openDatabase } from '@vigil/platform';
import { postgresReachable, serviceSkip, TEST_POSTGRES_URL } from '@vigil/platform/testing';
import { buildGateService, gateConfigFromEnvironment, type GateService } from '@vigil/gate';
import { bootstrapAdminKey, gateMigrations, type GateSchema } from '@vigil/gate/testing';
import { buildObserveService, observeConfigFromEnvironment, type ObserveService } from '@vigil/observe';
import { observeMigrations } from '@vigil/observe/testing';

const INSTANCES = 4;
const ADMIN_KEY = 'gk_cluster_admin_key_0123456789';

const skip = serviceSkip(`PostgreSQL at ${TEST_POSTGRES_URL}`, await postgresReachable());

describe('several instances starting at once on a fresh PostgreSQL schema', { skip }, () => {
  const schemas: string[] = [];
  const dirs: string[] = [];
  const running: { app: { close(): Promise<unknown> } }[] = [];
  const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });

  function freshSchema(prefix: string): string {
    const schema = `${prefix}_${randomBytes(5).toString('hex')}`;
    schemas.push(schema);
    return schema;
  }
  function dataDir(): string {
    const dir = mkdtempSync(join(tmpdir(), 'vigil-cluster-'));
    dirs.push(dir);
    return dir;
  }
  async function count(schema: string, table: string): Promise<number> {
    const result = await admin.query(`select count(*)::int as n from "${schema}"."${table}"`);
    return result.rows[0].n as number;
  }

  after(async () => {
    await Promise.allSettled(running.map((service) => service.app.close()));
    for (const schema of schemas) await admin.query(`drop schema if exists "${schema}" cascade`).catch(() => undefined);
    await admin.end().catch(() => undefined);
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  test(`${INSTANCES} observe and ${INSTANCES} gate instances: each migration once, one admin key, shared data`, async () => {
    await admin.connect();
    const observeSchema = freshSchema('cluster_observe');
    const gateSchema = freshSchema('cluster_gate');
    const env = {
      LOG_LEVEL: 'silent',
      DATABASE_URL: TEST_POSTGRES_URL,
      OBSERVE_DB_SCHEMA: observeSchema,
      GATE_DB_SCHEMA: gateSchema,
      GATE_ADMIN_KEY: ADMIN_KEY,
    };
    // All at once: the schema, the migration table and every step are raced for.
    const started = await Promise.allSettled([
      ...Array.from({ length: INSTANCES }, () => buildObserveService(observeConfigFromEnvironment(env, { dataDir: dataDir() }), { runJobs: false })),
      ...Array.from({ length: INSTANCES }, () => buildGateService(gateConfigFromEnvironment(env, { dataDir: dataDir() }), { runJobs: false })),
    ]);
    for (const outcome of started) if (outcome.status === 'fulfilled') running.push(outcome.value);
    const failures = started.filter((o): o is PromiseRejectedResult => o.status === 'rejected').map((o) => String(o.reason));
    assert.deepEqual(failures, [], 'every instance started');
    const observes = started.slice(0, INSTANCES).map((o) => (o as PromiseFulfilledResult<ObserveService>).value);
    const gates = started.slice(INSTANCES).map((o) => (o as PromiseFulfilledResult<GateService>).value);

    assert.equal(await count(observeSchema, 'schema_migrations'), Object.keys(observeMigrations).length, 'each observe migration recorded once');
    assert.equal(await count(gateSchema, 'schema_migrations'), Object.keys(gateMigrations).length, 'each gate migration recorded once');
    assert.equal(await count(gateSchema, 'api_keys'), 1, 'GATE_ADMIN_KEY installed once');

    // A key made through one observe instance works on another; events written through every
    // instance land in one gapless chain.
    const created = await observes[0]!.app.inject({ method: 'POST', url: '/api/keys', payload: { name: 'cluster' } });
    assert.equal(created.statusCode, 201);
    const key = (created.json() as { key: string }).key;
    await Promise.all(
      observes.map(async (service, i) => {
        const response = await service.app.inject({
          method: 'POST',
          url: '/api/events',
          headers: { authorization: `Bearer ${key}` },
          payload: { events: [{ sessionId: 'shared', agentId: 'a', eventType: 'custom', payload: { type: 't', data: i } }] },
        });
        assert.equal(response.statusCode, 201, response.body);
      }),
    );
    const verify = await observes[INSTANCES - 1]!.app.inject({
      method: 'GET',
      url: '/api/audit/verify?sessionId=shared',
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(verify.statusCode, 200, verify.body);
    assert.equal((verify.json() as { valid: boolean }).valid, true, verify.body);
    const seqs = await admin.query(`select seq from "${observeSchema}".events where session_id = 'shared' order by seq`);
    assert.deepEqual(
      seqs.rows.map((r) => Number(r.seq)),
      Array.from({ length: INSTANCES }, (_, i) => i),
    );

    // A request created through one gate instance is read through every other.
    const request = await gates[0]!.app.inject({
      method: 'POST',
      url: '/api/requests',
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
      payload: { action: 'deploy' },
    });
    assert.equal(request.statusCode, 201, request.body);
    const id = (request.json() as { id: string }).id;
    for (const gate of gates) {
      const read = await gate.app.inject({ method: 'GET', url: `/api/requests/${id}`, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
      assert.equal(read.statusCode, 200);
    }
  });

  test(`${INSTANCES} gate instances without GATE_ADMIN_KEY generate exactly one admin key`, async () => {
    const gateSchema = freshSchema('cluster_gate_nokey');
    const env = { LOG_LEVEL: 'silent', DATABASE_URL: TEST_POSTGRES_URL, GATE_DB_SCHEMA: gateSchema };
    const gates = await Promise.all(
      Array.from({ length: INSTANCES }, () => buildGateService(gateConfigFromEnvironment(env, { dataDir: dataDir() }), { runJobs: false })),
    );
    running.push(...gates);
    const generated = gates.map((g) => g.generatedAdminKey).filter((k): k is string => k !== null);
    assert.equal(generated.length, 1, 'one instance generated (and prints) the admin key');
    assert.equal(await count(gateSchema, 'api_keys'), 1);
    const listed = await gates[INSTANCES - 1]!.app.inject({ method: 'GET', url: '/api/api-keys', headers: { authorization: `Bearer ${generated[0]}` } });
    assert.equal(listed.statusCode, 200, 'the generated key works on every instance');
  });

  test('the first-start bootstrap raced from separate connections installs one admin key', async () => {
    const gateSchema = freshSchema('cluster_gate_race');
    const config = { kind: 'postgres' as const, url: TEST_POSTGRES_URL, schema: gateSchema };
    const databases = await Promise.all(Array.from({ length: 8 }, () => openDatabase<GateSchema>(config)));
    try {
      await migrateToLatest(databases[0]!, gateMigrations);
      const generated = await Promise.all(databases.map((database) => bootstrapAdminKey(database, undefined, Date.now())));
      assert.equal(generated.filter((k) => k !== null).length, 1, 'one key generated');
      assert.equal(await count(gateSchema, 'api_keys'), 1);
      await Promise.all(databases.map((database) => bootstrapAdminKey(database, ADMIN_KEY, Date.now())));
      assert.equal(await count(gateSchema, 'api_keys'), 2, 'GATE_ADMIN_KEY added once');
    } finally {
      await Promise.all(databases.map((database) => database.close()));
    }
  });
});
