import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import { describeEachDatabase, TestHttpServer } from '@vigil/platform/testing';
import { assertGateError, startTestGate, type TestGate } from '../testing.ts';
import { windowStart } from './store.ts';

const SERVICE_TOKEN = 'service-token-for-budget-tests-0123';

interface Budget {
  id: string;
  name: string;
  scope: string;
  scopeValue: string | null;
  window: string;
  softUsd: number | null;
  hardUsd: number | null;
  pauseOnHard: boolean;
  enabled: boolean;
}

interface SpendQuery {
  id: string;
  scope: string;
  value?: string;
  window: string;
}

interface Created {
  id: string;
  status: string;
  decidedBy: string | null;
  decisionReason: string | null;
}

/**
 * Observe as far as the budgets read it: POST /api/internal/spend answers `spend` (by scope value,
 * or `*`) for every query, and pauses are recorded.
 */
function fakeObserve(spend: Map<string, { usd: number; agents: string[] }>, clock: () => number): TestHttpServer {
  return new TestHttpServer((request, res) => {
    assert.equal(request.headers.authorization, `Bearer ${SERVICE_TOKEN}`);
    if (request.url === '/api/internal/spend') {
      const { queries } = JSON.parse(request.body) as { queries: SpendQuery[] };
      const results = queries.map((q) => {
        const key = q.value ?? '*';
        const figure = spend.get(`${q.scope}:${key}`);
        return { id: q.id, windowStart: windowStart(q.window, clock()), figures: figure ? [{ key, spendUsd: figure.usd, agentIds: figure.agents }] : [] };
      });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ at: clock(), results }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
}

await describeEachDatabase('gate budgets', (backend) => {
  let gate: TestGate;
  let observe: TestHttpServer;
  const spend = new Map<string, { usd: number; agents: string[] }>();
  beforeEach(async () => {
    spend.clear();
    let now = () => 0;
    observe = await fakeObserve(spend, () => now()).start();
    gate = await startTestGate(backend, { env: { OBSERVE_URL: observe.url, INTERNAL_SERVICE_TOKEN: SERVICE_TOKEN } });
    now = () => gate.clock.now();
  });
  afterEach(async () => {
    await gate.close();
    await observe.stop();
  });

  const budget = async (payload: object): Promise<Budget> => {
    const response = await gate.call({ method: 'POST', url: '/api/budgets', payload });
    assert.equal(response.statusCode, 201, response.body);
    return response.json() as Budget;
  };
  const request = async (action: string, context: object): Promise<Created> => {
    const response = await gate.call({ method: 'POST', url: '/api/requests', payload: { action, context } });
    assert.equal(response.statusCode, 201, response.body);
    return response.json() as Created;
  };
  /** One tick of the budget job (its lease lasts a little less than its interval). */
  const poll = async () => {
    gate.clock.advance(250);
    assert.equal(await gate.service.jobs.budgets.tick(), true, 'the tick ran');
  };
  const pauses = () => observe.requests.filter((r) => r.url.startsWith('/api/internal/agents/'));
  const autoApprove = () =>
    gate.call({ method: 'POST', url: '/api/policies', payload: { name: 'deploys', rules: [{ match: { action: 'deploy' }, decision: 'auto_approve' }] } });

  test('under the soft threshold nothing changes; over it a request a policy would approve is routed to a person; over the hard one it is denied and the agent paused, once', async () => {
    await autoApprove();
    const b = await budget({ name: 'agent-a-daily', scope: 'agent', scopeValue: 'agent-a', window: 'day', softUsd: 10, hardUsd: 50 });
    assert.equal(b.pauseOnHard, true);
    spend.set('agent:agent-a', { usd: 9.99, agents: ['agent-a'] });
    await poll();
    assert.equal((await request('deploy', { agentId: 'agent-a' })).status, 'approved');

    spend.set('agent:agent-a', { usd: 12.5, agents: ['agent-a'] });
    await poll();
    const soft = await request('deploy', { agentId: 'agent-a', sessionId: 's1' });
    assert.equal(soft.status, 'pending', 'routed to a person');
    // Another agent is not covered.
    assert.equal((await request('deploy', { agentId: 'agent-b' })).status, 'approved');
    const trail = (await gate.call({ method: 'GET', url: `/api/requests/${soft.id}/audit` })).json() as { event: string; details?: Record<string, unknown> }[];
    assert.deepEqual((trail[0]!.details?.budget as { level: string; budgetId: string }).level, 'soft');
    const policyDecision = ((await gate.call({ method: 'GET', url: `/api/requests/${soft.id}` })).json() as { policyDecision: { decision: string } })
      .policyDecision;
    assert.equal(policyDecision.decision, 'route_to_human');
    assert.equal(pauses().length, 0);

    spend.set('agent:agent-a', { usd: 50, agents: ['agent-a'] });
    await poll();
    await poll();
    const hard = await request('deploy', { agentId: 'agent-a' });
    assert.equal(hard.status, 'denied');
    assert.equal(hard.decidedBy, `budget:${b.id}`);
    assert.match(hard.decisionReason!, /Budget "agent-a-daily" hard threshold \$50 reached: \$50 spent/);
    assert.deepEqual(
      pauses().map((r) => [r.url, (JSON.parse(r.body) as { reason: string }).reason.slice(0, 40)]),
      [['/api/internal/agents/agent-a/pause', 'Budget "agent-a-daily" hard threshold $5']],
      'paused once',
    );

    // Each threshold crossed is one entry of the change log.
    const changes = (await gate.call({ method: 'GET', url: '/api/audit/changes?resource=budget' })).json() as {
      entries: { action: string; actor: string; after: { level?: string; spendUsd?: number } | null }[];
    };
    assert.deepEqual(
      changes.entries.map((c) => [c.action, c.after?.level ?? null]),
      [
        ['breached', 'hard'],
        ['breached', 'soft'],
        ['created', null],
      ],
    );
    assert.equal(changes.entries[0]!.actor, 'system:budgets');
    const detail = (await gate.call({ method: 'GET', url: `/api/budgets/${b.id}` })).json() as {
      figures: { key: string; spendUsd: number; level: string; updatedAt: string }[];
      breaches: { level: string }[];
    };
    assert.deepEqual(detail.figures, [
      { key: 'agent-a', spendUsd: 50, level: 'hard', agentIds: ['agent-a'], updatedAt: detail.figures[0]!.updatedAt },
    ] as never);
    assert.equal(detail.breaches.length, 2);

    // A new day is a new window.
    gate.clock.advance(24 * 3600_000);
    spend.set('agent:agent-a', { usd: 1, agents: ['agent-a'] });
    await poll();
    assert.equal((await request('deploy', { agentId: 'agent-a' })).status, 'approved');
  });

  test('a figure read out of order never lowers the spend of its window', async () => {
    const b = await budget({ name: 'tenant-month', scope: 'tenant', window: 'month', hardUsd: 100, pauseOnHard: false });
    spend.set('tenant:*', { usd: 120, agents: ['x', 'y'] });
    await poll();
    spend.set('tenant:*', { usd: 80, agents: ['x'] });
    await poll();
    const denied = await request('anything', { agentId: 'z' });
    assert.equal(denied.status, 'denied');
    assert.equal(denied.decidedBy, `budget:${b.id}`);
    assert.equal(pauses().length, 0, 'pauseOnHard false');
  });

  test('policies read budgets: auto-approve unless today’s spend of this agent is over $50', async () => {
    await budget({ name: 'agent-day', scope: 'agent', scopeValue: null, window: 'day' });
    await gate.call({
      method: 'POST',
      url: '/api/policies',
      payload: { name: 'cheap', rules: [{ match: { action: 'deploy', 'budgets.agent-day.spendUsd': { $lte: 50 } }, decision: 'auto_approve' }] },
    });
    spend.set('agent:*', { usd: 0, agents: [] });
    assert.equal((await request('deploy', { agentId: 'a1' })).status, 'approved', 'no figure yet: $0');
    // Each agent's figure (scopeValue null): the fake answers one key per query, named by the agent asked for.
    spend.clear();
    const answer = new Map([['a1', 60]]);
    observe.handler = (req, res) => {
      if (req.url !== '/api/internal/spend') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      const { queries } = JSON.parse(req.body) as { queries: SpendQuery[] };
      const results = queries.map((q) => ({
        id: q.id,
        windowStart: windowStart(q.window, gate.clock.now()),
        figures: [...answer].map(([key, usd]) => ({ key, spendUsd: usd, agentIds: [key] })),
      }));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ at: gate.clock.now(), results }));
    };
    await poll();
    assert.equal((await request('deploy', { agentId: 'a1' })).status, 'pending', 'over $50 today');
    assert.equal((await request('deploy', { agentId: 'a2' })).status, 'approved');
    // A param named like the namespace cannot stand in for the spend.
    const spoof = await gate.call({
      method: 'POST',
      url: '/api/requests',
      payload: { action: 'deploy', params: { budgets: { 'agent-day': { spendUsd: 0 } } }, context: { agentId: 'a1' } },
    });
    assert.equal((spoof.json() as Created).status, 'pending');
  });

  test('session and tag budgets cover the requests of their session and of the agents that spent under the tag', async () => {
    await budget({ name: 'per-session', scope: 'session', scopeValue: null, window: 'session', hardUsd: 5 });
    await budget({ name: 'team-x', scope: 'tag', scopeValue: 'team-x', window: 'hour', hardUsd: 20 });
    observe.handler = (req, res) => {
      if (req.url !== '/api/internal/spend') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      const { queries } = JSON.parse(req.body) as { queries: SpendQuery[] };
      const results = queries.map((q) => ({
        id: q.id,
        windowStart: windowStart(q.window, gate.clock.now()),
        figures: q.scope === 'session' ? [{ key: 's-big', spendUsd: 7, agentIds: ['a'] }] : [{ key: 'team-x', spendUsd: 25, agentIds: ['b'] }],
      }));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ at: gate.clock.now(), results }));
    };
    await poll();
    assert.equal((await request('x', { agentId: 'a', sessionId: 's-big' })).status, 'denied');
    assert.equal((await request('x', { agentId: 'a', sessionId: 's-small' })).status, 'pending');
    assert.equal((await request('x', { agentId: 'b', sessionId: 's-other' })).status, 'denied', 'b spent under team-x');
    assert.deepEqual(
      pauses()
        .map((r) => r.url)
        .sort(),
      ['/api/internal/agents/a/pause', '/api/internal/agents/b/pause'],
    );
  });

  test('a tag budget covers a request whose context carries the tag from its first request, before its agent spent anything under the tag', async () => {
    await budget({ name: 'team-y', scope: 'tag', scopeValue: 'team-y', window: 'day', hardUsd: 20 });
    await budget({ name: 'team-z', scope: 'tag', scopeValue: 'team-z', window: 'day', softUsd: 50 });
    await gate.call({
      method: 'POST',
      url: '/api/policies',
      payload: { name: 'cheap team-z', rules: [{ match: { action: 'summarize', 'budgets.team-z.spendUsd': { $lte: 50 } }, decision: 'auto_approve' }] },
    });
    // Agent b spent $25 under team-y; agent c, new to the tag, has spent nothing anywhere.
    spend.set('tag:team-y', { usd: 25, agents: ['b'] });
    await poll();
    assert.equal((await request('deploy', { agentId: 'c', tags: ['team-y'] })).status, 'denied', "c's first request under team-y is over its hard cap");
    assert.equal((await request('deploy', { agentId: 'c' })).status, 'pending', 'without the tag c is not covered');
    assert.equal((await request('deploy', { agentId: 'c', tags: ['other', 7] })).status, 'pending');
    // A tag with no spend at all yet: policies read the budget at $0 for a request carrying the tag, and not otherwise.
    assert.equal((await request('summarize', { agentId: 'c', tags: ['team-z'] })).status, 'approved');
    assert.equal((await request('summarize', { agentId: 'c' })).status, 'pending');
  });

  test('GET /api/requests/:id/budgets: the budgets covering a request now, with spend and thresholds; 404 for an unknown request', async () => {
    await budget({ name: 'agent-a-daily', scope: 'agent', scopeValue: 'agent-a', window: 'day', softUsd: 10, hardUsd: 50 });
    await budget({ name: 'team-q', scope: 'tag', scopeValue: 'team-q', window: 'hour', hardUsd: 5 });
    await budget({ name: 'agent-b-daily', scope: 'agent', scopeValue: 'agent-b', window: 'day', hardUsd: 5 });
    spend.set('agent:agent-a', { usd: 12.5, agents: ['agent-a'] });
    await poll();
    const routed = await request('deploy', { agentId: 'agent-a', tags: ['team-q'] });
    const answer = await gate.call({ method: 'GET', url: `/api/requests/${routed.id}/budgets` });
    assert.equal(answer.statusCode, 200, answer.body);
    assert.deepEqual(answer.json(), {
      budgets: [
        { name: 'agent-a-daily', spendUsd: 12.5, softUsd: 10, hardUsd: 50, level: 'soft' },
        { name: 'team-q', spendUsd: 0, softUsd: null, hardUsd: 5, level: 'ok' },
      ],
    });
    assertGateError(await gate.call({ method: 'GET', url: '/api/requests/nope/budgets' }), 404, 'not_found');
  });

  test('CRUD: validation, 404s, scopes, the change log, and a disabled or edited budget is not applied', async () => {
    for (const payload of [
      { name: 'has.dot', scope: 'agent', window: 'day' },
      { name: 't', scope: 'tag', window: 'day' },
      { name: 't', scope: 'tenant', scopeValue: 'x', window: 'day' },
      { name: 't', scope: 'agent', window: 'day', softUsd: 10, hardUsd: 5 },
      { name: 't', scope: 'agent', window: 'week' },
      { name: 't', scope: 'agent', window: 'day', hardUsd: -1 },
    ]) {
      assertGateError(await gate.call({ method: 'POST', url: '/api/budgets', payload }), 400, 'bad_request', JSON.stringify(payload));
    }
    const b = await budget({ name: 'all', scope: 'tenant', window: 'day', hardUsd: 1 });
    assertGateError(await gate.call({ method: 'POST', url: '/api/budgets', payload: { name: 'all', scope: 'tenant', window: 'hour' } }), 400, 'bad_request');
    assertGateError(await gate.call({ method: 'PUT', url: `/api/budgets/${b.id}`, payload: { softUsd: 2 } }), 400, 'bad_request');
    assertGateError(await gate.call({ method: 'PUT', url: '/api/budgets/nope', payload: { softUsd: 0 } }), 404, 'not_found');
    assertGateError(await gate.call({ method: 'GET', url: '/api/budgets/nope' }), 404, 'not_found');
    assertGateError(await gate.call({ method: 'DELETE', url: '/api/budgets/nope' }), 404, 'not_found');
    const reader = await gate.createKey(['request:read']);
    assertGateError(await gate.call({ method: 'POST', url: '/api/budgets', payload: { name: 'r', scope: 'tenant', window: 'day' } }, reader), 403, 'forbidden');
    assert.equal((await gate.call({ method: 'GET', url: '/api/budgets' }, reader)).statusCode, 200);

    spend.set('tenant:*', { usd: 3, agents: ['a'] });
    await poll();
    assert.equal((await request('x', { agentId: 'a' })).status, 'denied');
    const disabled = await gate.call({ method: 'PUT', url: `/api/budgets/${b.id}`, payload: { enabled: false } });
    assert.equal(disabled.statusCode, 200, disabled.body);
    assert.equal((await request('x', { agentId: 'a' })).status, 'pending');
    await gate.call({ method: 'PUT', url: `/api/budgets/${b.id}`, payload: { enabled: true } });
    assert.equal((await request('x', { agentId: 'a' })).status, 'denied');
    // Raised in the database behind the gate's back: not applied at all.
    await gate.service.context.database.db.updateTable('budgets').set({ hard_usd: 1000 }).where('id', '=', b.id).execute();
    gate.clock.advance(gate.config.cacheRefreshMs + 1);
    assert.equal((await request('x', { agentId: 'a' })).status, 'pending');

    assert.equal((await gate.call({ method: 'DELETE', url: `/api/budgets/${b.id}` })).statusCode, 200);
    const changes = (await gate.call({ method: 'GET', url: '/api/audit/changes?resource=budget' })).json() as { entries: { action: string }[] };
    assert.deepEqual(
      changes.entries.map((c) => c.action),
      ['deleted', 'enabled', 'disabled', 'breached', 'created'],
    );
  });
});
