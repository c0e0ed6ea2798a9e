import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { startTestObserve, TEST_NOW, type TestObserve } from '../testing.ts';

const SERVICE_TOKEN = 'svc-token-for-budget-spend-tests-0123';
const HOUR = 3600_000;

interface Answer {
  at: number;
  results: { id: string; windowStart: number; figures: { key: string; spendUsd: number; agentIds: string[] }[] }[];
}

await describeEachDatabase('observe spend for the gate’s budgets (POST /api/internal/spend)', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend, { env: { INTERNAL_SERVICE_TOKEN: SERVICE_TOKEN } });
    const cost = (sessionId: string, agentId: string, usd: number, at: number) => ({
      sessionId,
      agentId,
      eventType: 'cost_tracked',
      timestamp: new Date(at).toISOString(),
      payload: { provider: 'openai', model: 'gpt-4o', inputTokens: 1, outputTokens: 1, totalTokens: 2, costUsd: usd },
    });
    const started = (sessionId: string, agentId: string, at: number, tags: string[]) => ({
      sessionId,
      agentId,
      eventType: 'session_started',
      timestamp: new Date(at).toISOString(),
      payload: { tags },
    });
    const events = [
      started('s-a1', 'agent-a', TEST_NOW - 30 * HOUR, ['team-x']),
      cost('s-a1', 'agent-a', 1.25, TEST_NOW - 30 * HOUR), // yesterday: this month only
      started('s-a2', 'agent-a', TEST_NOW - 2 * HOUR, ['team-x']),
      cost('s-a2', 'agent-a', 2, TEST_NOW - 2 * HOUR), // today
      cost('s-a2', 'agent-a', 0.5, TEST_NOW - 60_000), // 09:59: today, the previous hour
      started('s-b1', 'agent-b', TEST_NOW, []),
      cost('s-b1', 'agent-b', 3, TEST_NOW), // this hour
    ];
    const response = await observe.call({ method: 'POST', url: '/api/events', payload: { events } });
    assert.equal(response.statusCode, 201, response.body);
  });
  after(() => observe.close());

  const ask = async (queries: object[], authorization = `Bearer ${SERVICE_TOKEN}`) =>
    observe.service.app.inject({ method: 'POST', url: '/api/internal/spend', payload: { queries }, headers: { authorization } });
  const figures = async (query: object) => {
    const response = await ask([{ id: 'q', ...query }]);
    assert.equal(response.statusCode, 200, response.body);
    const answer = response.json() as Answer;
    assert.equal(answer.at, TEST_NOW);
    return answer.results[0]!;
  };

  test('agents and the tenant by UTC window: the same sums as GET /api/analytics/costs', async () => {
    const day = await figures({ scope: 'agent', value: 'agent-a', window: 'day' });
    assert.equal(day.windowStart, Date.parse('2026-11-22T00:00:00.000Z'));
    assert.deepEqual(day.figures, [{ key: 'agent-a', spendUsd: 2.5, agentIds: ['agent-a'] }]);
    const costs = (
      await observe.call({ method: 'GET', url: `/api/analytics/costs?agentId=agent-a&from=2026-11-22T00:00:00.000Z&to=${new Date(TEST_NOW).toISOString()}` })
    ).json() as { totals: { totalCostUsd: number } };
    assert.equal(costs.totals.totalCostUsd, 2.5);
    assert.deepEqual((await figures({ scope: 'agent', value: 'agent-a', window: 'month' })).figures[0]!.spendUsd, 3.75);
    assert.deepEqual((await figures({ scope: 'agent', value: 'agent-a', window: 'hour' })).figures[0]!.spendUsd, 0);
    const each = await figures({ scope: 'agent', window: 'day' });
    assert.deepEqual(each.figures.map((f) => [f.key, f.spendUsd]).sort(), [
      ['agent-a', 2.5],
      ['agent-b', 3],
    ]);
    const tenant = await figures({ scope: 'tenant', window: 'hour' });
    assert.deepEqual(tenant.figures, [{ key: '*', spendUsd: 3, agentIds: ['agent-b'] }]);
  });

  test('tags and sessions', async () => {
    assert.deepEqual((await figures({ scope: 'tag', value: 'team-x', window: 'month' })).figures, [{ key: 'team-x', spendUsd: 3.75, agentIds: ['agent-a'] }]);
    assert.deepEqual((await figures({ scope: 'tag', value: 'team-x', window: 'day' })).figures[0]!.spendUsd, 2.5);
    const sessions = await figures({ scope: 'agent', value: 'agent-a', window: 'session', minUsd: 2 });
    assert.equal(sessions.windowStart, 0);
    assert.deepEqual(sessions.figures, [{ key: 's-a2', spendUsd: 2.5, agentIds: ['agent-a'] }], 'sessions under minUsd are left out');
    assert.deepEqual((await figures({ scope: 'session', value: 's-a1', window: 'session' })).figures, [{ key: 's-a1', spendUsd: 1.25, agentIds: ['agent-a'] }]);
    assert.deepEqual((await figures({ scope: 'tag', value: 'team-x', window: 'session' })).figures.map((f) => f.key).sort(), ['s-a1', 's-a2']);
  });

  test('the service token only; a bad query is a 400', async () => {
    assert.equal((await ask([], `Bearer ${observe.key}`)).statusCode, 401);
    assert.equal((await ask([], 'Bearer nope')).statusCode, 401);
    assert.equal((await ask([{ id: 'q', scope: 'galaxy', window: 'day' }])).statusCode, 400);
    assert.equal((await ask([{ id: 'q', scope: 'agent', window: 'week' }])).statusCode, 400);
  });
});
