import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { describeEachDatabase } from '@vigil/platform/testing';
import { startTestObserve, type TestObserve } from '../testing.ts';

await describeEachDatabase('a storage failure during ingest', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  test('answers 500 "Storage error" in the error body, without leaking SQL', async () => {
    await sql`drop table agents`.execute(observe.service.context.database.db);
    const response = await observe.call({
      method: 'POST',
      url: '/api/events',
      payload: { events: [{ sessionId: 's', agentId: 'a', eventType: 'custom', payload: { type: 't', data: 1 } }] },
    });
    assert.equal(response.statusCode, 500);
    assert.deepEqual(response.json(), { error: 'Storage error', code: 'storage_error', status: 500 });
    const sessions = await observe.call({ method: 'GET', url: '/api/sessions/s' });
    assert.equal(sessions.statusCode, 404, 'the failed batch left no session behind');
  });
});
