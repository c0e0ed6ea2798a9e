import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase, openApiCoverageProblems, unknownQueryProblems, type OpenApiPaths } from '@vigil/platform/testing';
import { gateErrorSchema } from '../errors.ts';
import { CHAT_CONFIGURED_ENV, startTestGate, type TestGate } from '../testing.ts';

await describeEachDatabase('gate GET /api/openapi.json', (backend) => {
  let gate: TestGate;
  before(async () => {
    // Both chat platforms configured, so their interaction routes are walked too.
    gate = await startTestGate(backend, { env: CHAT_CONFIGURED_ENV });
  });
  after(() => gate.close());

  const document = async (): Promise<OpenApiPaths> => {
    const response = await gate.service.app.inject({ method: 'GET', url: '/api/openapi.json' });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as OpenApiPaths;
  };

  test('is served without credentials', async () => {
    assert.ok((await document()).paths['/api/requests'], 'the whole document');
  });

  test('every route is an operation with a unique operationId that lists its errors in the GateError body', async () => {
    const doc = await document();
    const problems = openApiCoverageProblems(gate.service.app.routeTable, doc, {
      errorSchema: 'GateError',
      undocumented: {
        '/api/openapi.json': 'the document itself',
        '/metrics': 'Prometheus text, not JSON (docs/api.md)',
        'GET /mcp': 'MCP without a session stream: always 405 (docs/guide/mcp.md)',
        'DELETE /mcp': 'MCP without sessions: always 405 (docs/guide/mcp.md)',
      },
      requiredErrors: (route) => {
        const scope = route.takesKey ? route.scope : 'public';
        return [
          400,
          // A key may carry a rate limit: every route that takes one can answer 429.
          ...(scope === 'public' ? [] : scope === 'any' ? [401, 429] : [401, 403, 429]),
          ...(route.url.includes(':') ? [404] : []),
          ...(['POST', 'PUT', 'PATCH'].includes(route.method) ? [413, 415] : []),
          500,
          503,
        ];
      },
      ownErrorBodies: ['GET /health 503', 'POST /mcp 400', 'POST /mcp 403', 'POST /mcp 406', 'POST /mcp 415'],
    });
    assert.deepEqual(problems, []);
    const decide = doc.paths['/api/requests/{id}/decide']!.post!;
    assert.equal(decide.operationId, 'decideRequest');
    assert.ok(decide.responses!['409'], "route-specific errors (the route's errorStatuses) are listed too");
  });

  test("a key's rate-limit headers are documented on the answers that carry them: not on 401 and 403, which come before the limiter", async () => {
    const list = (await document()).paths['/api/requests']!.get! as { responses: Record<string, { headers?: Record<string, unknown> }> };
    const headersOf = (status: string) => Object.keys(list.responses[status]?.headers ?? {}).sort();
    const limits = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'];
    assert.deepEqual(headersOf('200'), limits);
    assert.deepEqual(headersOf('400'), limits);
    assert.deepEqual(headersOf('429'), ['Retry-After', ...limits]);
    assert.deepEqual(headersOf('401'), []);
    assert.deepEqual(headersOf('403'), []);
    assert.deepEqual(headersOf('500'), []);
    const limited = await gate.createKey(['request:read'], 1, 'documented-limit');
    const answered = await gate.service.app.inject({ method: 'GET', url: '/api/requests', headers: { authorization: `Bearer ${limited}` } });
    assert.equal(answered.statusCode, 200);
    for (const name of limits) assert.ok(answered.headers[name.toLowerCase()] !== undefined, `${name} is sent`);
  });

  test('every GET operation answers an unknown query parameter with a 400 naming it', async () => {
    assert.deepEqual(await unknownQueryProblems(await document(), (request) => gate.call(request)), []);
  });

  test('the GateError component is the body errors are answered with', async () => {
    const response = await gate.call({ method: 'POST', url: '/api/policies', payload: { name: '' } });
    assert.equal(response.statusCode, 400);
    const body = response.json() as { error: { details?: unknown[] } };
    assert.ok(body.error.details && body.error.details.length > 0, response.body);
    assert.deepEqual(gateErrorSchema.parse(body), body);
  });
});
