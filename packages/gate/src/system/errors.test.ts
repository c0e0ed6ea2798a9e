import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { describeEachDatabase } from '@vigil/platform/testing';
import { startTestGate, type TestGate } from '../testing.ts';

await describeEachDatabase('gate server errors', (backend) => {
  let gate: TestGate;
  before(async () => {
    gate = await startTestGate(backend);
  });
  after(() => gate.close());

  test('a storage failure is 500 internal_error in the gate error body, without internals', async () => {
    await sql`drop table audit_entries`.execute(gate.service.context.database.db);
    const response = await gate.call({ method: 'POST', url: '/api/requests', payload: { action: 'deploy' } });
    assert.equal(response.statusCode, 500);
    assert.deepEqual(response.json(), { error: { code: 'internal_error', message: 'Internal server error' } });
    const list = await gate.call({ method: 'GET', url: '/api/requests' });
    assert.deepEqual(list.json(), [], 'the failed creation left no request behind');
  });
});
