/** The gateway's fetch over node:http against a real HTTP server: what the SDK's transport relies on. */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { GateClient, VigilApiError, VigilNetworkError } from '@vigil/sdk';
import { keepAliveFetch } from './http-fetch.ts';

let server: Server;
let base: string;
let connections = 0;
const seen: Array<{ method: string; url: string; headers: IncomingMessage['headers']; body: string }> = [];

before(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      if (req.url!.startsWith('/hang')) return; // never answers
      if (req.url === '/empty') return void res.writeHead(204).end();
      if (req.url!.startsWith('/busy')) return void res.writeHead(503, { 'retry-after': '30', 'content-type': 'application/json' }).end('{"error":"busy"}');
      res.writeHead(200, { 'content-type': 'application/json', 'x-multi': ['a', 'b'] });
      res.end(JSON.stringify({ echoed: Buffer.concat(chunks).toString('utf8'), ünïcode: '✓' }));
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

test('sends the method, headers and body; answers the status, headers and text; one kept-alive connection for requests in turn', async () => {
  const http = keepAliveFetch();
  try {
    const before = connections;
    for (let i = 0; i < 3; i++) {
      const body = JSON.stringify({ i, text: 'ünïcode ✓' });
      const response = await http.fetch(`${base}/api/things?x=${i}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer k' },
        body,
      });
      assert.equal(response.status, 200);
      assert.equal(response.ok, true);
      assert.equal(response.headers.get('content-type'), 'application/json');
      assert.equal(response.headers.get('x-multi'), 'a, b');
      assert.deepEqual(await response.json(), { echoed: body, ünïcode: '✓' });
      const request = seen.at(-1)!;
      assert.equal(request.method, 'POST');
      assert.equal(request.url, `/api/things?x=${i}`);
      assert.equal(request.headers.authorization, 'Bearer k');
      assert.equal(request.headers['content-length'], String(Buffer.byteLength(body)));
      assert.equal(request.body, body);
    }
    assert.equal(connections - before, 1, 'the connection is reused');

    const empty = await http.fetch(`${base}/empty`, { method: 'DELETE' });
    assert.equal(empty.status, 204);
    assert.equal(await empty.text(), '');
  } finally {
    http.close();
  }
});

test('an abort (the transport’s deadline) ends the request with its reason; an unreachable server fails like fetch (TypeError with the cause)', async () => {
  const http = keepAliveFetch();
  try {
    const deadline = new AbortController();
    setTimeout(() => deadline.abort(new Error('timeout')), 100);
    await assert.rejects(http.fetch(`${base}/hang`, { signal: deadline.signal }), /timeout/);
    await assert.rejects(http.fetch(`${base}/hang`, { signal: AbortSignal.abort(new Error('already')) }), /already/);

    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    await assert.rejects(http.fetch(`http://127.0.0.1:${port}/`), (error: unknown) => {
      assert.ok(error instanceof TypeError);
      assert.equal((error.cause as { code?: string }).code, 'ECONNREFUSED');
      return true;
    });
  } finally {
    http.close();
  }
});

test("the SDK's client on it: an error answer with its status and Retry-After (not retried past the time left); the deadline applies", async () => {
  const http = keepAliveFetch();
  try {
    const gate = new GateClient({ baseUrl: `${base}/busy`, apiKey: 'k', fetch: http.fetch, retry: { maxRetries: 1, maxRetryTimeMs: 10_000 } });
    const started = seen.length;
    await assert.rejects(gate.getRequest('x'), (error: unknown) => error instanceof VigilApiError && error.status === 503 && error.retryAfterMs === 30_000);
    assert.equal(seen.length - started, 1, 'a Retry-After beyond the time left ends the retries');
    const quick = new GateClient({ baseUrl: `${base}/hang`, apiKey: 'k', fetch: http.fetch, timeoutMs: 100, retry: false });
    await assert.rejects(quick.getRequest('x'), (error: unknown) => error instanceof VigilNetworkError && error.timedOut);
  } finally {
    http.close();
  }
});
