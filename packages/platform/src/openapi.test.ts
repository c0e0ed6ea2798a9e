// The route-walking OpenAPI check both services run (testing.ts#openApiCoverageProblems), on an
// app of the HTTP kit whose routes name two operations alike, and what the kit refuses to register:
// a route that takes a key without a scope, a documented route without an operationId.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { createKitApp } from './kit-harness.ts';
import { openApiCoverageProblems, routeDeclarationProblems, type OpenApiPaths } from './testing.ts';

const kitApp = () =>
  createKitApp({
    authModes: { signed: { takesKey: true }, service: { takesKey: false } },
    scopes: ['read', 'write'],
    authErrorStatuses: () => [401],
  });

test("the kit lists each route's error statuses (its own declared too); two operations with the same name are reported with the fix", async () => {
  const app = await kitApp();
  const params = z.object({ id: z.string() });
  const read = { scope: 'read' } as never;
  app.get('/things', { config: read, schema: { operationId: 'listThings', response: { 200: z.array(z.string()) } } }, async () => []);
  app.get('/things/:id', { config: read, schema: { operationId: 'listThings', params } }, async () => 'x');
  app.post('/things', { config: read, schema: { operationId: 'createThing', errorStatuses: [409], body: z.object({ name: z.string() }) } }, async () => 'x');
  app.get('/openapi.json', { config: { auth: 'public' }, schema: { hide: true } }, async () => app.swagger());
  await app.ready();
  try {
    const document = app.swagger() as unknown as OpenApiPaths;
    const thing = document.paths['/things/{id}']!.get!;
    assert.deepEqual(Object.keys(thing.responses!), ['400', '401', '404', '414', '500', '503']);
    assert.deepEqual(Object.keys(document.paths['/things']!.post!.responses!), ['400', '401', '409', '413', '415', '500', '503']);
    assert.equal(document.paths['/things']!.post!.operationId, 'createThing');
    const problems = openApiCoverageProblems(app.routeTable, document, {
      errorSchema: 'KitError',
      undocumented: { '/openapi.json': 'the document itself' },
      requiredErrors: () => [400, 401, 500],
    });
    assert.deepEqual(problems, ['operationId "listThings" is shared by GET /things and GET /things/:id: each needs its own']);
    assert.deepEqual(routeDeclarationProblems(app.routeTable), ['GET /things/:id and GET /things are both named "listThings"']);
  } finally {
    await app.close();
  }
});

test('a route that takes an API key without a scope, or a documented one without an operationId, fails the build where it is registered', async () => {
  const app = await kitApp();
  const noop = async () => 'x';
  try {
    assert.throws(() => app.get('/unscoped', { schema: { operationId: 'getUnscoped' } }, noop), /GET \/unscoped takes an API key but declares no scope/);
    assert.throws(
      () => app.post('/signed', { config: { auth: 'signed' as never }, schema: { operationId: 'postSigned' } }, noop),
      /POST \/signed takes an API key but declares no scope/,
      "a service's mode that takes a key needs a scope too",
    );
    assert.throws(() => app.get('/unnamed', { config: { scope: 'read' as never } }, noop), /GET \/unnamed is documented but has no operationId/);
    assert.throws(
      () => app.get('/misscoped', { config: { scope: 'admin' as never }, schema: { operationId: 'getMisscoped' } }, noop),
      /scope "admin" is not one of the service's/,
    );
    assert.throws(
      () => app.get('/open', { config: { auth: 'public', scope: 'read' as never }, schema: { operationId: 'getOpen' } }, noop),
      /takes no API key \(auth "public"\) but declares a scope/,
    );
    assert.throws(() => app.get('/odd', { config: { auth: 'odd' as never }, schema: { operationId: 'getOdd' } }, noop), /authentication mode "odd"/);
    // What takes no key needs no scope, what is hidden no name, and a key may need any of several scopes.
    app.post('/internal', { config: { auth: 'service' as never }, schema: { operationId: 'postInternal' } }, noop);
    app.get('/hidden', { config: { scope: ['read', 'write'] as never }, schema: { hide: true } }, noop);
    await app.ready();
    assert.deepEqual(
      app.routeTable.map((route) => [route.method, route.url, route.auth, route.takesKey, route.scope, route.operationId]),
      [
        ['POST', '/internal', 'service', false, undefined, 'postInternal'],
        ['GET', '/hidden', 'required', true, ['read', 'write'], undefined],
      ],
    );
    assert.deepEqual(routeDeclarationProblems(app.routeTable), []);
  } finally {
    await app.close();
  }
});

test('the document says where the API is, declares its tags, describes every success response and shows a body a route decodes itself', async () => {
  const app = await kitApp();
  const read = { scope: 'read' } as never;
  app.get(
    '/things',
    { config: read, schema: { operationId: 'listThings', summary: 'List things', tags: ['things'], response: { 200: z.array(z.string()) } } },
    async () => [],
  );
  app.post(
    '/things',
    {
      config: read,
      schema: {
        operationId: 'createThing',
        summary: 'Create a thing',
        tags: ['things'],
        body: z.object({ name: z.string() }),
        response: { 201: { description: 'The thing as stored', content: { 'application/json': { schema: z.object({ id: z.string() }) } } } },
      },
    },
    async () => ({ id: 'x' }),
  );
  const documentedBody = { 'application/x-protobuf': { schema: { type: 'string', format: 'binary' } }, 'application/json': { schema: { type: 'object' } } };
  app.post(
    '/v1/blobs',
    { config: read, schema: { operationId: 'uploadBlob', summary: 'Upload a blob', tags: ['blobs'], documentedBody } },
    async (_request, reply) => reply.status(204).send(),
  );
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
