import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { after, before, beforeEach, test } from 'node:test';
import { describeEachDatabase, REFUSED_URL } from '@vigil/platform/testing';
import type { InjectOptions } from 'fastify';
import { assertErrorBody, startTestObserve, type TestObserve } from '../testing.ts';

interface Captured {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A real HTTP server on an ephemeral port, recording every request it gets. */
class FakeMemoryServer {
  readonly requests: Captured[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly server: Server;
  port = 0;

  constructor(handler: (request: Captured, res: ServerResponse) => void) {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const captured = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
        this.requests.push(captured);
        handler(captured, res);
      });
    });
    this.server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', () => resolve()));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

const REMOVED_PATHS: Array<[InjectOptions['method'], string]> = [
  ['GET', '/api/lessons'],
  ['POST', '/api/lessons'],
  ['GET', '/api/lessons/123'],
  ['DELETE', '/api/lessons/123'],
  ['GET', '/api/community'],
  ['GET', '/api/community/x'],
  ['POST', '/api/community/x'],
];

await describeEachDatabase('memory integration enabled', (backend) => {
  let memory: FakeMemoryServer;
  let observe: TestObserve;

  before(async () => {
    memory = new FakeMemoryServer((request, res) => {
      const path = request.url.split('?')[0];
      if (path === '/lessons' && request.method === 'GET') return sendJson(res, 200, { lessons: [{ id: 'l1', title: 'Retry on 429' }], echo: request.url });
      if (path === '/lessons' && request.method === 'POST') return sendJson(res, 201, { created: true, received: JSON.parse(request.body) as unknown });
      if (path === '/lessons/l1' && request.method === 'PUT') return sendJson(res, 200, { updated: true, received: JSON.parse(request.body) as unknown });
      if (path === '/lessons/l1' && request.method === 'DELETE') return sendJson(res, 202, { deleted: 'l1' });
      if (path === '/broken') return sendJson(res, 503, { error: 'memory store down' });
      return sendJson(res, 404, { error: 'no such memory route', path });
    });
    await memory.start();
    observe = await startTestObserve(backend, {
      env: { MEMORY_ENABLED: 'true', MEMORY_API_URL: memory.url, MEMORY_API_KEY: 'mem-secret' },
    });
  });
  beforeEach(() => {
    memory.requests.length = 0;
  });
  after(async () => {
    await observe.close();
    await memory.stop();
  });

  test('GET is forwarded with its query string and the memory key, not the Vigil key', async () => {
    const response = await observe.call({ method: 'GET', url: '/api/memory/lessons?x=1' });
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json(), { lessons: [{ id: 'l1', title: 'Retry on 429' }], echo: '/lessons?x=1' });
    assert.match(String(response.headers['content-type']), /application\/json/);

    assert.equal(memory.requests.length, 1);
    const forwarded = memory.requests[0]!;
    assert.equal(forwarded.method, 'GET');
    assert.equal(forwarded.url, '/lessons?x=1');
    assert.equal(forwarded.headers.authorization, 'Bearer mem-secret');
    assert.equal(JSON.stringify(forwarded.headers).includes(observe.key), false, 'the Vigil key leaked to the memory server');
  });

  test('POST and PUT bodies are forwarded as JSON; status and JSON body come back unchanged', async () => {
    const lesson = { title: 'Use smaller models for lookups', tags: ['cost', 'llm'], importance: 0.8, nested: { a: [1, 2] } };
    const created = await observe.call({ method: 'POST', url: '/api/memory/lessons', payload: lesson });
    assert.equal(created.statusCode, 201, created.body);
    assert.deepEqual(created.json(), { created: true, received: lesson });
    const post = memory.requests[0]!;
    assert.equal(post.method, 'POST');
    assert.equal(post.url, '/lessons');
    assert.match(String(post.headers['content-type']), /^application\/json/);
    assert.deepEqual(JSON.parse(post.body), lesson);
    assert.equal(post.headers.authorization, 'Bearer mem-secret');

    const updated = await observe.call({ method: 'PUT', url: '/api/memory/lessons/l1', payload: { title: 'renamed' } });
    assert.equal(updated.statusCode, 200, updated.body);
    assert.deepEqual(updated.json(), { updated: true, received: { title: 'renamed' } });
    assert.equal(memory.requests[1]!.method, 'PUT');
    assert.deepEqual(JSON.parse(memory.requests[1]!.body), { title: 'renamed' });

    const deleted = await observe.call({ method: 'DELETE', url: '/api/memory/lessons/l1' });
    assert.equal(deleted.statusCode, 202, deleted.body);
    assert.deepEqual(deleted.json(), { deleted: 'l1' });
    assert.equal(memory.requests[2]!.method, 'DELETE');
    assert.equal(memory.requests[2]!.url, '/lessons/l1');
  });

  test("the memory server's error statuses pass through unchanged", async () => {
    const missing = await observe.call({ method: 'GET', url: '/api/memory/unknown/path?q=a%20b' });
    assert.equal(missing.statusCode, 404);
    assert.deepEqual(missing.json(), { error: 'no such memory route', path: '/unknown/path' });
    assert.equal(memory.requests[0]!.url, '/unknown/path?q=a%20b');

    const broken = await observe.call({ method: 'GET', url: '/api/memory/broken' });
    assert.equal(broken.statusCode, 503);
    assert.deepEqual(broken.json(), { error: 'memory store down' });
  });

  test('forwarding needs a valid Vigil key', async () => {
    const anonymous = await observe.service.app.inject({ method: 'GET', url: '/api/memory/lessons' });
    assertErrorBody(anonymous, 401);
    const wrong = await observe.service.app.inject({
      method: 'GET',
      url: '/api/memory/lessons',
      headers: { authorization: 'Bearer mem-secret' },
    });
    assertErrorBody(wrong, 401);
    assert.equal(memory.requests.length, 0, 'nothing reached the memory server');
  });

  test('lesson and community paths are 404 error bodies and are not forwarded', async () => {
    for (const [method, url] of REMOVED_PATHS) {
      const response = await observe.call({ method, url, payload: method === 'POST' ? { title: 'x' } : undefined });
      assertErrorBody(response, 404, `${method} ${url}`);
    }
    assert.equal(memory.requests.length, 0);
  });
});

await describeEachDatabase('memory integration: unreachable memory server', (backend) => {
  test('a memory server that never answers is a 502 after MEMORY_TIMEOUT_MS', async () => {
    const silent = new FakeMemoryServer(() => {
      // Never answers.
    });
    await silent.start();
    const observe = await startTestObserve(backend, {
      env: { MEMORY_ENABLED: 'true', MEMORY_API_URL: silent.url, MEMORY_API_KEY: 'mem-secret', MEMORY_TIMEOUT_MS: '300' },
    });
    try {
      const started = Date.now();
      const response = await observe.call({ method: 'GET', url: '/api/memory/lessons' });
      const elapsed = Date.now() - started;
      assertErrorBody(response, 502);
      assert.ok(elapsed >= 250, `answered after ${elapsed} ms, before the timeout`);
      assert.ok(elapsed < 5000, `answered after ${elapsed} ms`);
      assert.equal(silent.requests.length, 1, 'the request did reach the memory server');
    } finally {
      await observe.close();
      await silent.stop();
    }
  });

  test('a memory server that sends headers and then stalls the body is a 502 after MEMORY_TIMEOUT_MS', async () => {
    const stalling = new FakeMemoryServer((_request, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('{"lessons": [');
      // The body never ends.
    });
    await stalling.start();
    const observe = await startTestObserve(backend, {
      env: { MEMORY_ENABLED: 'true', MEMORY_API_URL: stalling.url, MEMORY_TIMEOUT_MS: '300' },
    });
    try {
      const started = Date.now();
      const response = await observe.call({ method: 'GET', url: '/api/memory/lessons' });
      assertErrorBody(response, 502);
      assert.ok(Date.now() - started < 5000);
    } finally {
      await observe.close();
      await stalling.stop();
    }
  });

  test('a memory server that refuses connections is a 502', async () => {
    const observe = await startTestObserve(backend, { env: { MEMORY_ENABLED: 'true', MEMORY_API_URL: REFUSED_URL, MEMORY_TIMEOUT_MS: '2000' } });
    try {
      assertErrorBody(await observe.call({ method: 'POST', url: '/api/memory/lessons', payload: { a: 1 } }), 502);
    } finally {
      await observe.close();
    }
  });
});

await describeEachDatabase('memory integration disabled (default)', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  test('/api/memory/* is a 404 error body', async () => {
    for (const [method, url] of [
      ['GET', '/api/memory/anything'],
      ['GET', '/api/memory/lessons?x=1'],
      ['POST', '/api/memory/lessons'],
      ['GET', '/api/memory'],
    ] as Array<[InjectOptions['method'], string]>) {
      const response = await observe.call({ method, url, payload: method === 'POST' ? { title: 'x' } : undefined });
      assertErrorBody(response, 404, `${method} ${url}`);
    }
  });

  test('lesson and community paths are 404 error bodies', async () => {
    for (const [method, url] of REMOVED_PATHS) {
      const response = await observe.call({ method, url, payload: method === 'POST' ? { title: 'x' } : undefined });
      assertErrorBody(response, 404, `${method} ${url}`);
    }
  });
});
