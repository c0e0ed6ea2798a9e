// The route-walking OpenAPI check both services run (testing.ts#openApiCoverageProblems), on an
// app of the HTTP kit whose table leaves a route unnamed, names two alike and names a non-route.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { errorFactory, type ErrorCatalogue } from './errors.ts';
import { createHttpApp, type OperationTable } from './http.ts';
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

const kitApp = (operations: OperationTable) =>
  createHttpApp({
    title: 'kit',
    description: 'A service of the HTTP kit',
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

test("the kit lists each route's error statuses; a route without an operationId, two with the same one and a stale table entry are each reported with the fix", async () => {
  const operations = { 'GET /things': 'listThings', 'GET /things/:id': 'listThings', 'DELETE /gone': 'removeGone' };
  const app = await kitApp(operations);
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

test('the document says where the API is, declares its tags, describes every success response and shows a body a route decodes itself', async () => {
  const app = await kitApp({ 'GET /things': 'listThings', 'POST /things': 'createThing', 'POST /v1/blobs': 'uploadBlob' });
  app.get('/things', { schema: { summary: 'List things', tags: ['things'], response: { 200: z.array(z.string()) } } }, async () => []);
  app.post(
    '/things',
    {
      schema: {
        summary: 'Create a thing',
        tags: ['things'],
        body: z.object({ name: z.string() }),
        response: { 201: { description: 'The thing as stored', content: { 'application/json': { schema: z.object({ id: z.string() }) } } } },
      },
    },
    async () => ({ id: 'x' }),
  );
  const documentedBody = { 'application/x-protobuf': { schema: { type: 'string', format: 'binary' } }, 'application/json': { schema: { type: 'object' } } };
  app.post('/v1/blobs', { schema: { summary: 'Upload a blob', tags: ['blobs'], documentedBody } }, async (_request, reply) => reply.status(204).send());
  await app.ready();
  try {
    interface Operation {
      requestBody?: { required?: boolean; content: Record<string, unknown> };
      responses: Record<string, { description: string }>;
    }
    const document = app.swagger() as unknown as {
      info: { description?: string };
      servers?: { url: string }[];
      tags?: { name: string }[];
      paths: Record<string, Record<string, Operation>>;
    };
    assert.equal(document.info.description, 'A service of the HTTP kit');
    assert.deepEqual(
      document.servers?.map((server) => server.url),
      ['/'],
    );
    assert.deepEqual(document.tags, [{ name: 'blobs' }, { name: 'things' }]);
    assert.equal(document.paths['/things']!.get!.responses['200']!.description, 'OK: List things');
    assert.equal(document.paths['/things']!.post!.responses['201']!.description, 'The thing as stored', "a route's own description wins");
    const upload = document.paths['/v1/blobs']!.post!;
    assert.deepEqual(Object.keys(upload.requestBody?.content ?? {}), ['application/x-protobuf', 'application/json']);
    assert.deepEqual(upload.requestBody?.content['application/x-protobuf'], { schema: { type: 'string', format: 'binary' } });
    const placeholders = Object.entries(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods).flatMap(([method, operation]) =>
        Object.entries(operation.responses)
          .filter(([, response]) => response.description === 'Default Response')
          .map(([status]) => `${method} ${path} ${status}`),
      ),
    );
    assert.deepEqual(placeholders, []);
  } finally {
    await app.close();
  }
});
