import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { get, type ClientRequest, type IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ManualClock } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { assertErrorShape, ingest, startTestObserve, type TestObserve } from '../testing.ts';

/** One Server-Sent Events block: a message (event, id, data) or a comment line (heartbeat). */
interface SseMessage {
  event?: string;
  id?: string;
  data?: string;
  comment?: string;
}

function parseBlock(block: string): SseMessage {
  const message: SseMessage = {};
  for (const line of block.split('\n')) {
    if (line.startsWith(':')) message.comment = line.slice(1).trim();
    const match = /^(event|id|data): ?(.*)$/.exec(line);
    if (match) message[match[1] as 'event' | 'id' | 'data'] = match[2];
  }
  return message;
}

/**
 * A real HTTP client reading an event stream (node:http, one connection per stream and nothing
 * pooled, so the shutdown test sees only the streams' own connections).
 */
class SseClient {
  private readonly queue: SseMessage[] = [];
  private wakeup: (() => void) | null = null;
  ended = false;

  private constructor(
    private readonly response: IncomingMessage,
    private readonly request: ClientRequest,
  ) {}

  get status(): number {
    return this.response.statusCode ?? 0;
  }

  header(name: string): string | undefined {
    return this.response.headers[name] as string | undefined;
  }

  static open(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
    return new Promise((resolve, reject) => {
      const request = get(url, { headers: { accept: 'text/event-stream', ...headers }, agent: false }, (response) => {
        const client = new SseClient(response, request);
        if (response.statusCode === 200) client.pump();
        resolve(client);
      });
      request.on('error', reject);
    });
  }

  /** The body of a refused request. */
  async json(): Promise<unknown> {
    let text = '';
    for await (const chunk of this.response) text += String(chunk);
    return JSON.parse(text) as unknown;
  }

  private pump(): void {
    let buffer = '';
    this.response.setEncoding('utf8');
    this.response.on('data', (chunk: string) => {
      buffer += chunk;
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        this.queue.push(parseBlock(buffer.slice(0, end)));
        buffer = buffer.slice(end + 2);
      }
      this.wakeup?.();
    });
    this.response.on('close', () => {
      this.ended = true;
      this.wakeup?.();
    });
  }

  /** The next block, heartbeats included. */
  async nextBlock(timeoutMs = 5000): Promise<SseMessage> {
    const deadline = Date.now() + timeoutMs;
    while (this.queue.length === 0) {
      if (this.ended) throw new Error('the stream ended');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error('no message in time');
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.wakeup = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wakeup = null;
    }
    return this.queue.shift()!;
  }

  /** The next message, skipping heartbeats. */
  async next(timeoutMs = 5000): Promise<SseMessage> {
    for (;;) {
      const block = await this.nextBlock(timeoutMs);
      if (block.event !== undefined) return block;
    }
  }

  /** Messages up to and including the first that `last` accepts. */
  async until(last: (message: SseMessage) => boolean): Promise<SseMessage[]> {
    const messages: SseMessage[] = [];
    for (;;) {
      const message = await this.next();
      messages.push(message);
      if (last(message)) return messages;
    }
  }

  /** Waits until the server ended the stream. */
  async waitEnded(timeoutMs = 5000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.ended) {
      if (Date.now() > deadline) throw new Error('the stream did not end');
      await sleep(20);
    }
  }

  close(): void {
    this.request.destroy();
  }
}

interface StreamedEvent {
  id: string;
  seq: number;
  sessionId: string;
  agentId: string;
  eventType: string;
  payload: Record<string, unknown>;
}

interface StreamedSession {
  id: string;
  eventCount: number;
}

const custom = (sessionId: string, agentId: string, data: unknown = 1) => ({ sessionId, agentId, eventType: 'custom', payload: { type: 'test', data } });
const toolCall = (sessionId: string, agentId: string) => ({
  sessionId,
  agentId,
  eventType: 'tool_call',
  payload: { toolName: 'search', callId: `c-${sessionId}`, arguments: {} },
});

const eventOf = (message: SseMessage): StreamedEvent => JSON.parse(message.data!) as StreamedEvent;
const sessionOf = (message: SseMessage): StreamedSession => JSON.parse(message.data!) as StreamedSession;
/** A message as `kind:value`, for comparing whole sequences. */
function describeMessage(message: SseMessage): string {
  if (message.event === 'event') return `event:${eventOf(message).id}`;
  if (message.event === 'session') return `session:${sessionOf(message).id}`;
  return `${message.event}:${message.data}`;
}
const isEvent = (id: string) => (message: SseMessage) => message.event === 'event' && eventOf(message).id === id;

await describeEachDatabase('GET /api/stream', (backend) => {
  let observe: TestObserve;
  let clock: ManualClock;
  let base: string;
  const auth = (): Record<string, string> => ({ authorization: `Bearer ${observe.key}` });
  const open = (query = '', headers: Record<string, string> = auth()): Promise<SseClient> => SseClient.open(`${base}/api/stream${query}`, headers);
  /** A stream that has answered `ready` (from then on every commit reaches it). */
  const openReady = async (query = '', headers?: Record<string, string>): Promise<{ client: SseClient; ready: SseMessage }> => {
    const client = await open(query, headers);
    assert.equal(client.status, 200, client.status === 200 ? '' : JSON.stringify(await client.json()));
    const ready = await client.next();
    assert.equal(ready.event, 'ready');
    return { client, ready };
  };

  before(async () => {
    clock = new ManualClock(Date.parse('2026-11-22T10:00:00.000Z'));
    observe = await startTestObserve(backend, { clock });
    base = await observe.service.app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(() => observe.close());

  test('events ingested after the stream opens arrive as stored, after the summary of their session', async () => {
    const { client, ready } = await openReady();
    assert.deepEqual(JSON.parse(ready.data!), { resumed: false });
    assert.match(ready.id!, /^\d+$/);
    assert.equal(client.header('content-type'), 'text/event-stream; charset=utf-8');

    const ids = await ingest(observe, [custom('live-1', 'agent-live', 'a'), custom('live-1', 'agent-live', 'b')]);
    const [session, first, second] = [await client.next(), await client.next(), await client.next()];
    assert.equal(session.event, 'session');
    assert.equal(session.id, ready.id, 'a session update carries the cursor before the events it announces');
    const stored = (await observe.call({ method: 'GET', url: '/api/sessions/live-1' })).json();
    assert.deepEqual(sessionOf(session), stored);
    assert.equal(sessionOf(session).eventCount, 2);
    for (const [message, id] of [
      [first, ids[0]],
      [second, ids[1]],
    ] as const) {
      assert.equal(message.event, 'event');
      assert.deepEqual(JSON.parse(message.data!), (await observe.call({ method: 'GET', url: `/api/events/${id}` })).json());
    }
    assert.match(first.id!, /^\d+-0$/);
    assert.match(second.id!, /^\d+-1$/);
    client.close();
  });

  test('filters: sessionId, agentId, eventType (a comma list, as on /api/events) and include=sessions', async () => {
    const streams = {
      session: (await openReady('?sessionId=f-1')).client,
      agent: (await openReady('?agentId=agent-b')).client,
      types: (await openReady('?eventType=tool_call,session_started')).client,
      sessionsOnly: (await openReady('?include=sessions')).client,
      eventsOnly: (await openReady('?include=events&agentId=agent-b')).client,
    };
    const [e1, e2, e3, e4] = await ingest(observe, [
      custom('f-1', 'agent-a'),
      toolCall('f-2', 'agent-b'),
      { sessionId: 'f-3', agentId: 'agent-a', eventType: 'session_started', payload: { agentName: 'A' } },
      toolCall('f-1', 'agent-a'),
    ]);
    // A batch's events come grouped by session (sessions in id order), each session's in seq order.
    const expected: [SseClient, string[]][] = [
      [streams.session, ['session:f-1', `event:${e1}`, `event:${e4}`]],
      [streams.agent, ['session:f-2', `event:${e2}`]],
      [streams.types, ['session:f-1', 'session:f-2', 'session:f-3', `event:${e4}`, `event:${e2}`, `event:${e3}`]],
      [streams.sessionsOnly, ['session:f-1', 'session:f-2', 'session:f-3']],
      [streams.eventsOnly, [`event:${e2}`]],
    ];
    for (const [client, messages] of expected) {
      const received = await client.until((m) => describeMessage(m) === messages.at(-1));
      assert.deepEqual(received.map(describeMessage), messages);
    }
    // Then one event every filter takes: the next message of each stream is about it, so nothing else came.
    const [sentinel] = await ingest(observe, [toolCall('f-1', 'agent-b')]);
    for (const client of [streams.session, streams.agent, streams.types]) {
      assert.deepEqual((await client.until(isEvent(sentinel!))).map(describeMessage), ['session:f-1', `event:${sentinel}`]);
    }
    const update = await streams.sessionsOnly.next();
    assert.equal(describeMessage(update), 'session:f-1');
    assert.equal(sessionOf(update).eventCount, 3);
    assert.equal(describeMessage(await streams.eventsOnly.next()), `event:${sentinel}`);
    for (const client of Object.values(streams)) client.close();
  });

  test('bad filters are a 400 in the observe error body', async () => {
    for (const query of ['?eventType=nope', '?include=everything', '?sessionId=', '?lastEventId=abc']) {
      const client = await open(query);
      assert.equal(client.status, 400, query);
      assertErrorShape(await client.json(), 400, query);
    }
  });

  test('resuming from Last-Event-ID replays exactly the events committed after it, in commit order', async () => {
    const { client: first } = await openReady();
    const [a1, a2] = await ingest(observe, [custom('r-a', 'agent-r'), custom('r-a', 'agent-r')]);
    const seen = await first.until(isEvent(a2!));
    const lastId = seen.at(-1)!.id!;
    first.close();

    // Missed while disconnected: two batches over three sessions.
    const [b1, b2, b3] = await ingest(observe, [custom('r-b', 'agent-r'), custom('r-c', 'agent-r'), custom('r-b', 'agent-r')]);
    const [a3] = await ingest(observe, [custom('r-a', 'agent-r')]);

    const { client: resumed, ready } = await openReady('', { ...auth(), 'last-event-id': lastId });
    assert.deepEqual(JSON.parse(ready.data!), { resumed: true });
    assert.equal(ready.id, lastId);
    const [sentinel] = await ingest(observe, [custom('r-z', 'agent-r')]);
    const replayed = (await resumed.until(isEvent(sentinel!))).filter((m) => m.event === 'event').map((m) => eventOf(m).id);
    assert.deepEqual(replayed, [b1, b3, b2, a3, sentinel]);
    assert.ok(!replayed.includes(a1!) && !replayed.includes(a2!), 'nothing before the cursor comes again');
    resumed.close();

    // From the middle of a batch, with the query parameter (for clients that cannot set the header).
    const midway = seen.find(isEvent(a1!))!.id!;
    const { client: fromMiddle } = await openReady(`?lastEventId=${midway}&sessionId=r-a`);
    const rest = (await fromMiddle.until(isEvent(a3!))).filter((m) => m.event === 'event').map((m) => eventOf(m).id);
    assert.deepEqual(rest, [a2, a3]);
    fromMiddle.close();
  });

  test('under concurrent ingest, every cursor resumes to exactly the events after it', async () => {
    const { client } = await openReady('?agentId=agent-c');
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => ingest(observe, [custom(`c-${i}`, 'agent-c'), custom(`c-${i}`, 'agent-c')])));
    const all = results.flat();
    const messages: SseMessage[] = [];
    while (messages.length < all.length) {
      const message = await client.next();
      if (message.event === 'event') messages.push(message);
    }
    client.close();
    const order = messages.map((m) => eventOf(m).id);
    assert.deepEqual([...order].sort(), [...all].sort(), 'every event once');
    for (const cut of [0, 5, 17]) {
      const { client: again } = await openReady('?agentId=agent-c', { ...auth(), 'last-event-id': messages[cut]!.id! });
      const replayed: string[] = [];
      while (replayed.length < order.length - cut - 1) {
        const message = await again.next();
        if (message.event === 'event') replayed.push(eventOf(message).id);
      }
      assert.deepEqual(replayed, order.slice(cut + 1), `resumed after message ${cut}`);
      again.close();
    }
  });

  test('a cursor ahead of this database, or older than the replay window, starts at the end with reset in ready', async () => {
    const { ready: head } = await openReady();
    const { client: unknown, ready } = await openReady('', { ...auth(), 'last-event-id': '999999999' });
    assert.deepEqual(JSON.parse(ready.data!), { resumed: false, reset: 'unknown' });
    assert.equal(ready.id, head.id, 'the stream starts at the current end');
    unknown.close();

    const { client: watcher } = await openReady('?sessionId=old-1');
    const [old] = await ingest(observe, [custom('old-1', 'agent-o')]);
    const oldId = (await watcher.until(isEvent(old!))).at(-1)!.id!;
    watcher.close();
    clock.advance(25 * 60 * 60 * 1000);
    await ingest(observe, [custom('old-2', 'agent-o')]);
    assert.equal(await observe.service.jobs.retention.tick(), true);
    for (const expired of [head.id!, oldId]) {
      const { client, ready: restarted } = await openReady('', { ...auth(), 'last-event-id': expired });
      assert.deepEqual(JSON.parse(restarted.data!), { resumed: false, reset: 'expired' }, expired);
      client.close();
    }
  });

  test('a stream token opens the stream only, until it expires or its key is revoked', async () => {
    const created = await observe.call({ method: 'POST', url: '/api/stream/tokens' });
    assert.equal(created.statusCode, 201, created.body);
    const { token, expiresAt } = created.json() as { token: string; expiresAt: string };
    assert.match(token, /^vst_/);
    assert.equal(expiresAt, new Date(clock.now() + 60_000).toISOString());
    const stored = await observe.service.context.database.db.selectFrom('stream_tokens').selectAll().execute();
    assert.ok(
      stored.some((row) => row.token_hash === createHash('sha256').update(token).digest('hex')),
      'stored as its SHA-256',
    );
    assert.ok(!JSON.stringify(stored).includes(token), 'never stored raw');

    const { client } = await openReady(`?token=${token}&sessionId=t-1`, {});
    const [id] = await ingest(observe, [custom('t-1', 'agent-t')]);
    await client.until(isEvent(id!));
    client.close();

    // Not a key anywhere else: neither as a bearer nor as ?token=.
    for (const [url, headers] of [
      ['/api/sessions', { authorization: `Bearer ${token}` }],
      [`/api/sessions?token=${token}`, {}],
      ['/api/stream/tokens', { authorization: `Bearer ${token}` }],
    ] as const) {
      const method = url === '/api/stream/tokens' ? 'POST' : 'GET';
      const response = await observe.service.app.inject({ method, url, headers });
      assert.equal(response.statusCode, 401, url);
      assertErrorShape(response.json(), 401, url);
    }

    clock.advance(60_001);
    const late = await open(`?token=${token}`, {});
    assert.equal(late.status, 401);
    assertErrorShape(await late.json(), 401, 'expired token');

    const other = await observe.call({ method: 'POST', url: '/api/keys', payload: { name: 'soon revoked' } });
    const { id: otherId, key: otherKey } = other.json() as { id: string; key: string };
    const minted = await observe.service.app.inject({ method: 'POST', url: '/api/stream/tokens', headers: { authorization: `Bearer ${otherKey}` } });
    await observe.call({ method: 'DELETE', url: `/api/keys/${otherId}` });
    const revoked = await open(`?token=${(minted.json() as { token: string }).token}`, {});
    assert.equal(revoked.status, 401);
  });

  test('without credentials, or with a wrong key, the stream is a 401 in the observe error body', async () => {
    for (const headers of [{}, { authorization: 'Bearer vgl_wrong-key-0000000000000000000000000000' }] as Record<string, string>[]) {
      const client = await open('', headers);
      assert.equal(client.status, 401);
      assertErrorShape(await client.json(), 401, JSON.stringify(headers));
    }
    const bogus = await open('?token=vst_not-a-token', {});
    assert.equal(bogus.status, 401);
  });

  test('the OpenAPI document describes both routes, the stream as text/event-stream', async () => {
    const doc = (await observe.call({ method: 'GET', url: '/api/openapi.json' })).json() as {
      paths: Record<string, Record<string, { operationId?: string; responses: Record<string, { content?: Record<string, unknown> }> }>>;
    };
    const stream = doc.paths['/api/stream']!.get!;
    assert.equal(stream.operationId, 'streamEvents');
    assert.ok(stream.responses['200']!.content!['text/event-stream']);
    assert.equal(doc.paths['/api/stream/tokens']!.post!.operationId, 'createStreamToken');
  });

  if (backend.kind === 'postgres') {
    test('two instances on one schema: an event ingested on one reaches a stream on the other', async () => {
      const other = await startTestObserve(backend, { database: observe.config.database, createKey: false, clock });
      try {
        const { client } = await openReady('?sessionId=two-1');
        const response = await other.service.app.inject({
          method: 'POST',
          url: '/api/events',
          headers: { authorization: `Bearer ${observe.key}` },
          payload: { events: [custom('two-1', 'agent-2')] },
        });
        assert.equal(response.statusCode, 201, response.body);
        const [{ id }] = (response.json() as { events: { id: string }[] }).events as [{ id: string }];
        // Well within the 15 s heartbeat: the NOTIFY woke the stream.
        const messages = await client.until(isEvent(id));
        assert.deepEqual(messages.map(describeMessage), ['session:two-1', `event:${id}`]);
        client.close();
      } finally {
        await other.close();
      }
    });
  }
});

await describeEachDatabase('GET /api/stream: heartbeat, limits, slow clients, shutdown', (backend) => {
  let observe: TestObserve;
  let base: string;
  const auth = (): Record<string, string> => ({ authorization: `Bearer ${observe.key}` });
  before(async () => {
    observe = await startTestObserve(backend, { env: { STREAM_HEARTBEAT_MS: '200', STREAM_MAX_CONNECTIONS: '1' } });
    base = await observe.service.app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(() => observe.close());

  /** Opens a stream once the instance has a free place (a closed stream frees its place when its socket closes). */
  async function openWhenFree(headers = auth()): Promise<SseClient> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const client = await SseClient.open(`${base}/api/stream`, headers);
      if (client.status === 200) return client;
      assert.equal(client.status, 503);
      if (Date.now() > deadline) throw new Error('no place freed');
      await sleep(100);
    }
  }

  test('a heartbeat comment, carrying the cursor, comes every STREAM_HEARTBEAT_MS', async () => {
    const client = await openWhenFree();
    const ready = await client.next();
    const started = Date.now();
    const beat = await client.nextBlock(2000);
    assert.equal(beat.comment, 'heartbeat');
    assert.equal(beat.event, undefined, 'no event fires');
    assert.equal(beat.id, ready.id);
    assert.equal((await client.nextBlock(2000)).comment, 'heartbeat');
    assert.ok(Date.now() - started < 1500);
    client.close();
  });

  test('an open stream ends at the next heartbeat once its key is revoked', async () => {
    const created = (await observe.call({ method: 'POST', url: '/api/keys', payload: { name: 'stream-viewer', scopes: ['read'] } })).json() as {
      id: string;
      key: string;
    };
    const client = await openWhenFree({ authorization: `Bearer ${created.key}` });
    await client.next();
    assert.equal((await client.nextBlock(2000)).comment, 'heartbeat', 'open while the key is valid');
    assert.equal((await observe.call({ method: 'DELETE', url: `/api/keys/${created.id}` })).statusCode, 200);
    // Heartbeats come every 200 ms: the stream ends well within a second.
    await client.waitEnded(1500);
  });

  test('one stream more than STREAM_MAX_CONNECTIONS is a 503 with Retry-After; a closed stream frees its place', async () => {
    const first = await openWhenFree();
    const refused = await SseClient.open(`${base}/api/stream`, auth());
    assert.equal(refused.status, 503);
    assert.equal(refused.header('retry-after'), '5');
    const body = (await refused.json()) as { error: string; status: number };
    assertErrorShape(body, 503, 'limit');
    assert.match(body.error, /STREAM_MAX_CONNECTIONS/);
    first.close();
    (await openWhenFree()).close();
  });

  test('a client that stops reading is dropped instead of buffered without bound', async () => {
    // A raw connection that sends the request, reads the response head and then nothing more: its socket fills up.
    const port = Number(new URL(base).port);
    let stalled: Socket;
    for (;;) {
      stalled = connect(port, '127.0.0.1');
      stalled.on('error', () => undefined);
      stalled.write(`GET /api/stream HTTP/1.1\r\nhost: 127.0.0.1\r\nauthorization: Bearer ${observe.key}\r\n\r\n`);
      const head = await new Promise<string>((resolve) =>
        stalled.once('data', (chunk: Buffer) => {
          stalled.pause();
          resolve(chunk.toString('latin1'));
        }),
      );
      if (head.startsWith('HTTP/1.1 200')) break;
      // The previous test's stream has not freed its place yet.
      stalled.destroy();
      await sleep(100);
    }
    // The stalled stream holds the one place.
    assert.equal((await SseClient.open(`${base}/api/stream`, auth())).status, 503);
    // About 40 MB of events, more than the kernel's socket buffers hold.
    const big = 'x'.repeat(200_000);
    for (let batch = 0; batch < 4; batch += 1) {
      await observe.call({
        method: 'POST',
        url: '/api/events',
        payload: { events: Array.from({ length: 40 }, () => custom(`big-${batch}`, 'agent-big', big)) },
      });
    }
    // Two heartbeats (200 ms) without the socket draining: the stream is dropped and its place freed.
    (await openWhenFree()).close();
    stalled.destroy();
  });

  test('closing the app ends open streams at once', async () => {
    // An app of its own: connections the tests above left to the HTTP client's pool are not the point here.
    const own = await startTestObserve(backend);
    const ownBase = await own.service.app.listen({ port: 0, host: '127.0.0.1' });
    const clients = [
      await SseClient.open(`${ownBase}/api/stream`, { authorization: `Bearer ${own.key}` }),
      await SseClient.open(`${ownBase}/api/stream?include=sessions`, { authorization: `Bearer ${own.key}` }),
    ];
    for (const client of clients) assert.equal((await client.next()).event, 'ready');
    const started = Date.now();
    await own.close();
    assert.ok(Date.now() - started < 3000, `close took ${Date.now() - started} ms`);
    for (const client of clients) await client.waitEnded();
  });
});
