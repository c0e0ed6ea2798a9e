import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { startTestObserve, type TestObserve } from '../testing.ts';

interface OpenApiDocument {
  openapi: string;
  paths: Record<string, Record<string, { parameters?: { name: string; in: string }[]; requestBody?: unknown; security?: unknown[] }>>;
  components: { schemas?: Record<string, unknown> };
}

await describeEachDatabase('GET /api/openapi.json', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  test('needs a key', async () => {
    const response = await observe.service.app.inject({ method: 'GET', url: '/api/openapi.json' });
    assert.equal(response.statusCode, 401);
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
      'PUT /api/config/health-weights',
      'GET /api/health',
    ]) {
      assert.ok(documented.has(route), `${route} is documented`);
    }
    const listEvents = doc.paths['/api/events']!.get!;
    const names = (listEvents.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name).sort();
    assert.deepEqual(names, ['agentId', 'eventType', 'from', 'limit', 'offset', 'order', 'search', 'sessionId', 'severity', 'to']);
    assert.ok(doc.paths['/api/events']!.post!.requestBody, 'the ingest body schema is documented');
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
