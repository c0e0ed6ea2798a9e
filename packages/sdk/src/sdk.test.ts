import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import type { ServerResponse } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { REFUSED_URL, sendJson, TestHttpServer, type ReceivedRequest } from '@vigil/platform/testing';
import {
  ApprovalTimeoutError,
  GateClient,
  ObserveClient,
  PriceTable,
  VigilApiError,
  VigilAuthenticationError,
  VigilClosedError,
  VigilConflictError,
  VigilDeliveryError,
  VigilDeprecationError,
  VigilError,
  VigilNetworkError,
  VigilNotFoundError,
  VigilPermissionError,
  VigilServerError,
  VigilValidationError,
  defaultErrorReporter,
  type IncomingEvent,
} from './index.ts';
import { eventually, forwardTo, startLiveServices, type LiveServices } from '@vigil/cli/testing';
import { retryableAnswer } from './http.ts';

let live: LiveServices;
const servers: TestHttpServer[] = [];

before(async () => {
  live = await startLiveServices();
});

after(async () => {
  for (const server of servers) await server.stop();
  await live?.close();
});

type Intercept = (request: ReceivedRequest, index: number) => ((res: ServerResponse) => void) | undefined;

/** A recording proxy in front of `target`; `intercept` may answer a request itself (fault injection). */
async function proxy(target: string, intercept?: Intercept): Promise<TestHttpServer> {
  let index = 0;
  const server = new TestHttpServer((request, res) => {
    const own = intercept?.(request, index++);
    if (own) return own(res);
    forwardTo(target, request, res).catch((error: unknown) => {
      res.writeHead(502);
      res.end(String(error));
    });
  });
  servers.push(server);
  return server.start();
}

function customEvent(sessionId: string, i: number): IncomingEvent {
  return { sessionId, agentId: 'sdk-agent', eventType: 'custom', payload: { type: 'tick', data: { i } } };
}

function observeClient(baseUrl: string, options: ConstructorParameters<typeof ObserveClient>[0] = {}): ObserveClient {
  return new ObserveClient({ baseUrl, apiKey: live.observeKey, ...options });
}

async function storedEvents(sessionId: string) {
  const direct = observeClient(live.observeUrl);
  return (await direct.listEvents({ sessionId, order: 'asc', limit: 500 })).events;
}

describe('event batching', () => {
  test('batchSize events are sent at once; what piles up meanwhile goes in one request; fewer wait for flush(); all in order', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    // The first request is held until 7 more events are queued behind it.
    const recorder = await proxy(live.observeUrl, (_request, index) =>
      index === 0 ? (res) => void held.then(() => forwardTo(live.observeUrl, recorder.requests[0]!, res)) : undefined,
    );
    const client = observeClient(recorder.url, { batchSize: 5, flushIntervalMs: 60_000 });
    for (let i = 0; i < 5; i++) client.track(customEvent('batch-size', i));
    await eventually(
      async () => recorder.requests.length,
      (n) => n === 1,
      10_000,
      'the first batch, at once',
    );
    for (let i = 5; i < 12; i++) client.track(customEvent('batch-size', i));
    assert.equal(client.pendingEvents, 7, 'one request at a time: the rest waits behind it');
    release();
    await eventually(
      async () => recorder.requests.length,
      (n) => n === 2,
      10_000,
      'the backlog, in one request',
    );
    for (let i = 12; i < 14; i++) client.track(customEvent('batch-size', i));
    await sleep(300);
    assert.equal(recorder.requests.length, 2, 'fewer than batchSize wait for the interval or a flush');
    assert.equal(client.pendingEvents, 2);
    await client.flush();
    const sizes = recorder.requests.map((r) => (JSON.parse(r.body) as { events: unknown[] }).events.length);
    assert.deepEqual(sizes, [5, 7, 2]);
    assert.ok(recorder.requests.every((r) => r.method === 'POST' && r.url === '/api/events'));
    const stored = await storedEvents('batch-size');
    assert.deepEqual(
      stored.map((e) => (e.payload.data as { i: number }).i),
      [...Array(14).keys()],
      'stored in the order tracked (chain seq order)',
    );
    assert.deepEqual(
      stored.map((e) => e.seq),
      [...Array(14).keys()],
    );
    await client.close();
  });

  test('a request carries at most 1000 events, and maxQueueSize bounds what waits while the server is down', async () => {
    const reported: VigilError[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const recorder = await proxy(live.observeUrl, (_request, index) =>
      index === 0 ? (res) => void held.then(() => forwardTo(live.observeUrl, recorder.requests[0]!, res)) : undefined,
    );
    const client = observeClient(recorder.url, { batchSize: 10, maxQueueSize: 1500, flushIntervalMs: 60_000, onError: (error) => reported.push(error) });
    for (let i = 0; i < 10; i++) client.track(customEvent('batch-bound', i));
    await eventually(
      async () => recorder.requests.length,
      (n) => n === 1,
      10_000,
      'the first request',
    );
    for (let i = 10; i < 1610; i++) client.track(customEvent('batch-bound', i));
    assert.equal(client.pendingEvents, 1500, 'the queue holds maxQueueSize events');
    assert.equal(reported.length, 100, 'each event beyond it is dropped and reported');
    release();
    await client.flush();
    const sizes = recorder.requests.map((r) => (JSON.parse(r.body) as { events: unknown[] }).events.length);
    assert.deepEqual(sizes, [10, 1000, 500]);
    assert.equal((await observeClient(live.observeUrl).getSession('batch-bound')).eventCount, 1510, 'all but the dropped are stored');
    await client.close();
  });

  test('a partial batch is sent by the background timer after flushIntervalMs, without flush()', async () => {
    const recorder = await proxy(live.observeUrl);
    const client = observeClient(recorder.url, { batchSize: 100, flushIntervalMs: 150 });
    const started = Date.now();
    for (let i = 0; i < 3; i++) client.track(customEvent('batch-interval', i));
    assert.equal(recorder.requests.length, 0);
    const stored = await eventually(
      () => storedEvents('batch-interval'),
      (events) => events.length === 3,
      10_000,
      'interval flush',
    );
    assert.ok(Date.now() - started >= 140, 'not before the interval');
    assert.equal(recorder.requests.length, 1, 'one request for the three events');
    assert.equal(stored.length, 3);
    await client.close();
  });

  test('events get the time they were tracked, not the time of delivery', async () => {
    const client = observeClient(live.observeUrl, { flushIntervalMs: 60_000 });
    const before = Date.now();
    client.track(customEvent('batch-timestamp', 0));
    await sleep(400);
    await client.flush();
    const [event] = await storedEvents('batch-timestamp');
    assert.ok(Date.parse(event!.timestamp) - before < 300, `timestamp ${event!.timestamp} is the tracking time`);
    await client.close();
  });

  test('listLlmCalls and getLlmCall read the LLM calls, filtered, with their prompt and price', async () => {
    const client = observeClient(live.observeUrl, { flushIntervalMs: 60_000 });
    const base = { sessionId: 'sdk-llm-calls', agentId: 'sdk-llm-agent' };
    client.track({
      ...base,
      eventType: 'llm_call',
      payload: { callId: 'q1', provider: 'openai', model: 'gpt-4o', messages: [{ role: 'user', content: 'hello' }] },
    });
    client.track({
      ...base,
      eventType: 'llm_response',
      payload: {
        callId: 'q1',
        provider: 'openai',
        model: 'gpt-4o',
        completion: 'hi',
        finishReason: 'stop',
        usage: { inputTokens: 10, outputTokens: 2 },
        costUsd: 0.00005,
        latencyMs: 120,
      },
    });
    await client.flush();
    const page = await client.listLlmCalls({ agentId: 'sdk-llm-agent', sort: 'cost' });
    assert.deepEqual(
      page.calls.map((c) => [c.sessionId, c.model, c.totalTokens, c.costUsd]),
      [['sdk-llm-calls', 'gpt-4o', 12, 0.00005]],
    );
    const call = await client.getLlmCall(page.calls[0]!.id);
    assert.deepEqual(call.prompt?.messages, [{ role: 'user', content: 'hello' }]);
    assert.equal(call.completion, 'hi');
    assert.equal(call.price?.inputPerMillionUsd, 2.5);
    await client.close();
  });

  test('an invalid event is dropped and reported; the rest of its batch is stored', async () => {
    const reported: VigilError[] = [];
    const client = observeClient(live.observeUrl, { flushIntervalMs: 60_000, onError: (error) => reported.push(error) });
    client.track(customEvent('batch-invalid', 0));
    client.track({
      sessionId: 'batch-invalid',
      agentId: 'sdk-agent',
      eventType: 'tool_call',
      payload: { toolName: 'x', arguments: {} },
    } as unknown as IncomingEvent);
    client.track(customEvent('batch-invalid', 2));
    await assert.rejects(client.flush(), (error: unknown) => {
      assert.ok(error instanceof VigilDeliveryError);
      assert.equal(error.events.length, 1);
      assert.equal((error.events[0] as IncomingEvent).eventType, 'tool_call');
      assert.ok(error.cause instanceof VigilValidationError);
      return true;
    });
    assert.equal(reported.length, 1, 'reported to onError exactly once');
    const stored = await storedEvents('batch-invalid');
    assert.deepEqual(
      stored.map((e) => (e.payload.data as { i: number }).i),
      [0, 2],
    );
    await client.close();
  });

  test('close() flushes, and the client refuses events afterwards', async () => {
    const client = observeClient(live.observeUrl, { flushIntervalMs: 60_000 });
    client.track(customEvent('batch-close', 0));
    await client.close();
    assert.equal((await storedEvents('batch-close')).length, 1);
    assert.throws(() => client.track(customEvent('batch-close', 1)), VigilClosedError);
  });

  /** Runs `script` (ESM, with OBSERVE and KEY in its environment) as a plain program; answers its exit code and stderr. */
  async function runScript(script: string): Promise<{ code: number | null; stderr: string; ms: number }> {
    const started = Date.now();
    // Asynchronous spawn: the servers run in this process and must keep answering meanwhile.
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: resolve(import.meta.dirname, '../../..'),
      env: { ...process.env, OBSERVE: live.observeUrl, KEY: live.observeKey },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((done) => child.once('exit', done));
    return { code, stderr, ms: Date.now() - started };
  }

  const track3 = (sessionId: string) =>
    `for (let i = 0; i < 3; i++) client.track({ sessionId: '${sessionId}', agentId: 'child', eventType: 'custom', payload: { type: 'tick', data: { i } } });`;

  test('@vigil/sdk/node sends queued events when the process is about to exit (beforeExit), without waiting for the interval', async () => {
    const { code, stderr, ms } = await runScript(`
      import { ObserveClient } from '@vigil/sdk/node';
      const client = new ObserveClient({ baseUrl: process.env.OBSERVE, apiKey: process.env.KEY, flushIntervalMs: 600000 });
      ${track3('exit-flush')}
      // No flush(), no close(): the program just ends.
    `);
    assert.equal(code, 0, stderr);
    assert.ok(ms < 60_000, 'the 10-minute interval did not hold the process');
    assert.equal((await storedEvents('exit-flush')).length, 3);
  });

  test('the core entry keeps the process alive until a waiting batch is sent, so a plain script loses nothing', async () => {
    const { code, stderr } = await runScript(`
      import { ObserveClient } from '@vigil/sdk';
      const client = new ObserveClient({ baseUrl: process.env.OBSERVE, apiKey: process.env.KEY, flushIntervalMs: 300 });
      ${track3('exit-core')}
    `);
    assert.equal(code, 0, stderr);
    assert.equal((await storedEvents('exit-core')).length, 3);
  });

  test('@vigil/sdk/node reports events a process.exit() cut off to onError', async () => {
    const { code, stderr } = await runScript(`
      import { ObserveClient } from '@vigil/sdk/node';
      const client = new ObserveClient({ baseUrl: process.env.OBSERVE, apiKey: process.env.KEY, flushIntervalMs: 600000, onError: (e) => console.error('REPORTED ' + e.message) });
      ${track3('exit-cut')}
      process.exit(3);
    `);
    assert.equal(code, 3);
    assert.match(stderr, /REPORTED 3 events were lost: the process exited before they were sent/);
    assert.equal((await storedEvents('exit-cut')).length, 0);
  });
});

describe('retries', () => {
  test('a 503 is retried after its Retry-After, and the batch is stored once', async () => {
    const flaky = await proxy(live.observeUrl, (_request, index) =>
      index === 0
        ? (res) => {
            res.setHeader('retry-after', '1');
            sendJson(res, 503, { error: 'Database unavailable', status: 503 });
          }
        : undefined,
    );
    const client = observeClient(flaky.url);
    const started = Date.now();
    const answer = await client.ingest([customEvent('retry-503', 0), customEvent('retry-503', 1)]);
    assert.equal(answer.ingested, 2);
    assert.ok(Date.now() - started >= 1000, 'waited for Retry-After: 1');
    assert.equal(flaky.requests.length, 2);
    assert.equal((await storedEvents('retry-503')).length, 2);
  });

  test('a 429 with Retry-After is retried (gate)', async () => {
    const limited = await proxy(live.gateUrl, (_request, index) =>
      index === 0
        ? (res) => {
            res.setHeader('retry-after', '0');
            sendJson(res, 429, { error: { code: 'rate_limited', message: 'Rate limit exceeded' } });
          }
        : undefined,
    );
    const gate = new GateClient({ baseUrl: limited.url, apiKey: live.gateAdminKey });
    const created = await gate.createRequest({ action: 'retry_429' });
    assert.equal(created.action, 'retry_429');
    assert.equal(limited.requests.length, 2);
  });

  test('a connection reset is retried', async () => {
    const dropping = await proxy(live.observeUrl, (_request, index) => (index === 0 ? (res) => res.socket?.destroy() : undefined));
    const client = observeClient(dropping.url);
    const answer = await client.listSessions({ limit: 1 });
    assert.ok(Array.isArray(answer.sessions));
    assert.equal(dropping.requests.length, 2);
  });

  test('after maxRetries the last error is thrown, typed', async () => {
    const down = await proxy(live.observeUrl, () => (res) => sendJson(res, 503, { error: 'Database unavailable', status: 503 }));
    const client = observeClient(down.url, { retry: { maxRetries: 2, baseDelayMs: 10 } });
    await assert.rejects(client.listSessions(), (error: unknown) => {
      assert.ok(error instanceof VigilServerError);
      assert.equal(error.status, 503);
      assert.equal(error.message, 'Database unavailable');
      return true;
    });
    assert.equal(down.requests.length, 3, 'one attempt and two retries');
  });

  test('a 4xx is not retried', async () => {
    const recorder = await proxy(live.observeUrl);
    const client = observeClient(recorder.url);
    await assert.rejects(client.getSession('no-such-session'), VigilNotFoundError);
    assert.equal(recorder.requests.length, 1);
  });

  test('no server at all: a VigilNetworkError after the retries', async () => {
    const client = observeClient(REFUSED_URL, { retry: { maxRetries: 1, baseDelayMs: 10 } });
    await assert.rejects(client.listSessions(), (error: unknown) => error instanceof VigilNetworkError && error.service === 'observe' && !error.timedOut);
  });
});

describe('typed errors', () => {
  test("a 409 is retried only as observe's idempotency_in_flight (or, from an observe without codes, with Retry-After)", () => {
    const conflict = (code: string | undefined, retryAfterMs?: number) =>
      new VigilApiError({ service: 'observe', status: 409, message: 'conflict', method: 'POST', path: '/api/events', code, retryAfterMs });
    assert.equal(retryableAnswer(conflict('idempotency_in_flight')), true);
    assert.equal(retryableAnswer(conflict('benchmark_status_conflict', 1000)), false);
    assert.equal(retryableAnswer(conflict(undefined, 1000)), true);
    assert.equal(retryableAnswer(conflict(undefined)), false);
  });

  test('observe: 400 with the server message and field details, 404, 401', async () => {
    const client = observeClient(live.observeUrl);
    await assert.rejects(
      client.ingest([{ sessionId: 's', agentId: 'a', eventType: 'tool_call', payload: { toolName: 't', arguments: {} } } as unknown as IncomingEvent]),
      (error: unknown) => {
        assert.ok(error instanceof VigilValidationError && error instanceof VigilApiError);
        assert.equal(error.status, 400);
        assert.equal(error.service, 'observe');
        assert.equal(error.code, 'validation_error');
        assert.match(error.message, /callId/);
        assert.ok(
          error.details.some((d) => d.path === 'events.0.payload.callId'),
          JSON.stringify(error.details),
        );
        assert.equal((error.body as { error: string }).error, error.message, 'the message is the body’s error field');
        return true;
      },
    );
    await assert.rejects(client.getSession('missing'), (error: unknown) => {
      assert.ok(error instanceof VigilNotFoundError);
      assert.equal(error.message, 'Session not found');
      assert.equal(error.code, 'session_not_found');
      assert.equal(error.path, '/api/sessions/missing');
      return true;
    });
    const anonymous = new ObserveClient({ baseUrl: live.observeUrl, apiKey: 'vk_wrong' });
    await assert.rejects(anonymous.listSessions(), (error: unknown) => error instanceof VigilAuthenticationError && error.status === 401);
  });

  test('gate: 403 and 409 with the code and message of { error: { code, message } }', async () => {
    const creator = new GateClient({ baseUrl: live.gateUrl, apiKey: await live.gateKey('creator', ['request:create', 'request:read']) });
    const request = await creator.createRequest({ action: 'typed_errors' });
    await assert.rejects(creator.decide(request.id, 'approved'), (error: unknown) => {
      assert.ok(error instanceof VigilPermissionError);
      assert.equal(error.service, 'gate');
      assert.equal(error.code, 'forbidden');
      assert.equal(error.message, 'This route needs the request:decide scope');
      return true;
    });
    const admin = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
    await admin.decide(request.id, 'denied', 'no');
    await assert.rejects(admin.decide(request.id, 'approved'), (error: unknown) => {
      assert.ok(error instanceof VigilConflictError);
      assert.equal(error.code, 'conflict');
      assert.equal(error.message, 'Request already decided');
      return true;
    });
  });
});

describe('session helpers', () => {
  test('start, wrapToolCall (result and error), LLM call with priced cost, end', async () => {
    const client = observeClient(live.observeUrl, { flushIntervalMs: 60_000 });
    const session = client.startSession({ agentId: 'helper-agent', agentName: 'Helper', tags: ['sdk'] });

    const hits = await session.wrapToolCall('web_search', { q: 'vigil' }, async () => {
      await sleep(30);
      return { hits: 3 };
    });
    assert.deepEqual(hits, { hits: 3 });
    const failure = Object.assign(new Error('card declined'), { code: 'E_DECLINED' });
    await assert.rejects(
      session.wrapToolCall('charge', { amount: 5 }, () => {
        throw failure;
      }),
      (error) => error === failure,
    );

    const call = session.recordLlmCall({ provider: 'openai', model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
    const priced = session.recordLlmResponse(call, { completion: 'hello', usage: { inputTokens: 12_000, outputTokens: 3_000 } });
    const expected = PriceTable.fromDefaults().costUsd('gpt-4o-mini', 'openai', 12_000, 3_000)!;
    assert.ok(expected > 0);
    assert.equal(priced.costUsd, expected);
    assert.equal(priced.priced, true);
    const unknownCall = session.recordLlmCall({ provider: 'acme', model: 'acme-1', messages: [] });
    const unpriced = session.recordLlmResponse(unknownCall, { completion: 'x', usage: { inputTokens: 10, outputTokens: 10 } });
    assert.deepEqual([unpriced.costUsd, unpriced.priced], [0, false]);

    await session.end({ summary: 'done' });
    assert.equal(client.pendingEvents, 0, 'end() flushes');

    const stored = await client.getSession(session.id);
    assert.equal(stored.status, 'completed');
    assert.equal(stored.agentName, 'Helper');
    assert.deepEqual(stored.tags, ['sdk']);
    assert.equal(stored.toolCallCount, 2);
    assert.equal(stored.errorCount, 1);
    assert.ok(Math.abs(stored.totalCostUsd - expected) < 1e-9, `${stored.totalCostUsd} vs ${expected}`);

    const { events, chainValid } = await client.getTimeline(session.id);
    assert.equal(chainValid, true);
    assert.deepEqual(
      events.map((e) => e.eventType),
      ['session_started', 'tool_call', 'tool_response', 'tool_call', 'tool_error', 'llm_call', 'llm_response', 'llm_call', 'llm_response', 'session_ended'],
    );
    const [toolCall, toolResponse, , toolError] = events.slice(1);
    assert.equal(toolResponse!.payload.callId, toolCall!.payload.callId);
    assert.deepEqual(toolResponse!.payload.result, { hits: 3 });
    assert.ok((toolResponse!.payload.durationMs as number) >= 25, 'durationMs measures the call');
    assert.equal(toolError!.severity, 'error');
    assert.equal(toolError!.payload.error, 'card declined');
    assert.equal(toolError!.payload.errorCode, 'E_DECLINED');
    const responses = events.filter((e) => e.eventType === 'llm_response');
    assert.equal(responses[0]!.payload.costUsd, expected);
    assert.deepEqual(responses[0]!.payload.usage, { inputTokens: 12_000, outputTokens: 3_000, totalTokens: 15_000 });
    assert.equal(responses[1]!.metadata.costUnpriced, true);
    const ended = events.at(-1)!;
    assert.equal(ended.payload.reason, 'completed');
    assert.equal(ended.payload.totalToolCalls, 2);

    // The same session as a tree: each callId pair the SDK wrote is one node.
    const tree = await client.getTree(session.id);
    assert.deepEqual(
      tree.roots.map((node) => [node.kind, node.status, node.eventTypes.join('+')]),
      [
        ['event', 'ok', 'session_started'],
        ['tool', 'ok', 'tool_call+tool_response'],
        ['tool', 'error', 'tool_call+tool_error'],
        ['llm', 'ok', 'llm_call+llm_response'],
        ['llm', 'ok', 'llm_call+llm_response'],
        ['event', 'ok', 'session_ended'],
      ],
    );
    assert.deepEqual([tree.roots[3]!.model, tree.roots[3]!.inputTokens, tree.roots[3]!.costUsd], ['gpt-4o-mini', 12_000, expected]);
    await client.close();
  });

  test('price overrides apply (the MODEL_PRICES format)', async () => {
    const client = observeClient(live.observeUrl, {
      prices: [{ provider: 'acme', model: 'acme-1', inputPerMillionUsd: 1, outputPerMillionUsd: 2, source: 'test', asOf: '2026-01-01' }],
    });
    const session = client.startSession({ agentId: 'price-agent' });
    const call = session.recordLlmCall({ provider: 'acme', model: 'acme-1', messages: [] });
    const record = session.recordLlmResponse(call, { completion: '', usage: { inputTokens: 1_000_000, outputTokens: 500_000 } });
    assert.equal(record.costUsd, 2);
    await session.end();
    await client.close();
  });
});

describe('approvals', () => {
  test('requestApproval waits while a human decides through the gate API, then confirm()', async () => {
    const agent = new GateClient({ baseUrl: live.gateUrl, apiKey: await live.gateKey('agent', ['request:create', 'request:read']) });
    const human = new GateClient({ baseUrl: live.gateUrl, apiKey: await live.gateKey('alice', ['request:read', 'request:decide']) });
    let settled = false;
    const announced: string[] = [];
    const waiting = agent
      .requestApproval(
        { action: 'pay_invoice', params: { amount: 2500 }, urgency: 'high' },
        { pollIntervalMs: 50, timeoutMs: 30_000, onPending: (request) => announced.push(`${request.id}:${request.status}`) },
      )
      .finally(() => (settled = true));
    const [pending] = await eventually(
      () => human.listRequests({ action: 'pay_invoice', status: 'pending' }),
      (list) => list.length === 1,
      10_000,
      'the pending request',
    );
    await sleep(200);
    assert.equal(settled, false, 'still waiting for the human');
    assert.deepEqual(announced, [`${pending!.id}:pending`], 'onPending is told once, with the pending request');
    await human.decide(pending!.id, 'approved', 'invoice checked');
    const outcome = await waiting;
    assert.equal(outcome.id, pending!.id);
    assert.equal(outcome.approved, true);
    assert.equal(outcome.status, 'approved');
    assert.equal(outcome.decidedBy, 'api:alice');
    assert.equal(outcome.decisionReason, 'invoice checked');

    const confirmed = await agent.confirm(outcome.id, { paymentId: 'p_1' });
    assert.equal(confirmed.status, 'approved');
    const audit = await agent.getAudit(outcome.id);
    assert.deepEqual(
      audit.map((entry) => entry.event),
      ['created', 'approved', 'confirmed'],
    );
    assert.equal(audit[1]!.actor, 'api:alice');
    assert.deepEqual(
      audit.map((entry) => [entry.seq, entry.chainValid]),
      [
        [0, true],
        [1, true],
        [2, true],
      ],
    );
    const chain = await agent.verifyAudit(outcome.id);
    assert.deepEqual([chain.valid, chain.entryCount, chain.headHash, chain.brokenAt], [true, 3, audit[2]!.hash, null]);
  });

  test('approver groups, delegations and a vote towards several approvals through the typed client', async () => {
    const admin = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
    const group = await admin.createApproverGroup({ name: 'sdk-finance', members: ['api:sdk-bob'] });
    assert.deepEqual(group.members, ['api:sdk-bob']);
    const changed = await admin.updateApproverGroup(group.id, { members: ['api:sdk-bob', 'api:sdk-carol'] });
    assert.deepEqual(changed.members, ['api:sdk-bob', 'api:sdk-carol']);
    assert.ok((await admin.listApproverGroups()).groups.some((g) => g.name === 'sdk-finance'));
    const delegation = await admin.createDelegation({
      delegator: 'api:sdk-carol',
      delegate: 'api:sdk-dan',
      endsAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    assert.equal(delegation.active, true);
    assert.ok((await admin.listDelegations()).delegations.some((d) => d.id === delegation.id));

    await admin.createPolicy({
      name: 'sdk quorum',
      rules: [{ match: { action: 'sdk_quorum' }, decision: 'route_to_human', quorum: { approvals: 2, groups: ['sdk-finance'] } }],
    });
    const { id } = await admin.createRequest({ action: 'sdk_quorum', params: {} });
    const bob = new GateClient({ baseUrl: live.gateUrl, apiKey: await live.gateKey('sdk-bob', ['request:read', 'request:decide']) });
    const dan = new GateClient({ baseUrl: live.gateUrl, apiKey: await live.gateKey('sdk-dan', ['request:read', 'request:decide']) });
    const vote = await bob.decide(id, 'approved');
    assert.ok('approvals' in vote && vote.status === 'pending');
    assert.deepEqual(vote.approvals.approvedBy, ['api:sdk-bob']);
    const decided = await dan.decide(id, 'approved');
    assert.ok('decidedBy' in decided);
    assert.equal(decided.status, 'approved');
    assert.deepEqual((await admin.getRequest(id)).approvals?.approvedBy, ['api:sdk-bob', 'api:sdk-carol']);
    assert.equal((await admin.revokeDelegation(delegation.id)).active, false);
    await admin.deleteApproverGroup(group.id);
  });

  test('a policy decision answers at once; a denial is approved: false', async () => {
    const admin = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
    await admin.createPolicy({ name: 'no deletes', priority: 1, rules: [{ match: { action: 'drop_database' }, decision: 'auto_deny' }] });
    const started = Date.now();
    let announced = false;
    const outcome = await admin.requestApproval({ action: 'drop_database' }, { pollIntervalMs: 10_000, onPending: () => (announced = true) });
    assert.equal(announced, false, 'a request decided by a policy is never pending');
    assert.ok(Date.now() - started < 5000, 'no poll needed');
    assert.equal(outcome.approved, false);
    assert.equal(outcome.status, 'denied');
    assert.match(outcome.decidedBy ?? '', /^policy:/);
  });

  test('a grant approves the next requests of its agent at once, names itself, and revoking it stops it', async () => {
    const admin = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
    const grant = await admin.createGrant({ action: 'rotate_logs', agentId: 'sdk-agent', maxUses: 2 });
    assert.equal(grant.status, 'active');
    const first = await admin.requestApproval({ action: 'rotate_logs', context: { agentId: 'sdk-agent' } }, { timeoutMs: 5000 });
    assert.equal(first.approved, true);
    assert.equal(first.decidedBy, `grant:${grant.id}`);
    assert.deepEqual(
      (await admin.getGrant(grant.id)).usedBy.map((use) => use.requestId),
      [first.id],
    );
    assert.equal((await admin.listGrants({ active: 'true' })).grants.length, 1);
    assert.equal((await admin.revokeGrant(grant.id)).status, 'revoked');
    const after = await admin.createRequest({ action: 'rotate_logs', context: { agentId: 'sdk-agent' } });
    assert.equal(after.status, 'pending');
  });

  test('budgets: create, list, read with figures, update, delete', async () => {
    const admin = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
    const budget = await admin.createBudget({ name: 'sdk-daily', scope: 'agent', scopeValue: 'sdk-agent', window: 'day', hardUsd: 5 });
    assert.deepEqual([budget.softUsd, budget.hardUsd, budget.pauseOnHard, budget.enabled], [null, 5, true, true]);
    assert.ok((await admin.listBudgets()).budgets.some((b) => b.id === budget.id));
    const detail = await admin.getBudget(budget.id);
    assert.deepEqual([detail.figures, detail.breaches], [[], []]);
    assert.equal((await admin.updateBudget(budget.id, { softUsd: 2 })).softUsd, 2);
    const covered = await admin.createRequest({ action: 'sdk_budgeted', context: { agentId: 'sdk-agent' } });
    assert.deepEqual((await admin.getRequestBudgets(covered.id)).budgets, [{ name: 'sdk-daily', spendUsd: 0, softUsd: 2, hardUsd: 5, level: 'ok' }]);
    assert.deepEqual(await admin.deleteBudget(budget.id), { id: budget.id, deleted: true });
  });

  test('no decision in time: ApprovalTimeoutError, and the request stays pending', async () => {
    const admin = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
    const started = Date.now();
    let requestId = '';
    await assert.rejects(admin.requestApproval({ action: 'wait_forever' }, { timeoutMs: 300, pollIntervalMs: 50 }), (error: unknown) => {
      assert.ok(error instanceof ApprovalTimeoutError);
      assert.equal(error.lastStatus, 'pending');
      requestId = error.requestId;
      return true;
    });
    const waited = Date.now() - started;
    assert.ok(waited >= 300 && waited < 5000, `waited ${waited} ms`);
    assert.equal((await admin.getRequest(requestId)).status, 'pending');
  });
});

describe('typed call()', () => {
  test('reaches any route by its OpenAPI path, with path parameters and query', async () => {
    const client = observeClient(live.observeUrl);
    await client.ingest([customEvent('call-replay', 0), customEvent('call-replay', 1), customEvent('call-replay', 2)]);
    const replay = await client.call('get', '/api/sessions/{id}/replay', {
      params: { id: 'call-replay' },
      query: { offset: 1, limit: 1, includeContext: 'false' },
    });
    assert.equal(replay.totalSteps, 3);
    assert.deepEqual(
      replay.steps.map((step) => step.index),
      [1],
    );
    assert.equal(replay.pagination.hasMore, true);
    const gate = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
    const health = await gate.call('get', '/health', { query: { deep: 'true' } });
    assert.equal(health.status, 'ok');
  });

  test('an AbortSignal stops requestApproval while it waits', async () => {
    const gate = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
    const controller = new AbortController();
    const waiting = gate.requestApproval({ action: 'abort_me' }, { pollIntervalMs: 50, signal: controller.signal });
    await sleep(150);
    controller.abort(new Error('agent stopped'));
    await assert.rejects(waiting, /agent stopped/);
  });
});

describe('typed calls', () => {
  test("a route's trailing wildcard {path} keeps its slashes, each segment percent-encoded; any other parameter encodes its slashes", async () => {
    const recorder = new TestHttpServer((_request, res) => sendJson(res, 200, {}));
    servers.push(await recorder.start());
    const client = observeClient(recorder.url);
    await client.call('get', '/api/audit/tlog/tile/{path}', { params: { path: '0/x001/2 4.p/5' } });
    await client.call('get', '/api/sessions/{id}', { params: { id: 'a/b' } });
    assert.deepEqual(
      recorder.requests.map((request) => request.url),
      ['/api/audit/tlog/tile/0/x001/2%204.p/5', '/api/sessions/a%2Fb'],
    );
  });
});

describe('removed features', () => {
  test('every lesson method throws VigilDeprecationError at once, without a request', async () => {
    const recorder = new TestHttpServer((_request, res) => sendJson(res, 200, {}));
    servers.push(await recorder.start());
    const client = observeClient(recorder.url);
    const methods = ['listLessons', 'getLesson', 'createLesson', 'updateLesson', 'deleteLesson', 'searchLessons', 'shareLesson'] as const;
    for (const method of methods) {
      assert.throws(
        () => (client[method] as (...args: unknown[]) => unknown)({ title: 'x' }),
        (error: unknown) => error instanceof VigilDeprecationError && error.method === method && error.removedIn === '0.12.0' && /memory/.test(error.message),
        method,
      );
    }
    await sleep(50);
    assert.equal(recorder.requests.length, 0);
  });
});

describe('durable delivery: retries within maxRetryTimeMs, frozen batches, bounds, close()', () => {
  /** Answers 503 (optionally with Retry-After) to the first `failures` requests, then forwards; records when each request came. */
  async function failingFirst(
    failures: number,
    answer: (res: ServerResponse) => void = (res) => sendJson(res, 503, { error: 'Database unavailable', status: 503 }),
  ) {
    const times: number[] = [];
    const server = await proxy(live.observeUrl, (_request, index) => {
      times.push(Date.now());
      return index < failures ? answer : undefined;
    });
    return { server, times, keys: () => server.requests.map((r) => r.headers['idempotency-key']) };
  }

  test('queued events ride out an outage longer than the old 1 s budget (3 retries from 250 ms)', async () => {
    const outage = await failingFirst(Number.POSITIVE_INFINITY);
    const reported: VigilError[] = [];
    const client = observeClient(outage.server.url, { flushIntervalMs: 60_000, onError: (error) => reported.push(error) });
    for (let i = 0; i < 3; i++) client.track(customEvent('ride-out', i));
    const flushed = client.flush();
    await eventually(
      async () => Date.now() - outage.times[0]!,
      (ms) => ms > 2500,
      10_000,
      'an outage of 2.5 s',
    );
    assert.ok(outage.server.requests.length >= 2, 'retried meanwhile');
    // observe is back: the next retry stores the batch.
    outage.server.handler = (request, res) => void forwardTo(live.observeUrl, request, res);
    await flushed;
    assert.deepEqual(reported, []);
    assert.equal((await storedEvents('ride-out')).length, 3);
    await client.close();
  });

  test('a Retry-After beyond the backoff cap is honoured: the retry comes no sooner', async () => {
    const slow = await failingFirst(1, (res) => {
      res.setHeader('retry-after', '2');
      sendJson(res, 503, { error: 'Database unavailable', status: 503 });
    });
    const client = observeClient(slow.server.url, { flushIntervalMs: 60_000, retry: { maxDelayMs: 300 } });
    client.track(customEvent('retry-after-cap', 0));
    await client.flush();
    assert.equal(slow.times.length, 2);
    assert.ok(slow.times[1]! - slow.times[0]! >= 1990, `waited ${slow.times[1]! - slow.times[0]!} ms`);
    await client.close();
  });

  test('409 idempotency_in_flight and 425 are retried; a batch keeps its Idempotency-Key and body on every retry; later events go to a later batch', async () => {
    const answers = [
      (res: ServerResponse) => {
        res.setHeader('retry-after', '1');
        sendJson(res, 409, { error: 'A request with this Idempotency-Key is still being stored', code: 'idempotency_in_flight', status: 409 });
      },
      (res: ServerResponse) => sendJson(res, 425, { error: 'Too early', status: 425 }),
    ];
    const flaky = await failingFirst(2);
    flaky.server.handler = (request, res) => {
      const own = answers[flaky.server.requests.length - 1];
      if (own) return own(res);
      void forwardTo(live.observeUrl, request, res);
    };
    const client = observeClient(flaky.server.url, { flushIntervalMs: 60_000 });
    for (let i = 0; i < 3; i++) client.track(customEvent('frozen-batch', i));
    const first = client.flush();
    await eventually(
      async () => flaky.server.requests.length,
      (n) => n >= 1,
      10_000,
      'the first attempt',
    );
    for (let i = 3; i < 5; i++) client.track(customEvent('frozen-batch', i));
    await first;
    await client.flush();
    const [a, b, c, d] = flaky.server.requests;
    assert.equal(flaky.server.requests.length, 4, 'three attempts of the first batch, one of the second');
    assert.match(String(a!.headers['idempotency-key']), /^[0-9a-f-]{36}$/);
    assert.deepEqual(
      [b, c].map((r) => [r!.headers['idempotency-key'], r!.body]),
      [
        [a!.headers['idempotency-key'], a!.body],
        [a!.headers['idempotency-key'], a!.body],
      ],
    );
    assert.notEqual(d!.headers['idempotency-key'], a!.headers['idempotency-key']);
    assert.deepEqual(
      (JSON.parse(d!.body) as { events: IncomingEvent[] }).events.map((e) => (e.payload as { data: { i: number } }).data.i),
      [3, 4],
    );
    assert.deepEqual(
      (await storedEvents('frozen-batch')).map((e) => (e.payload.data as { i: number }).i),
      [0, 1, 2, 3, 4],
    );
    await client.close();
  });

  test('ingest() sends one Idempotency-Key on all its retries', async () => {
    const flaky = await failingFirst(1);
    await observeClient(flaky.server.url).ingest([customEvent('ingest-key', 0)]);
    const [first, retry] = flaky.keys();
    assert.match(String(first), /^[0-9a-f-]{36}$/);
    assert.equal(retry, first);
  });

  test('after maxRetryTimeMs the batch is dropped and reported once, with its count and reason', async () => {
    const down = await failingFirst(Number.POSITIVE_INFINITY);
    const reported: VigilError[] = [];
    const client = observeClient(down.server.url, { flushIntervalMs: 60_000, maxRetryTimeMs: 1500, onError: (error) => reported.push(error) });
    for (let i = 0; i < 4; i++) client.track(customEvent('retry-budget', i));
    await assert.rejects(client.flush(), (error: unknown) => error instanceof VigilDeliveryError && error.count === 4 && error.reason === 'retries_exhausted');
    assert.equal(reported.length, 1);
    // The last attempt comes by the deadline (a backoff is cut short to it), none after; 100 ms for timers and the local hop.
    assert.ok(down.times.at(-1)! - down.times[0]! <= 1600, `no attempt after the budget: ${down.times.map((t) => t - down.times[0]!).join(', ')} ms`);
    assert.deepEqual(await client.close(), { stored: 0, dropped: 4, spooled: 0 });
  });

  test('maxQueueBytes bounds what waits: events beyond it are dropped and reported with count and reason', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const recorder = await proxy(live.observeUrl, (_request, index) =>
      index === 0 ? (res) => void held.then(() => forwardTo(live.observeUrl, recorder.requests[0]!, res)) : undefined,
    );
    const reported: VigilDeliveryError[] = [];
    const big = (i: number): IncomingEvent => ({
      sessionId: 'queue-bytes',
      agentId: 'sdk-agent',
      eventType: 'custom',
      payload: { type: 'tick', data: { i, pad: 'x'.repeat(10_000) } },
    });
    const client = observeClient(recorder.url, {
      batchSize: 1,
      maxQueueBytes: 50_000,
      flushIntervalMs: 60_000,
      onError: (error) => reported.push(error as VigilDeliveryError),
    });
    client.track(big(0)); // in flight, held
    for (let i = 1; i <= 8; i++) client.track(big(i));
    assert.equal(client.pendingEvents, 4, 'four events of about 10 KB fit in 50,000 bytes');
    assert.deepEqual(
      reported.map((e) => [e.reason, e.count]),
      [...Array(4)].map(() => ['queue_full', 1]),
    );
    release();
    await client.flush();
    assert.deepEqual(await client.close(), { stored: 5, dropped: 4, spooled: 0 });
    assert.equal((await storedEvents('queue-bytes')).length, 5);
  });

  test('the default error handler writes one short line per failure, at most one line per 10 s, never the whole validation text', async () => {
    const written: string[] = [];
    const warn = console.warn;
    console.warn = (...args: unknown[]) => void written.push(args.join(' '));
    try {
      const client = observeClient(live.observeUrl, { batchSize: 1000, flushIntervalMs: 60_000 });
      const invalid = (i: number) =>
        ({
          sessionId: `refused-${i}`,
          agentId: 'sdk-agent',
          eventType: 'tool_call',
          payload: { toolName: 'x'.repeat(50), arguments: {} },
        }) as unknown as IncomingEvent;
      for (let round = 0; round < 3; round++) {
        for (let i = 0; i < 1000; i++) client.track(invalid(i));
        await client.flush().catch(() => undefined);
      }
      await client.close();
    } finally {
      console.warn = warn;
    }
    const bytes = written.join('\n').length;
    assert.equal(written.length, 1, written.join('\n'));
    assert.ok(bytes < 500, `${bytes} characters written`);
    assert.match(written[0]!, /^vigil: 1000 events were not stored \(refused\): .*callId.*\(×1000\)/);
  });

  test('defaultErrorReporter adds up the failures of a window into one line', async () => {
    const lines: string[] = [];
    const report = defaultErrorReporter((line) => lines.push(line), 200);
    for (let i = 0; i < 50; i++) report(new VigilDeliveryError(`Event queue full (10 events waiting): 1 event dropped`, [i], 'queue_full'));
    report(new VigilDeliveryError('3 events were not stored (refused): Missing or invalid API key', [1, 2, 3], 'refused'));
    assert.equal(lines.length, 1);
    await eventually(
      async () => lines.length,
      (n) => n === 2,
      5000,
      'the summary line',
    );
    assert.match(lines[1]!, /^vigil: 50 more delivery failures since the last report, 52 events not stored \(queue_full 49, refused 3\)/);
  });

  test('close() in a SIGINT handler, as the SDK guide (docs/guide/sdk.md) shows, exits cleanly while observe is unreachable', async () => {
    const readme = readFileSync(resolve(import.meta.dirname, '../../../docs/guide/sdk.md'), 'utf8');
    const open = readme.indexOf('```ts', readme.indexOf('In a signal handler:'));
    const handler = readme.slice(readme.indexOf('\n', open) + 1, readme.indexOf('```', open + 5));
    assert.match(handler, /process\.once\('SIGINT'[\s\S]*vigil\.close\(/);
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `
        import { ObserveClient } from '@vigil/sdk/node';
        const vigil = new ObserveClient({ baseUrl: process.env.OBSERVE, apiKey: 'k', onError: (e) => console.error('REPORTED ' + e.reason + ' ' + e.count) });
        ${handler}
        for (let i = 0; i < 5; i++) vigil.track({ sessionId: 'sigint', agentId: 'child', eventType: 'custom', payload: { type: 'tick', data: { i } } });
        await vigil.flush().catch(() => undefined); // never settles while observe is down: retries go on
        `,
      ],
      { cwd: resolve(import.meta.dirname, '../../..'), env: { ...process.env, OBSERVE: REFUSED_URL }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((done) => child.once('exit', done));
    await sleep(1500); // past the old 1 s of retries
    child.kill('SIGINT');
    assert.equal(await exited, 130, stderr);
    assert.equal(stderr.trim(), 'REPORTED closed 5', 'the guide’s close({ timeoutMs: 5000 }) dropped the unsent events and said so');
  });
});
