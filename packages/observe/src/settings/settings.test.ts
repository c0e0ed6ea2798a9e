import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { ManualClock, VIGIL_VERSION } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import type { LightMyRequestResponse } from 'fastify';
import { ago, assertErrorBody, custom, ingest, startTestObserve, type TestObserve } from '../testing.ts';
import { readSettings } from './service.ts';

const NOW = Date.parse('2026-11-22T10:00:00.000Z');
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

const ENV_APPROVAL_SECRET = 'env-approval-gate-secret-0001';
const STORED_APPROVAL_SECRET = 'stored-approval-gate-secret-0002';
const STORED_FORM_SECRET = 'stored-form-service-secret-0003';

interface PublicConfig {
  retentionDays: number;
  approvalGateSecretSet: boolean;
  formServiceSecretSet: boolean;
}

async function getConfig(observe: TestObserve): Promise<{ body: PublicConfig; raw: string }> {
  const response = await observe.call({ method: 'GET', url: '/api/config' });
  assert.equal(response.statusCode, 200, response.body);
  return { body: response.json() as PublicConfig, raw: response.body };
}

async function putConfig(observe: TestObserve, payload: object): Promise<LightMyRequestResponse> {
  return observe.call({ method: 'PUT', url: '/api/config', payload });
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

await describeEachDatabase('GET and PUT /api/config', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend, { env: { APPROVAL_GATE_WEBHOOK_SECRET: ENV_APPROVAL_SECRET } });
  });
  after(() => observe.close());

  test('GET reports retention and whether each webhook secret is set, never the secrets', async () => {
    const { body, raw } = await getConfig(observe);
    assert.equal(body.retentionDays, 0);
    assert.equal(body.approvalGateSecretSet, true, 'set from APPROVAL_GATE_WEBHOOK_SECRET');
    assert.equal(body.formServiceSecretSet, false);
    assert.equal(raw.includes(ENV_APPROVAL_SECRET), false);
  });

  test('PUT updates retention and secrets, answers the config without secrets, and persists', async () => {
    const response = await putConfig(observe, {
      retentionDays: 30,
      approvalGateWebhookSecret: STORED_APPROVAL_SECRET,
      formServiceWebhookSecret: STORED_FORM_SECRET,
    });
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json() as PublicConfig;
    assert.equal(body.retentionDays, 30);
    assert.equal(body.approvalGateSecretSet, true);
    assert.equal(body.formServiceSecretSet, true);
    for (const secret of [STORED_APPROVAL_SECRET, STORED_FORM_SECRET, ENV_APPROVAL_SECRET]) {
      assert.equal(response.body.includes(secret), false, 'secret in the PUT response');
    }
    assert.ok(!('approvalGateWebhookSecret' in body) && !('formServiceWebhookSecret' in body));

    const { body: stored, raw } = await getConfig(observe);
    assert.equal(stored.retentionDays, 30);
    assert.equal(stored.approvalGateSecretSet, true);
    assert.equal(stored.formServiceSecretSet, true);
    for (const secret of [STORED_APPROVAL_SECRET, STORED_FORM_SECRET]) assert.equal(raw.includes(secret), false);

    // The stored value wins over the environment.
    const settings = await readSettings(observe.service.context);
    assert.equal(settings.approvalGateWebhookSecret, STORED_APPROVAL_SECRET);
    assert.equal(settings.formServiceWebhookSecret, STORED_FORM_SECRET);
    assert.equal(settings.retentionDays, 30);
  });

  test('PUT changes only the fields it names', async () => {
    const response = await putConfig(observe, { retentionDays: 7 });
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json() as PublicConfig;
    assert.equal(body.retentionDays, 7);
    assert.equal(body.approvalGateSecretSet, true);
    assert.equal(body.formServiceSecretSet, true);
    const settings = await readSettings(observe.service.context);
    assert.equal(settings.approvalGateWebhookSecret, STORED_APPROVAL_SECRET);
    assert.equal(settings.formServiceWebhookSecret, STORED_FORM_SECRET);
  });

  test('a secret set to null is cleared, so the environment value applies again', async () => {
    const response = await putConfig(observe, { approvalGateWebhookSecret: null, formServiceWebhookSecret: null });
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json() as PublicConfig;
    assert.equal(body.approvalGateSecretSet, true, 'the environment secret is back');
    assert.equal(body.formServiceSecretSet, false, 'no environment secret for the form service');
    assert.equal(body.retentionDays, 7);
    const settings = await readSettings(observe.service.context);
    assert.equal(settings.approvalGateWebhookSecret, ENV_APPROVAL_SECRET);
    assert.equal(settings.formServiceWebhookSecret, null);
    const { body: stored } = await getConfig(observe);
    assert.equal(stored.approvalGateSecretSet, true);
    assert.equal(stored.formServiceSecretSet, false);
    // Nothing about the secrets is left in the settings table.
    const rows = await observe.service.context.database.db.selectFrom('settings').selectAll().execute();
    assert.equal(JSON.stringify(rows).includes(STORED_APPROVAL_SECRET), false);
    assert.equal(JSON.stringify(rows).includes(STORED_FORM_SECRET), false);
  });

  test('unknown fields and invalid values are 400, and nothing is stored', async () => {
    const before = (await getConfig(observe)).body;
    for (const payload of [
      { retentionDays: 3, unknownField: true },
      { healthWeights: {} },
      { retentionDays: -1 },
      { retentionDays: 1.5 },
      { retentionDays: '3' },
      { approvalGateWebhookSecret: 42 },
    ]) {
      assertErrorBody(await putConfig(observe, payload), 400, JSON.stringify(payload));
    }
    assert.deepEqual((await getConfig(observe)).body, before);
    const settings = await readSettings(observe.service.context);
    assert.equal(settings.retentionDays, 7);
    assert.equal(settings.approvalGateWebhookSecret, ENV_APPROVAL_SECRET);
  });

  test('the body GET returned can be sent back with a change: its read-only fields are ignored, a typo is still 400', async () => {
    const read = (await getConfig(observe)).body as PublicConfig & Record<string, unknown>;
    assert.deepEqual(Object.keys(read).sort(), ['approvalGateSecretSet', 'authDisabled', 'formServiceSecretSet', 'memoryEnabled', 'retentionDays']);
    const response = await putConfig(observe, { ...read, retentionDays: 14 });
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json(), { ...read, retentionDays: 14 });

    // Read-only values that disagree with the server change nothing.
    const flipped = await putConfig(observe, { approvalGateSecretSet: false, formServiceSecretSet: true, authDisabled: true, memoryEnabled: true });
    assert.equal(flipped.statusCode, 200, flipped.body);
    assert.deepEqual(flipped.json(), { ...read, retentionDays: 14 });
    const settings = await readSettings(observe.service.context);
    assert.equal(settings.approvalGateWebhookSecret, ENV_APPROVAL_SECRET);
    assert.equal(settings.formServiceWebhookSecret, null);
    const keys = (await observe.service.context.database.db.selectFrom('settings').select('key').execute()).map((row) => row.key);
    assert.deepEqual(keys, ['retentionDays'], 'only writable settings are stored');

    const typo = await putConfig(observe, { ...read, retentionDayz: 3 });
    assertErrorBody(typo, 400, 'typo');
    assert.match((typo.json() as { error: string }).error, /retentionDayz/);
    assert.equal((await getConfig(observe)).body.retentionDays, 14);
    assert.equal((await putConfig(observe, { retentionDays: 7 })).statusCode, 200);
  });

  test('malformed JSON is 400 in the service error body', async () => {
    const response = await observe.call({
      method: 'PUT',
      url: '/api/config',
      headers: { 'content-type': 'application/json' },
      payload: '{"retentionDays": ',
    });
    assertErrorBody(response, 400);
  });
});

await describeEachDatabase('GET /api/config/features', (backend) => {
  let memoryServer: Server;
  let port = 0;
  before(async () => {
    memoryServer = createServer((_req, res) => res.end('{}'));
    port = await listen(memoryServer);
  });
  after(() => new Promise<void>((resolve) => memoryServer.close(() => resolve())));

  test('memory is off by default', async () => {
    const observe = await startTestObserve(backend);
    try {
      const response = await observe.call({ method: 'GET', url: '/api/config/features' });
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.json(), { memory: false, memoryUrl: '' });
    } finally {
      await observe.close();
    }
  });

  test('MEMORY_ENABLED=true with MEMORY_API_URL turns it on and reports the address', async () => {
    const url = `http://127.0.0.1:${port}`;
    const observe = await startTestObserve(backend, { env: { MEMORY_ENABLED: 'true', MEMORY_API_URL: url } });
    try {
      const response = await observe.call({ method: 'GET', url: '/api/config/features' });
      assert.equal(response.statusCode, 200);
      assert.deepEqual(response.json(), { memory: true, memoryUrl: url });
    } finally {
      await observe.close();
    }
  });
});

await describeEachDatabase('health weights', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  test('GET /api/config/health-weights answers the fixed weights', async () => {
    const response = await observe.call({ method: 'GET', url: '/api/config/health-weights' });
    assert.equal(response.statusCode, 200);
    assert.deepEqual(response.json(), { errorRate: 0.3, costEfficiency: 0.2, toolSuccess: 0.2, latency: 0.15, completionRate: 0.15 });
  });

  test('PUT /api/config/health-weights always answers 501 { error, status: 501 }', async () => {
    for (const payload of [
      { errorRate: 0.2, costEfficiency: 0.2, toolSuccess: 0.2, latency: 0.2, completionRate: 0.2 },
      { errorRate: 0.3, costEfficiency: 0.2, toolSuccess: 0.2, latency: 0.15, completionRate: 0.15 },
      {},
    ]) {
      const response = await observe.call({ method: 'PUT', url: '/api/config/health-weights', payload });
      assertErrorBody(response, 501, JSON.stringify(payload));
    }
    const after = await observe.call({ method: 'GET', url: '/api/config/health-weights' });
    assert.deepEqual(after.json(), { errorRate: 0.3, costEfficiency: 0.2, toolSuccess: 0.2, latency: 0.15, completionRate: 0.15 });
  });
});

await describeEachDatabase('GET /api/stats and GET /api/health', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  test('stats of an empty database', async () => {
    const response = await observe.call({ method: 'GET', url: '/api/stats' });
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json() as Record<string, unknown>;
    assert.deepEqual(Object.keys(body).sort(), [
      'judgeSpendUsd',
      'newestEvent',
      'oldestEvent',
      'storageSizeBytes',
      'totalAgents',
      'totalEvents',
      'totalSessions',
    ]);
    assert.equal(body.totalEvents, 0);
    assert.equal(body.totalSessions, 0);
    assert.equal(body.totalAgents, 0);
    assert.equal(body.oldestEvent, null);
    assert.equal(body.newestEvent, null);
    assert.equal(body.judgeSpendUsd, 0);
    assert.equal(typeof body.storageSizeBytes, 'number');
    assert.ok((body.storageSizeBytes as number) > 0);
  });

  test('stats count exactly what was ingested', async () => {
    await ingest(observe, [
      custom('st-1', 'agent-a', ago(100)),
      custom('st-1', 'agent-a', ago(50)),
      custom('st-2', 'agent-b', ago(200)),
      custom('st-1', 'agent-a', ago(10)),
    ]);
    await ingest(observe, [custom('st-2', 'agent-b', ago(5)), custom('st-3', 'agent-a', ago(30))]);
    const response = await observe.call({ method: 'GET', url: '/api/stats' });
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json() as Record<string, unknown>;
    assert.equal(body.totalEvents, 6);
    assert.equal(body.totalSessions, 3);
    assert.equal(body.totalAgents, 2);
    assert.equal(body.oldestEvent, ago(200));
    assert.equal(body.newestEvent, ago(5));
    assert.equal(body.judgeSpendUsd, 0);
    assert.ok(Number.isInteger(body.storageSizeBytes) && (body.storageSizeBytes as number) > 0);
  });

  test('storageSizeBytes is the data on disk: the SQLite file with its WAL; on PostgreSQL the schema tables with their indexes', async () => {
    await ingest(
      observe,
      Array.from({ length: 200 }, (_, i) => custom('st-size', 'agent-a', ago(300 - i))),
    );
    const stats = async (): Promise<number> => (await observe.call({ method: 'GET', url: '/api/stats' })).json<{ storageSizeBytes: number }>().storageSizeBytes;
    const { database } = observe.config;
    if (database.kind === 'postgres') {
      const objects = await observe.service.context.database.storageBreakdown();
      // The events are partitioned (events/partitions.ts): their rows and indexes are the partitions'.
      const ofEvents = (name: string) => name === 'events' || name.startsWith('events_');
      assert.ok(objects.some((o) => ofEvents(o.name) && o.kind === 'table') && objects.some((o) => ofEvents(o.table) && o.kind === 'index'));
      assert.equal(
        await stats(),
        objects.reduce((sum, o) => sum + o.bytes, 0),
      );
      return;
    }
    // The checkpointer thread copies the WAL into the file in the background: compare once both sizes hold still.
    const onDisk = (): number => statSync(database.file).size + statSync(`${database.file}-wal`).size;
    let previous = -1;
    while (previous !== onDisk()) {
      previous = onDisk();
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    assert.ok(statSync(`${database.file}-wal`).size > 0, 'the WAL holds pages');
    assert.equal(await stats(), onDisk());
  });

  test('GET /api/health needs no key and reports the database', async () => {
    const response = await observe.service.app.inject({ method: 'GET', url: '/api/health' });
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json() as { status: string; version: string; db: { ok: boolean; latencyMs: number }; firstKeyBootstrap: string };
    assert.deepEqual(Object.keys(body).sort(), ['db', 'firstKeyBootstrap', 'status', 'version']);
    // The test service created its first key and listens on loopback.
    assert.equal(body.firstKeyBootstrap, 'closed');
    assert.equal(body.status, 'ok');
    assert.equal(body.version, VIGIL_VERSION);
    assert.match(body.version, /^\d+\.\d+\.\d+/);
    assert.deepEqual(Object.keys(body.db).sort(), ['latencyMs', 'ok']);
    assert.equal(body.db.ok, true);
    assert.equal(typeof body.db.latencyMs, 'number');
    assert.ok(body.db.latencyMs >= 0);
  });
});

await describeEachDatabase('retention', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  const THREE_DAYS = 3 * 24 * 60;

  async function sessionStatus(id: string): Promise<number> {
    return (await observe.call({ method: 'GET', url: `/api/sessions/${id}` })).statusCode;
  }

  async function timeline(id: string): Promise<{ events: { seq: number }[]; chainValid: boolean }> {
    const response = await observe.call({ method: 'GET', url: `/api/sessions/${id}/timeline` });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as { events: { seq: number }[]; chainValid: boolean };
  }

  test('deletes whole sessions whose last event is older than retentionDays, keeps the rest intact', async () => {
    await ingest(observe, [
      { sessionId: 'old-1', agentId: 'agent-o', eventType: 'session_started', timestamp: ago(THREE_DAYS), payload: { tags: ['old'] } },
      custom('old-1', 'agent-o', ago(THREE_DAYS - 1)),
      custom('old-2', 'agent-o', ago(THREE_DAYS)),
      custom('old-2', 'agent-o', ago(THREE_DAYS - 12 * 60)),
      custom('mixed', 'agent-m', ago(THREE_DAYS)),
      custom('mixed', 'agent-m', ago(THREE_DAYS - 1)),
      custom('recent', 'agent-r', ago(60)),
      custom('recent', 'agent-r', ago(59)),
    ]);
    // The mixed session's last event is recent: it is kept whole, old events included.
    await ingest(observe, [custom('mixed', 'agent-m', ago(30)), custom('young', 'agent-r', ago(23 * 60))]);

    // retentionDays 0 (the default) keeps everything.
    assert.equal(await observe.service.jobs.retention.tick(), true);
    for (const id of ['old-1', 'old-2', 'mixed', 'recent', 'young']) assert.equal(await sessionStatus(id), 200, id);

    const put = await putConfig(observe, { retentionDays: 1 });
    assert.equal(put.statusCode, 200, put.body);
    assert.equal((put.json() as PublicConfig).retentionDays, 1);
    assert.equal(await observe.service.jobs.retention.tick(), true);

    for (const id of ['old-1', 'old-2']) {
      assertErrorBody(await observe.call({ method: 'GET', url: `/api/sessions/${id}` }), 404, id);
      assertErrorBody(await observe.call({ method: 'GET', url: `/api/sessions/${id}/timeline` }), 404, id);
      const events = await observe.call({ method: 'GET', url: `/api/events?sessionId=${id}` });
      assert.equal(events.statusCode, 200);
      assert.deepEqual(events.json(), { events: [], total: 0, hasMore: false });
    }
    const { db } = observe.service.context.database;
    const leftovers = await db.selectFrom('events').select('id').where('session_id', 'in', ['old-1', 'old-2']).execute();
    assert.deepEqual(leftovers, []);
    const tags = await db.selectFrom('session_tags').selectAll().where('session_id', 'in', ['old-1', 'old-2']).execute();
    assert.deepEqual(tags, []);
    const tagged = await observe.call({ method: 'GET', url: '/api/sessions?tags=old' });
    assert.equal((tagged.json() as { total: number }).total, 0);

    const mixed = await timeline('mixed');
    assert.equal(mixed.chainValid, true);
    assert.deepEqual(
      mixed.events.map((e) => e.seq),
      [0, 1, 2],
    );
    for (const id of ['recent', 'young']) {
      assert.equal(await sessionStatus(id), 200, id);
      assert.equal((await timeline(id)).chainValid, true, id);
    }

    const stats = (await observe.call({ method: 'GET', url: '/api/stats' })).json() as Record<string, unknown>;
    assert.equal(stats.totalSessions, 3);
    assert.equal(stats.totalEvents, 6);
    assert.equal(stats.oldestEvent, ago(THREE_DAYS));
    assert.equal(stats.newestEvent, ago(30));
    const list = (await observe.call({ method: 'GET', url: '/api/sessions' })).json() as { total: number };
    assert.equal(list.total, 3);

    // A kept session keeps growing on a valid chain.
    await ingest(observe, [custom('mixed', 'agent-m', ago(1))]);
    const grown = await timeline('mixed');
    assert.equal(grown.chainValid, true);
    assert.equal(grown.events.length, 4);
  });

  test('as time passes, sessions age out on a later run', async () => {
    const clock = observe.clock as ManualClock;
    clock.advance(DAY + 1);
    assert.equal(await observe.service.jobs.retention.tick(), true);
    // Every remaining session's last event is now more than a day old.
    for (const id of ['young', 'mixed', 'recent']) assert.equal(await sessionStatus(id), 404, id);
    const stats = (await observe.call({ method: 'GET', url: '/api/stats' })).json() as Record<string, unknown>;
    assert.equal(stats.totalSessions, 0);
    assert.equal(stats.totalEvents, 0);
    assert.equal(stats.oldestEvent, null);

    clock.set(NOW);
    await ingest(observe, [custom('after', 'agent-r', ago(1))]);
    assert.equal(await observe.service.jobs.retention.tick(), true);
    assert.equal(await sessionStatus('after'), 200);
    assert.equal((await timeline('after')).chainValid, true);
  });
});
