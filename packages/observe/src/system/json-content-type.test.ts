import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase, withJsonContentType } from '@vigil/platform/testing';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { startTestObserve, type TestObserve } from '../testing.ts';

// Clients such as the AgentGate SDK send `Content-Type: application/json` on every call, DELETE
// included: an empty body is then no body, not malformed JSON.
await describeEachDatabase('observe: Content-Type: application/json on every request, body or not', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  const send = (request: InjectOptions): Promise<LightMyRequestResponse> => observe.call(withJsonContentType(request));

  test('DELETE /api/keys/:id revokes the key, which then gets 401', async () => {
    const created = await send({ method: 'POST', url: '/api/keys', payload: { name: 'sdk-revoked' } });
    assert.equal(created.statusCode, 201, created.body);
    const key = created.json() as { id: string; key: string };
    const withKey = { authorization: `Bearer ${key.key}` };
    assert.equal((await send({ method: 'GET', url: '/api/sessions', headers: withKey })).statusCode, 200);
    const revoked = await send({ method: 'DELETE', url: `/api/keys/${key.id}` });
    assert.equal(revoked.statusCode, 200, revoked.body);
    assert.deepEqual(revoked.json(), { id: key.id, revoked: true });
    const refused = await send({ method: 'GET', url: '/api/sessions', headers: withKey });
    assert.equal(refused.statusCode, 401, refused.body);
    assert.equal((refused.json() as { status: number }).status, 401);
  });

  test('a POST whose body is optional works without one', async () => {
    const events = [
      {
        sessionId: 's-sdk',
        agentId: 'sdk-agent',
        eventType: 'tool_call',
        timestamp: '2026-11-22T09:00:00.000Z',
        payload: { toolName: 'search', callId: 'c1', arguments: {} },
      },
    ];
    assert.equal((await send({ method: 'POST', url: '/api/events', payload: { events } })).statusCode, 201);
    const paused = await send({ method: 'POST', url: '/api/agents/sdk-agent/pause' });
    assert.equal(paused.statusCode, 200, paused.body);
    assert.notEqual((paused.json() as { pausedAt: string | null }).pausedAt, null);
    const resumed = await send({ method: 'POST', url: '/api/agents/sdk-agent/resume', payload: '' });
    assert.equal(resumed.statusCode, 200, resumed.body);
    assert.equal((resumed.json() as { pausedAt: string | null }).pausedAt, null);
  });

  test('a route that needs a body answers its own 400 naming the body, and stores nothing', async () => {
    const keysBefore = (await send({ method: 'GET', url: '/api/keys' })).json();
    for (const [method, url] of [
      ['POST', '/api/keys'],
      ['POST', '/api/events'],
      ['POST', '/api/guardrails'],
      ['PUT', '/api/config'],
    ] as const) {
      const response = await send({ method, url, payload: '' });
      assert.equal(response.statusCode, 400, `${method} ${url}: ${response.body}`);
      assert.deepEqual(
        response.json(),
        {
          error: 'Validation failed in body: this operation needs a JSON body',
          code: 'validation_error',
          status: 400,
          details: [{ path: '', message: 'a JSON body is required' }],
        },
        `${method} ${url}`,
      );
    }
    assert.deepEqual((await send({ method: 'GET', url: '/api/keys' })).json(), keysBefore);
    assert.deepEqual((await send({ method: 'GET', url: '/api/guardrails' })).json(), { rules: [] });
  });
});
