import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import { ManualClock, encodeVector } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { buildObserveService, type ObserveService } from '../app.ts';
import { assertErrorBody, ingest, startTestObserve, type TestObserve } from '../testing.ts';
import { LocalEmbedder } from './embedder.ts';
import { modelKey } from './store.ts';
import { sendJson, TestHttpServer } from '@vigil/platform/testing';
import {
  ago,
  customEvent,
  DAY,
  drain,
  llmCall,
  llmResponse,
  queueRows,
  sessionEnded,
  sessionStarted,
  storedEmbeddings,
  toolCall,
  toolError,
  toolResponse,
  topicEvents,
  TOPICS,
} from './test-fixtures.ts';

interface RecallResult {
  sourceType: 'event' | 'session';
  sourceId: string;
  score: number;
  text: string;
  metadata: Record<string, unknown>;
}

interface RecallAnswer {
  results: RecallResult[];
  query: string;
  totalResults: number;
}

async function recall(observe: TestObserve, params: Record<string, string | number>): Promise<RecallAnswer> {
  const response = await observe.call({ method: 'GET', url: `/api/recall?${new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)]))}` });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as RecallAnswer;
}

/** Another instance of the service on the same database (a restart, or a second node). */
async function sameDatabase(observe: TestObserve, options: { runJobs?: boolean; kickEmbeddings?: boolean } = {}): Promise<ObserveService> {
  return buildObserveService(observe.config, { clock: observe.clock, runJobs: options.runJobs ?? false, kickEmbeddings: options.kickEmbeddings });
}

const withKey = (observe: TestObserve, service: ObserveService, url: string) =>
  service.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${observe.key}` } });

await describeEachDatabase('recall: embedding queue and worker', (backend) => {
  let observe: TestObserve;
  beforeEach(async () => {
    observe = await startTestObserve(backend);
  });
  // Each test gets a fresh database; closing here also covers failed tests.
  const close = async (): Promise<void> => {
    await observe.close();
  };

  test('ingest queues events with text and one row per session, in the same transaction; the worker embeds them after commit', async () => {
    const answer = llmResponse('s2', 'mail-bot', '');
    const ids = await ingest(observe, [
      sessionStarted('s1', 'billing-bot', { agentName: 'Billing' }),
      toolCall('s1', 'billing-bot', 'stripe_charge', { amount: 1200, currency: 'eur' }),
      toolResponse('s1', 'billing-bot', 'stripe_charge'),
      toolError('s1', 'billing-bot', 'stripe_charge', 'card declined: insufficient funds'),
      llmCall('s2', 'mail-bot', 'Write a reminder email about the unpaid invoice'),
      sessionEnded('s2', 'mail-bot', 'completed'),
      { sessionId: 's2', agentId: 'mail-bot', eventType: 'approval_granted', payload: { requestId: 'r1', action: 'send_email', decidedBy: 'api:ops' } },
      { ...answer, payload: { ...(answer.payload as object), finishReason: 'tool_calls' } },
    ]);
    const queued = await queueRows(observe);
    assert.deepEqual(
      queued.map((r) => `${r.source_type}:${r.source_id}`),
      [`event:${ids[1]}`, `event:${ids[3]}`, `event:${ids[4]}`, 'session:s1', 'session:s2'].sort(),
      'session_started, tool_response, a session_ended without summary, a decision without reason and an answer without completion carry no text worth a vector',
    );
    assert.deepEqual(await storedEmbeddings(observe), [], 'nothing is embedded on the request path');

    // A second batch on s1 does not queue s1 twice.
    await ingest(observe, [llmResponse('s1', 'billing-bot', 'The payment could not be completed.')]);
    const sessionRows = (await queueRows(observe)).filter((r) => r.source_type === 'session');
    assert.deepEqual(
      sessionRows.map((r) => [r.source_id, r.generation]),
      [
        ['s1', 1],
        ['s2', 0],
      ],
    );

    await drain(observe);
    assert.deepEqual(await queueRows(observe), [], 'the queue is empty once embedded');
    const stored = await storedEmbeddings(observe);
    assert.equal(stored.length, 6);
    for (const row of stored) {
      assert.equal(row.model, modelKey('vigil-local-hash-512-v1'), "the model's key is stored");
      assert.equal(Number(row.dims), 512);
      assert.equal(row.deleted, 0);
    }
    const s1 = stored.find((r) => r.source_type === 'session' && r.source_id === 's1')!;
    assert.match(s1.text, /Session s1 of agent Billing \(billing-bot\), active/);
    assert.match(s1.text, /tools: stripe_charge/);
    assert.match(s1.text, /errors: tool_error stripe_charge: card declined: insufficient funds/);
    const vector = await observe.service.context.database.db
      .selectFrom('embeddings')
      .select(['vector', 'text', 'metadata'])
      .where('source_id', '=', ids[3]!)
      .executeTakeFirstOrThrow();
    assert.deepEqual([vector.text, vector.metadata], ['', ''], "an event's text and metadata are not stored twice");
    const expected = new LocalEmbedder().embedOne('tool_error stripe_charge: card declined: insufficient funds');
    assert.deepEqual(Buffer.from(vector.vector), encodeVector(expected), 'the int8 form of the vector');
    assert.ok(vector.vector.byteLength < 200, `a short text's vector is sparse: ${vector.vector.byteLength} bytes`);
    await close();
  });

  test('a session is re-embedded when it changes', async () => {
    await ingest(observe, [sessionStarted('s1', 'a1'), llmCall('s1', 'a1', 'Plan the quarterly roadmap')]);
    await drain(observe);
    await ingest(observe, [
      toolError('s1', 'a1', 'jira', 'project ROADMAP not found'),
      sessionEnded('s1', 'a1', 'error', 'Gave up: the Jira project is missing'),
    ]);
    assert.deepEqual((await queueRows(observe)).map((r) => r.source_type).sort(), ['event', 'event', 'session']);
    await drain(observe);
    const session = (await storedEmbeddings(observe)).find((r) => r.source_type === 'session')!;
    assert.match(session.text, /, error\. /);
    assert.match(session.text, /outcome: Gave up: the Jira project is missing/);
    const answer = await recall(observe, { query: 'jira project missing', scope: 'sessions' });
    assert.equal(answer.results[0]!.sourceId, 's1');
    assert.equal(answer.results[0]!.metadata.status, 'error');
    await close();
  });

  test('a restart before the worker ran loses nothing: the next instance drains the leftover queue', async () => {
    await ingest(observe, [toolCall('r1', 'a1', 'deploy', { service: 'checkout', version: '2.3' }), llmCall('r1', 'a1', 'Deploy checkout 2.3 to production')]);
    assert.equal((await queueRows(observe)).length, 3);
    await observe.close();
    const restarted = await sameDatabase(observe);
    try {
      assert.equal(await restarted.jobs.embeddings.tick(), true);
      const left = await restarted.context.database.db.selectFrom('embedding_queue').selectAll().execute();
      assert.deepEqual(left, []);
      const response = await withKey(observe, restarted, '/api/recall?query=deploy%20checkout');
      assert.equal(response.statusCode, 200, response.body);
      assert.equal((response.json() as RecallAnswer).totalResults, 3);
    } finally {
      await restarted.app.close();
    }
  });

  test('with kicks on, a commit starts the drain of its events by itself; sessions wait for the periodic job', async () => {
    await observe.close();
    const kicked = await sameDatabase(observe, { kickEmbeddings: true });
    try {
      const response = await kicked.app.inject({
        method: 'POST',
        url: '/api/events',
        headers: { authorization: `Bearer ${observe.key}` },
        payload: { events: [llmCall('k1', 'a1', 'Summarise the incident report')] },
      });
      assert.equal(response.statusCode, 201, response.body);
      const depth = async (): Promise<number> =>
        Number(
          (
            await kicked.context.database.db
              .selectFrom('embedding_queue')
              .select((eb) => eb.fn.countAll<number>().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        );
      for (let i = 0; i < 100 && (await depth()) > 1; i++) await new Promise((resolve) => setTimeout(resolve, 20));
      const status = async () => (await withKey(observe, kicked, '/api/recall/status')).json() as { queue: { depth: number }; vectors: { stored: number } };
      assert.deepEqual({ ...(await status()).queue, oldestEnqueuedAt: undefined }, { depth: 1, retrying: 0, oldestEnqueuedAt: undefined });
      assert.equal((await status()).vectors.stored, 1, 'the event is embedded without any tick');
      assert.equal(await kicked.jobs.embeddings.tick(), true);
      assert.equal((await status()).queue.depth, 0);
      assert.equal((await status()).vectors.stored, 2);
    } finally {
      await kicked.app.close();
    }
  });

  test('retention: vectors of deleted sessions leave the index (tombstones) and stop being recalled', async () => {
    await ingest(observe, [
      llmCall('old', 'a1', 'Archive the legacy billing ledger', ago(40 * DAY)),
      llmCall('new', 'a1', 'Archive the billing ledger of this year'),
    ]);
    await drain(observe);
    assert.equal((await recall(observe, { query: 'archive billing ledger' })).totalResults, 4);
    const config = await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 30 } });
    assert.equal(config.statusCode, 200, config.body);
    assert.equal(await observe.service.jobs.retention.tick(), true);
    // The job prunes on its first run (and then once per RETENTION_INTERVAL_MS).
    const clock = observe.clock as ManualClock;
    clock.advance(5000);
    const fresh = await sameDatabase(observe);
    try {
      assert.equal(await fresh.jobs.embeddings.tick(), true);
      const answer = await recall(observe, { query: 'archive billing ledger' });
      assert.equal(answer.totalResults, 2, 'the old session and its event are gone from the index that had them');
      assert.ok(answer.results.every((r) => r.metadata.sessionId === 'new'));
      const tombstones = (await storedEmbeddings(observe)).filter((r) => r.deleted === 1);
      assert.equal(tombstones.length, 2);
      assert.ok(
        tombstones.every((t) => t.text === ''),
        'no text of deleted sessions is kept',
      );
    } finally {
      await fresh.app.close();
    }
    await close();
  });
});

await describeEachDatabase('recall: two instances on one database', (backend) => {
  let a: TestObserve;
  let b: ObserveService;
  before(async () => {
    a = await startTestObserve(backend);
    b = await sameDatabase(a);
  });
  after(async () => {
    await b.app.close();
    await a.close();
  });

  test("an instance's index picks up vectors written by another instance, incrementally", async () => {
    await ingest(a, [toolCall('x1', 'a1', 'dns', { record: 'CNAME blog.example.com' })]);
    await drain(a);
    const first = await withKey(a, b, '/api/recall?query=CNAME%20record%20blog&scope=events');
    assert.equal((first.json() as RecallAnswer).totalResults, 1, first.body);
    await ingest(a, [toolCall('x2', 'a1', 'dns', { record: 'CNAME shop.example.com' })]);
    await drain(a);
    const second = (await withKey(a, b, '/api/recall?query=CNAME%20record%20shop&scope=events')).json() as RecallAnswer;
    assert.equal(second.totalResults, 2);
    assert.match(second.results[0]!.text, /shop\.example\.com/);
    // The re-embedded session replaces its old vector in b's index (no duplicate).
    const sessions = (await withKey(a, b, '/api/recall?query=dns&scope=sessions')).json() as RecallAnswer;
    assert.deepEqual(sessions.results.map((r) => r.sourceId).sort(), ['x1', 'x2']);
  });
});

await describeEachDatabase('GET /api/recall', (backend) => {
  let observe: TestObserve;
  const ids: Record<string, string> = {};
  before(async () => {
    observe = await startTestObserve(backend);
    const [billing, deploy] = await Promise.all([
      ingest(observe, [
        sessionStarted('bill-1', 'billing-bot', { agentName: 'Billing', tags: ['prod'] }, ago(3 * DAY)),
        toolCall('bill-1', 'billing-bot', 'invoice_create', { customer: 'ACME', amount: 420 }, ago(3 * DAY)),
        toolError('bill-1', 'billing-bot', 'invoice_send', 'SMTP relay refused the invoice email', ago(3 * DAY - 1000)),
        llmResponse('bill-1', 'billing-bot', 'The invoice for ACME was created but the email could not be sent.', ago(3 * DAY - 2000)),
      ]),
      ingest(observe, [
        toolCall('dep-1', 'deploy-bot', 'kubectl', { command: 'rollout restart deployment checkout-service' }, ago(DAY)),
        toolError('dep-1', 'deploy-bot', 'kubectl', 'rollout timed out waiting for pods to become ready', ago(DAY - 1000)),
        customEvent('dep-1', 'deploy-bot', 'deploy_note', { text: 'invoice service deploy postponed' }, ago(DAY - 2000)),
      ]),
    ]);
    ids.invoiceCreate = billing[1]!;
    ids.invoiceError = billing[2]!;
    ids.invoiceAnswer = billing[3]!;
    ids.rollout = deploy[0]!;
    ids.rolloutError = deploy[1]!;
    ids.deployNote = deploy[2]!;
    await drain(observe);
  });
  after(() => observe.close());

  test('results are ranked by score, with text and metadata; scores lie in 0..1', async () => {
    const answer = await recall(observe, { query: 'invoice email could not be sent' });
    assert.equal(answer.query, 'invoice email could not be sent');
    assert.ok(answer.results.length > 0);
    assert.equal(answer.results[0]!.sourceId, ids.invoiceAnswer);
    const top = answer.results[0]!;
    assert.equal(top.sourceType, 'event');
    assert.match(top.text, /^llm_response gpt-4o-mini: The invoice for ACME/);
    assert.deepEqual(
      { ...top.metadata, timestamp: undefined },
      { sessionId: 'bill-1', eventType: 'llm_response', agentId: 'billing-bot', severity: 'info', model: 'gpt-4o-mini', timestamp: undefined },
    );
    assert.equal(top.metadata.timestamp, ago(3 * DAY - 2000));
    for (let i = 0; i < answer.results.length; i++) {
      const { score } = answer.results[i]!;
      assert.ok(score > 0 && score <= 1);
      if (i > 0) assert.ok(score <= answer.results[i - 1]!.score, 'descending');
    }
    assert.ok(answer.totalResults >= answer.results.length);
  });

  test('scope: events only, sessions only, or both', async () => {
    const events = await recall(observe, { query: 'invoice', scope: 'events' });
    assert.ok(events.results.length > 0 && events.results.every((r) => r.sourceType === 'event'));
    const sessions = await recall(observe, { query: 'invoice', scope: 'sessions' });
    assert.ok(sessions.results.length > 0 && sessions.results.every((r) => r.sourceType === 'session'));
    assert.equal(sessions.results[0]!.sourceId, 'bill-1');
    assert.equal(sessions.results[0]!.metadata.agentName, 'Billing');
    assert.deepEqual(sessions.results[0]!.metadata.tags, ['prod']);
    const all = await recall(observe, { query: 'invoice', limit: 100 });
    assert.equal(all.totalResults, events.totalResults + sessions.totalResults);
  });

  test('agentId and from/to filter (on the event time; a session by its start)', async () => {
    const deployOnly = await recall(observe, { query: 'invoice', agentId: 'deploy-bot', limit: 100 });
    assert.ok(deployOnly.results.length > 0);
    assert.ok(deployOnly.results.every((r) => r.metadata.agentId === 'deploy-bot'));
    assert.equal(deployOnly.results[0]!.sourceId, ids.deployNote);
    assert.equal((await recall(observe, { query: 'invoice', agentId: 'nobody' })).totalResults, 0);

    const recent = await recall(observe, { query: 'invoice rollout', from: ago(2 * DAY), limit: 100 });
    assert.ok(recent.results.length > 0);
    assert.ok(
      recent.results.every((r) => r.metadata.sessionId === 'dep-1'),
      'only the last two days',
    );
    const older = await recall(observe, { query: 'invoice rollout', to: ago(2 * DAY), limit: 100 });
    assert.ok(older.results.length > 0);
    assert.ok(older.results.every((r) => r.metadata.sessionId === 'bill-1'));
    const exact = await recall(observe, { query: 'rollout', from: ago(DAY), to: ago(DAY), scope: 'events', limit: 100 });
    assert.deepEqual(
      exact.results.map((r) => r.sourceId),
      [ids.rollout],
      'both bounds are inclusive',
    );
  });

  test('limit cuts the results, not totalResults; minScore filters both', async () => {
    const full = await recall(observe, { query: 'invoice email rollout deploy', limit: 100 });
    assert.ok(full.totalResults >= 4);
    assert.equal(full.results.length, full.totalResults);
    const two = await recall(observe, { query: 'invoice email rollout deploy', limit: 2 });
    assert.equal(two.results.length, 2);
    assert.equal(two.totalResults, full.totalResults);
    assert.deepEqual(two.results, full.results.slice(0, 2));
    const threshold = full.results[2]!.score;
    const strict = await recall(observe, { query: 'invoice email rollout deploy', minScore: threshold, limit: 100 });
    assert.equal(strict.totalResults, full.results.filter((r) => r.score >= threshold).length);
    assert.ok(strict.results.every((r) => r.score >= threshold));
    assert.equal((await recall(observe, { query: 'invoice', minScore: 1 })).totalResults, 0);
    const nothing = await recall(observe, { query: 'zebra giraffe', minScore: 0.5 });
    assert.deepEqual(nothing, { results: [], query: 'zebra giraffe', totalResults: 0 });
  });

  test('400 for a missing or empty query and out-of-range parameters; 401 without a key', async () => {
    for (const query of [
      '',
      '?scope=all',
      '?query=',
      '?query=%20%20',
      '?query=x&limit=0',
      '?query=x&limit=101',
      '?query=x&limit=2.5',
      '?query=x&minScore=1.5',
      '?query=x&minScore=-0.1',
      '?query=x&scope=bogus',
      '?query=x&from=yesterday',
      '?query=x&from=2026-11-22T00:00:00Z&to=2026-11-21T00:00:00Z',
      `?query=${'a'.repeat(2001)}`,
    ]) {
      assertErrorBody(await observe.call({ method: 'GET', url: `/api/recall${query}` }), 400, query);
    }
    const missing = await observe.call({ method: 'GET', url: '/api/recall' });
    assert.match((missing.json() as { error: string }).error, /query/);
    assertErrorBody(await observe.service.app.inject({ method: 'GET', url: '/api/recall?query=x' }), 401);
    const longest = await observe.call({ method: 'GET', url: `/api/recall?query=${'a'.repeat(2000)}` });
    assert.equal(longest.statusCode, 200);
  });
});

await describeEachDatabase('recall quality', (backend) => {
  let observe: TestObserve;
  let ids: string[];
  before(async () => {
    observe = await startTestObserve(backend);
    ids = await ingest(observe, topicEvents());
    await drain(observe);
  });
  after(() => observe.close());

  const targets: [query: string, topic: number][] = [
    ['refund the duplicate charge', 8],
    ['rotate the expiring TLS certificate', 13],
    ['memory leak', 28],
    ['slack notification about latency', 16],
    ['GDPR erasure of personal data', 35],
    ['flight to Oslo', 48],
    ['messages stuck in the queue backlog', 30],
    ['database migration 0042', 2],
    ['welcome email for new subscribers', 3],
    ['blue green deployment of the checkout service', 1],
    ['billing statement', 0],
    ['kubernetes pod crashing', 14],
  ];

  test(`${TOPICS.length} events on distinct topics: a query sharing words with one of them ranks it first`, async () => {
    assert.ok(TOPICS.length >= 50);
    for (const [query, topic] of targets) {
      const answer = await recall(observe, { query, scope: 'events', limit: 3 });
      assert.equal(answer.results[0]?.sourceId, ids[topic], `"${query}" → ${answer.results.map((r) => r.text).join(' | ')}`);
      assert.ok(answer.results[0]!.score > (answer.results[1]?.score ?? 0), `"${query}" wins clearly`);
    }
  });

  test('inflected and reordered words still find the event', async () => {
    for (const [query, topic] of [
      ['deploying checkout', 1],
      ['migrating the orders table', 2],
      ['transcoding lecture videos', 40],
    ] as const) {
      const answer = await recall(observe, { query, scope: 'events', limit: 1 });
      assert.equal(answer.results[0]?.sourceId, ids[topic], query);
    }
  });

  test('with int8 vectors stored, the results and their scores are those of the exact Float32 ranking', async () => {
    // 1,000 notes over one small vocabulary: many near-ties, where int8 scores alone would swap places.
    const vocabulary = TOPICS.join(' ')
      .toLowerCase()
      .split(/\W+/)
      .filter((w) => w.length > 3);
    let seed = 7;
    const pick = (): string => vocabulary[(seed = (seed * 48271) % 2147483647) % vocabulary.length]!;
    const notes = Array.from({ length: 1000 }, () => Array.from({ length: 8 }, pick).join(' '));
    const noteIds = await ingest(
      observe,
      notes.map((text, i) => customEvent(`notes-${i % 20}`, 'agent-n', 'note', { text })),
    );
    await drain(observe);
    const local = new LocalEmbedder();
    const vectors = notes.map((text) => local.embedOne(`note: text: ${text}`));
    for (let q = 0; q < 10; q++) {
      const query = Array.from({ length: 3 }, pick).join(' ');
      const exact = local.embedOne(query);
      const expected = vectors
        .map((vector, i) => ({ id: noteIds[i]!, score: Math.round(vector.reduce((sum, v, d) => sum + v * exact[d]!, 0) * 1e6) / 1e6 }))
        .sort((a, b) => b.score - a.score)
        .slice(0, 10);
      const answer = await recall(observe, { query, scope: 'events', agentId: 'agent-n', limit: 10 });
      assert.deepEqual(
        answer.results.map((r) => r.score),
        expected.map((e) => e.score),
        query,
      );
      // Equal scores may list equal texts in another order; every distinct score names the same event.
      for (const result of answer.results) {
        const same = expected.filter((e) => e.score === result.score).map((e) => e.id);
        if (same.length === 1) assert.equal(result.sourceId, same[0], query);
      }
    }
  });
});

await describeEachDatabase('recall with an OpenAI-compatible backend', (backend) => {
  const local = new LocalEmbedder(64);
  let server: TestHttpServer;
  let observe: TestObserve;
  let mode: 'ok' | 'error' | 'hang' = 'ok';

  before(async () => {
    server = await new TestHttpServer((request, res) => {
      if (request.url !== '/v1/embeddings' || request.method !== 'POST') return sendJson(res, 404, { error: 'not found' });
      if (mode === 'hang') return;
      if (mode === 'error') return sendJson(res, 500, { error: { message: 'model overloaded' } });
      const { input } = JSON.parse(request.body) as { input: string[] };
      sendJson(res, 200, { object: 'list', data: input.map((text, index) => ({ object: 'embedding', index, embedding: Array.from(local.embedOne(text)) })) });
    }).start();
    observe = await startTestObserve(backend, {
      env: { EMBEDDINGS_URL: server.url, EMBEDDINGS_MODEL: 'test-embed-64', EMBEDDINGS_API_KEY: 'sk-embed', EMBEDDINGS_TIMEOUT_MS: '300' },
    });
  });
  beforeEach(() => {
    server.requests.length = 0;
    mode = 'ok';
  });
  after(async () => {
    await observe.close();
    await server.stop();
  });

  test('the worker embeds through the backend in batches, with the model and the key', async () => {
    const events = Array.from({ length: 100 }, (_, i) =>
      toolCall('o1', 'a1', 'lookup', { sku: `SKU-${i}`, note: i === 42 ? 'discontinued espresso machine' : 'regular item' }),
    );
    const ids = await ingest(observe, events);
    await drain(observe);
    const inputs = server.requests.map((r) => (JSON.parse(r.body) as { input: string[] }).input.length);
    assert.deepEqual(inputs, [64, 36, 1], '100 events (64 inputs per request), then their session');
    for (const request of server.requests) {
      assert.equal(request.url, '/v1/embeddings');
      assert.equal(request.headers.authorization, 'Bearer sk-embed');
      assert.equal((JSON.parse(request.body) as { model: string }).model, 'test-embed-64');
    }
    const stored = await storedEmbeddings(observe);
    assert.equal(stored.length, 101);
    assert.ok(stored.every((r) => r.model === modelKey('test-embed-64') && Number(r.dims) === 64));
    const answer = await recall(observe, { query: 'discontinued espresso machine', scope: 'events' });
    assert.equal(answer.results[0]!.sourceId, ids[42]);
    const status = (await observe.call({ method: 'GET', url: '/api/recall/status' })).json() as Record<string, unknown>;
    assert.deepEqual(status.embedder, { backend: 'openai', model: 'test-embed-64', dimensions: 64 });
  });

  test('a failing or silent backend makes GET /api/recall a 500 in the observe error body', async () => {
    mode = 'error';
    assertErrorBody(await observe.call({ method: 'GET', url: '/api/recall?query=espresso' }), 500, 'backend 500');
    mode = 'hang';
    const started = Date.now();
    assertErrorBody(await observe.call({ method: 'GET', url: '/api/recall?query=espresso' }), 500, 'backend timeout');
    assert.ok(Date.now() - started < 5000, 'bounded by EMBEDDINGS_TIMEOUT_MS');
    const body = (await observe.call({ method: 'GET', url: '/api/recall?query=espresso' })).json() as { error: string };
    assert.match(body.error, /[Ee]mbedding/);
  });

  test('failed embedding work stays queued and is retried with backoff until the backend recovers', async () => {
    mode = 'error';
    const [id] = await ingest(observe, [llmCall('retry-1', 'a1', 'Compare the two espresso grinders')]);
    await drain(observe);
    let rows = await queueRows(observe);
    assert.deepEqual(
      rows.map((r) => [r.source_type, r.attempts]),
      [
        ['event', 1],
        ['session', 1],
      ],
    );
    assert.match(rows[0]!.last_error!, /HTTP 500/);
    assert.equal(
      (await storedEmbeddings(observe)).some((r) => r.source_id === id),
      false,
    );

    // Recovered, but the rows are not due yet (1 s backoff after the first failure).
    mode = 'ok';
    const clock = observe.clock as ManualClock;
    server.requests.length = 0;
    await drain(observe);
    assert.equal(server.requests.length, 0, 'not retried before its backoff');
    assert.equal((await queueRows(observe)).length, 2);

    mode = 'error';
    clock.advance(1000);
    await drain(observe);
    rows = await queueRows(observe);
    assert.deepEqual(
      rows.map((r) => r.attempts),
      [2, 2],
    );

    mode = 'ok';
    clock.advance(2000);
    await drain(observe);
    assert.deepEqual(await queueRows(observe), []);
    assert.equal(
      (await storedEmbeddings(observe)).some((r) => r.source_id === id),
      true,
    );
    const answer = await recall(observe, { query: 'espresso grinders', scope: 'events' });
    assert.equal(answer.results[0]!.sourceId, id);
  });

  test('vectors of another model are kept but ignored: a switch of backend searches only what the new model embedded', async () => {
    const localService = await buildObserveService(
      { ...observe.config, embeddings: { ...observe.config.embeddings, url: undefined } },
      { clock: observe.clock, runJobs: false },
    );
    try {
      const before = await withKey(observe, localService, '/api/recall?query=espresso&limit=100');
      assert.equal((before.json() as RecallAnswer).totalResults, 0, "the remote model's vectors are not compared with local ones");
      const [id] = await localService.app
        .inject({
          method: 'POST',
          url: '/api/events',
          headers: { authorization: `Bearer ${observe.key}` },
          payload: { events: [llmCall('switch-1', 'a1', 'Descale the espresso machine')] },
        })
        .then((r) => (r.json() as { events: { id: string }[] }).events.map((e) => e.id));
      (observe.clock as ManualClock).advance(10_000);
      assert.equal(await localService.jobs.embeddings.tick(), true);
      const after = (await withKey(observe, localService, '/api/recall?query=espresso&limit=100').then((r) => r.json())) as RecallAnswer;
      assert.deepEqual(after.results.map((r) => r.sourceId).sort(), [id, 'switch-1'].sort());
      const status = (await withKey(observe, localService, '/api/recall/status').then((r) => r.json())) as { vectors: { stored: number; indexed: number } };
      assert.deepEqual(status.vectors, { stored: 2, indexed: 2 });
    } finally {
      await localService.app.close();
    }
  });
});
