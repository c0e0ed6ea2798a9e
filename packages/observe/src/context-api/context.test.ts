import assert from 'node:assert/strict';
import { after, before, beforeEach, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { assertErrorBody, fireAlertRule, ingest, startTestObserve, type TestObserve } from '../testing.ts';
import { sendJson, TestHttpServer } from '@vigil/platform/testing';
import { ago, DAY, drain, HOUR, llmCall, llmResponse, sessionEnded, sessionStarted, toolCall, toolError, toolResponse } from '../recall/test-fixtures.ts';
import type { Lesson } from './memory.ts';
import { RECENCY_SCALE_MS, RECENCY_WEIGHT, SIMILARITY_WEIGHT, type ContextSession } from './service.ts';

interface ContextAnswer {
  topic: string;
  sessions: ContextSession[];
  lessons: Lesson[];
  summary: string;
  totalSessions: number;
}

async function context(observe: TestObserve, params: Record<string, string | number>): Promise<ContextAnswer> {
  const response = await observe.call({ method: 'GET', url: `/api/context?${new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)]))}` });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as ContextAnswer;
}

/** Sessions on a few topics, of two agents and three users, at different ages. */
async function seed(observe: TestObserve): Promise<Record<string, string[]>> {
  const ids: Record<string, string[]> = {};
  ids.pay = await ingest(observe, [
    sessionStarted('pay-1', 'billing-bot', { agentName: 'Billing', tags: ['user:alice'] }, ago(2 * DAY)),
    llmCall('pay-1', 'billing-bot', 'Charge the customer for the annual subscription renewal', ago(2 * DAY - 1000)),
    toolCall('pay-1', 'billing-bot', 'stripe_charge', { amount: 12000, currency: 'usd' }, ago(2 * DAY - 2000)),
    toolError('pay-1', 'billing-bot', 'stripe_charge', 'card declined: insufficient funds', ago(2 * DAY - 3000)),
    toolCall('pay-1', 'billing-bot', 'stripe_charge', { amount: 12000, currency: 'usd', retry: true }, ago(2 * DAY - 4000)),
    toolError('pay-1', 'billing-bot', 'stripe_charge', 'card declined again: payment method expired', ago(2 * DAY - 5000)),
    llmResponse('pay-1', 'billing-bot', 'The renewal charge failed twice; the customer must update the card.', ago(2 * DAY - 6000)),
    toolResponse('pay-1', 'billing-bot', 'email_customer', ago(2 * DAY - 7000)),
    sessionEnded('pay-1', 'billing-bot', 'error', 'Renewal payment failed: card declined', ago(2 * DAY - 8000)),
  ]);
  ids.payOld = await ingest(observe, [
    sessionStarted('pay-old', 'billing-bot', {}, ago(40 * DAY), { userId: 'bob' }),
    llmCall('pay-old', 'billing-bot', 'Charge the customer for the annual subscription renewal', ago(40 * DAY)),
    toolError('pay-old', 'billing-bot', 'stripe_charge', 'card declined: insufficient funds', ago(40 * DAY)),
    sessionEnded('pay-old', 'billing-bot', 'error', 'Renewal payment failed: card declined', ago(40 * DAY)),
  ]);
  ids.deploy = await ingest(observe, [
    llmCall('deploy-1', 'deploy-bot', 'Deploy the checkout service to production', ago(HOUR)),
    toolCall('deploy-1', 'deploy-bot', 'kubectl', { command: 'rollout restart deployment checkout' }, ago(HOUR - 1000)),
  ]);
  ids.email = await ingest(observe, [
    llmCall('mail-1', 'billing-bot', 'Send the customer a reminder that their card payment failed', ago(3 * HOUR)),
    toolCall('mail-1', 'billing-bot', 'send_email', { to: 'customer@example.com', subject: 'Your payment failed' }, ago(3 * HOUR - 1000)),
    sessionEnded('mail-1', 'billing-bot', 'completed', undefined, ago(3 * HOUR - 2000)),
  ]);
  await drain(observe);
  return ids;
}

await describeEachDatabase('GET /api/context', (backend) => {
  let observe: TestObserve;
  let ids: Record<string, string[]>;
  before(async () => {
    observe = await startTestObserve(backend);
    ids = await seed(observe);
  });
  after(() => observe.close());

  test('sessions ranked by relevance, with summary, key events and an overview; no memory integration: no lessons', async () => {
    const answer = await context(observe, { topic: 'card declined payment failed' });
    assert.equal(answer.topic, 'card declined payment failed');
    assert.deepEqual(answer.lessons, []);
    assert.equal(answer.sessions[0]!.sessionId, 'pay-1');
    assert.ok(answer.sessions.some((s) => s.sessionId === 'pay-old'));
    assert.ok(!answer.sessions.some((s) => s.sessionId === 'deploy-1'), 'a session about something else is not relevant');
    assert.equal(answer.totalSessions, answer.sessions.length);
    for (let i = 0; i < answer.sessions.length; i++) {
      const s = answer.sessions[i]!;
      assert.ok(s.relevanceScore > 0 && s.relevanceScore <= 1);
      if (i > 0) assert.ok(s.relevanceScore <= answer.sessions[i - 1]!.relevanceScore);
    }
    const top = answer.sessions[0]!;
    assert.equal(top.agentId, 'billing-bot');
    assert.equal(top.startedAt, ago(2 * DAY));
    assert.equal(top.endedAt, ago(2 * DAY - 8000));
    assert.match(top.summary, /^Session pay-1 of agent Billing \(billing-bot\), error\./);
    assert.match(top.summary, /outcome: Renewal payment failed: card declined/);
    // Key events: both errors first, then the most topic-like others; at most 5, in time order.
    assert.ok(top.keyEvents.length <= 5 && top.keyEvents.length >= 3);
    const keyIds = top.keyEvents.map((e) => e.id);
    assert.ok(keyIds.includes(ids.pay![3]!) && keyIds.includes(ids.pay![5]!), 'the error events are key events');
    assert.ok(!keyIds.includes(ids.pay![7]!), 'a tool_response with nothing to say about the topic is not');
    const times = top.keyEvents.map((e) => e.timestamp);
    assert.deepEqual(times, [...times].sort());
    const declined = top.keyEvents.find((e) => e.id === ids.pay![3])!;
    assert.deepEqual(declined, {
      id: ids.pay![3],
      eventType: 'tool_error',
      summary: 'tool_error stripe_charge: card declined: insufficient funds',
      timestamp: ago(2 * DAY - 3000),
    });
    assert.match(answer.summary, /relevant to "card declined payment failed"/);
    assert.match(answer.summary, /Most relevant: Session pay-1/);

    const active = (await context(observe, { topic: 'deploy checkout' })).sessions[0]!;
    assert.equal(active.sessionId, 'deploy-1');
    assert.equal('endedAt' in active, false, 'no endedAt before the session ended');
  });

  test('relevance = 0.8 × similarity + 0.2 × exp(−age / 7 days): of two equally similar sessions the recent one wins', async () => {
    const answer = await context(observe, { topic: 'annual subscription renewal insufficient funds', agentId: 'billing-bot', limit: 10 });
    const recent = answer.sessions.find((s) => s.sessionId === 'pay-1')!;
    const old = answer.sessions.find((s) => s.sessionId === 'pay-old')!;
    assert.ok(recent.relevanceScore > old.relevanceScore);
    const recall = (await (
      await observe.call({ method: 'GET', url: '/api/recall?query=annual%20subscription%20renewal%20insufficient%20funds&scope=sessions&limit=10' })
    ).json()) as {
      results: { sourceId: string; score: number }[];
    };
    const similarityOf = (id: string): number => recall.results.find((r) => r.sourceId === id)!.score;
    const expected = (id: string, lastEventMsAgo: number): number =>
      SIMILARITY_WEIGHT * similarityOf(id) + RECENCY_WEIGHT * Math.exp(-lastEventMsAgo / RECENCY_SCALE_MS);
    assert.ok(Math.abs(recent.relevanceScore - expected('pay-1', 2 * DAY - 8000)) < 1e-5);
    assert.ok(Math.abs(old.relevanceScore - expected('pay-old', 40 * DAY)) < 1e-5);
  });

  test('limit cuts sessions, not totalSessions; agentId filters', async () => {
    const all = await context(observe, { topic: 'customer card payment', limit: 50 });
    assert.ok(all.totalSessions >= 3);
    const one = await context(observe, { topic: 'customer card payment', limit: 1 });
    assert.equal(one.sessions.length, 1);
    assert.equal(one.totalSessions, all.totalSessions);
    assert.equal(one.sessions[0]!.sessionId, all.sessions[0]!.sessionId);
    const deploy = await context(observe, { topic: 'customer card payment', agentId: 'deploy-bot' });
    assert.ok(deploy.sessions.every((s) => s.agentId === 'deploy-bot'));
    const defaults = await context(observe, { topic: 'customer card payment' });
    assert.ok(defaults.sessions.length <= 5);
    const none = await context(observe, { topic: 'zebra giraffe safari' });
    assert.deepEqual({ ...none, summary: '' }, { topic: 'zebra giraffe safari', sessions: [], lessons: [], summary: '', totalSessions: 0 });
    assert.match(none.summary, /^No recorded session is relevant to "zebra giraffe safari"/);
  });

  test('userId keeps the sessions of that user and those of no known user', async () => {
    const ids = async (userId: string) =>
      (await context(observe, { topic: 'customer card payment declined', userId, limit: 50 })).sessions.map((s) => s.sessionId).sort();
    const everyone = (await context(observe, { topic: 'customer card payment declined', limit: 50 })).sessions.map((s) => s.sessionId);
    assert.ok(everyone.includes('pay-1') && everyone.includes('pay-old') && everyone.includes('mail-1'));
    const alice = await ids('alice');
    assert.ok(alice.includes('pay-1') && alice.includes('mail-1') && !alice.includes('pay-old'), 'tag user:alice; bob via metadata.userId');
    const bob = await ids('bob');
    assert.ok(bob.includes('pay-old') && bob.includes('mail-1') && !bob.includes('pay-1'));
    const carol = await ids('carol');
    assert.ok(!carol.includes('pay-1') && !carol.includes('pay-old') && carol.includes('mail-1'));
  });

  test('400 without a topic or with a bad limit; 401 without a key', async () => {
    for (const query of ['', '?topic=', '?topic=%20', '?userId=u1', '?topic=x&limit=0', '?topic=x&limit=51', '?topic=x&limit=abc']) {
      assertErrorBody(await observe.call({ method: 'GET', url: `/api/context${query}` }), 400, query);
    }
    assert.match(((await observe.call({ method: 'GET', url: '/api/context' })).json() as { error: string }).error, /topic/);
    assertErrorBody(await observe.service.app.inject({ method: 'GET', url: '/api/context?topic=x' }), 401);
  });
});

await describeEachDatabase("GET /api/context: alert bookkeeping is no agent's experience", (backend) => {
  let observe: TestObserve;
  let alertSession = '';
  before(async () => {
    observe = await startTestObserve(backend);
    await seed(observe);
    alertSession = await fireAlertRule(observe, 'card declined payment failed');
    await drain(observe);
  });
  after(() => observe.close());

  test("the system agent's alert sessions are left out unless agentId=system asks for them", async () => {
    // Close to the alert session's summary ("Session alert:… of agent system, active. 1 events, …").
    const topic = 'session alert of agent system, active, 1 events';
    const all = await context(observe, { topic, limit: 10 });
    assert.ok(all.sessions.length > 0);
    assert.ok(!all.sessions.some((s) => s.agentId === 'system'), JSON.stringify(all.sessions.map((s) => s.sessionId)));
    assert.equal(all.totalSessions, all.sessions.length, 'and not counted');
    const system = await context(observe, { topic, agentId: 'system', limit: 10 });
    assert.deepEqual(
      system.sessions.map((s) => s.sessionId),
      [alertSession],
    );
  });
});

await describeEachDatabase('GET /api/context with the memory integration', (backend) => {
  let memory: TestHttpServer;
  let observe: TestObserve;
  let mode: 'ok' | 'down' | 'hang' | 'garbage' = 'ok';

  before(async () => {
    memory = await new TestHttpServer((request, res) => {
      const url = new URL(request.url, 'http://memory');
      if (url.pathname !== '/lessons' || request.method !== 'GET') return sendJson(res, 404, { error: 'no route' });
      if (mode === 'hang') return;
      if (mode === 'down') return sendJson(res, 503, { error: 'memory store down' });
      if (mode === 'garbage') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        return res.end('not json');
      }
      sendJson(res, 200, {
        lessons: [
          { id: 'l1', title: 'Unrelated', content: 'Prefer tabs over spaces in Makefiles', category: 'style', importance: 0.2 },
          {
            id: 'l2',
            title: 'Declined cards',
            content: 'When a card is declined, ask the customer to update the payment method before retrying the charge',
            category: 'billing',
            importance: 0.9,
          },
          { id: 7, title: 'Scored by the server', content: 'x', relevanceScore: 0.5 },
          { title: 'no id: skipped' },
        ],
      });
    }).start();
    // The timeout is what the silent server costs one test; shorter, a loaded machine (CI) can
    // time out an answered call before the connection is even made.
    observe = await startTestObserve(backend, {
      env: { MEMORY_ENABLED: 'true', MEMORY_API_URL: memory.url, MEMORY_API_KEY: 'mem-secret', MEMORY_TIMEOUT_MS: '2000' },
    });
    await seed(observe);
  });
  beforeEach(() => {
    memory.requests.length = 0;
    mode = 'ok';
  });
  after(async () => {
    await observe.close();
    await memory.stop();
  });

  test('lessons come from GET {MEMORY_API_URL}/lessons with the topic, user, agent and limit, ranked by relevance', async () => {
    const answer = await context(observe, { topic: 'card declined', userId: 'alice', agentId: 'billing-bot', limit: 3 });
    assert.equal(memory.requests.length, 1);
    const request = memory.requests[0]!;
    const url = new URL(request.url, 'http://memory');
    assert.equal(url.pathname, '/lessons');
    assert.deepEqual(Object.fromEntries(url.searchParams), { query: 'card declined', limit: '3', userId: 'alice', agentId: 'billing-bot' });
    assert.equal(request.headers.authorization, 'Bearer mem-secret');
    assert.equal(JSON.stringify(request.headers).includes(observe.key), false, 'the Vigil key is not forwarded');

    assert.deepEqual(
      answer.lessons.map((l) => l.id),
      ['l2', '7', 'l1'],
    );
    const [declined, scored, unrelated] = answer.lessons;
    assert.deepEqual(
      { ...declined!, relevanceScore: 0 },
      {
        id: 'l2',
        title: 'Declined cards',
        content: 'When a card is declined, ask the customer to update the payment method before retrying the charge',
        category: 'billing',
        importance: 0.9,
        relevanceScore: 0,
      },
    );
    assert.ok(declined!.relevanceScore > 0.5, 'scored against the topic by the embedder');
    assert.equal(scored!.relevanceScore, 0.5, "the server's own score is kept");
    assert.equal(scored!.category, 'general');
    assert.equal(scored!.importance, 0.5);
    assert.ok(unrelated!.relevanceScore < 0.1);
    assert.match(answer.summary, /3 lessons from memory: Declined cards; Scored by the server; Unrelated\./);
    assert.equal(answer.sessions[0]!.sessionId, 'pay-1');
  });

  test('a failing, silent or confused memory server leaves lessons empty; context still answers', async () => {
    for (const failing of ['down', 'hang', 'garbage'] as const) {
      mode = failing;
      const answer = await context(observe, { topic: 'card declined' });
      assert.deepEqual(answer.lessons, [], failing);
      assert.equal(answer.sessions[0]!.sessionId, 'pay-1', failing);
    }
  });
});

await describeEachDatabase('GET /api/context with an unreachable embedding backend', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend, { env: { EMBEDDINGS_URL: 'http://127.0.0.1:1', EMBEDDINGS_TIMEOUT_MS: '300' } });
  });
  after(() => observe.close());

  test('500 in the observe error body (the topic cannot be embedded)', async () => {
    assertErrorBody(await observe.call({ method: 'GET', url: '/api/context?topic=anything' }), 500);
  });
});

await describeEachDatabase('GET /api/context: the default limit', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
    for (let s = 0; s < 6; s++) await ingest(observe, [llmCall(`refund-${s}`, 'support-bot', `Refund order ${s} to the customer`, ago((s + 1) * HOUR))]);
    await drain(observe);
  });
  after(() => observe.close());

  test('limit defaults to 5 sessions; totalSessions counts them all', async () => {
    const all = await context(observe, { topic: 'refund order', limit: 50 });
    assert.equal(all.totalSessions, 6);
    const byDefault = await context(observe, { topic: 'refund order' });
    assert.equal(byDefault.sessions.length, 5);
    assert.equal(byDefault.totalSessions, 6);
    assert.deepEqual(
      byDefault.sessions.map((s) => s.sessionId),
      all.sessions.slice(0, 5).map((s) => s.sessionId),
    );
  });
});
