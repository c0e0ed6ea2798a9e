import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { startTestObserve, type TestObserve } from '../testing.ts';

interface Agent {
  id: string;
  pausedAt: string | null;
  pauseReason: string | null;
}

await describeEachDatabase('POST /api/agents/:id/pause', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
    const response = await observe.call({
      method: 'POST',
      url: '/api/events',
      payload: { events: ['a1', 'a2'].map((agentId) => ({ sessionId: `s-${agentId}`, agentId, eventType: 'session_started', payload: {} })) },
    });
    assert.equal(response.statusCode, 201, response.body);
  });
  after(() => observe.close());

  const pause = (id: string, payload?: object) => observe.call({ method: 'POST', url: `/api/agents/${id}/pause`, ...(payload !== undefined && { payload }) });

  test('pauses with the given reason; a second pause keeps the first; resume clears it', async () => {
    const first = await pause('a1', { reason: '  runaway spend ' });
    assert.equal(first.statusCode, 200, first.body);
    const agent = first.json() as Agent;
    assert.equal(agent.pausedAt, '2026-11-22T10:00:00.000Z');
    assert.equal(agent.pauseReason, 'runaway spend');

    const again = (await pause('a1', { reason: 'another' })).json() as Agent;
    assert.equal(again.pauseReason, 'runaway spend', 'an agent already paused keeps its first pause');

    const resumed = await observe.call({ method: 'POST', url: '/api/agents/a1/resume' });
    assert.equal(resumed.statusCode, 200, resumed.body);
    assert.equal((resumed.json() as Agent).pausedAt, null);
  });

  test('without a body the reason says it was paused by hand', async () => {
    const response = await pause('a2');
    assert.equal(response.statusCode, 200, response.body);
    assert.equal((response.json() as Agent).pauseReason, 'Paused by hand');
  });

  test('an unknown agent is 404, unknown body keys and an empty reason are 400, and no key is 401', async () => {
    assert.equal((await pause('nobody')).statusCode, 404);
    assert.equal((await pause('a1', { reason: '' })).statusCode, 400);
    assert.equal((await pause('a1', { why: 'x' })).statusCode, 400);
    const anonymous = await observe.service.app.inject({ method: 'POST', url: '/api/agents/a1/pause' });
    assert.equal(anonymous.statusCode, 401);
  });
});
