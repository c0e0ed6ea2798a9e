import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { describeEachDatabase, unreferencedRoutes } from '@vigil/platform/testing';
import { startTestObserve, type TestObserve } from '../testing.ts';

const conventions = readFileSync(new URL('../../../../docs/api.md', import.meta.url), 'utf8');

await describeEachDatabase('docs/api.md, observe', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend, { createKey: false });
  });
  after(() => observe.close());

  test('every route is in the OpenAPI document (and so the generated reference) or named in docs/api.md', () => {
    const hidden = observe.service.app.routeTable.filter((route) => !route.documented).map((route) => `${route.method} ${route.url}`);
    assert.ok(hidden.includes('GET /metrics') && hidden.includes('GET /api/memory/*'), 'the walk sees the routes the document leaves out');
    assert.deepEqual(unreferencedRoutes(observe.service.app.routeTable, conventions), []);
  });
});
