// Money is summed exactly (whole nano-dollars) and answered rounded one way: a session with costs
// 0.1 and 0.2 spent 0.3 in every API that answers a cost, on both databases.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { migrateToLatest } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { sql } from 'kysely';
import { compareRollups } from './analytics/rollups.ts';
import { observeMigrations } from './migrations.ts';
import { ago, ingest, startTestObserve, started, type TestObserve } from './testing.ts';

const llm = (sessionId: string, minutesAgo: number, callId: string, model: string, costUsd: number) => ({
  sessionId,
  agentId: 'spender',
  timestamp: ago(minutesAgo),
  eventType: 'llm_response',
  payload: { callId, provider: 'openai', model, completion: 'ok', finishReason: 'stop', usage: { inputTokens: 10, outputTokens: 5 }, costUsd, latencyMs: 10 },
});

await describeEachDatabase('money answered exactly', (backend) => {
  let observe: TestObserve;
  const get = async <T = Record<string, unknown>>(url: string): Promise<T> => {
    const response = await observe.call({ method: 'GET', url });
    assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
    return response.json() as T;
  };

  before(async () => {
    observe = await startTestObserve(backend);
    await ingest(observe, [
      started('m1', 'spender', ago(50), { tags: ['money'] }),
      llm('m1', 40, 'a', 'gpt-4o', 0.1),
      llm('m1', 30, 'b', 'gpt-4o', 0.2),
      {
        sessionId: 'm1',
        agentId: 'spender',
        timestamp: ago(20),
        eventType: 'cost_tracked',
        payload: { provider: 'openai', model: 'gpt-4o-mini', inputTokens: 1, outputTokens: 1, totalTokens: 2, costUsd: 0.000014849999999999998 },
      },
    ]);
  });
  after(() => observe.close());

  // 0.1 + 0.2 + 0.00001485, as doubles 0.30001485000000005.
  const TOTAL = 0.30001485;

  test('sessions: list and detail', async () => {
    const { sessions } = await get<{ sessions: { id: string; totalCostUsd: number }[] }>('/api/sessions');
    assert.equal(sessions.find((s) => s.id === 'm1')?.totalCostUsd, TOTAL);
    assert.equal((await get<{ totalCostUsd: number }>('/api/sessions/m1')).totalCostUsd, TOTAL);
  });

  test('analytics: overview, LLM calls, costs and agents', async () => {
    const overview = await get<{ totals: { totalCostUsd: number }; buckets: { totalCostUsd: number }[] }>('/api/analytics');
    assert.equal(overview.totals.totalCostUsd, TOTAL);
    assert.deepEqual(
      overview.buckets.map((b) => b.totalCostUsd).filter((cost) => cost !== 0),
      [TOTAL],
    );
    const llmCalls = await get<{ summary: Record<string, number>; byModel: { costUsd: number }[] }>('/api/analytics/llm');
    assert.equal(llmCalls.summary.totalCostUsd, 0.3);
    assert.equal(llmCalls.summary.avgCostPerCall, 0.15);
    assert.deepEqual(
      llmCalls.byModel.map((m) => m.costUsd),
      [0.3],
    );
    const costs = await get<{ totals: { totalCostUsd: number }; byAgent: { totalCostUsd: number }[] }>('/api/analytics/costs');
    assert.equal(costs.totals.totalCostUsd, TOTAL);
    assert.equal(costs.byAgent[0]?.totalCostUsd, TOTAL);
    const { agents } = await get<{ agents: { agentId: string; totalCostUsd: number }[] }>('/api/analytics/agents');
    assert.equal(agents.find((a) => a.agentId === 'spender')?.totalCostUsd, TOTAL);
  });

  test('replay, reflect and the trace tree', async () => {
    const replay = await get<{ summary: { totalCost: number }; steps: { context: { cumulativeCostUsd: number } }[] }>('/api/sessions/m1/replay');
    assert.equal(replay.summary.totalCost, TOTAL);
    assert.deepEqual(
      replay.steps.map((s) => s.context.cumulativeCostUsd),
      [0, 0.1, 0.3, TOTAL],
    );
    const reflect = await get<{ insights: { type: string; data: Record<string, unknown> }[] }>('/api/reflect?analysis=cost_analysis');
    const summary = reflect.insights.find((i) => i.type === 'cost_summary');
    assert.equal(summary?.data.totalCost, TOTAL);
    assert.equal(summary?.data.avgPerSession, TOTAL);
    const gpt4o = reflect.insights.find((i) => i.type === 'model_cost' && i.data.model === 'gpt-4o');
    assert.equal(gpt4o?.data.totalCost, 0.3);
    assert.equal(gpt4o?.data.avgCostPerCall, 0.15);
    const tree = JSON.stringify(await get('/api/sessions/m1/tree'));
    assert.doesNotMatch(tree, /0\.30000000000000004|0\.000014849999999999998|0\.3000148500000000/, tree);
  });

  test('health: the mean session spend (cost efficiency)', async () => {
    const health = await get<{ dimensions: { name: string; rawValue: number }[] }>('/api/agents/spender/health');
    assert.equal(health.dimensions.find((d) => d.name === 'cost_efficiency')?.rawValue, TOTAL);
  });

  test('alerts: the spend a cost_exceeds rule measured, from the rollups and (tag scope) from the events', async () => {
    for (const scope of [{}, { tags: ['money'] }]) {
      const rule = await observe.call({
        method: 'POST',
        url: '/api/alerts/rules',
        payload: { name: `spend ${JSON.stringify(scope)}`, condition: 'cost_exceeds', threshold: 0.3, windowMinutes: 120, scope },
      });
      assert.equal(rule.statusCode, 201, rule.body);
      assert.equal(await observe.service.jobs.alerts.tick(), true);
      const { entries } = await get<{ entries: { currentValue: number }[] }>(`/api/alerts/history?ruleId=${(rule.json() as { id: string }).id}`);
      assert.equal(entries[0]?.currentValue, TOTAL, JSON.stringify(scope));
    }
  });
});

await describeEachDatabase('migration 0025: the money totals of an older database summed again exactly', (backend) => {
  test('session totals, hourly rollups and judge spend stored as sums of doubles become exact; the events stay as they were', async () => {
    const observe = await startTestObserve(backend);
    try {
      await ingest(observe, [llm('old', 40, 'a', 'gpt-4o', 0.1), llm('old', 30, 'b', 'gpt-4o', 0.2)]);
      const { db } = observe.service.context.database;
      const eventsBefore = await db.selectFrom('events').select(['id', 'hash', 'cost_usd']).orderBy('id').execute();
      // As the sums of doubles left them.
      await db
        .updateTable('sessions')
        .set({ total_cost_usd: 0.1 + 0.2 })
        .where('id', '=', 'old')
        .execute();
      await db
        .updateTable('event_rollups')
        .set({ cost_usd: 0.1 + 0.2 })
        .where('cost_usd', '<>', 0)
        .execute();
      await db
        .updateTable('judge_spend')
        .set({ usd: 0.1 + 0.2 })
        .execute();
      await sql`delete from schema_migrations where name = '0025_exact_money'`.execute(db);
      await migrateToLatest(observe.service.context.database, observeMigrations);

      const session = await db.selectFrom('sessions').select('total_cost_usd').where('id', '=', 'old').executeTakeFirstOrThrow();
      assert.equal(Number(session.total_cost_usd), 0.3);
      const rollups = await compareRollups(db);
      assert.deepEqual(rollups.stored, rollups.recomputed);
      assert.deepEqual(
        rollups.stored.map((row) => row.cost_usd).filter((cost) => cost !== 0),
        [0.3],
      );
      const spend = await db.selectFrom('judge_spend').select('usd').executeTakeFirstOrThrow();
      assert.equal(Number(spend.usd), 0);
      assert.deepEqual(await db.selectFrom('events').select(['id', 'hash', 'cost_usd']).orderBy('id').execute(), eventsBefore);
      // Ingest goes on adding exactly.
      await ingest(observe, [llm('old', 20, 'c', 'gpt-4o', 0.000014849999999999998)]);
      const detail = await observe.call({ method: 'GET', url: '/api/sessions/old' });
      assert.equal((detail.json() as { totalCostUsd: number }).totalCostUsd, 0.30001485);
      assert.equal(
        Number((await db.selectFrom('sessions').select('total_cost_usd').where('id', '=', 'old').executeTakeFirstOrThrow()).total_cost_usd),
        0.30001485,
      );
    } finally {
      await observe.close();
    }
  });
});
