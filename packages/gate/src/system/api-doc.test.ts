import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { apiReferenceProblems, describeEachDatabase } from '@vigil/platform/testing';
import { CHAT_CONFIGURED_ENV, startTestGate, type TestGate } from '../testing.ts';

const reference = readFileSync(new URL('../../../../docs/api.md', import.meta.url), 'utf8');

await describeEachDatabase('docs/api.md, gate', (backend) => {
  let gate: TestGate;
  before(async () => {
    // Both chat platforms configured, so their interaction routes exist and must be listed too.
    gate = await startTestGate(backend, { env: CHAT_CONFIGURED_ENV });
  });
  after(() => gate.close());

  test('has a row for every route of the app with the scope it needs, and no row for a route that does not exist', () => {
    const problems = apiReferenceProblems(
      gate.service.app.routeTable,
      {
        section: 'Gate',
        sharedSections: ['Admin change log'],
        prose: [],
        access: (route) => (route.takesKey ? (route.scope as string) : 'public'),
      },
      reference,
    );
    assert.deepEqual(problems, []);
  });
});
