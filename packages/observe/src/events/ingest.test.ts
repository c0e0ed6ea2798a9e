import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { startTestObserve, type TestObserve } from '../testing.ts';

const toolCall = (sessionId: string, callId = 'c1') => ({
  sessionId,
  agentId: 'agent-1',
  eventType: 'tool_call',
  payload: { toolName: 'search', callId, arguments: { q: 'weather in Paris' } },
});

await describeEachDatabase('POST /api/events', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  test('stores a batch and answers 201 with ids and hashes in input order', async () => {
    const response = await observe.call({
      method: 'POST',
      url: '/api/events',
      payload: { events: [toolCall('s-201', 'a'), toolCall('s-201', 'b')] },
    });
    assert.equal(response.statusCode, 201);
    const body = response.json() as { ingested: number; events: { id: string; hash: string }[] };
    assert.equal(body.ingested, 2);
    assert.equal(body.events.length, 2);
    const stored = (await observe.call({ method: 'GET', url: '/api/events?sessionId=s-201&order=asc' })).json() as {
      events: { id: string; hash: string; seq: number; prevHash: string | null; severity: string; metadata: object }[];
    };
    assert.deepEqual(
      stored.events.map((e) => e.id),
      body.events.map((e) => e.id),
    );
    assert.deepEqual(
      stored.events.map((e) => e.seq),
      [0, 1],
    );
    assert.equal(stored.events[0]!.prevHash, null);
    assert.equal(stored.events[1]!.prevHash, body.events[0]!.hash);
    assert.equal(stored.events[0]!.severity, 'info');
    assert.deepEqual(stored.events[0]!.metadata, {});
  });

  test('a batch with one invalid event stores nothing and names the path', async () => {
    const response = await observe.call({
      method: 'POST',
      url: '/api/events',
      payload: { events: [toolCall('s-atomic'), { ...toolCall('s-atomic'), payload: { toolName: 'x' } }] },
    });
    assert.equal(response.statusCode, 400);
    const body = response.json() as { error: string; status: number; details: { path: string }[] };
    assert.equal(body.status, 400);
    assert.ok(body.details.some((d) => d.path === 'events.1.payload.callId'));
    const session = await observe.call({ method: 'GET', url: '/api/sessions/s-atomic' });
    assert.equal(session.statusCode, 404);
  });
});
