// The test kits' response validation (response-validation.ts): a handler whose answer strays from
// its route's response schema fails the request under the kit, and production never checks.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { z } from 'zod';
import { sendJsonText } from './http.ts';
import { createKitApp } from './kit-harness.ts';
import { responseProblems } from './response-validation.ts';

const thing = z.object({ id: z.string(), tags: z.array(z.object({ name: z.string() })), note: z.string().optional() });

/** An app of the kit with routes that answer their schema exactly, with a field too many, and with one missing. */
async function kitApp(validateResponses: boolean) {
  const app = await createKitApp({
    renderError: (error) => ({ code: error.code, message: error.message }),
    errorSchema: z.object({ code: z.string(), message: z.string() }).meta({ id: 'KitError' }),
    scopes: [],
    authErrorStatuses: () => [],
    validateResponses,
  });
  const schema = (operationId: string) => ({ operationId, response: { 200: thing } });
  app.get('/exact', { schema: schema('getExact'), config: { auth: 'public' } }, async () => ({ id: 't1', tags: [{ name: 'a' }] }));
  app.get('/extra', { schema: schema('getExtra'), config: { auth: 'public' } }, async () => ({ id: 't1', tags: [{ name: 'a', colour: 'red' }], secret: 'x' }));
  // The type provider refuses a missing field at compile time; a cast (a row read as the type) does not.
  app.get('/missing', { schema: schema('getMissing'), config: { auth: 'public' } }, async () => ({ tags: [] }) as unknown as z.infer<typeof thing>);
  app.get('/spliced', { schema: schema('getSpliced'), config: { auth: 'public' } }, async (_request, reply) =>
    sendJsonText(reply, '{"id":"t1","tags":[],"rowid":7}'),
  );
  app.get('/documented-per-type', {
    schema: { operationId: 'getDocumentedPerType', response: { 200: { description: 'per content type', content: { 'application/json': { schema: thing } } } } },
    config: { auth: 'public' },
    handler: async () => ({ id: 't1', tags: [], extra: true }),
  });
  await app.ready();
  return app;
}

test('under the test kits a handler answering a field its schema lacks, or missing one, fails with a 500 naming the route and each problem', async () => {
  const app = await kitApp(true);
  try {
    assert.equal((await app.inject({ method: 'GET', url: '/exact' })).statusCode, 200);
    const extra = await app.inject({ method: 'GET', url: '/extra' });
    assert.equal(extra.statusCode, 500);
    assert.deepEqual(extra.json(), {
      code: 'internal',
      message:
        'Response contract broken: GET /extra answered 200 against its schema: tags[0].colour: not in the response schema; secret: not in the response schema',
    });
    const missing = await app.inject({ method: 'GET', url: '/missing' });
    assert.equal(missing.statusCode, 500);
    assert.match((missing.json() as { message: string }).message, /GET \/missing answered 200 against its schema: id: /);
    const spliced = await app.inject({ method: 'GET', url: '/spliced' });
    assert.equal(spliced.statusCode, 500, 'JSON text sent as built is read too');
    assert.match((spliced.json() as { message: string }).message, /rowid: not in the response schema/);
    const perType = await app.inject({ method: 'GET', url: '/documented-per-type' });
    assert.equal(perType.statusCode, 500, 'a schema documented per content type is checked too');
    assert.match((perType.json() as { message: string }).message, /extra: not in the response schema/);
  } finally {
    await app.close();
  }
});

test('outside the test kits nothing is checked: the answers go out as the handlers built them', async () => {
  const app = await kitApp(false);
  try {
    const extra = await app.inject({ method: 'GET', url: '/extra' });
    assert.equal(extra.statusCode, 200);
    assert.equal((extra.json() as { secret: string }).secret, 'x');
  } finally {
    await app.close();
  }
});

test('records and loose objects keep their keys; unions and intersections are read as zod reads them', () => {
  assert.deepEqual(responseProblems(z.object({ counts: z.record(z.string(), z.number()) }), { counts: { a: 1, b: 2 } }), []);
  assert.deepEqual(responseProblems(z.looseObject({ kind: z.string() }), { kind: 'x', anything: 1 }), []);
  const shape = z.discriminatedUnion('kind', [z.object({ kind: z.literal('a'), a: z.number() }), z.object({ kind: z.literal('b'), b: z.number() })]);
  assert.deepEqual(responseProblems(shape, { kind: 'b', b: 1 }), []);
  assert.deepEqual(responseProblems(shape, { kind: 'b', b: 1, a: 2 }), ['a: not in the response schema']);
  const both = z.intersection(z.object({ a: z.number() }), z.object({ b: z.number() }));
  assert.deepEqual(responseProblems(both, { a: 1, b: 2 }), []);
  assert.deepEqual(responseProblems(both, { a: 1, b: 2, c: 3 }), ['c: not in the response schema']);
  assert.deepEqual(responseProblems(z.object({ n: z.number() }), { n: 'one' }), ['n: Invalid input: expected number, received string']);
});
