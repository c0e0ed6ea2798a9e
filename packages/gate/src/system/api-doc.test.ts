import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { describeEachDatabase, unreferencedRoutes } from '@vigil/platform/testing';
import { CHAT_CONFIGURED_ENV, startTestGate, type TestGate } from '../testing.ts';

const conventions = readFileSync(new URL('../../../../docs/api.md', import.meta.url), 'utf8');

await describeEachDatabase('docs/api.md, gate', (backend) => {
  let gate: TestGate;
  before(async () => {
    // Both chat platforms configured, so their interaction routes exist and are checked too.
    gate = await startTestGate(backend, { env: CHAT_CONFIGURED_ENV });
  });
  after(() => gate.close());

  test('every route is in the OpenAPI document (and so the generated reference) or named in docs/api.md', () => {
    const hidden = gate.service.app.routeTable.filter((route) => !route.documented).map((route) => `${route.method} ${route.url}`);
    assert.ok(hidden.includes('GET /metrics'), 'the walk sees the routes the document leaves out');
    assert.deepEqual(unreferencedRoutes(gate.service.app.routeTable, conventions), []);
  });
});
