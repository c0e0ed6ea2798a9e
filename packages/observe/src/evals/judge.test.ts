import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, before, test } from 'node:test';
import { describeEachDatabase, TestHttpServer, type ReceivedRequest } from '@vigil/platform/testing';
import { MAX_TOKENS } from '../bounds.ts';
import { assertErrorBody, ingest, startTestObserve, type TestObserve } from '../testing.ts';
import type { Event } from '../events/index.ts';
import { JUDGE_SYSTEM_PROMPT } from './judge.ts';
import { TRANSCRIPT_MAX } from './transcript.ts';

type Json = Record<string, any>;

const OPENAI_KEY = 'sk-test-openai-key';
const ANTHROPIC_KEY = 'sk-ant-test-key';
const RESULT_KEYS = ['costUsd', 'event', 'judgeModel', 'method', 'passed', 'reasoning', 'score', 'sessionId', 'tokenCount'];

/** USD per 1M tokens of the built-in price table (@vigil/pricing, prices.ts). */
const PRICES: Record<string, [number, number]> = {
  'gpt-4o-mini': [0.15, 0.6],
  'gpt-4.1-nano': [0.1, 0.4],
  'gpt-4.1-mini': [0.4, 1.6],
  'claude-haiku-4-5-20251001': [1, 5],
};
const cost = (model: string, input: number, output: number): number =>
  Math.round(((input * PRICES[model]![0] + output * PRICES[model]![1]) / 1_000_000) * 1e9) / 1e9;

/** What the fake provider answers next: one entry per request (the last one repeats). */
type Reply = {
  status?: number;
  body?: unknown;
  raw?: string;
  hang?: boolean;
  headers?: Record<string, string>;
  /** Runs while the request is held, before the answer is sent. */
  meanwhile?: () => Promise<void>;
};

class FakeProvider {
  readonly server: TestHttpServer;
  replies: Reply[] = [];
  private served = 0;

  constructor() {
    this.server = new TestHttpServer((request, res) => this.answer(request, res));
  }

  private answer(_request: ReceivedRequest, res: ServerResponse): void {
    const reply = this.replies[Math.min(this.served, this.replies.length - 1)] ?? { status: 500, body: { error: 'no reply set' } };
    this.served += 1;
    if (reply.hang) return;
    if (reply.meanwhile) {
      const { meanwhile, ...rest } = reply;
      void meanwhile().then(() => this.send(rest, res));
      return;
    }
    this.send(reply, res);
  }

  private send(reply: Reply, res: ServerResponse): void {
    if (reply.raw !== undefined) {
      res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
      res.end(reply.raw);
      return;
    }
    res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
    res.end(JSON.stringify(reply.body));
  }

  /** Sets the replies of the next requests and forgets earlier requests. */
  next(...replies: Reply[]): void {
    this.replies = replies;
    this.served = 0;
    this.server.requests.length = 0;
  }

  get requests(): ReceivedRequest[] {
    return this.server.requests;
  }

  get url(): string {
    return this.server.url;
  }
}

const openAiVerdict = (verdict: unknown, prompt = 1000, completion = 200): Reply => ({
  body: {
    id: 'chatcmpl-1',
    object: 'chat.completion',
    choices: [{ index: 0, message: { role: 'assistant', content: typeof verdict === 'string' ? verdict : JSON.stringify(verdict) }, finish_reason: 'stop' }],
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
  },
});

const anthropicVerdict = (text: string, input: number, output: number): Reply => ({
  body: {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    usage: { input_tokens: input, output_tokens: output },
  },
});

const judgedSession = (sessionId: string): Json[] => [
  { sessionId, agentId: 'agent-j', eventType: 'session_started', payload: { agentName: 'Support bot' } },
  { sessionId, agentId: 'agent-j', eventType: 'tool_call', payload: { toolName: 'refund_order', callId: 'c1', arguments: { orderId: 'A-17' } } },
  {
    sessionId,
    agentId: 'agent-j',
    eventType: 'llm_response',
    payload: {
      callId: 'l1',
      provider: 'openai',
      model: 'gpt-4o',
      completion: 'Refund issued, sorry!',
      finishReason: 'stop',
      usage: { inputTokens: 100, outputTokens: 20 },
      costUsd: 0.005,
      latencyMs: 10,
    },
  },
];

const score = (observe: TestObserve, sessionId: string, body: unknown) =>
  observe.call({ method: 'POST', url: `/api/eval/sessions/${encodeURIComponent(sessionId)}/score`, payload: body as object });

async function timeline(observe: TestObserve, sessionId: string): Promise<Event[]> {
  return ((await observe.call({ method: 'GET', url: `/api/sessions/${sessionId}/timeline` })).json() as { events: Event[] }).events;
}

async function judgeSpend(observe: TestObserve): Promise<number> {
  return ((await observe.call({ method: 'GET', url: '/api/stats' })).json() as Json).judgeSpendUsd;
}

await describeEachDatabase('LLM judge: OpenAI chat completions', (backend) => {
  const provider = new FakeProvider();
  let observe: TestObserve;
  before(async () => {
    await provider.server.start();
    observe = await startTestObserve(backend, { env: { LLM_PROVIDER: 'openai', LLM_API_KEY: OPENAI_KEY, LLM_BASE_URL: provider.url } });
    await ingest(observe, judgedSession('s-judge'));
  });
  after(async () => {
    await observe.close();
    await provider.server.stop();
  });

  test('request shape, strict parse, cost from usage and the price table, chained verdict; judge spend apart from session spend', async () => {
    const sessionBefore = (await observe.call({ method: 'GET', url: '/api/sessions/s-judge' })).json() as Json;
    assert.equal(await judgeSpend(observe), 0);
    // A previous verdict in the session is not shown to the judge.
    const prior = await observe.call({
      method: 'POST',
      url: '/api/eval/sessions/s-judge/compliance',
      payload: { rules: [{ id: 'r', type: 'max_cost', maxUsd: 1 }] },
    });
    assert.equal(prior.statusCode, 201);
    const head = ((await observe.call({ method: 'GET', url: '/api/audit/verify?sessionId=s-judge' })).json() as Json).headHash;

    provider.next(openAiVerdict({ score: 0.9, reasoning: 'Polite and correct refund.' }, 1000, 200));
    const response = await score(observe, 's-judge', { rubric: 'The agent must apologise when refunding.' });
    assert.equal(response.statusCode, 201, response.body);
    const body = response.json() as Json;
    assert.deepEqual(Object.keys(body).sort(), RESULT_KEYS);
    const expectedCost = cost('gpt-4o-mini', 1000, 200);
    assert.equal(expectedCost, 0.00027);
    assert.deepEqual(body, {
      sessionId: 's-judge',
      method: 'llm_judge',
      score: 0.9,
      passed: true,
      reasoning: 'Polite and correct refund.',
      judgeModel: 'gpt-4o-mini',
      costUsd: expectedCost,
      tokenCount: 1200,
      event: body.event,
    });
    assert.deepEqual(Object.keys(body.event).sort(), ['hash', 'id', 'prevHash']);
    assert.equal(body.event.prevHash, head);

    // What went over the wire.
    assert.equal(provider.requests.length, 1);
    const sent = provider.requests[0]!;
    assert.equal(sent.method, 'POST');
    assert.equal(sent.url, '/v1/chat/completions');
    assert.equal(sent.headers.authorization, `Bearer ${OPENAI_KEY}`);
    assert.match(String(sent.headers['content-type']), /^application\/json/);
    const request = JSON.parse(sent.body) as Json;
    assert.equal(request.model, 'gpt-4o-mini');
    assert.deepEqual(request.response_format, { type: 'json_object' });
    assert.equal(request.messages.length, 2);
    assert.deepEqual(request.messages[0], { role: 'system', content: JUDGE_SYSTEM_PROMPT });
    assert.equal(request.messages[1].role, 'user');
    const prompt = request.messages[1].content as string;
    assert.ok(prompt.includes('The agent must apologise when refunding.'));
    assert.ok(prompt.includes('refund_order'));
    assert.ok(prompt.includes('Refund issued, sorry!'));
    assert.ok(!prompt.includes('eval_result'), 'earlier verdicts are not part of the transcript');

    // The verdict in the chain.
    const events = await timeline(observe, 's-judge');
    const stored = events.find((e) => e.id === body.event.id)!;
    assert.equal(stored.eventType, 'eval_result');
    assert.equal(stored.hash, body.event.hash);
    assert.equal(stored.severity, 'info');
    for (const key of ['score', 'passed', 'reasoning', 'judgeModel', 'costUsd', 'tokenCount']) assert.deepEqual(stored.payload[key], (body as Json)[key], key);
    assert.equal(stored.payload.method, 'llm_judge');
    assert.equal(stored.payload.rubric, 'The agent must apologise when refunding.');
    assert.equal(stored.payload.passThreshold, 0.7);
    assert.equal(((await observe.call({ method: 'GET', url: '/api/audit/verify?sessionId=s-judge' })).json() as Json).valid, true);

    // Judge cost is tracked apart: stats show it, the session's spend and analytics do not.
    assert.equal(await judgeSpend(observe), expectedCost);
    const sessionAfter = (await observe.call({ method: 'GET', url: '/api/sessions/s-judge' })).json() as Json;
    assert.equal(sessionAfter.totalCostUsd, sessionBefore.totalCostUsd);
    assert.equal(sessionAfter.totalCostUsd, 0.005);
    assert.equal(sessionAfter.errorCount, 0);
    const { db } = observe.service.context.database;
    const costs = await db
      .selectFrom('events')
      .select(['event_type', 'cost_usd'])
      .where('session_id', '=', 's-judge')
      .where('event_type', '=', 'eval_result')
      .execute();
    assert.ok(
      costs.every((row) => row.cost_usd === null),
      'eval_result rows carry no cost_usd',
    );
    const rollup = await db
      .selectFrom('event_rollups')
      .select((eb) => eb.fn.sum<number>('cost_usd').as('c'))
      .executeTakeFirstOrThrow();
    assert.equal(Number(rollup.c), 0.005);
    // A compliance max_cost rule still sees only the session's own spend.
    const budget = (
      await observe.call({ method: 'POST', url: '/api/eval/sessions/s-judge/compliance', payload: { rules: [{ id: 'b', type: 'max_cost', maxUsd: 0.005 }] } })
    ).json() as Json;
    assert.equal(budget.passed, true);
  });

  test('pass at score >= 0.7 by default, or >= passThreshold; a failed verdict is a warn', async () => {
    provider.next(openAiVerdict({ score: 0.7, reasoning: 'borderline' }));
    assert.equal(((await score(observe, 's-judge', { rubric: 'r' })).json() as Json).passed, true);
    provider.next(openAiVerdict({ score: 0.69, reasoning: 'just below' }));
    const below = (await score(observe, 's-judge', { rubric: 'r' })).json() as Json;
    assert.equal(below.passed, false);
    assert.equal((await timeline(observe, 's-judge')).find((e) => e.id === below.event.id)!.severity, 'warn');
    provider.next(openAiVerdict({ score: 0.9, reasoning: 'good' }));
    assert.equal(((await score(observe, 's-judge', { rubric: 'r', passThreshold: 0.95 })).json() as Json).passed, false);
    provider.next(openAiVerdict({ score: 0.95, reasoning: 'good' }));
    assert.equal(((await score(observe, 's-judge', { rubric: 'r', passThreshold: 0.95 })).json() as Json).passed, true);
    provider.next(openAiVerdict({ score: 0, reasoning: 'violation' }));
    assert.equal(((await score(observe, 's-judge', { rubric: 'r', passThreshold: 0 })).json() as Json).passed, true);
  });

  test('a model override is sent and priced; an unpriced model is 400 before any call', async () => {
    provider.next(openAiVerdict({ score: 1, reasoning: 'fine' }, 500, 50));
    const response = await score(observe, 's-judge', { rubric: 'r', model: 'gpt-4.1-nano' });
    assert.equal(response.statusCode, 201, response.body);
    const body = response.json() as Json;
    assert.equal(body.judgeModel, 'gpt-4.1-nano');
    assert.equal(body.costUsd, cost('gpt-4.1-nano', 500, 50));
    assert.equal(body.tokenCount, 550);
    assert.equal(JSON.parse(provider.requests[0]!.body).model, 'gpt-4.1-nano');

    provider.next(openAiVerdict({ score: 1, reasoning: 'fine' }));
    const unpriced = assertErrorBody(await score(observe, 's-judge', { rubric: 'r', model: 'my-private-model' }), 400);
    assert.match(unpriced.error, /my-private-model/);
    assert.equal(provider.requests.length, 0);
  });

  test('one retry after a 500 or a 429; two failures are 502', async () => {
    provider.next({ status: 500, body: { error: 'overloaded' } }, openAiVerdict({ score: 0.8, reasoning: 'ok' }));
    const retried = await score(observe, 's-judge', { rubric: 'r' });
    assert.equal(retried.statusCode, 201, retried.body);
    assert.equal(provider.requests.length, 2);
    assert.equal(provider.requests[0]!.body, provider.requests[1]!.body, 'the same request is sent again');

    provider.next({ status: 429, body: { error: 'slow down' }, headers: { 'retry-after': '0' } }, openAiVerdict({ score: 0.8, reasoning: 'ok' }));
    assert.equal((await score(observe, 's-judge', { rubric: 'r' })).statusCode, 201);
    assert.equal(provider.requests.length, 2);

    const before = (await timeline(observe, 's-judge')).length;
    provider.next({ status: 500, body: {} }, { status: 503, body: {} });
    const failed = assertErrorBody(await score(observe, 's-judge', { rubric: 'r' }), 502);
    assert.match(failed.error, /HTTP 503/);
    assert.equal(provider.requests.length, 2);

    // A 4xx other than 429 is not retried.
    provider.next({ status: 401, body: { error: 'bad key' } }, openAiVerdict({ score: 1, reasoning: 'never sent' }));
    assertErrorBody(await score(observe, 's-judge', { rubric: 'r' }), 502);
    assert.equal(provider.requests.length, 1);
    assert.equal((await timeline(observe, 's-judge')).length, before, 'no verdict is chained after a failure');
  });

  test('extra keys in the verdict are dropped: passed comes from the threshold, never from the model; a missing reasoning is empty', async () => {
    const cases: [unknown, { score: number; passed: boolean; reasoning: string }][] = [
      [
        { score: 0.5, reasoning: 'Partly compliant.', passed: true, confidence: 0.99, verdict: 'pass' },
        { score: 0.5, passed: false, reasoning: 'Partly compliant.' },
      ],
      [
        { score: 0.9, passed: false, explanation: 'fine' },
        { score: 0.9, passed: true, reasoning: '' },
      ],
      [
        { score: 0.7, reasoning: null, passed: 'no' },
        { score: 0.7, passed: true, reasoning: '' },
      ],
    ];
    for (const [verdict, expected] of cases) {
      provider.next(openAiVerdict(verdict));
      const response = await score(observe, 's-judge', { rubric: 'r' });
      assert.equal(response.statusCode, 201, response.body);
      const body = response.json() as Json;
      assert.deepEqual(Object.keys(body).sort(), RESULT_KEYS);
      assert.deepEqual({ score: body.score, passed: body.passed, reasoning: body.reasoning }, expected, JSON.stringify(verdict));
      const stored = (await timeline(observe, 's-judge')).find((e) => e.id === body.event.id)!;
      assert.deepEqual({ score: stored.payload.score, passed: stored.payload.passed, reasoning: stored.payload.reasoning }, expected);
      for (const key of ['confidence', 'verdict', 'explanation']) assert.equal(key in stored.payload, false, `${key} is not chained`);
    }
  });

  test('garbage, non-JSON, a missing, non-numeric or out-of-range score are 502 and chain nothing; billed garbage still counts as judge spend', async () => {
    const before = (await timeline(observe, 's-judge')).length;
    const spendBefore = await judgeSpend(observe);
    const replies: Reply[] = [
      openAiVerdict('I think it is fine.', 100, 10),
      openAiVerdict({ score: 1.5, reasoning: 'too good' }, 100, 10),
      openAiVerdict({ score: '0.5', reasoning: 'string' }, 100, 10),
      openAiVerdict({ reasoning: 'no score', passed: true }, 100, 10),
      openAiVerdict([0.5, 'array'], 100, 10),
      openAiVerdict({ score: 0.5, reasoning: ['not', 'text'] }, 100, 10),
      { raw: '<html>oops</html>' },
      { body: { choices: [] } },
    ];
    for (const reply of replies) {
      provider.next(reply);
      assertErrorBody(await score(observe, 's-judge', { rubric: 'r' }), 502, JSON.stringify(reply).slice(0, 80));
      assert.equal(provider.requests.length, 1, 'an unusable 200 is not retried');
    }
    assert.equal((await timeline(observe, 's-judge')).length, before);
    // Six answers carried usage (100 + 10 tokens each): they were billed.
    assert.equal(await judgeSpend(observe), Math.round((spendBefore + 6 * cost('gpt-4o-mini', 100, 10)) * 1e9) / 1e9);
  });

  test('a usage beyond the token bound is no answer: 502, nothing chained, nothing billed', async () => {
    const before = (await timeline(observe, 's-judge')).length;
    const spendBefore = await judgeSpend(observe);
    provider.next(openAiVerdict({ score: 0.5, reasoning: 'ok' }, MAX_TOKENS + 1, 10));
    assertErrorBody(await score(observe, 's-judge', { rubric: 'r' }), 502);
    assert.equal((await timeline(observe, 's-judge')).length, before);
    assert.equal(await judgeSpend(observe), spendBefore);
  });

  test('evaluatorId: a saved llm_judge evaluator supplies rubric, model and threshold; a compliance evaluator is 400', async () => {
    const evaluator = (
      await observe.call({
        method: 'POST',
        url: '/api/evaluators',
        payload: { name: 'strict', kind: 'llm_judge', rubric: 'Never refund more than 100 EUR.', model: 'gpt-4.1-mini', passThreshold: 0.95 },
      })
    ).json() as Json;
    provider.next(openAiVerdict({ score: 0.9, reasoning: 'close' }, 2000, 100));
    const response = await score(observe, 's-judge', { evaluatorId: evaluator.id });
    assert.equal(response.statusCode, 201, response.body);
    const body = response.json() as Json;
    assert.equal(body.passed, false);
    assert.equal(body.judgeModel, 'gpt-4.1-mini');
    assert.equal(body.costUsd, cost('gpt-4.1-mini', 2000, 100));
    const request = JSON.parse(provider.requests[0]!.body) as Json;
    assert.ok(request.messages[1].content.includes('Never refund more than 100 EUR.'));
    const stored = (await timeline(observe, 's-judge')).find((e) => e.id === body.event.id)!;
    assert.equal(stored.payload.evaluatorId, evaluator.id);

    const compliance = (
      await observe.call({
        method: 'POST',
        url: '/api/evaluators',
        payload: { name: 'c', kind: 'compliance', rules: [{ id: 'r', type: 'max_cost', maxUsd: 1 }] },
      })
    ).json() as Json;
    provider.next(openAiVerdict({ score: 1, reasoning: 'x' }));
    assertErrorBody(await score(observe, 's-judge', { evaluatorId: compliance.id }), 400);
    assertErrorBody(await score(observe, 's-judge', { evaluatorId: 'nope' }), 400);
    assert.equal(provider.requests.length, 0);
  });

  test('404 for an unknown session, 400 for bad bodies, neither calls the provider', async () => {
    provider.next(openAiVerdict({ score: 1, reasoning: 'x' }));
    assertErrorBody(await score(observe, 'no-such-session', { rubric: 'r' }), 404);
    for (const body of [
      {},
      { rubric: '' },
      { rubric: 'x'.repeat(10_001) },
      { rubric: 'r', passThreshold: -0.1 },
      { rubric: 'r', extra: 1 },
      { evaluatorId: 'e', rubric: 'r' },
      { rubric: 5 },
    ]) {
      assertErrorBody(await score(observe, 's-judge', body), 400, JSON.stringify(body).slice(0, 60));
    }
    assert.equal(provider.requests.length, 0);
  });

  test('409 chain_broken on a session whose chain does not verify, before the provider is called', async () => {
    await ingest(observe, judgedSession('s-judge-broken'));
    const { db } = observe.service.context.database;
    await db.updateTable('events').set({ severity: 'critical' }).where('session_id', '=', 's-judge-broken').where('seq', '=', 1).execute();
    const spend = await judgeSpend(observe);
    provider.next(openAiVerdict({ score: 1, reasoning: 'x' }));
    const body = assertErrorBody(await score(observe, 's-judge-broken', { rubric: 'r' }), 409);
    assert.match(body.error, /session "s-judge-broken" is broken at seq 1 .*hash does not match the event content/);
    assert.equal(provider.requests.length, 0, 'no paid call for a broken chain');
    assert.equal(await judgeSpend(observe), spend);
    assert.equal((await timeline(observe, 's-judge-broken')).length, 3, 'nothing appended');
  });

  test('a chain broken while the judge answers is caught before the verdict is appended (409; the call is still billed)', async () => {
    await ingest(observe, judgedSession('s-judge-broken-meanwhile'));
    const { db } = observe.service.context.database;
    const spend = await judgeSpend(observe);
    provider.next({
      ...openAiVerdict({ score: 1, reasoning: 'fine' }, 1000, 200),
      meanwhile: async () => {
        await db
          .updateTable('events')
          .set({ hash: Buffer.alloc(32, 0xcc) })
          .where('session_id', '=', 's-judge-broken-meanwhile')
          .where('seq', '=', 2)
          .execute();
      },
    });
    const body = assertErrorBody(await score(observe, 's-judge-broken-meanwhile', { rubric: 'r' }), 409);
    assert.match(body.error, /broken at seq 2 /);
    assert.equal(provider.requests.length, 1);
    assert.ok(Math.abs((await judgeSpend(observe)) - spend - cost('gpt-4o-mini', 1000, 200)) < 1e-9, 'the judge was paid all the same');
    assert.equal((await timeline(observe, 's-judge-broken-meanwhile')).length, 3, 'no verdict appended');
  });

  test('the transcript is bounded: long payloads and long sessions are cut in the prompt, never in the chain', async () => {
    const events = Array.from({ length: 120 }, (_, i) => ({
      sessionId: 's-long',
      agentId: 'agent-j',
      eventType: 'custom',
      payload: { type: 'chunk', data: `event-${i}-${'z'.repeat(5000)}` },
    }));
    await ingest(observe, events);
    provider.next(openAiVerdict({ score: 1, reasoning: 'long' }));
    assert.equal((await score(observe, 's-long', { rubric: 'r' })).statusCode, 201);
    const prompt = JSON.parse(provider.requests[0]!.body).messages[1].content as string;
    assert.ok(prompt.length < TRANSCRIPT_MAX + 500, `prompt of ${prompt.length} characters`);
    assert.ok(prompt.includes('event-0-'), 'the first events are kept');
    assert.ok(prompt.includes('event-119-'), 'the last events are kept');
    assert.match(prompt, /\[… \d+ events omitted …\]/);
    assert.ok(!prompt.includes('z'.repeat(2500)), 'each line is cut');
    // The stored payloads are whole and the chain verifies.
    const stored = await timeline(observe, 's-long');
    assert.equal((stored[5]!.payload.data as string).length, 'event-5-'.length + 5000);
    assert.equal(((await observe.call({ method: 'GET', url: '/api/audit/verify?sessionId=s-long' })).json() as Json).valid, true);
  });
});

await describeEachDatabase('LLM judge: Anthropic messages, timeouts and configuration', (backend) => {
  const provider = new FakeProvider();
  let anthropic: TestObserve;
  let slow: TestObserve;
  let unconfigured: TestObserve;
  let keyOnly: TestObserve;
  before(async () => {
    await provider.server.start();
    anthropic = await startTestObserve(backend, { env: { LLM_PROVIDER: 'anthropic', LLM_API_KEY: ANTHROPIC_KEY, LLM_BASE_URL: `${provider.url}/v1` } });
    slow = await startTestObserve(backend, {
      env: { LLM_PROVIDER: 'openai', LLM_API_KEY: OPENAI_KEY, LLM_BASE_URL: `${provider.url}/proxy`, LLM_TIMEOUT_MS: '200' },
    });
    unconfigured = await startTestObserve(backend);
    keyOnly = await startTestObserve(backend, { env: { LLM_API_KEY: OPENAI_KEY } });
    for (const observe of [anthropic, slow, unconfigured, keyOnly]) await ingest(observe, judgedSession('s-a'));
  });
  after(async () => {
    for (const observe of [anthropic, slow, unconfigured, keyOnly]) await observe.close();
    await provider.server.stop();
  });

  test('anthropic: POST /v1/messages with x-api-key and anthropic-version; cost from input/output tokens', async () => {
    provider.next(anthropicVerdict('{"score": 0.4, "reasoning": "No apology was given."}', 2000, 100));
    const response = await score(anthropic, 's-a', { rubric: 'Apologise.' });
    assert.equal(response.statusCode, 201, response.body);
    const body = response.json() as Json;
    assert.equal(body.score, 0.4);
    assert.equal(body.passed, false);
    assert.equal(body.reasoning, 'No apology was given.');
    assert.equal(body.judgeModel, 'claude-haiku-4-5-20251001');
    assert.equal(body.costUsd, cost('claude-haiku-4-5-20251001', 2000, 100));
    assert.equal(body.costUsd, 0.0025);
    assert.equal(body.tokenCount, 2100);

    const sent = provider.requests[0]!;
    assert.equal(sent.url, '/v1/messages');
    assert.equal(sent.headers['x-api-key'], ANTHROPIC_KEY);
    assert.equal(sent.headers['anthropic-version'], '2023-06-01');
    assert.equal(sent.headers.authorization, undefined);
    const request = JSON.parse(sent.body) as Json;
    assert.equal(request.model, 'claude-haiku-4-5-20251001');
    assert.equal(request.max_tokens, 1024);
    assert.equal(request.system, JUDGE_SYSTEM_PROMPT);
    assert.equal(request.messages.length, 1);
    assert.equal(request.messages[0].role, 'user');
    assert.ok(request.messages[0].content.includes('Apologise.'));
    assert.equal(await judgeSpend(anthropic), 0.0025);
    const session = (await anthropic.call({ method: 'GET', url: '/api/sessions/s-a' })).json() as Json;
    assert.equal(session.totalCostUsd, 0.005);
  });

  test('anthropic: a fenced JSON answer is accepted, prose is 502', async () => {
    provider.next(anthropicVerdict('```json\n{"score": 1, "reasoning": "ok"}\n```', 10, 10));
    assert.equal((await score(anthropic, 's-a', { rubric: 'r' })).statusCode, 201);
    provider.next(anthropicVerdict('Score: 1. Looks fine.', 10, 10));
    assertErrorBody(await score(anthropic, 's-a', { rubric: 'r' }), 502);
  });

  test('a provider that does not answer within LLM_TIMEOUT_MS is 502 after one retry', async () => {
    provider.next({ hang: true });
    const started = Date.now();
    const failed = assertErrorBody(await score(slow, 's-a', { rubric: 'r' }), 502);
    const elapsed = Date.now() - started;
    assert.match(failed.error, /within 200 ms/);
    assert.equal(provider.requests.length, 2);
    assert.equal(provider.requests[0]!.url, '/proxy/v1/chat/completions');
    assert.ok(elapsed >= 400 && elapsed < 15_000, `${elapsed} ms (two attempts of 200 ms, not the 30 s default)`);
    assert.equal((await timeline(slow, 's-a')).length, 3);
    assert.equal(await judgeSpend(slow), 0);
  });

  test('503 without LLM_PROVIDER and LLM_API_KEY (checked before anything else); judge spend stays 0', async () => {
    provider.next(openAiVerdict({ score: 1, reasoning: 'x' }));
    for (const observe of [unconfigured, keyOnly]) {
      const error = assertErrorBody(await score(observe, 's-a', { rubric: 'r' }), 503);
      assert.match(error.error, /LLM_PROVIDER and LLM_API_KEY/);
      assertErrorBody(await score(observe, 'unknown-session', { rubric: 'r' }), 503);
      assert.equal(await judgeSpend(observe), 0);
    }
    assert.equal(provider.requests.length, 0);
  });
});
