import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ConfigError, jsonArrayLength, jsonText } from '@vigil/platform';
import { describeEachDatabase, type TestBackend } from '@vigil/platform/testing';
import { assertErrorBody, ingest, startTestObserve, type TestObserve } from '../testing.ts';
import type { Recommendation, Recommendations } from './service.ts';

const NOW = Date.parse('2026-11-22T10:00:00.000Z');
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const at = (msAgo: number): string => new Date(NOW - msAgo).toISOString();

const RECOMMENDATION_FIELDS = [
  'agentId',
  'callVolume',
  'complexityTier',
  'confidence',
  'currentCostPerCall',
  'currentModel',
  'currentSuccessRate',
  'monthlySavings',
  'recommendedCostPerCall',
  'recommendedModel',
  'recommendedSuccessRate',
];

interface Calls {
  agentId: string;
  model: string;
  provider?: string;
  inputTokens?: number;
  outputTokens?: number;
  costUsd?: number;
  /** Entries of toolCalls; undefined leaves the field out. */
  tools?: number;
  /** How many of the calls end with finishReason 'error' (the first ones). */
  errors?: number;
  msAgo?: number;
}

const usd = (value: number): number => Math.round(value * 1e9) / 1e9;
let callCounter = 0;

/** `count` llm_response events of one agent and model. */
function llmResponses(count: number, calls: Calls): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => ({
    sessionId: `s-${calls.agentId}`,
    agentId: calls.agentId,
    eventType: 'llm_response',
    timestamp: at(calls.msAgo ?? HOUR),
    payload: {
      callId: `call-${++callCounter}`,
      provider: calls.provider ?? 'openai',
      model: calls.model,
      completion: 'ok',
      ...(calls.tools === undefined ? {} : { toolCalls: Array.from({ length: calls.tools }, (_, t) => ({ name: `tool${t}`, arguments: {} })) }),
      finishReason: i < (calls.errors ?? 0) ? 'error' : 'stop',
      usage: { inputTokens: calls.inputTokens ?? 500, outputTokens: calls.outputTokens ?? 200 },
      costUsd: calls.costUsd ?? 0.00325,
      latencyMs: 800,
    },
  }));
}

async function recommendations(observe: TestObserve, query = ''): Promise<Recommendations> {
  const response = await observe.call({ method: 'GET', url: `/api/optimize/recommendations${query}` });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as Recommendations;
}

const byAgent = (answer: Recommendations, agentId: string): Recommendation[] => answer.recommendations.filter((r) => r.agentId === agentId);

/** A fresh app holding `events`, closed after the suite. */
function withData(backend: TestBackend, events: () => Record<string, unknown>[], env?: Record<string, string>): () => TestObserve {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend, { env });
    await ingest(observe, events());
  });
  after(() => observe.close());
  return () => observe;
}

// gpt-4o ($2.50 / $10 per 1M) at 500 input and 200 output tokens: $0.00325 a call;
// gpt-4o-mini ($0.15 / $0.60): $0.000195.
const GPT_4O_COST = 0.00325;
const GPT_4O_MINI_COST = 0.000195;

/** 60 simple gpt-4o calls of alpha; gpt-4o-mini proven in the simple tier by 10 calls of another agent. */
const baseline = (): Record<string, unknown>[] => [
  ...llmResponses(60, { agentId: 'alpha', model: 'gpt-4o' }),
  ...llmResponses(10, { agentId: 'helper', model: 'gpt-4o-mini', inputTokens: 400, outputTokens: 100, costUsd: 0.00012 }),
];

await describeEachDatabase('GET /api/optimize/recommendations', (backend) => {
  const observe = withData(backend, baseline);

  test('recommends the cheaper model proven in the tier, with exact figures', async () => {
    const answer = await recommendations(observe());
    assert.deepEqual(Object.keys(answer).sort(), ['analyzedCalls', 'period', 'recommendations', 'totalPotentialSavings']);
    assert.equal(answer.recommendations.length, 1);
    assert.deepEqual(Object.keys(answer.recommendations[0]!).sort(), RECOMMENDATION_FIELDS);
    const savings = usd(((GPT_4O_COST - GPT_4O_MINI_COST) * 60 * 30) / 7);
    assert.equal(savings, 0.785571429);
    assert.deepEqual(answer, {
      recommendations: [
        {
          currentModel: 'gpt-4o',
          recommendedModel: 'gpt-4o-mini',
          complexityTier: 'simple',
          currentCostPerCall: GPT_4O_COST,
          recommendedCostPerCall: GPT_4O_MINI_COST,
          monthlySavings: savings,
          callVolume: 60,
          currentSuccessRate: 1,
          recommendedSuccessRate: 1,
          confidence: 'medium',
          agentId: 'alpha',
        },
      ],
      totalPotentialSavings: savings,
      period: 7,
      analyzedCalls: 70,
    });
  });

  test('savings scale with the period: calls × 30 / period', async () => {
    const answer = await recommendations(observe(), '?period=30');
    assert.equal(answer.period, 30);
    assert.equal(answer.recommendations[0]!.monthlySavings, usd((GPT_4O_COST - GPT_4O_MINI_COST) * 60));
  });

  test('filters by agentId; candidate evidence still comes from every agent', async () => {
    const all = await recommendations(observe());
    const alpha = await recommendations(observe(), '?agentId=alpha');
    assert.deepEqual(alpha.recommendations, byAgent(all, 'alpha'));
    assert.equal(alpha.recommendations[0]!.confidence, 'medium');
    assert.equal(alpha.analyzedCalls, 60);
    assert.equal(alpha.totalPotentialSavings, alpha.recommendations[0]!.monthlySavings);

    const helper = await recommendations(observe(), '?agentId=helper');
    assert.deepEqual(helper, { recommendations: [], totalPotentialSavings: 0, period: 7, analyzedCalls: 10 });
    const nobody = await recommendations(observe(), '?agentId=nobody');
    assert.deepEqual(nobody, { recommendations: [], totalPotentialSavings: 0, period: 7, analyzedCalls: 0 });
  });

  test('rejects an invalid period or limit with the error body', async () => {
    for (const query of ['period=0', 'period=91', 'period=abc', 'period=1.5', 'period=', 'limit=0', 'limit=51', 'limit=abc', 'limit=2.5']) {
      assertErrorBody(await observe().call({ method: 'GET', url: `/api/optimize/recommendations?${query}` }), 400);
    }
    for (const query of ['period=1', 'period=90', 'limit=1', 'limit=50']) {
      const response = await observe().call({ method: 'GET', url: `/api/optimize/recommendations?${query}` });
      assert.equal(response.statusCode, 200, `${query}: ${response.body}`);
    }
  });

  test('requires authentication', async () => {
    const response = await observe().service.app.inject({ method: 'GET', url: '/api/optimize/recommendations' });
    assertErrorBody(response, 401);
  });
});

test('the JSON helpers refuse a key that is not a plain identifier (it is spliced into SQL)', () => {
  for (const key of ["x') or 1=1 --", 'a.b', '$.a', '', '1a', 'a b']) {
    assert.throws(() => jsonText('sqlite', 'payload', key), /invalid JSON key/);
    assert.throws(() => jsonArrayLength('postgres', 'payload', key), /invalid JSON key/);
  }
  assert.doesNotThrow(() => jsonText('postgres', 'payload', '_finish_Reason2'));
});

await describeEachDatabase('optimize: complexity tiers', (backend) => {
  // 20 gpt-4o calls per agent; no candidate has evidence, so each gets the cheapest openai model.
  const cases: { agentId: string; inputTokens: number; tools?: number; tier: string }[] = [
    { agentId: 'in-999', inputTokens: 999, tier: 'simple' },
    { agentId: 'in-1000', inputTokens: 1000, tier: 'moderate' },
    { agentId: 'in-10000', inputTokens: 10_000, tier: 'moderate' },
    { agentId: 'in-10001', inputTokens: 10_001, tier: 'complex' },
    { agentId: 'tools-absent', inputTokens: 500, tier: 'simple' },
    { agentId: 'tools-0', inputTokens: 500, tools: 0, tier: 'simple' },
    { agentId: 'tools-1', inputTokens: 500, tools: 1, tier: 'moderate' },
    { agentId: 'tools-5', inputTokens: 500, tools: 5, tier: 'moderate' },
    { agentId: 'tools-6', inputTokens: 500, tools: 6, tier: 'complex' },
    { agentId: 'big-5-tools', inputTokens: 20_000, tools: 5, tier: 'complex' },
  ];
  const observe = withData(backend, () =>
    cases.flatMap((c) => llmResponses(20, { agentId: c.agentId, model: 'gpt-4o', inputTokens: c.inputTokens, tools: c.tools, costUsd: 0.1 })),
  );

  test('classifies calls by input tokens and the number of toolCalls', async () => {
    const answer = await recommendations(observe(), '?limit=50');
    assert.equal(answer.analyzedCalls, 20 * cases.length);
    const tiers = Object.fromEntries(answer.recommendations.map((r) => [r.agentId, r.complexityTier]));
    assert.deepEqual(tiers, Object.fromEntries(cases.map((c) => [c.agentId, c.tier])));
  });

  test('without evidence for any candidate the cheapest one is recommended, with low confidence', async () => {
    const answer = await recommendations(observe(), '?agentId=in-999');
    const [r] = answer.recommendations;
    // gpt-5-nano ($0.05 / $0.40) is the cheapest openai model at 999 input and 200 output tokens.
    assert.equal(r!.recommendedModel, 'gpt-5-nano');
    assert.equal(r!.recommendedCostPerCall, usd((999 * 0.05 + 200 * 0.4) / 1e6));
    assert.equal(r!.confidence, 'low');
    assert.equal(r!.recommendedSuccessRate, r!.currentSuccessRate);
  });
});

await describeEachDatabase('optimize: thresholds', (backend) => {
  const observe = withData(backend, () => [
    ...llmResponses(19, { agentId: 'nineteen', model: 'gpt-4o' }),
    ...llmResponses(20, { agentId: 'twenty', model: 'gpt-4o' }),
    // gpt-4.1 at moderate tier (input 2,000): proven candidates with 0.96 (gpt-4o-mini) and exactly 0.98 (gpt-4.1-mini).
    ...llmResponses(250, { agentId: 'busy', model: 'gpt-4.1', inputTokens: 2000, outputTokens: 500, costUsd: 0.008, errors: 5 }),
    ...llmResponses(50, { agentId: 'mini-user', model: 'gpt-4o-mini', inputTokens: 2000, outputTokens: 500, costUsd: 0.0006, errors: 2 }),
    ...llmResponses(50, { agentId: 'mini41-user', model: 'gpt-4.1-mini-2025-04-14', inputTokens: 2000, outputTokens: 500, costUsd: 0.0016, errors: 1 }),
    // Every nano model fails too often in the moderate tier.
    ...llmResponses(10, { agentId: 'nano-user', model: 'gpt-5-nano', inputTokens: 2000, errors: 1 }),
    ...llmResponses(10, { agentId: 'nano-user', model: 'gpt-4.1-nano', inputTokens: 2000, errors: 1 }),
  ]);

  test('needs at least 20 calls of a model in a tier', async () => {
    const answer = await recommendations(observe(), '?limit=50');
    assert.deepEqual(byAgent(answer, 'nineteen'), []);
    const [twenty] = byAgent(answer, 'twenty');
    assert.equal(twenty!.callVolume, 20);
    assert.equal(twenty!.confidence, 'low');
  });

  test('skips a candidate observed below 0.98 success in the tier; exactly 0.98 qualifies', async () => {
    const [busy] = byAgent(await recommendations(observe(), '?limit=50'), 'busy');
    assert.equal(busy!.complexityTier, 'moderate');
    assert.equal(busy!.recommendedModel, 'gpt-4.1-mini');
    assert.equal(busy!.recommendedSuccessRate, 0.98);
    assert.equal(busy!.currentSuccessRate, 0.98);
    assert.equal(busy!.confidence, 'high');
    // gpt-4.1-mini ($0.40 / $1.60) at 2,000 / 500 tokens.
    assert.equal(busy!.recommendedCostPerCall, usd((2000 * 0.4 + 500 * 1.6) / 1e6));
    assert.equal(busy!.monthlySavings, usd(((0.008 - 0.0016) * 250 * 30) / 7));
  });

  test('confidence follows call volume', async () => {
    const answer = await recommendations(observe(), '?limit=50');
    // mini-user: 50 moderate gpt-4o-mini calls; its nano candidates fail too often, so nothing to recommend.
    assert.deepEqual(byAgent(answer, 'mini-user'), []);
    // mini41-user (a dated gpt-4.1-mini): the nano models and gpt-4o-mini (0.96) all fail too often.
    assert.deepEqual(byAgent(answer, 'mini41-user'), []);
    assert.equal(byAgent(answer, 'busy')[0]!.confidence, 'high');
  });
});

await describeEachDatabase('optimize: providers, sorting and limit', (backend) => {
  const observe = withData(backend, () => [
    // Anthropic calls; plenty of cheap, proven models of other providers in the same tier.
    ...llmResponses(30, { agentId: 'claude-agent', provider: 'anthropic', model: 'claude-sonnet-4-5', costUsd: 0.0045 }),
    ...llmResponses(30, { agentId: 'others', provider: 'google', model: 'gemini-2.0-flash-lite', costUsd: 0.0001 }),
    ...llmResponses(30, { agentId: 'others', provider: 'openai', model: 'gpt-5-nano', costUsd: 0.0001 }),
    // An unpriced model is never recommended anything.
    ...llmResponses(30, { agentId: 'acme-agent', provider: 'acme', model: 'acme-1', costUsd: 0.5 }),
    // Same figures under a table id and a dated snapshot of it: equal savings, ordered by currentModel.
    ...llmResponses(40, { agentId: 'twins', model: 'gpt-4o-2024-08-06' }),
    ...llmResponses(40, { agentId: 'twins', model: 'gpt-4o' }),
    ...llmResponses(100, { agentId: 'large', model: 'gpt-4o' }),
  ]);

  test('recommends only models of the same provider', async () => {
    const answer = await recommendations(observe(), '?limit=50');
    const prices = observe().service.context.prices;
    const [claude] = byAgent(answer, 'claude-agent');
    assert.equal(prices.find(claude!.recommendedModel)?.provider, 'anthropic');
    assert.equal(claude!.recommendedModel, 'claude-3-haiku-20240307');
    assert.equal(claude!.confidence, 'low');
    assert.deepEqual(byAgent(answer, 'acme-agent'), []);
    for (const r of answer.recommendations) {
      const current = prices.find(r.currentModel)!;
      assert.equal(prices.find(r.recommendedModel, current.provider)?.provider, current.provider);
    }
  });

  test('sorts by monthlySavings descending, then currentModel; limit cuts the list but not the total', async () => {
    const all = await recommendations(observe(), '?limit=50');
    const savings = all.recommendations.map((r) => r.monthlySavings);
    assert.deepEqual(
      savings,
      [...savings].sort((a, b) => b - a),
    );
    assert.deepEqual(all.recommendations.map((r) => `${r.agentId}/${r.currentModel}`).slice(0, 3), ['large/gpt-4o', 'twins/gpt-4o', 'twins/gpt-4o-2024-08-06']);
    assert.equal(all.recommendations[1]!.monthlySavings, all.recommendations[2]!.monthlySavings);
    const total = usd(all.recommendations.reduce((sum, r) => sum + r.monthlySavings, 0));
    assert.equal(all.totalPotentialSavings, total);

    const page = await recommendations(observe(), '?limit=2');
    assert.deepEqual(page.recommendations, all.recommendations.slice(0, 2));
    assert.equal(page.totalPotentialSavings, total);
    assert.equal(page.analyzedCalls, all.analyzedCalls);
    assert.equal(page.analyzedCalls, 30 * 4 + 40 * 2 + 100);

    const defaults = await recommendations(observe());
    assert.deepEqual(defaults.recommendations, all.recommendations.slice(0, 10));
  });
});

await describeEachDatabase('optimize: period', (backend) => {
  const observe = withData(backend, () => [
    ...llmResponses(40, { agentId: 'alpha', model: 'gpt-4o', msAgo: 3 * DAY }),
    ...llmResponses(40, { agentId: 'alpha', model: 'gpt-4o', msAgo: 10 * DAY }),
    ...llmResponses(40, { agentId: 'alpha', model: 'gpt-4o', msAgo: 100 * DAY }),
    ...llmResponses(10, { agentId: 'helper', model: 'gpt-4o-mini', msAgo: 2 * DAY }),
  ]);

  test('counts only calls of the last `period` days', async () => {
    const week = await recommendations(observe());
    assert.equal(week.analyzedCalls, 50);
    assert.equal(week.recommendations[0]!.callVolume, 40);
    assert.equal(week.recommendations[0]!.monthlySavings, usd(((GPT_4O_COST - GPT_4O_MINI_COST) * 40 * 30) / 7));

    const fortnight = await recommendations(observe(), '?period=14');
    assert.equal(fortnight.analyzedCalls, 90);
    assert.equal(fortnight.recommendations[0]!.callVolume, 80);
    assert.equal(fortnight.recommendations[0]!.confidence, 'medium');
    assert.equal(fortnight.recommendations[0]!.monthlySavings, usd(((GPT_4O_COST - GPT_4O_MINI_COST) * 80 * 30) / 14));

    const day = await recommendations(observe(), '?period=1');
    assert.deepEqual(day, { recommendations: [], totalPotentialSavings: 0, period: 1, analyzedCalls: 0 });
    assert.equal((await recommendations(observe(), '?period=90')).analyzedCalls, 90);
  });
});

await describeEachDatabase('optimize: MODEL_PRICES', (backend) => {
  const overrides = JSON.stringify([{ provider: 'openai', model: 'gpt-4o-mini', inputPerMillionUsd: 0.1, outputPerMillionUsd: 0.2 }]);
  const observe = withData(backend, baseline, { MODEL_PRICES: overrides });

  test('an override changes the recommendation', async () => {
    const [r] = (await recommendations(observe())).recommendations;
    const cost = (500 * 0.1 + 200 * 0.2) / 1e6;
    assert.equal(r!.recommendedModel, 'gpt-4o-mini');
    assert.equal(r!.recommendedCostPerCall, usd(cost));
    assert.equal(r!.monthlySavings, usd(((GPT_4O_COST - cost) * 60 * 30) / 7));
  });

  test('a bad MODEL_PRICES stops the start with a message naming it', async () => {
    await assert.rejects(startTestObserve(backend, { env: { MODEL_PRICES: 'not json' } }), (error: Error) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /MODEL_PRICES: invalid JSON/);
      return true;
    });
    const negative = JSON.stringify([{ provider: 'openai', model: 'x', inputPerMillionUsd: -1, outputPerMillionUsd: 1 }]);
    await assert.rejects(startTestObserve(backend, { env: { MODEL_PRICES: negative } }), (error: Error) => {
      assert.ok(error instanceof ConfigError);
      assert.match(error.message, /MODEL_PRICES: \[0\]\.inputPerMillionUsd/);
      return true;
    });
  });
});

await describeEachDatabase('optimize: confidence boundaries', (backend) => {
  const volumes = [49, 50, 200, 201];
  const observe = withData(backend, () => [
    ...volumes.flatMap((n) => llmResponses(n, { agentId: `calls-${n}`, model: 'gpt-4o' })),
    ...llmResponses(10, { agentId: 'helper', model: 'gpt-4o-mini', inputTokens: 400, outputTokens: 100, costUsd: 0.00012 }),
  ]);

  test('with a proven candidate: high above 200 calls, medium from 50, else low', async () => {
    const answer = await recommendations(observe(), '?limit=50');
    const confidence = Object.fromEntries(volumes.map((n) => [n, byAgent(answer, `calls-${n}`).map((r) => [r.recommendedModel, r.confidence])]));
    assert.deepEqual(confidence, {
      49: [['gpt-4o-mini', 'low']],
      50: [['gpt-4o-mini', 'medium']],
      200: [['gpt-4o-mini', 'medium']],
      201: [['gpt-4o-mini', 'high']],
    });
  });
});
