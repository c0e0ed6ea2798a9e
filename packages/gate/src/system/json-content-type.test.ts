import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase, withJsonContentType } from '@vigil/platform/testing';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { startTestGate, type TestGate } from '../testing.ts';

// Clients such as the AgentGate SDK send `Content-Type: application/json` on every call, DELETE
// included: an empty body is then no body, not malformed JSON.
await describeEachDatabase('gate: Content-Type: application/json on every request, body or not', (backend) => {
  let gate: TestGate;
  before(async () => {
    gate = await startTestGate(backend);
  });
  after(() => gate.close());

  const send = (request: InjectOptions, key?: string): Promise<LightMyRequestResponse> => gate.call(withJsonContentType(request), key);

  async function created(url: string, payload: object): Promise<{ id: string }> {
    const response = await send({ method: 'POST', url, payload });
    assert.equal(response.statusCode, 201, response.body);
    return response.json() as { id: string };
  }

  test('DELETE /api/api-keys/:id revokes the key, which then gets 401', async () => {
    const key = (await created('/api/api-keys', { name: 'sdk-revoked', scopes: ['request:read'] })) as { id: string; key: string };
    assert.equal((await send({ method: 'GET', url: '/api/requests' }, key.key)).statusCode, 200);
    const revoked = await send({ method: 'DELETE', url: `/api/api-keys/${key.id}` });
    assert.equal(revoked.statusCode, 200, revoked.body);
    assert.deepEqual(revoked.json(), { id: key.id, revoked: true });
    const refused = await send({ method: 'GET', url: '/api/requests' }, key.key);
    assert.equal(refused.statusCode, 401, refused.body);
    assert.equal((refused.json() as { error: { code: string } }).error.code, 'unauthorized');
  });

  test('DELETE of a policy and of a webhook', async () => {
    const policy = await created('/api/policies', { name: 'sdk-policy', rules: [{ match: { action: 'x' }, decision: 'auto_deny' }] });
    const webhook = await created('/api/webhooks', { url: 'https://example.test/hooks/sdk', events: ['request.created'] });
    for (const url of [`/api/policies/${policy.id}`, `/api/webhooks/${webhook.id}`]) {
      const response = await send({ method: 'DELETE', url });
      assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
      assert.equal((response.json() as { deleted: boolean }).deleted, true, url);
      assert.equal((await send({ method: 'DELETE', url })).statusCode, 404, `${url} is gone`);
    }
  });

  test('a route that needs a body answers its own 400 naming the body, and stores nothing', async () => {
    const policy = await created('/api/policies', { name: 'kept', rules: [] });
    const policiesBefore = (await send({ method: 'GET', url: '/api/policies' })).json() as { policies: unknown[] };
    for (const [method, url] of [
      ['POST', '/api/policies'],
      ['PUT', `/api/policies/${policy.id}`],
      ['POST', '/api/requests'],
      ['POST', '/api/webhooks'],
    ] as const) {
      const response = await send({ method, url, payload: '' });
      assert.equal(response.statusCode, 400, `${method} ${url}: ${response.body}`);
      assert.deepEqual(
        response.json(),
        {
          error: {
            code: 'bad_request',
            message: 'Validation failed in body: this operation needs a JSON body',
            details: [{ path: '', message: 'a JSON body is required' }],
          },
        },
        `${method} ${url}`,
      );
    }
    assert.deepEqual((await send({ method: 'GET', url: '/api/policies' })).json(), policiesBefore);
    assert.deepEqual((await send({ method: 'GET', url: '/api/requests' })).json(), []);
  });
});
