// Lenient parsing refused on both services: every body is JSON in UTF-8, as sent. A byte order mark,
// invalid UTF-8, another charset or a Content-Encoding the route does not decode is a clear 4xx in
// the service's own error body (it was read, replaced or ignored); an over-long path id is 414 on
// observe as on the gate, and OTLP/JSON nested past 100 levels is 400 like every JSON body.
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { sqliteBackend } from '@vigil/platform/testing';
import { assertErrorShape, started, startTestObserve, type TestObserve } from '@vigil/observe/testing';
import { assertGateError, startTestGate, type TestGate } from '@vigil/gate/testing';

const validObserveBody = JSON.stringify({ events: [started('s-strict', 'a1', '2026-11-22T09:00:00.000Z')] });
const validGateBody = JSON.stringify({ action: 'deploy', params: { env: 'a1' } });

/** The ways a JSON body's bytes can be wrong, each with the status it must get. */
function hostileBodies(valid: string): { name: string; status: number; headers: Record<string, string>; payload: Buffer }[] {
  const json = { 'content-type': 'application/json' };
  return [
    { name: 'a UTF-8 byte order mark', status: 400, headers: json, payload: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(valid)]) },
    { name: 'invalid UTF-8 in a string', status: 400, headers: json, payload: Buffer.from(valid.replace(/"([^"]*)"/, '"$1\u00ff"'), 'latin1') },
    { name: 'Content-Encoding gzip on a plain body', status: 415, headers: { ...json, 'content-encoding': 'gzip' }, payload: Buffer.from(valid) },
    { name: 'Content-Encoding gzip on a gzipped body', status: 415, headers: { ...json, 'content-encoding': 'gzip' }, payload: gzipSync(valid) },
    { name: 'charset=utf-16', status: 415, headers: { 'content-type': 'application/json; charset=utf-16' }, payload: Buffer.from(valid, 'utf16le') },
    { name: 'charset=latin1', status: 415, headers: { 'content-type': 'application/json; charset=iso-8859-1' }, payload: Buffer.from(valid) },
  ];
}

describe('observe refuses what it used to read leniently', () => {
  let observe: TestObserve;
  before(async () => (observe = await startTestObserve(sqliteBackend)));
  after(() => observe.close());

  const sessionCount = async () => ((await observe.call({ method: 'GET', url: '/api/sessions' })).json() as { total: number }).total;

  test('bodies with a BOM, invalid UTF-8, another charset or an undecoded Content-Encoding: 4xx, nothing stored', async () => {
    for (const body of hostileBodies(validObserveBody)) {
      const response = await observe.call({ method: 'POST', url: '/api/events', headers: body.headers, payload: body.payload });
      assert.equal(response.statusCode, body.status, `${body.name}: ${response.body}`);
      assertErrorShape(response.json(), body.status, body.name);
    }
    assert.equal(await sessionCount(), 0);
    // The same body, as it should be sent, and charset=utf-8 spelled either way: accepted.
    for (const type of ['application/json', 'application/json; charset=utf-8', 'application/json;charset="UTF-8"']) {
      const response = await observe.call({ method: 'POST', url: '/api/events', headers: { 'content-type': type }, payload: validObserveBody });
      assert.equal(response.statusCode, 201, `${type}: ${response.body}`);
    }
  });

  test('a path id of 1,025 characters is 414, as on the gate; 1,024 is an ordinary 404', async () => {
    const long = await observe.call({ method: 'GET', url: `/api/sessions/${'s'.repeat(1025)}` });
    assert.equal(long.statusCode, 414, long.body);
    assertErrorShape(long.json(), 414);
    const nested = await observe.call({ method: 'GET', url: `/api/sessions/${'s'.repeat(1025)}/timeline` });
    assert.equal(nested.statusCode, 414, nested.body);
    const unknown = await observe.call({ method: 'GET', url: `/api/sessions/${'s'.repeat(1024)}` });
    assert.notEqual(unknown.statusCode, 414);
  });

  test('OTLP/JSON: nested past 100 levels, a BOM, invalid UTF-8 or charset=utf-16 is 400/415; gzip still decodes', async () => {
    const span = (attributes: unknown[]) => ({
      resourceSpans: [
        {
          scopeSpans: [
            {
              spans: [
                {
                  traceId: '0af7651916cd43dd8448eb211c80319c',
                  spanId: 'b7ad6b7169203331',
                  name: 'op',
                  startTimeUnixNano: '1',
                  endTimeUnixNano: '2',
                  attributes,
                },
              ],
            },
          ],
        },
      ],
    });
    // Written as text: JSON.stringify of 10,000 levels overflows the stack.
    const deep = `${'{"arrayValue":{"values":['.repeat(10_000)}{"stringValue":"leaf"}${']}}'.repeat(10_000)}`;
    const otlp = (headers: Record<string, string>, payload: Buffer | string): Promise<LightMyRequestResponse> =>
      observe.call({ method: 'POST', url: '/v1/traces', headers, payload } satisfies InjectOptions);
    const json = { 'content-type': 'application/json' };
    const deepResponse = await otlp(json, JSON.stringify(span([{ key: 'deep', value: 'DEEP' }])).replace('"DEEP"', deep));
    assert.equal(deepResponse.statusCode, 400, deepResponse.body);
    assert.match((deepResponse.json() as { error: string }).error, /deeper than 100/);
    const plain = JSON.stringify(span([]));
    for (const body of hostileBodies(plain).filter((b) => !b.name.startsWith('Content-Encoding'))) {
      const response = await otlp(body.headers, body.payload);
      assert.equal(response.statusCode, body.status, `${body.name}: ${response.body}`);
      assertErrorShape(response.json(), body.status, body.name);
    }
    const gzipped = await otlp({ ...json, 'content-encoding': 'gzip' }, gzipSync(plain));
    assert.equal(gzipped.statusCode, 200, gzipped.body);
  });
});

describe('the gate refuses the same bodies', () => {
  let gate: TestGate;
  before(async () => (gate = await startTestGate(sqliteBackend)));
  after(() => gate.close());

  test('bodies with a BOM, invalid UTF-8, another charset or an undecoded Content-Encoding: 4xx, nothing stored', async () => {
    for (const body of hostileBodies(validGateBody)) {
      const response = await gate.call({ method: 'POST', url: '/api/requests', headers: body.headers, payload: body.payload });
      assertGateError(response, body.status, body.status === 415 ? 'unsupported_media_type' : 'bad_request', body.name);
    }
    const list = await gate.call({ method: 'GET', url: '/api/requests' });
    assert.deepEqual(list.json(), [], list.body);
    const response = await gate.call({
      method: 'POST',
      url: '/api/requests',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      payload: validGateBody,
    });
    assert.equal(response.statusCode, 201, response.body);
  });
});
