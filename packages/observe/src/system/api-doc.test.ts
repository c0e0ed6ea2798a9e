import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { apiReferenceProblems, describeEachDatabase } from '@vigil/platform/testing';
import { scopeText, type ObserveScope } from '../auth/index.ts';
import { startTestObserve, type TestObserve } from '../testing.ts';

const reference = readFileSync(new URL('../../../../docs/api.md', import.meta.url), 'utf8');

await describeEachDatabase('docs/api.md, observe', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend, { createKey: false });
  });
  after(() => observe.close());

  test('has a row for every route of the app with the scope it needs, and no row for a route that does not exist', () => {
    const problems = apiReferenceProblems(
      observe.service.app.routeTable,
      {
        section: 'Observe',
        sharedSections: ['Admin change log'],
        prose: ['/api/memory', '/api/memory/*', '/api/lessons', '/api/lessons/*', '/api/community', '/api/community/*', '/', '/assets/*', '/*', '/gate/api/*'],
        access: (route) =>
          route.auth === 'public' || route.auth === 'service' || route.auth === 'signature'
            ? route.auth
            : route.auth === 'metrics'
              ? 'no API key'
              : scopeText(route.scope as ObserveScope | readonly ObserveScope[]),
      },
      reference,
    );
    assert.deepEqual(problems, []);
  });
});
