// The row check when the instance remembers the state it vouched for (verified-states.ts): a row
// changed in the database after that is still refused, and another instance's writes are seen.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import type { InjectOptions } from 'fastify';
import { buildGateService } from '../app.ts';
import { assertGateError, startTestGate, TEST_ADMIN_KEY, type TestGate } from '../testing.ts';

await describeEachDatabase('request rows vouched for by this instance', (backend) => {
  let gate: TestGate;
  beforeEach(async () => {
    gate = await startTestGate(backend);
  });
  afterEach(async () => {
    await gate.close();
  });

  const create = async (): Promise<string> => {
    const response = await gate.call({ method: 'POST', url: '/api/requests', payload: { action: 'payments.send', params: { amount: 5 } } });
    assert.equal(response.statusCode, 201, response.body);
    return response.json<{ id: string }>().id;
  };
  const refused = (response: Parameters<typeof assertGateError>[0], id: string, what: string): void => {
    assert.match(assertGateError(response, 500, 'internal_error', what), new RegExp(`Request ${id} does not match its audit trail`), what);
  };

  test('a row changed in the database after it was read and written here is refused on read and decide', async () => {
    const id = await create();
    assert.equal((await gate.call({ method: 'GET', url: `/api/requests/${id}` })).statusCode, 200);
    const db = gate.service.context.database.db;
    await db.updateTable('requests').set({ params: '{"amount":5000000}' }).where('id', '=', id).execute();
    refused(await gate.call({ method: 'GET', url: `/api/requests/${id}` }), id, 'read');
    refused(await gate.call({ method: 'POST', url: `/api/requests/${id}/decide`, payload: { decision: 'approved' } }), id, 'decide');
    await db.updateTable('requests').set({ params: '{"amount":5}' }).where('id', '=', id).execute();
    // Put back as it was, the row is its trail's again.
    assert.equal((await gate.call({ method: 'POST', url: `/api/requests/${id}/decide`, payload: { decision: 'approved' } })).statusCode, 200);
    assert.equal((await gate.call({ method: 'GET', url: `/api/requests/${id}` })).json<{ status: string }>().status, 'approved');
  });

  if (backend.kind === 'postgres') {
    test("two instances: B's decision is served by A, and a row put back to the state A remembers is refused", async () => {
      const other = await buildGateService({ ...gate.config }, { runJobs: false, clock: gate.clock });
      const viaB = (request: InjectOptions) => other.app.inject({ ...request, headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } });
      try {
        const db = gate.service.context.database.db;
        const decided = await create();
        assert.equal((await gate.call({ method: 'GET', url: `/api/requests/${decided}` })).json<{ status: string }>().status, 'pending');
        assert.equal((await viaB({ method: 'POST', url: `/api/requests/${decided}/decide`, payload: { decision: 'denied' } })).statusCode, 200);
        assert.equal((await gate.call({ method: 'GET', url: `/api/requests/${decided}` })).json<{ status: string }>().status, 'denied');
        assertGateError(
          await gate.call({ method: 'POST', url: `/api/requests/${decided}/decide`, payload: { decision: 'approved' } }),
          409,
          'conflict',
          'A sees the decision B made',
        );

        // A remembers the pending row; B decides; the row is then put back to exactly that pending row.
        const rolledBack = await create();
        const pending = await db.selectFrom('requests').selectAll().where('id', '=', rolledBack).executeTakeFirstOrThrow();
        assert.equal((await gate.call({ method: 'GET', url: `/api/requests/${rolledBack}` })).statusCode, 200);
        assert.equal((await viaB({ method: 'POST', url: `/api/requests/${rolledBack}/decide`, payload: { decision: 'denied' } })).statusCode, 200);
        await db.updateTable('requests').set(pending).where('id', '=', rolledBack).execute();
        refused(await gate.call({ method: 'GET', url: `/api/requests/${rolledBack}` }), rolledBack, 'read on A');
        refused(await gate.call({ method: 'POST', url: `/api/requests/${rolledBack}/decide`, payload: { decision: 'approved' } }), rolledBack, 'decide on A');
      } finally {
        await other.app.close();
      }
    });
  }
});
