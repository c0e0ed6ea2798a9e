// Requests the kit refuses before any route runs, each answered with its own catalogue entry in the
// service's error body: 408 (too slow), 414 (a path parameter too long), 431 (headers too large).
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import { z } from 'zod';
import { createKitApp } from './kit-harness.ts';

async function listeningKitApp() {
  const app = await createKitApp({
    scopes: [],
    authErrorStatuses: () => [],
    timeouts: { headersTimeoutMs: 300, requestTimeoutMs: 600 },
    renderError: (error) => ({ code: error.code, message: error.message }),
  });
  app.get('/things/:id', { config: { auth: 'public' }, schema: { operationId: 'readThing', params: z.object({ id: z.string() }) } }, async () => 'x');
  await app.listen({ host: '127.0.0.1', port: 0 });
  return { app, port: (app.server.address() as { port: number }).port };
}

/** Writes `request` on a raw connection and returns all the server answers until it closes. */
function rawExchange(port: number, request: string): Promise<{ status: number; body: { code: string; message: string } }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString('latin1')));
    socket.on('error', reject);
    socket.on('close', () => {
      const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1]);
      resolve({ status, body: JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { code: string; message: string } });
    });
  });
}

test('408, 414 and 431 each answer their own code, not the validation one', async () => {
  const { app, port } = await listeningKitApp();
  try {
    const slow = await rawExchange(port, 'GET /things/a HTTP/1.1\r\nHost: x\r\n');
    assert.equal(slow.status, 408);
    assert.equal(slow.body.code, 'request_timeout');
    assert.match(slow.body.message, /not received in time: headers within 300 ms/);

    const long = await app.inject({ method: 'GET', url: `/things/${'a'.repeat(1025)}` });
    assert.equal(long.statusCode, 414, long.body);
    assert.deepEqual(long.json(), { code: 'uri_too_long', message: 'A path parameter is longer than 1024 characters' });

    const bulky = await rawExchange(port, `GET /things/a HTTP/1.1\r\nHost: x\r\nX-Padding: ${'p'.repeat(20_000)}\r\n\r\n`);
    assert.equal(bulky.status, 431);
    assert.deepEqual(bulky.body, { code: 'headers_too_large', message: 'The request headers are too large' });

    const garbled = await rawExchange(port, 'NOT HTTP AT ALL\r\n\r\n');
    assert.equal(garbled.status, 400);
    assert.deepEqual(garbled.body, { code: 'validation_error', message: 'Malformed HTTP request' });
  } finally {
    await app.close();
  }
});
