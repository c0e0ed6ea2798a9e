// Slow clients against both services, listening on real ports: 1,000 connections that trickle a
// body (without a key) or their headers a byte at a time must not stop a normal client from being
// answered, and each must be answered 408 in the service's error body and closed once its deadline
// (HTTP_HEADERS_TIMEOUT_MS, HTTP_REQUEST_TIMEOUT_MS; small here) has passed.
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, test } from 'node:test';
import type { ZodApp } from '@vigil/platform';
import { sqliteBackend } from '@vigil/platform/testing';
import { startTestObserve, type TestObserve } from '@vigil/observe/testing';
import { startTestGate, TEST_ADMIN_KEY } from '@vigil/gate/testing';

const SLOW_CONNECTIONS = 1000;
const HEADERS_TIMEOUT_MS = 1500;
const REQUEST_TIMEOUT_MS = 3000;
const TRICKLE_EVERY_MS = 400;
const env = { HTTP_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS), HTTP_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS) };

type SlowKind = 'body without a key' | 'body with a key' | 'headers';

interface SlowClient {
  kind: SlowKind;
  /** When the connection was established: its deadlines count from there. */
  connectedAt: number;
  /** When the server closed it (ms after connecting), and everything it answered before. */
  closed: Promise<{ afterMs: number; answer: string }>;
}

/**
 * One connection that sends the start of a request at once, then a byte every TRICKLE_EVERY_MS,
 * never finishing it: a body (100,000 bytes announced) or its headers.
 */
async function slowClient(port: number, kind: SlowKind, target: Target): Promise<SlowClient> {
  const start =
    kind === 'headers'
      ? `GET ${target.health} HTTP/1.1\r\nHost: localhost\r\nX-Slow: `
      : `POST ${target.bodyPath} HTTP/1.1\r\nHost: localhost\r\n${kind === 'body with a key' ? `Authorization: Bearer ${target.key}\r\n` : ''}Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n[`;
  const socket: Socket = connect(port, '127.0.0.1');
  openSockets.push(socket);
  socket.on('error', () => {});
  await new Promise((resolve) => socket.once('connect', resolve));
  const connectedAt = Date.now();
  let answer = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (answer += chunk));
  socket.write(start);
  const timer = setInterval(() => socket.writable && socket.write(kind === 'headers' ? 'x' : ' '), TRICKLE_EVERY_MS);
  const closed = new Promise<{ afterMs: number; answer: string }>((resolve) => {
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ afterMs: Date.now() - connectedAt, answer });
    });
  });
  return { kind, connectedAt, closed };
}

const KINDS: SlowKind[] = ['body without a key', 'body with a key', 'headers'];

/** The 1,000 slow connections, opened a hundred at a time (a burst of 1,000 overflows the listen backlog, and the late SYNs retry for seconds). */
async function slowClients(port: number, target: Target): Promise<SlowClient[]> {
  const clients: SlowClient[] = [];
  for (let at = 0; at < SLOW_CONNECTIONS; at += 100) {
    clients.push(...(await Promise.all(Array.from({ length: 100 }, (_, i) => slowClient(port, KINDS[(at + i) % KINDS.length]!, target)))));
  }
  return clients;
}

/** Where a service is asked: its public health route, a route that takes a body, and a key that may call it. */
interface Target {
  health: string;
  bodyPath: string;
  key: string;
}

const services: { name: string; start: () => Promise<{ service: { app: ZodApp }; close(): Promise<void> }>; target: (started: unknown) => Target }[] = [
  {
    name: 'observe',
    start: () => startTestObserve(sqliteBackend, { env }),
    target: (started) => ({ health: '/api/health', bodyPath: '/api/events', key: (started as TestObserve).key }),
  },
  { name: 'gate', start: () => startTestGate(sqliteBackend, { env }), target: () => ({ health: '/health', bodyPath: '/api/requests', key: TEST_ADMIN_KEY }) },
];
const closers: (() => Promise<void>)[] = [];
/** Every slow connection, ended by the test if the server never ends it (a server closing waits for its connections). */
const openSockets: Socket[] = [];
after(async () => {
  for (const socket of openSockets) socket.destroy();
  for (const close of closers) await close();
});

for (const service of services) {
  test(`${service.name}: 1,000 slow connections are cut at their deadline with a 408 while a normal client is answered`, async () => {
    const started = await service.start();
    closers.push(() => started.close());
    await started.service.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = started.service.app.server.address() as { port: number };

    const target = service.target(started);
    const slow = await slowClients(port, target);
    const lastConnected = Math.max(...slow.map((client) => client.connectedAt));
    // A normal client, asking all along until every slow connection is gone.
    let allClosed = false;
    const outcomes = Promise.all(slow.map((client) => client.closed)).finally(() => (allClosed = true));
    const answered: number[] = [];
    const failures: string[] = [];
    while (!allClosed) {
      try {
        const response = await fetch(`http://127.0.0.1:${port}${target.health}`, { signal: AbortSignal.timeout(5000) });
        answered.push(response.status);
        await response.arrayBuffer();
      } catch (error) {
        failures.push(String((error as Error).cause ?? error));
      }
      // Stop long after the bound: a server that never cuts them fails below, rather than the test hanging.
      if (Date.now() - lastConnected > REQUEST_TIMEOUT_MS * 5) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.ok(allClosed, `slow connections still open ${REQUEST_TIMEOUT_MS * 5} ms after they opened`);
    assert.deepEqual(failures, [], 'the normal client failed while slow connections were held');
    assert.ok(answered.length > 0 && answered.every((status) => status === 200), `normal client answers: ${answered.join(', ')}`);

    for (const [index, outcome] of (await outcomes).entries()) {
      const { kind } = slow[index]!;
      const bound = kind === 'headers' ? HEADERS_TIMEOUT_MS : REQUEST_TIMEOUT_MS;
      assert.ok(outcome.afterMs >= bound - 50, `${kind} connection ${index} closed after ${outcome.afterMs} ms, before its deadline of ${bound} ms`);
      // Without a key the request is refused (401) at once; the connection still reads the body, so its deadline closes it.
      const timedOut = outcome.answer.lastIndexOf('HTTP/1.1 ');
      if (kind === 'body without a key') assert.match(outcome.answer, /^HTTP\/1\.1 401 /, `${kind} connection ${index}`);
      assert.match(outcome.answer.slice(timedOut), /^HTTP\/1\.1 408 /, `${kind} connection ${index}: ${outcome.answer.slice(0, 300)}`);
      const body = JSON.parse(outcome.answer.slice(outcome.answer.indexOf('\r\n\r\n', timedOut) + 4)) as unknown;
      // Each service's own error body: the gate's {error: {code, message}}, observe's {error: message, status}.
      const message = service.name === 'gate' ? (body as { error: { message: string } }).error.message : (body as { error: string; status: number }).error;
      assert.match(message, /not received in time/, `${kind} connection ${index}`);
    }
  });
}

for (const service of services) {
  test(`${service.name}: a request finished while the service shuts down is answered 503 with Retry-After in its error body`, async () => {
    const started = await service.start();
    await started.service.app.listen({ host: '127.0.0.1', port: 0 });
    const { port } = started.service.app.server.address() as { port: number };
    const target = service.target(started);
    const socket = connect(port, '127.0.0.1');
    openSockets.push(socket);
    await new Promise((resolve) => socket.once('connect', resolve));
    let answer = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (answer += chunk));
    const closedSocket = new Promise((resolve) => socket.on('close', resolve));
    // Half a request: the connection is busy, so closing the app waits for it rather than dropping it.
    socket.write(`GET ${target.health} HTTP/1.1\r\nHost: localhost\r\n`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closed = started.close();
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.write('\r\n');
    await closedSocket;
    await closed;
    assert.match(answer, /^HTTP\/1\.1 503 /, answer);
    assert.match(answer, /\r\nretry-after: 1\r\n/i, answer);
    assert.match(answer, /\r\nconnection: close\r\n/i, answer);
    assert.match(answer, /shutting down; retry shortly/, answer);
  });
}
