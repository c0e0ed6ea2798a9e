// The route-walking OpenAPI check both services run (testing.ts#openApiCoverageProblems), on an
// app of the HTTP kit whose table leaves a route unnamed, names two alike and names a non-route.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { errorFactory, type ErrorCatalogue } from './errors.ts';
import { createHttpApp } from './http.ts';
import { openApiCoverageProblems, type OpenApiPaths } from './testing.ts';

const catalogue: ErrorCatalogue<never> = {
  validation: { status: 400, code: 'bad_request', message: 'Invalid request' },
  invalidJson: { status: 400, code: 'bad_request', message: 'Malformed JSON body' },
  unauthorized: { status: 401, code: 'unauthorized', message: 'Missing or invalid API key' },
  routeNotFound: { status: 404, code: 'not_found', message: 'Route not found' },
  payloadTooLarge: { status: 413, code: 'payload_too_large', message: 'Too large' },
  unsupportedMediaType: { status: 415, code: 'unsupported_media_type', message: 'JSON only' },
  internal: { status: 500, code: 'internal', message: 'Internal server error' },
  unavailable: { status: 503, code: 'unavailable', message: 'Unavailable' },
};

test("the kit lists each route's error statuses; a route without an operationId, two with the same one and a stale table entry are each reported with the fix", async () => {
  const operations = { 'GET /things': 'listThings', 'GET /things/:id': 'listThings', 'DELETE /gone': 'removeGone' };
  const app = await createHttpApp({
    title: 'kit',
    version: '0',
    service: 'kit',
    logLevel: 'silent',
    bodyLimitBytes: 1024,
    timeouts: { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000 },
    databaseProbe: async () => undefined,
    errors: errorFactory(catalogue),
    renderError: (error) => ({ message: error.message }),
    errorSchema: z.object({ message: z.string() }).meta({ id: 'KitError' }),
    operations,
    authErrorStatuses: () => [401],
  });
  const params = z.object({ id: z.string() });
  app.get('/things', { schema: { response: { 200: z.array(z.string()) } } }, async () => []);
  app.get('/things/:id', { schema: { params } }, async () => 'x');
  app.post('/things', { schema: { body: z.object({ name: z.string() }) } }, async () => 'x');
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  await app.ready();
  try {
    const document = app.swagger() as unknown as OpenApiPaths;
    const thing = document.paths['/things/{id}']!.get!;
    assert.deepEqual(Object.keys(thing.responses!), ['400', '401', '404', '414', '500', '503']);
    assert.deepEqual(Object.keys(document.paths['/things']!.post!.responses!), ['400', '401', '413', '415', '500', '503']);
    const problems = openApiCoverageProblems(app.routeTable, document, {
      operationsFile: 'kit/operations.ts',
      operations,
      errorSchema: 'KitError',
      undocumented: { '/openapi.json': 'the document itself' },
      requiredErrors: () => [400, 401, 500],
    });
    assert.deepEqual(problems, [
      "POST /things has no operationId: add 'POST /things': '<camelCaseName>' to kit/operations.ts ({ id, errors } if it answers more errors than its kind)",
      'operationId "listThings" is shared by GET /things and GET /things/:id: each needs its own in kit/operations.ts',
      'kit/operations.ts names DELETE /gone, which is not a route of the app',
    ]);
  } finally {
    await app.close();
  }
});
