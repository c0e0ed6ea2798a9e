import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase, openApiCoverageProblems, unknownQueryProblems, type OpenApiPaths } from '@vigil/platform/testing';
import { observeErrorSchema } from '../errors.ts';
import { startTestObserve, type TestObserve } from '../testing.ts';

interface OpenApiDocument {
  openapi: string;
  paths: Record<
    string,
    Record<string, { parameters?: { name: string; in: string }[]; requestBody?: unknown; security?: unknown[]; responses?: Record<string, unknown> }>
  >;
  components: { schemas?: Record<string, unknown> };
}

await describeEachDatabase('GET /api/openapi.json', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  test('is served without credentials', async () => {
    const response = await observe.service.app.inject({ method: 'GET', url: '/api/openapi.json' });
    assert.equal(response.statusCode, 200, response.body);
    assert.ok((response.json() as OpenApiDocument).paths['/api/sessions'], 'the whole document');
  });

  test('every route is an operation with a unique operationId that lists its errors in the ObserveError body', async () => {
    const doc = (await observe.service.app.inject({ method: 'GET', url: '/api/openapi.json' })).json() as OpenApiDocument & OpenApiPaths;
    const problems = openApiCoverageProblems(observe.service.app.routeTable, doc, {
      errorSchema: 'ObserveError',
      undocumented: {
        '/api/openapi.json': 'the document itself',
        '/metrics': 'Prometheus text, not JSON (docs/api.md)',
        'GET /mcp': 'MCP without a session stream: always 405 (docs/guide/mcp.md)',
        'DELETE /mcp': 'MCP without sessions: always 405 (docs/guide/mcp.md)',
        '/api/memory': 'forwarded to the memory server as is',
        '/api/memory/*': 'forwarded to the memory server as is',
        '/api/lessons': 'removed in 0.12.0: always 404',
        '/api/lessons/*': 'removed in 0.12.0: always 404',
        '/api/community': 'removed in 0.12.0: always 404',
        '/api/community/*': 'removed in 0.12.0: always 404',
        '/': 'the dashboard',
        '/assets/*': 'the dashboard',
        '/*': 'the dashboard',
        '/gate/api/*': "the dashboard's forwarder to the gate",
        'PUT /api/config/health-weights': 'always 501 (the weights are fixed): no operation to offer',
      },
      requiredErrors: (route) => [
        400,
        ...(route.auth === 'public' ? [] : route.auth === 'service' ? [401] : [401, 403]),
        ...(route.url.includes(':') ? [404] : []),
        ...(['POST', 'PUT', 'PATCH'].includes(route.method) ? [413, 415] : []),
        500,
        503,
      ],
      ownErrorBodies: ['GET /api/health 503', 'POST /mcp 400', 'POST /mcp 403', 'POST /mcp 406', 'POST /mcp 415'],
    });
    assert.deepEqual(problems, []);
    assert.ok(doc.paths['/api/guardrails']!.post!.responses!['409'], "route-specific errors (the route's errorStatuses) are listed too");
  });

  test('every GET operation answers an unknown query parameter with a 400 naming it', async () => {
    const doc = (await observe.service.app.inject({ method: 'GET', url: '/api/openapi.json' })).json() as OpenApiPaths;
    assert.deepEqual(await unknownQueryProblems(doc, (request) => observe.call(request)), []);
  });

  test('the ObserveError component is the body errors are answered with', async () => {
    const response = await observe.call({ method: 'GET', url: '/api/events?limit=0' });
    assert.equal(response.statusCode, 400);
    const body = response.json() as { details?: unknown[] };
    assert.ok(body.details && body.details.length > 0, response.body);
    assert.deepEqual(observeErrorSchema.parse(body), body);
  });

  test('documents every public route from the same schemas that validate requests', async () => {
    const response = await observe.call({ method: 'GET', url: '/api/openapi.json' });
    assert.equal(response.statusCode, 200);
    const doc = response.json() as OpenApiDocument;
    assert.match(doc.openapi, /^3\./);
    const documented = new Set(Object.entries(doc.paths).flatMap(([path, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${path}`)));
    for (const route of [
      'POST /api/events',
      'GET /api/events',
      'GET /api/events/{id}',
      'GET /api/sessions',
      'GET /api/sessions/{id}',
      'GET /api/sessions/{id}/timeline',
      'GET /api/audit/verify',
      'GET /api/agents',
      'GET /api/agents/{id}',
      'POST /api/agents/{id}/resume',
      'POST /api/keys',
      'GET /api/keys',
      'DELETE /api/keys/{id}',
      'GET /api/stats',
      'GET /api/config',
      'PUT /api/config',
      'GET /api/config/features',
      'GET /api/config/health-weights',
      'GET /api/health',
    ]) {
      assert.ok(documented.has(route), `${route} is documented`);
    }
    const listEvents = doc.paths['/api/events']!.get!;
    const names = (listEvents.parameters ?? [])
      .filter((p) => p.in === 'query')
      .map((p) => p.name)
      .sort();
    assert.deepEqual(names, ['agentId', 'eventType', 'from', 'limit', 'offset', 'order', 'search', 'sessionId', 'severity', 'to']);
    assert.ok(doc.paths['/api/events']!.post!.requestBody, 'the ingest body schema is documented');
    const traces = doc.paths['/v1/traces']!.post! as { requestBody?: { content: Record<string, unknown> } };
    assert.deepEqual(Object.keys(traces.requestBody?.content ?? {}), ['application/x-protobuf', 'application/json'], 'the OTLP body, in both encodings');
    assert.deepEqual(doc.paths['/api/health']!.get!.security, [], 'health is documented as unauthenticated');
  });

  test('every schema reference resolves to a component, and only referenced schemas are components', async () => {
    const doc = (await observe.call({ method: 'GET', url: '/api/openapi.json' })).json() as OpenApiDocument;
    const text = JSON.stringify(doc);
    const referenced = new Set([...text.matchAll(/"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]!));
    const components = Object.keys(doc.components.schemas ?? {});
    assert.ok(referenced.has('Event') && referenced.has('GuardrailRule'), [...referenced].join(', '));
    for (const name of referenced) assert.ok(components.includes(name), `${name} is a component`);
    assert.deepEqual(components.sort(), [...referenced].sort());
    assert.ok(!components.includes('ApprovalRequest'), "the gate's schemas are not in observe's document");
  });
});
