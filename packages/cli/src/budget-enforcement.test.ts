/**
 * Budgets across services, with real HTTP and real time: two observe instances share one database,
 * the gate reads spend through the first while the agent ingests through the second. A hard
 * threshold crossed by an ingest pauses the agent (in observe, as it reads it) and denies its
 * requests within 1 s of the ingest; an agent that keeps spending while the cap is hit overspends
 * by no more than the calls already in flight. Both databases.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { systemClock } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { buildGateService, gateConfigFromEnvironment, type GateService } from '@vigil/gate';
import { startTestObserve, type TestObserve } from '@vigil/observe/testing';

const SERVICE_TOKEN = 'budget-enforcement-service-token-0123';
const ADMIN = 'gk_budget_enforcement_admin_key_0123456789';
/** The enforcement target of issue 39: a breach acts within 1 s of the ingest that caused it. */
const ENFORCEMENT_MS = 1000;

async function json<T>(base: string, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as T };
}

await describeEachDatabase('budgets enforced across two observe instances and a gate', (backend) => {
  let observe: TestObserve[] = [];
  let observeUrls: string[] = [];
  let gate: GateService;
  let gateUrl = '';

  before(async () => {
    const env = { INTERNAL_SERVICE_TOKEN: SERVICE_TOKEN };
    const first = await startTestObserve(backend, { clock: systemClock, env });
    const second = await startTestObserve(backend, { clock: systemClock, env, database: first.config.database, createKey: false });
    observe = [first, second];
    observeUrls = await Promise.all(observe.map((o) => o.service.app.listen({ host: '127.0.0.1', port: 0 })));
    const { dataDir, ...database } = backend.freshDatabase();
    const config = gateConfigFromEnvironment(
      { LOG_LEVEL: 'silent', GATE_ADMIN_KEY: ADMIN, OBSERVE_URL: observeUrls[0]!, INTERNAL_SERVICE_TOKEN: SERVICE_TOKEN },
      { dataDir },
    );
    gate = await buildGateService({ ...config, database }, { runJobs: true });
    gateUrl = await gate.app.listen({ host: '127.0.0.1', port: 0 });
    await json(gateUrl, ADMIN, 'POST', '/api/policies', { name: 'calls', rules: [{ match: { action: 'llm_call' }, decision: 'auto_approve' }] });
  });
  after(async () => {
    await gate?.app.close();
    for (const o of observe) await o.close();
  });

  const key = () => observe[0]!.key;
  let n = 0;
  /** One spend of `usd` by `agentId`, ingested through observe instance `instance`; resolves when acknowledged. */
  const spend = async (instance: number, agentId: string, usd: number): Promise<void> => {
    n += 1;
    const answer = await json(observeUrls[instance]!, key(), 'POST', '/api/events', {
      events: [
        {
          sessionId: `${agentId}-session`,
          agentId,
          eventType: 'cost_tracked',
          payload: { provider: 'openai', model: 'gpt-4o', inputTokens: 1, outputTokens: 1, totalTokens: 2, costUsd: usd, n },
        },
      ],
    });
    assert.equal(answer.status, 201, JSON.stringify(answer.body));
  };
  const pausedAt = async (agentId: string) => (await json<{ pausedAt: string | null }>(observeUrls[0]!, key(), 'GET', `/api/agents/${agentId}`)).body.pausedAt;
  const ask = async (agentId: string) =>
    (await json<{ status: string; decidedBy: string | null }>(gateUrl, ADMIN, 'POST', '/api/requests', { action: 'llm_call', context: { agentId } })).body;

  test('a hard threshold crossed by an ingest on the other observe instance pauses the agent and denies its requests within 1 s; the figure is the costs analytics’ figure', async () => {
    const budget = await json<{ id: string }>(gateUrl, ADMIN, 'POST', '/api/budgets', {
      name: 'loop-cap',
      scope: 'agent',
      scopeValue: 'looper',
      window: 'day',
      softUsd: 0.5,
      hardUsd: 1,
    });
    assert.equal(budget.status, 201, JSON.stringify(budget.body));
    await spend(1, 'looper', 0.4);
    await spend(1, 'looper', 0.3);
    await new Promise((resolve) => setTimeout(resolve, 600));
    assert.equal(await pausedAt('looper'), null, 'under the hard threshold: not paused');
    assert.equal((await ask('looper')).status, 'pending', 'over the soft threshold: routed to a person');

    await spend(1, 'looper', 0.4);
    const crossed = Date.now();
    let paused: string | null = null;
    let denied = false;
    while (Date.now() - crossed < 3000 && (paused === null || !denied)) {
      paused ??= await pausedAt('looper');
      if (!denied) denied = (await ask('looper')).status === 'denied';
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const elapsed = Date.now() - crossed;
    assert.ok(paused !== null && denied, `paused ${paused}, denied ${denied}`);
    assert.ok(elapsed <= ENFORCEMENT_MS, `enforced ${elapsed} ms after the ingest (target ${ENFORCEMENT_MS} ms)`);

    const detail = await json<{ figures: { key: string; spendUsd: number; level: string }[] }>(gateUrl, ADMIN, 'GET', `/api/budgets/${budget.body.id}`);
    const costs = await json<{ totals: { totalCostUsd: number } }>(
      observeUrls[1]!,
      key(),
      'GET',
      `/api/analytics/costs?agentId=looper&from=${new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate())).toISOString()}`,
    );
    assert.deepEqual(
      detail.body.figures.map((f) => [f.key, f.spendUsd, f.level]),
      [['looper', costs.body.totals.totalCostUsd, 'hard']],
    );
    assert.equal(costs.body.totals.totalCostUsd, 1.1);
  });

  test('an agent that keeps spending while the cap is hit overspends by at most the calls in flight', async () => {
    const cap = 2;
    const cost = 0.05;
    const budget = await json(gateUrl, ADMIN, 'POST', '/api/budgets', { name: 'chaos-cap', scope: 'agent', scopeValue: 'chaos', window: 'day', hardUsd: cap });
    assert.equal(budget.status, 201);
    const workers = 4;
    let spent = 0;
    let crossedAt = Number.POSITIVE_INFINITY;
    const approvedAfterCrossing: number[] = [];
    const worker = async (w: number) => {
      for (;;) {
        const decision = await ask('chaos');
        if (decision.status !== 'approved') return;
        if (Date.now() > crossedAt) approvedAfterCrossing.push(Date.now() - crossedAt);
        // The call it was approved for, then its cost, through either observe instance.
        await spend(w % 2, 'chaos', cost);
        spent = Math.round((spent + cost) * 100) / 100;
        if (spent >= cap && crossedAt === Number.POSITIVE_INFINITY) crossedAt = Date.now();
      }
    };
    await Promise.all(Array.from({ length: workers }, (_, w) => worker(w)));
    const overspend = Math.round((spent - cap) * 100) / 100;
    // Every call approved after the crossing ingest was approved before the gate acted on it (≤ 1 s).
    assert.ok(
      approvedAfterCrossing.every((ms) => ms <= ENFORCEMENT_MS),
      `approvals after the crossing: ${approvedAfterCrossing.join(', ')} ms`,
    );
    assert.ok(
      overspend <= (approvedAfterCrossing.length + workers) * cost + 1e-9,
      `overspend $${overspend} with ${approvedAfterCrossing.length} late approvals`,
    );
    assert.notEqual(await pausedAt('chaos'), null);
    assert.equal((await ask('chaos')).status, 'denied', 'still denied afterwards');
  });
});
