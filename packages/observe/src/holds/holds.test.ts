import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { adminChangeReader, describeEachDatabase, type TestBackend } from '@vigil/platform/testing';
import { ConfigError } from '@vigil/platform';
import { assertErrorBody, clockOf, custom, ingest, startTestObserve, TEST_NOW, type TestObserve } from '../testing.ts';

const DAY = 86_400_000;
const iso = (at: number) => new Date(at).toISOString();

async function sessionExists(observe: TestObserve, id: string): Promise<boolean> {
  const row = await observe.service.context.database.db.selectFrom('sessions').select('id').where('id', '=', id).executeTakeFirst();
  return row !== undefined;
}

async function placeHold(observe: TestObserve, body: object): Promise<{ id: string; targetId: string; active: boolean }> {
  const response = await observe.call({ method: 'POST', url: '/api/holds', payload: body });
  assert.equal(response.statusCode, 201, response.body);
  return response.json() as { id: string; targetId: string; active: boolean };
}

await describeEachDatabase('legal holds', (backend: TestBackend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
    const config = await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 1 } });
    assert.equal(config.statusCode, 200, config.body);
  });
  after(() => observe.close());

  test('a hold on a session or an agent keeps it from retention until released; placing and releasing are in the change log', async () => {
    const old = TEST_NOW - 3 * DAY;
    await ingest(observe, [
      custom('held-session', 'agent-free', iso(old)),
      custom('free-session', 'agent-free', iso(old)),
      custom('agent-session', 'agent-held', iso(old)),
    ]);
    const onSession = await placeHold(observe, { scope: 'session', targetId: 'held-session', reason: 'matter 2026-17' });
    const onAgent = await placeHold(observe, { scope: 'agent', targetId: 'agent-held', reason: 'regulator inquiry' });
    assert.equal(onSession.active, true);

    assert.equal(await observe.service.jobs.retention.tick(), true);
    assert.equal(await sessionExists(observe, 'free-session'), false, 'a session no hold covers is deleted');
    assert.equal(await sessionExists(observe, 'held-session'), true, 'the held session is kept');
    assert.equal(await sessionExists(observe, 'agent-session'), true, "the held agent's session is kept");

    const listed = await observe.call({ method: 'GET', url: '/api/holds?active=true' });
    assert.equal(listed.statusCode, 200, listed.body);
    assert.deepEqual((listed.json() as { holds: { id: string }[] }).holds.map((h) => h.id).sort(), [onSession.id, onAgent.id].sort());

    const released = await observe.call({ method: 'POST', url: `/api/holds/${onSession.id}/release`, payload: { reason: 'matter closed' } });
    assert.equal(released.statusCode, 200, released.body);
    assert.equal((released.json() as { active: boolean; releaseReason: string }).active, false);
    clockOf(observe).advance(1000);
    assert.equal(await observe.service.jobs.retention.tick(), true);
    assert.equal(await sessionExists(observe, 'held-session'), false, 'released, the session is deleted');
    assert.equal(await sessionExists(observe, 'agent-session'), true, 'the agent is still held');

    const again = await observe.call({ method: 'POST', url: `/api/holds/${onSession.id}/release`, payload: { reason: 'twice' } });
    assertErrorBody(again, 409);
    assert.equal((again.json() as { code: string }).code, 'legal_hold_released');
    assertErrorBody(await observe.call({ method: 'POST', url: '/api/holds/nope/release', payload: { reason: 'x' } }), 404);
    assertErrorBody(await observe.call({ method: 'GET', url: '/api/holds/nope' }), 404);

    const { historyOf } = adminChangeReader(observe.call);
    const history = await historyOf(onSession.id);
    assert.deepEqual(
      history.map((entry) => [entry.resource, entry.action]),
      [
        ['legal_hold', 'created'],
        ['legal_hold', 'revoked'],
      ],
    );
  });

  test('a subject hold stores the keyed hash of the id, never the id; bad bodies are refused and store nothing', async () => {
    const hold = await placeHold(observe, { scope: 'subject', targetId: 'person-4711@example.com', reason: 'litigation' });
    assert.equal(hold.targetId, observe.service.context.subjects.hash('person-4711@example.com'));
    const rows = await observe.service.context.database.db.selectFrom('legal_holds').select('target_id').execute();
    assert.equal(
      rows.some((row) => row.target_id.includes('person-4711')),
      false,
    );
    const before = rows.length;
    assertErrorBody(await observe.call({ method: 'POST', url: '/api/holds', payload: { scope: 'tenant', targetId: 'x', reason: 'y' } }), 400);
    assertErrorBody(await observe.call({ method: 'POST', url: '/api/holds', payload: { scope: 'session', targetId: 'x', reason: '' } }), 400);
    assert.equal((await observe.service.context.database.db.selectFrom('legal_holds').select('id').execute()).length, before);
  });
});

await describeEachDatabase('the retention floor', (backend: TestBackend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend, { env: { RETENTION_FLOOR_DAYS: '183' } });
  });
  after(() => observe.close());

  test('PUT /api/config refuses a period below the floor (0, keeping everything, and the floor itself are accepted)', async () => {
    const refused = await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 30 } });
    assertErrorBody(refused, 422);
    assert.equal((refused.json() as { code: string }).code, 'retention_below_floor');
    assert.match((refused.json() as { error: string }).error, /183/);
    assert.equal((await observe.call({ method: 'GET', url: '/api/config' })).json().retentionDays, 0, 'nothing was stored');
    assert.equal((await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 183 } })).statusCode, 200);
    assert.equal((await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 0 } })).statusCode, 200);
  });

  test('the start is refused when RETENTION_DAYS, or the stored setting, is below the floor', async () => {
    await assert.rejects(
      startTestObserve(backend, { env: { RETENTION_FLOOR_DAYS: '183', RETENTION_DAYS: '30' } }),
      /RETENTION_DAYS.*RETENTION_FLOOR_DAYS \(183\)/s,
    );
    // A setting stored before the floor was configured: this database, restarted with a floor.
    assert.equal((await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 200 } })).statusCode, 200);
    await assert.rejects(
      startTestObserve(backend, { env: { RETENTION_FLOOR_DAYS: '365' }, database: observe.config.database, createKey: false }),
      (error: unknown) => error instanceof ConfigError && /200 days is below RETENTION_FLOOR_DAYS \(365/.test(error.message),
    );
  });
});
