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

await describeEachDatabase('legal holds are read from the change log, not the table', (backend: TestBackend) => {
  let observe: TestObserve;
  const old = TEST_NOW - 3 * DAY;
  const noteOf = (sessionId: string, agentId: string, subject: string) => ({
    sessionId,
    agentId,
    eventType: 'custom',
    timestamp: iso(old),
    metadata: { subjectId: subject },
    payload: { type: 'note', data: { note: 'x' } },
  });
  before(async () => {
    observe = await startTestObserve(backend);
    assert.equal((await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 1 } })).statusCode, 200);
    await ingest(observe, [
      noteOf('row-inserted', 'agent-a', 'dave@example.com'),
      noteOf('row-deleted', 'agent-b', 'erin@example.com'),
      noteOf('row-released', 'agent-c', 'frank@example.com'),
    ]);
  });
  after(() => observe.close());

  test('a hold row inserted in the database holds nothing and is not listed; one deleted, or released in the table, still holds and is listed in force', async () => {
    const { db } = observe.service.context.database;
    const hash = (id: string) => observe.service.context.subjects.hash(id);
    const forged = (scope: 'session' | 'subject', targetId: string) => ({
      id: `forged-${scope}`,
      scope,
      target_id: targetId,
      reason: 'written around the API',
      placed_by: 'db',
      placed_at: TEST_NOW,
      released_at: null,
      released_by: null,
      release_reason: null,
    });
    await db
      .insertInto('legal_holds')
      .values([forged('session', 'row-inserted'), forged('subject', hash('dave@example.com'))])
      .execute();
    const onSession = await placeHold(observe, { scope: 'session', targetId: 'row-deleted', reason: 'matter 1' });
    const onSubject = await placeHold(observe, { scope: 'subject', targetId: 'erin@example.com', reason: 'matter 2' });
    const onAgent = await placeHold(observe, { scope: 'agent', targetId: 'agent-c', reason: 'matter 3' });
    await db.deleteFrom('legal_holds').where('id', 'in', [onSession.id, onSubject.id]).execute();
    await db.updateTable('legal_holds').set({ released_at: TEST_NOW, released_by: 'db', release_reason: 'edited' }).where('id', '=', onAgent.id).execute();

    const refused = await observe.call({ method: 'DELETE', url: '/api/subjects/erin@example.com', payload: { reason: 'Art. 17' } });
    assertErrorBody(refused, 409);
    assert.ok(refused.body.includes(`holds.${onSubject.id}`), refused.body);
    const erased = await observe.call({ method: 'DELETE', url: '/api/subjects/dave@example.com', payload: { reason: 'Art. 17' } });
    assert.equal(erased.statusCode, 200, 'the inserted subject hold does not block the erasure');

    assert.equal(await observe.service.jobs.retention.tick(), true);
    assert.equal(await sessionExists(observe, 'row-inserted'), false, 'the inserted session hold keeps nothing');
    assert.equal(await sessionExists(observe, 'row-deleted'), true, 'the deleted hold still keeps its session');
    assert.equal(await sessionExists(observe, 'row-released'), true, "the hold released in the table still keeps its agent's session");

    // The list answers what decides: the logged holds, not the table's rows.
    const listed = await observe.call({ method: 'GET', url: '/api/holds' });
    assert.equal(listed.statusCode, 200, listed.body);
    const holds = (listed.json() as { holds: { id: string; active: boolean; releaseReason: string | null }[] }).holds;
    assert.deepEqual(
      holds.map((hold) => [hold.id, hold.active, hold.releaseReason]).sort(),
      [onSession, onSubject, onAgent].map((hold) => [hold.id, true, null]).sort(),
    );
    assert.equal((await observe.call({ method: 'GET', url: '/api/holds?active=false' })).json().holds.length, 0);
    assertErrorBody(await observe.call({ method: 'GET', url: '/api/holds/forged-session' }), 404);
    const deleted = await observe.call({ method: 'GET', url: `/api/holds/${onSession.id}` });
    assert.equal(deleted.statusCode, 200, deleted.body);
    assert.equal(deleted.json().active, true);

    // Released through the API (a deleted row is no obstacle), the change log releases them.
    for (const hold of [onSession, onSubject, onAgent]) {
      const released = await observe.call({ method: 'POST', url: `/api/holds/${hold.id}/release`, payload: { reason: 'closed' } });
      assert.equal(released.statusCode, 200, released.body);
    }
    clockOf(observe).advance(1000);
    assert.equal(await observe.service.jobs.retention.tick(), true);
    assert.equal(await sessionExists(observe, 'row-deleted'), false);
    assert.equal(await sessionExists(observe, 'row-released'), false);
    const released = (await observe.call({ method: 'GET', url: '/api/holds?active=false' })).json() as { holds: { id: string; releaseReason: string }[] };
    assert.deepEqual(
      released.holds.map((hold) => [hold.id, hold.releaseReason]).sort(),
      [onSession, onSubject, onAgent].map((hold) => [hold.id, 'closed']).sort(),
    );
  });
});
