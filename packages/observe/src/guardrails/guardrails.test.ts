import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase, sendJson, TestHttpServer, type TestBackend } from '@vigil/platform/testing';
import { assertErrorBody, clockOf, ingest, startTestObserve, type TestObserve } from '../testing.ts';
import { compare, conditionMet } from './engine.ts';

const MINUTE = 60_000;

interface Rule {
  id: string;
  name: string;
  description: string | null;
  agentId: string | null;
  conditionType: string;
  conditionConfig: Record<string, unknown>;
  actionType: string;
  actionConfig: Record<string, unknown>;
  cooldownMinutes: number;
  enabled: boolean;
  dryRun: boolean;
  triggerCount: number;
  lastTriggeredAt: string | null;
  createdAt: string;
  updatedAt: string;
}

interface Trigger {
  id: string;
  ruleId: string;
  ruleName: string;
  agentId: string;
  triggeredAt: string;
  conditionType: string;
  currentValue: number;
  threshold: number;
  actionType: string;
  dryRun: boolean;
  actionResult: { status: string; detail: string };
}

interface Agent {
  id: string;
  pausedAt: string | null;
  pauseReason: string | null;
  modelOverride: string | null;
  approvalPolicyId: string | null;
}

type Body = Record<string, unknown>;

const iso = (observe: TestObserve, offsetMs = 0): string => new Date(observe.clock.now() + offsetMs).toISOString();

async function createRule(observe: TestObserve, body: Body): Promise<Rule> {
  const response = await observe.call({ method: 'POST', url: '/api/guardrails', payload: body });
  assert.equal(response.statusCode, 201, response.body);
  return response.json() as Rule;
}

async function getJson<T>(observe: TestObserve, url: string): Promise<T> {
  const response = await observe.call({ method: 'GET', url });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as T;
}

const agentOf = (observe: TestObserve, id: string) => getJson<Agent>(observe, `/api/agents/${id}`);
const history = (observe: TestObserve, query = '') =>
  getJson<{ triggers: Trigger[]; total: number; hasMore: boolean }>(observe, `/api/guardrails/history${query}`);

/** `errors` tool errors and `ok` tool responses for the agent, now. */
function toolEvents(observe: TestObserve, agentId: string, sessionId: string, ok: number, errors: number): Body[] {
  const events: Body[] = [];
  for (let i = 0; i < ok; i += 1) {
    events.push({
      sessionId,
      agentId,
      eventType: 'tool_response',
      timestamp: iso(observe),
      payload: { callId: `ok${i}`, toolName: 'search', result: 'fine', durationMs: 10 },
    });
  }
  for (let i = 0; i < errors; i += 1) {
    events.push({
      sessionId,
      agentId,
      eventType: 'tool_error',
      timestamp: iso(observe),
      payload: { callId: `e${i}`, toolName: 'search', error: 'boom', durationMs: 10 },
    });
  }
  return events;
}

function llmResponse(observe: TestObserve, agentId: string, sessionId: string, costUsd: number, callId = 'c1'): Body {
  return {
    sessionId,
    agentId,
    eventType: 'llm_response',
    timestamp: iso(observe),
    payload: {
      callId,
      provider: 'openai',
      model: 'gpt-4o',
      completion: 'hello',
      finishReason: 'stop',
      usage: { inputTokens: 100, outputTokens: 20 },
      costUsd,
      latencyMs: 300,
    },
  };
}

const errorRatePause = (agentId?: string): Body => ({
  name: 'too many errors',
  ...(agentId === undefined ? {} : { agentId }),
  conditionType: 'error_rate_threshold',
  conditionConfig: { threshold: 50 },
  actionType: 'pause_agent',
  actionConfig: { reason: 'error rate over 50%' },
});

test('conditions: error rate and cost fire strictly above, health strictly below, custom metrics by operator', () => {
  const errorRate = { conditionType: 'error_rate_threshold' as const, conditionConfig: { threshold: 50, windowMs: 300_000 } };
  assert.equal(conditionMet(errorRate, 50), false);
  assert.equal(conditionMet(errorRate, 50.01), true);
  const cost = { conditionType: 'cost_limit' as const, conditionConfig: { maxCostUsd: 1, periodMs: 86_400_000 } };
  assert.equal(conditionMet(cost, 1), false);
  assert.equal(conditionMet(cost, 1.0001), true);
  const health = { conditionType: 'health_score_threshold' as const, conditionConfig: { minScore: 70 } };
  assert.equal(conditionMet(health, 70), false);
  assert.equal(conditionMet(health, 69.99), true);
  const table: [string, number, boolean][] = [
    ['gt', 5, false],
    ['gt', 6, true],
    ['gte', 4, false],
    ['gte', 5, true],
    ['lt', 5, false],
    ['lt', 4, true],
    ['lte', 6, false],
    ['lte', 5, true],
    ['eq', 5.5, false],
    ['eq', 5, true],
  ];
  for (const [operator, value, expected] of table) {
    assert.equal(compare(value, operator as 'gt', 5), expected, `${value} ${operator} 5`);
    const custom = { conditionType: 'custom_metric' as const, conditionConfig: { metricKey: 'q', operator: operator as 'gt', value: 5 } };
    assert.equal(conditionMet(custom, value), expected);
  }
});

await describeEachDatabase('guardrails', (backend: TestBackend) => {
  let observe: TestObserve;
  let receiver: TestHttpServer;

  before(async () => {
    receiver = await new TestHttpServer((_request, res) => sendJson(res, 200, { ok: true })).start();
  });
  after(async () => {
    await receiver.stop();
  });

  /** A fresh service whose guardrails run after each ingest commit, as in production. */
  async function fresh(): Promise<TestObserve> {
    observe = await startTestObserve(backend, { evaluateGuardrails: true });
    return observe;
  }

  async function settle(): Promise<void> {
    await observe.service.guardrails.idle();
  }

  test('create applies the defaults and the stored-rule fields; get, list (newest first), update and delete', async () => {
    await fresh();
    try {
      const first = await createRule(observe, errorRatePause());
      assert.deepEqual(Object.keys(first).sort(), [
        'actionConfig',
        'actionType',
        'agentId',
        'conditionConfig',
        'conditionType',
        'cooldownMinutes',
        'createdAt',
        'description',
        'dryRun',
        'enabled',
        'id',
        'lastTriggeredAt',
        'name',
        'triggerCount',
        'updatedAt',
      ]);
      assert.equal(first.enabled, true);
      assert.equal(first.dryRun, false);
      assert.equal(first.cooldownMinutes, 15);
      assert.equal(first.agentId, null);
      assert.equal(first.description, null);
      assert.deepEqual(first.conditionConfig, { threshold: 50, windowMs: 300_000 });
      assert.equal(first.triggerCount, 0);
      assert.equal(first.lastTriggeredAt, null);
      assert.equal(first.createdAt, '2026-11-22T10:00:00.000Z');

      clockOf(observe).advance(1000);
      const cost = await createRule(observe, {
        name: 'budget',
        agentId: 'agent-b',
        conditionType: 'cost_limit',
        conditionConfig: { maxCostUsd: 5 },
        actionType: 'downgrade_model',
        actionConfig: { targetModel: 'gpt-4o-mini' },
        cooldownMinutes: 0,
        dryRun: true,
        enabled: false,
      });
      assert.deepEqual(cost.conditionConfig, { maxCostUsd: 5, periodMs: 86_400_000 });
      assert.equal(cost.cooldownMinutes, 0);
      assert.equal(cost.dryRun, true);
      assert.equal(cost.enabled, false);

      assert.deepEqual(await getJson<Rule>(observe, `/api/guardrails/${first.id}`), first);
      assert.deepEqual(
        (await getJson<{ rules: Rule[] }>(observe, '/api/guardrails')).rules.map((r) => r.id),
        [cost.id, first.id],
      );

      clockOf(observe).advance(1000);
      const put = await observe.call({
        method: 'PUT',
        url: `/api/guardrails/${first.id}`,
        payload: { conditionConfig: { threshold: 20, windowMs: 60_000 }, enabled: false },
      });
      assert.equal(put.statusCode, 200, put.body);
      const updated = put.json() as Rule;
      assert.deepEqual(updated.conditionConfig, { threshold: 20, windowMs: 60_000 });
      assert.equal(updated.enabled, false);
      assert.equal(updated.name, 'too many errors');
      assert.equal(updated.updatedAt, '2026-11-22T10:00:02.000Z');
      assert.equal(updated.createdAt, first.createdAt);

      // A change of condition type without a config that fits it leaves the rule as it was.
      const mismatched = await observe.call({ method: 'PUT', url: `/api/guardrails/${first.id}`, payload: { conditionType: 'custom_metric' } });
      const body = assertErrorBody(mismatched, 400);
      assert.ok(
        body.details?.some((d) => d.path.startsWith('conditionConfig')),
        mismatched.body,
      );
      assert.deepEqual(await getJson<Rule>(observe, `/api/guardrails/${first.id}`), updated);

      const deleted = await observe.call({ method: 'DELETE', url: `/api/guardrails/${first.id}` });
      assert.equal(deleted.statusCode, 200);
      assert.deepEqual(deleted.json(), { id: first.id, deleted: true, ok: true });
      assertErrorBody(await observe.call({ method: 'GET', url: `/api/guardrails/${first.id}` }), 404);
      assertErrorBody(await observe.call({ method: 'DELETE', url: `/api/guardrails/${first.id}` }), 404);
      assertErrorBody(await observe.call({ method: 'PUT', url: `/api/guardrails/${first.id}`, payload: { enabled: true } }), 404);
      assertErrorBody(await observe.call({ method: 'GET', url: `/api/guardrails/${first.id}/status` }), 404);
    } finally {
      await observe.close();
    }
  });

  test("GET /api/guardrails?agentId=: the rules that apply to that agent (its own and every agent's), never another agent's", async () => {
    await fresh();
    try {
      const everyAgent = await createRule(observe, errorRatePause());
      const mine = await createRule(observe, errorRatePause('agent-a'));
      const theirs = await createRule(observe, errorRatePause('agent-b'));
      const ids = async (query: string) => (await getJson<{ rules: Rule[] }>(observe, `/api/guardrails${query}`)).rules.map((rule) => rule.id);
      assert.deepEqual(await ids(''), [theirs.id, mine.id, everyAgent.id]);
      assert.deepEqual(await ids('?agentId=agent-a'), [mine.id, everyAgent.id]);
      assert.deepEqual(await ids('?agentId=zzz'), [everyAgent.id]);
      const misspelt = await observe.call({ method: 'GET', url: '/api/guardrails?agent=agent-a' });
      assert.equal(misspelt.statusCode, 400, misspelt.body);
      assert.match((misspelt.json() as { error: string }).error, /agent: unknown query parameter/);
    } finally {
      await observe.close();
    }
  });

  test('description: optional text stored and answered by create, get, list, PUT and status; null clears it; over 1,000 characters is 400', async () => {
    await fresh();
    try {
      const text = 'Stops a runaway agent.';
      const rule = await createRule(observe, { ...errorRatePause(), description: text });
      assert.equal(rule.description, text);
      assert.equal((await getJson<Rule>(observe, `/api/guardrails/${rule.id}`)).description, text);
      assert.equal((await getJson<{ rules: Rule[] }>(observe, '/api/guardrails')).rules[0]!.description, text);
      assert.equal((await getJson<{ rule: Rule }>(observe, `/api/guardrails/${rule.id}/status`)).rule.description, text);

      const put = (payload: Body) => observe.call({ method: 'PUT', url: `/api/guardrails/${rule.id}`, payload });
      assert.equal(((await put({ description: 'y'.repeat(1000) })).json() as Rule).description, 'y'.repeat(1000));
      assert.equal(((await put({ cooldownMinutes: 5 })).json() as Rule).description, 'y'.repeat(1000), 'a PUT without description keeps it');
      assert.equal(((await put({ description: null })).json() as Rule).description, null);
      assert.equal((await getJson<Rule>(observe, `/api/guardrails/${rule.id}`)).description, null);

      for (const response of [
        await observe.call({ method: 'POST', url: '/api/guardrails', payload: { ...errorRatePause(), description: 'x'.repeat(1001) } }),
        await put({ description: 'x'.repeat(1001) }),
      ]) {
        assert.deepEqual(
          assertErrorBody(response, 400).details?.map((d) => d.path),
          ['description'],
        );
      }
      assertErrorBody(await put({ description: ['not', 'text'] }), 400);
      assert.equal((await getJson<{ rules: Rule[] }>(observe, '/api/guardrails')).rules.length, 1);
      assert.equal((await getJson<Rule>(observe, `/api/guardrails/${rule.id}`)).description, null);
    } finally {
      await observe.close();
    }
  });

  test('PUT accepts the rule GET answered, with changes: id, counters and times are ignored; a typo is still 400', async () => {
    await fresh();
    try {
      const rule = await createRule(observe, { ...errorRatePause(), description: 'before' });
      clockOf(observe).advance(1000);
      const read = await getJson<Rule>(observe, `/api/guardrails/${rule.id}`);
      const response = await observe.call({
        method: 'PUT',
        url: `/api/guardrails/${rule.id}`,
        payload: {
          ...read,
          dryRun: true,
          description: 'after',
          id: 'other',
          triggerCount: 99,
          lastTriggeredAt: iso(observe),
          createdAt: iso(observe),
          updatedAt: iso(observe, -5000),
        },
      });
      assert.equal(response.statusCode, 200, response.body);
      const expected = { ...rule, dryRun: true, description: 'after', updatedAt: iso(observe) };
      assert.deepEqual(response.json(), expected);
      assert.deepEqual(await getJson<Rule>(observe, `/api/guardrails/${rule.id}`), expected);

      const typo = assertErrorBody(await observe.call({ method: 'PUT', url: `/api/guardrails/${rule.id}`, payload: { ...read, dryrun: false } }), 400);
      assert.match(typo.error, /dryrun/);
      assert.deepEqual(await getJson<Rule>(observe, `/api/guardrails/${rule.id}`), expected);
    } finally {
      await observe.close();
    }
  });

  test('invalid rules are a 400 in the error body and store nothing', async () => {
    await fresh();
    try {
      const base = errorRatePause();
      const cases: [string, Body, string][] = [
        ['missing name', { ...base, name: undefined }, 'name'],
        ['unknown condition', { ...base, conditionType: 'vibes' }, 'conditionType'],
        ['unknown action', { ...base, actionType: 'explode' }, 'actionType'],
        ['threshold over 100', { ...base, conditionConfig: { threshold: 101 } }, 'conditionConfig.threshold'],
        ['threshold below 0', { ...base, conditionConfig: { threshold: -1 } }, 'conditionConfig.threshold'],
        ['windowMs not whole', { ...base, conditionConfig: { threshold: 5, windowMs: 1.5 } }, 'conditionConfig.windowMs'],
        ['unknown config key', { ...base, conditionConfig: { threshold: 5, thresold: 6 } }, 'conditionConfig'],
        ['minScore over 100', { ...base, conditionType: 'health_score_threshold', conditionConfig: { minScore: 101 } }, 'conditionConfig.minScore'],
        [
          'unknown dimension',
          { ...base, conditionType: 'health_score_threshold', conditionConfig: { minScore: 50, dimension: 'vibes' } },
          'conditionConfig.dimension',
        ],
        ['negative cost', { ...base, conditionType: 'cost_limit', conditionConfig: { maxCostUsd: -1 } }, 'conditionConfig.maxCostUsd'],
        [
          'bad operator',
          { ...base, conditionType: 'custom_metric', conditionConfig: { metricKey: 'a', operator: 'ne', value: 1 } },
          'conditionConfig.operator',
        ],
        [
          'bad metric key',
          { ...base, conditionType: 'custom_metric', conditionConfig: { metricKey: "a'); drop", operator: 'gt', value: 1 } },
          'conditionConfig.metricKey',
        ],
        ['missing value', { ...base, conditionType: 'custom_metric', conditionConfig: { metricKey: 'a', operator: 'gt' } }, 'conditionConfig.value'],
        ['webhook not http', { ...base, actionType: 'notify_webhook', actionConfig: { url: 'ftp://example.com' } }, 'actionConfig.url'],
        ['missing targetModel', { ...base, actionType: 'downgrade_model', actionConfig: {} }, 'actionConfig.targetModel'],
        ['missing policyId', { ...base, actionType: 'approval_policy', actionConfig: {} }, 'actionConfig.policyId'],
        ['cooldown over a week', { ...base, cooldownMinutes: 10_081 }, 'cooldownMinutes'],
        ['cooldown negative', { ...base, cooldownMinutes: -1 }, 'cooldownMinutes'],
        ['dryRun not boolean', { ...base, dryRun: 'yes' }, 'dryRun'],
        ['unknown field', { ...base, severity: 'high' }, ''],
      ];
      for (const [label, body, path] of cases) {
        const response = await observe.call({ method: 'POST', url: '/api/guardrails', payload: body });
        const error = assertErrorBody(response, 400);
        if (path)
          assert.ok(
            error.details?.some((d) => d.path === path),
            `${label}: ${response.body}`,
          );
      }
      assertErrorBody(await observe.call({ method: 'GET', url: '/api/guardrails/history?limit=0' }), 400);
      assertErrorBody(await observe.call({ method: 'GET', url: '/api/guardrails/history?limit=501' }), 400);
      assert.deepEqual((await getJson<{ rules: Rule[] }>(observe, '/api/guardrails')).rules, []);
    } finally {
      await observe.close();
    }
  });

  test('error_rate_threshold → pause_agent end to end: ingest, breach, action on the agent record, status, resume', async () => {
    await fresh();
    try {
      const rule = await createRule(observe, errorRatePause());
      await ingest(observe, toolEvents(observe, 'agent-a', 's1', 2, 1));
      await settle();
      assert.equal((await agentOf(observe, 'agent-a')).pausedAt, null, '33% errors is under the threshold');
      assert.equal((await history(observe)).total, 0);

      clockOf(observe).advance(1000);
      await ingest(observe, toolEvents(observe, 'agent-a', 's1', 0, 3));
      await settle();
      const agent = await agentOf(observe, 'agent-a');
      assert.equal(agent.pausedAt, iso(observe));
      assert.equal(agent.pauseReason, 'error rate over 50%');

      const { triggers, total } = await history(observe);
      assert.equal(total, 1);
      const [trigger] = triggers;
      assert.deepEqual(Object.keys(trigger!).sort(), [
        'actionResult',
        'actionType',
        'agentId',
        'conditionType',
        'currentValue',
        'dryRun',
        'id',
        'ruleId',
        'ruleName',
        'threshold',
        'triggeredAt',
      ]);
      assert.equal(trigger!.ruleId, rule.id);
      assert.equal(trigger!.ruleName, 'too many errors');
      assert.equal(trigger!.agentId, 'agent-a');
      assert.equal(trigger!.conditionType, 'error_rate_threshold');
      assert.equal(trigger!.currentValue, (4 / 6) * 100);
      assert.equal(trigger!.threshold, 50);
      assert.equal(trigger!.actionType, 'pause_agent');
      assert.equal(trigger!.dryRun, false);
      assert.equal(trigger!.actionResult.status, 'applied');
      assert.equal(trigger!.triggeredAt, iso(observe));

      const stored = await getJson<Rule>(observe, `/api/guardrails/${rule.id}`);
      assert.equal(stored.triggerCount, 1);
      assert.equal(stored.lastTriggeredAt, iso(observe));
      const status = await getJson<{
        rule: Rule;
        state: string;
        cooldowns: { agentId: string; cooldownUntil: string }[];
        recentTriggers: Trigger[];
        triggerCount: number;
      }>(observe, `/api/guardrails/${rule.id}/status`);
      assert.deepEqual(status.rule, stored, 'the status carries the rule as GET answers it');
      assert.equal(status.state, 'cooldown');
      assert.deepEqual(status.cooldowns, [{ agentId: 'agent-a', cooldownUntil: iso(observe, 15 * MINUTE) }]);
      assert.deepEqual(
        status.recentTriggers.map((t) => t.id),
        [trigger!.id],
      );
      assert.equal(status.triggerCount, 1);

      // Events of a paused agent are still stored.
      await ingest(observe, toolEvents(observe, 'agent-a', 's1', 1, 0));
      const resumed = await observe.call({ method: 'POST', url: '/api/agents/agent-a/resume' });
      assert.equal(resumed.statusCode, 200, resumed.body);
      assert.equal((resumed.json() as Agent).pausedAt, null);
      assert.equal((resumed.json() as Agent).pauseReason, null);

      clockOf(observe).advance(16 * MINUTE);
      assert.equal((await getJson<{ state: string }>(observe, `/api/guardrails/${rule.id}/status`)).state, 'ready');
    } finally {
      await observe.close();
    }
  });

  test('the error-rate window and the cost period slide: events older than windowMs / periodMs do not count', async () => {
    await fresh();
    try {
      await createRule(observe, { ...errorRatePause('agent-w'), conditionConfig: { threshold: 50, windowMs: 60_000 } });
      await createRule(observe, {
        name: 'hourly budget',
        agentId: 'agent-w',
        conditionType: 'cost_limit',
        conditionConfig: { maxCostUsd: 1, periodMs: 3_600_000 },
        actionType: 'downgrade_model',
        actionConfig: { targetModel: 'small' },
      });
      // Errors and spend 61 minutes ago, stored by a batch with client timestamps.
      const old = -61 * MINUTE;
      await ingest(observe, [
        ...toolEvents(observe, 'agent-w', 'w1', 0, 5).map((e) => ({ ...e, timestamp: iso(observe, old) })),
        { ...llmResponse(observe, 'agent-w', 'w1', 0.9, 'old'), timestamp: iso(observe, old) },
      ]);
      // Now: no errors and 0.2 USD; a breach would need the old errors or the old spend.
      await ingest(observe, [...toolEvents(observe, 'agent-w', 'w1', 1, 0), llmResponse(observe, 'agent-w', 'w1', 0.2, 'new')]);
      await settle();
      const agent = await agentOf(observe, 'agent-w');
      assert.equal(agent.pausedAt, null, 'errors outside the 60 s window do not count');
      assert.equal(agent.modelOverride, null, 'spend outside the hour does not count');
      assert.equal((await history(observe)).total, 0);

      // Inside the window they do: 4 errors of 7 events, 1.1 USD.
      await ingest(observe, [...toolEvents(observe, 'agent-w', 'w1', 0, 4), llmResponse(observe, 'agent-w', 'w1', 0.9, 'now')]);
      await settle();
      const breached = await agentOf(observe, 'agent-w');
      assert.notEqual(breached.pausedAt, null);
      assert.equal(breached.modelOverride, 'small');
    } finally {
      await observe.close();
    }
  });

  test('cost_limit → downgrade_model sets modelOverride; resume keeps it unless clearModelOverride', async () => {
    await fresh();
    try {
      await createRule(observe, {
        name: 'budget',
        agentId: 'agent-a',
        conditionType: 'cost_limit',
        conditionConfig: { maxCostUsd: 1, periodMs: 3_600_000 },
        actionType: 'downgrade_model',
        actionConfig: { targetModel: 'gpt-4o-mini' },
      });
      await ingest(observe, [llmResponse(observe, 'agent-a', 's1', 0.6, 'c1'), llmResponse(observe, 'agent-b', 's2', 5, 'c2')]);
      await settle();
      assert.equal((await agentOf(observe, 'agent-a')).modelOverride, null, '0.6 USD is within the budget');
      assert.equal((await agentOf(observe, 'agent-b')).modelOverride, null, 'the rule is scoped to agent-a');

      await ingest(observe, [llmResponse(observe, 'agent-a', 's1', 0.6, 'c3')]);
      await settle();
      assert.equal((await agentOf(observe, 'agent-a')).modelOverride, 'gpt-4o-mini');
      const [trigger] = (await history(observe)).triggers;
      assert.ok(Math.abs(trigger!.currentValue - 1.2) < 1e-9);
      assert.equal(trigger!.threshold, 1);

      await observe.call({ method: 'POST', url: '/api/agents/agent-a/resume', payload: {} });
      assert.equal((await agentOf(observe, 'agent-a')).modelOverride, 'gpt-4o-mini');
      await observe.call({ method: 'POST', url: '/api/agents/agent-a/resume', payload: { clearModelOverride: true } });
      assert.equal((await agentOf(observe, 'agent-a')).modelOverride, null);
    } finally {
      await observe.close();
    }
  });

  test('cost_limit sums money exactly: 0.1 + 0.2 spent is the 0.3 limit, not above it; one nano-dollar more is', async () => {
    await fresh();
    try {
      await createRule(observe, {
        name: 'exact budget',
        agentId: 'agent-x',
        conditionType: 'cost_limit',
        conditionConfig: { maxCostUsd: 0.3, periodMs: 3_600_000 },
        actionType: 'downgrade_model',
        actionConfig: { targetModel: 'small' },
      });
      await ingest(observe, [llmResponse(observe, 'agent-x', 'x1', 0.1, 'x-a'), llmResponse(observe, 'agent-x', 'x1', 0.2, 'x-b')]);
      await settle();
      assert.equal((await agentOf(observe, 'agent-x')).modelOverride, null, '0.1 + 0.2 USD is exactly the limit');
      assert.equal((await history(observe)).total, 0);

      await ingest(observe, [llmResponse(observe, 'agent-x', 'x1', 1e-9, 'x-c')]);
      await settle();
      assert.equal((await agentOf(observe, 'agent-x')).modelOverride, 'small');
      assert.equal((await history(observe)).triggers[0]!.currentValue, 0.300000001);
    } finally {
      await observe.close();
    }
  });

  test('health_score_threshold (overall and per dimension) → approval_policy; resume with clearApprovalPolicy clears it', async () => {
    await fresh();
    try {
      await createRule(observe, {
        name: 'completion',
        conditionType: 'health_score_threshold',
        conditionConfig: { minScore: 60, dimension: 'completion_rate' },
        actionType: 'approval_policy',
        actionConfig: { policyId: 'pol_human_review' },
      });
      const session = (id: string, reason: string): Body[] => [
        { sessionId: id, agentId: 'agent-h', eventType: 'session_started', timestamp: iso(observe), payload: {} },
        { sessionId: id, agentId: 'agent-h', eventType: 'session_ended', timestamp: iso(observe), payload: { reason } },
      ];
      await ingest(observe, [...session('h1', 'completed'), ...session('h2', 'completed')]);
      await settle();
      assert.equal((await agentOf(observe, 'agent-h')).approvalPolicyId, null, 'all sessions completed');
      await ingest(observe, [...session('h3', 'error'), ...session('h4', 'error')]);
      await settle();
      assert.equal((await agentOf(observe, 'agent-h')).approvalPolicyId, 'pol_human_review');
      const [trigger] = (await history(observe)).triggers;
      assert.equal(trigger!.currentValue, 50, 'completion rate 2 of 4');
      assert.equal(trigger!.threshold, 60);

      await observe.call({ method: 'POST', url: '/api/agents/agent-h/resume', payload: { clearApprovalPolicy: true } });
      assert.equal((await agentOf(observe, 'agent-h')).approvalPolicyId, null);
      assertErrorBody(await observe.call({ method: 'POST', url: '/api/agents/agent-h/resume', payload: { clearEverything: true } }), 400);
    } finally {
      await observe.close();
    }
  });

  test('custom_metric → notify_webhook posts the trigger details to a real receiver; the latest value counts, in payload.data or metadata', async () => {
    await fresh();
    try {
      receiver.requests.length = 0;
      const rule = await createRule(observe, {
        name: 'quality floor',
        conditionType: 'custom_metric',
        conditionConfig: { metricKey: 'quality.score', operator: 'lt', value: 0.5 },
        actionType: 'notify_webhook',
        actionConfig: { url: `${receiver.url}/hooks/guardrail` },
        cooldownMinutes: 0,
      });
      const custom = (value: number, where: 'data' | 'metadata'): Body => ({
        sessionId: 'q1',
        agentId: 'agent-q',
        eventType: 'custom',
        timestamp: iso(observe),
        ...(where === 'metadata'
          ? { metadata: { quality: { score: value } }, payload: { type: 'eval', data: {} } }
          : { payload: { type: 'eval', data: { quality: { score: value } } } }),
      });
      // The older low value is superseded by the later high one in the same batch.
      await ingest(observe, [custom(0.2, 'data'), { ...custom(0.9, 'data'), timestamp: iso(observe, 1) }]);
      await settle();
      assert.equal(receiver.requests.length, 0);

      clockOf(observe).advance(1000);
      await ingest(observe, [custom(0.3, 'metadata')]);
      await settle();
      assert.equal(receiver.requests.length, 1);
      const [request] = receiver.requests;
      assert.equal(request!.method, 'POST');
      assert.equal(request!.url, '/hooks/guardrail');
      assert.equal(request!.headers['x-vigil-event'], 'guardrail.triggered');
      const body = JSON.parse(request!.body) as Record<string, unknown>;
      const [trigger] = (await history(observe)).triggers;
      assert.deepEqual(body, {
        triggerId: trigger!.id,
        ruleId: rule.id,
        ruleName: 'quality floor',
        conditionType: 'custom_metric',
        currentValue: 0.3,
        threshold: 0.5,
        agentId: 'agent-q',
        timestamp: iso(observe),
        dryRun: false,
        actionType: 'notify_webhook',
      });
      assert.equal(trigger!.actionResult.status, 'queued');

      // A batch without the metric brings no new value, so it fires nothing even with cooldown 0;
      // the sweep re-reads the latest value of the last day and fires again.
      clockOf(observe).advance(1000);
      await ingest(observe, [{ ...custom(0.9, 'data'), payload: { type: 'note', data: { other: 1 } } }]);
      await settle();
      assert.equal((await history(observe)).total, 1);
      assert.equal(await observe.service.jobs.guardrails.tick(), true);
      assert.equal((await history(observe)).total, 2);
    } finally {
      await observe.close();
    }
  });

  test('dry run: the trigger is recorded and the webhook is told dryRun true, but the agent is not touched', async () => {
    await fresh();
    try {
      receiver.requests.length = 0;
      await createRule(observe, { ...errorRatePause(), dryRun: true });
      await createRule(observe, { ...errorRatePause(), name: 'tell me', actionType: 'notify_webhook', actionConfig: { url: receiver.url }, dryRun: true });
      await ingest(observe, toolEvents(observe, 'agent-d', 'd1', 0, 2));
      await settle();
      assert.equal((await agentOf(observe, 'agent-d')).pausedAt, null);
      const { triggers } = await history(observe);
      assert.equal(triggers.length, 2);
      for (const trigger of triggers) {
        assert.equal(trigger.dryRun, true);
        assert.equal(trigger.actionResult.status, 'dry_run');
      }
      assert.equal(receiver.requests.length, 1);
      assert.equal((JSON.parse(receiver.requests[0]!.body) as { dryRun: boolean }).dryRun, true);
    } finally {
      await observe.close();
    }
  });

  test('cooldown: no second trigger within it (per agent), again after it via the sweep; cooldown 0 triggers each time; disabled rules never', async () => {
    await fresh();
    try {
      const rule = await createRule(observe, {
        ...errorRatePause(),
        cooldownMinutes: 10,
        actionType: 'downgrade_model',
        actionConfig: { targetModel: 'small' },
      });
      const eager = await createRule(observe, {
        ...errorRatePause(),
        name: 'eager',
        cooldownMinutes: 0,
        actionType: 'notify_webhook',
        actionConfig: { url: receiver.url },
      });
      await createRule(observe, { ...errorRatePause(), name: 'off', enabled: false });

      await ingest(observe, toolEvents(observe, 'agent-a', 'a1', 0, 2));
      await settle();
      clockOf(observe).advance(MINUTE);
      await ingest(observe, toolEvents(observe, 'agent-a', 'a1', 0, 2));
      await settle();
      // Another agent breaching while agent-a is in cooldown still triggers.
      await ingest(observe, toolEvents(observe, 'agent-b', 'b1', 0, 2));
      await settle();
      const count = async (ruleId: string, agentId?: string) => (await history(observe, `?ruleId=${ruleId}${agentId ? `&agentId=${agentId}` : ''}`)).total;
      assert.equal(await count(rule.id, 'agent-a'), 1);
      assert.equal(await count(rule.id, 'agent-b'), 1);
      assert.equal(await count(eager.id, 'agent-a'), 2);
      assert.equal((await history(observe)).total, 5, 'the disabled rule never fired');

      // Fresh errors nine minutes after the first trigger keep the 5-minute window in breach when the cooldown ends.
      clockOf(observe).advance(8 * MINUTE);
      await ingest(observe, toolEvents(observe, 'agent-a', 'a1', 0, 1));
      await settle();
      assert.equal(await count(rule.id, 'agent-a'), 1, 'still within 10 minutes of the first trigger');
      clockOf(observe).advance(MINUTE);
      assert.equal(await observe.service.jobs.guardrails.tick(), true);
      assert.equal(await count(rule.id, 'agent-a'), 2, 'the sweep triggers once the cooldown is over');
      const stored = await getJson<Rule>(observe, `/api/guardrails/${rule.id}`);
      assert.equal(stored.triggerCount, 3);
    } finally {
      await observe.close();
    }
  });

  test('without after-commit evaluation the periodic sweep finds the breach (a crash between commit and evaluation loses nothing)', async () => {
    observe = await startTestObserve(backend, { evaluateGuardrails: false });
    try {
      await createRule(observe, errorRatePause('agent-s'));
      await ingest(observe, toolEvents(observe, 'agent-s', 's1', 0, 3));
      await observe.service.guardrails.idle();
      assert.equal((await agentOf(observe, 'agent-s')).pausedAt, null);
      assert.equal(await observe.service.jobs.guardrails.tick(), true);
      assert.notEqual((await agentOf(observe, 'agent-s')).pausedAt, null);
    } finally {
      await observe.close();
    }
  });

  test('history: newest first, filters, limit and hasMore', async () => {
    await fresh();
    try {
      const rule = await createRule(observe, { ...errorRatePause(), cooldownMinutes: 0, actionType: 'approval_policy', actionConfig: { policyId: 'p' } });
      for (let i = 0; i < 3; i += 1) {
        clockOf(observe).advance(1000);
        await ingest(observe, toolEvents(observe, 'agent-h', 'h1', 0, 1));
        await settle();
      }
      const page = await history(observe, '?limit=2');
      assert.equal(page.total, 3);
      assert.equal(page.hasMore, true);
      assert.equal(page.triggers.length, 2);
      assert.ok(page.triggers[0]!.triggeredAt > page.triggers[1]!.triggeredAt);
      const rest = await history(observe, '?limit=2&offset=2');
      assert.equal(rest.triggers.length, 1);
      assert.equal(rest.hasMore, false);
      assert.equal((await history(observe, `?ruleId=${rule.id}&agentId=nobody`)).total, 0);
      // The period (an evidence pack's, with its agent): inclusive bounds on triggeredAt; from after to is a 400.
      const [newest, middle, oldest] = (await history(observe)).triggers.map((t) => t.triggeredAt);
      const inPeriod = await history(observe, `?agentId=agent-h&from=${oldest}&to=${middle}`);
      assert.deepEqual(
        inPeriod.triggers.map((t) => t.triggeredAt),
        [middle, oldest],
      );
      assert.equal((await history(observe, `?from=${newest}`)).total, 1);
      assertErrorBody(await observe.call({ method: 'GET', url: `/api/guardrails/history?from=${newest}&to=${oldest}` }), 400);
      // Deleting the rule keeps its history.
      await observe.call({ method: 'DELETE', url: `/api/guardrails/${rule.id}` });
      assert.equal((await history(observe, `?ruleId=${rule.id}`)).total, 3);
    } finally {
      await observe.close();
    }
  });

  /** Another instance on `first`'s database (a restart, or a second instance), calling with `first`'s key. */
  async function sameDatabase(first: TestObserve, evaluateGuardrails: boolean): Promise<TestObserve> {
    const other = await startTestObserve(backend, { evaluateGuardrails, database: first.config.database, createKey: false, clock: first.clock });
    return {
      ...other,
      key: first.key,
      call: (request) => other.service.app.inject({ ...request, headers: { authorization: `Bearer ${first.key}`, ...request.headers } }),
    };
  }

  const hourlyBudget = (agentId: string): Body => ({
    name: 'hourly budget',
    agentId,
    conditionType: 'cost_limit',
    conditionConfig: { maxCostUsd: 1, periodMs: 3_600_000 },
    actionType: 'downgrade_model',
    actionConfig: { targetModel: 'small' },
  });

  test('after a restart the cost window is seeded from the stored events: spend before and after it breaches right after ingest', async () => {
    const first = await fresh();
    let restarted: TestObserve | undefined;
    try {
      await createRule(first, hourlyBudget('agent-r'));
      await ingest(first, [llmResponse(first, 'agent-r', 'r1', 0.4, 'a')]);
      await first.service.guardrails.idle();
      await ingest(first, [llmResponse(first, 'agent-r', 'r1', 0.3, 'b')]);
      await first.service.guardrails.idle();
      assert.equal((await agentOf(first, 'agent-r')).modelOverride, null, '0.7 USD is within the limit');
      await first.close();

      restarted = await sameDatabase(first, true);
      clockOf(restarted).advance(1000);
      await ingest(restarted, [llmResponse(restarted, 'agent-r', 'r1', 0.2, 'c')]);
      await restarted.service.guardrails.idle();
      assert.equal((await agentOf(restarted, 'agent-r')).modelOverride, null, '0.9 USD is within the limit');
      await ingest(restarted, [llmResponse(restarted, 'agent-r', 'r1', 0.2, 'd')]);
      await restarted.service.guardrails.idle();
      assert.equal((await agentOf(restarted, 'agent-r')).modelOverride, 'small');
      const [trigger] = (await history(restarted)).triggers;
      assert.ok(Math.abs(trigger!.currentValue - 1.1) < 1e-9, `the exact spend of the hour: ${trigger!.currentValue}`);
    } finally {
      await (restarted ?? first).close();
    }
  });

  test('a breach right after ingest is found from the window, and the value recorded is the exact one', async () => {
    await fresh();
    try {
      await createRule(observe, { ...errorRatePause('agent-i'), conditionConfig: { threshold: 50, windowMs: 60_000 } });
      await ingest(observe, toolEvents(observe, 'agent-i', 'i1', 3, 2));
      await settle();
      assert.equal((await agentOf(observe, 'agent-i')).pausedAt, null, '2 errors of 5');
      clockOf(observe).advance(10_000);
      await ingest(observe, toolEvents(observe, 'agent-i', 'i1', 0, 2));
      await settle();
      assert.notEqual((await agentOf(observe, 'agent-i')).pausedAt, null, '4 errors of 7');
      const [trigger] = (await history(observe)).triggers;
      assert.equal(trigger!.currentValue, 100 * (4 / 7));
    } finally {
      await observe.close();
    }
  });

  // Several instances share a database only on PostgreSQL (SQLite is the single-process mode).
  if (backend.kind === 'postgres')
    test('two instances on one PostgreSQL evaluating the same breach at once trigger once per cooldown', async () => {
      const first = await startTestObserve(backend, { evaluateGuardrails: false });
      const second = await startTestObserve(backend, { evaluateGuardrails: false, database: first.config.database, createKey: false, clock: first.clock });
      observe = first;
      try {
        await createRule(first, { ...errorRatePause(), actionType: 'notify_webhook', actionConfig: { url: receiver.url } });
        await ingest(first, toolEvents(first, 'agent-x', 'x1', 0, 4));
        receiver.requests.length = 0;
        const now = first.clock.now();
        const rounds = await Promise.all(
          Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? first : second).service.guardrails.evaluateCommitted(new Map([['agent-x', []]]), now)),
        );
        assert.equal(rounds.flat().length, 1, 'exactly one evaluation fired');
        await first.service.guardrails.idle();
        await second.service.guardrails.idle();
        assert.equal((await history(first)).total, 1);
        assert.equal(receiver.requests.length, 1);
      } finally {
        await second.close();
        await first.close();
      }
    });
  if (backend.kind === 'postgres')
    test('two instances: a window is seeded again once the other instance committed events this one did not see', async () => {
      const first = await startTestObserve(backend, { evaluateGuardrails: true });
      const second = await sameDatabase(first, false);
      observe = first;
      try {
        await createRule(first, hourlyBudget('agent-m'));
        await ingest(first, [llmResponse(first, 'agent-m', 'm1', 0.8, 'a')]);
        await first.service.guardrails.idle();
        // Only the second instance sees this spend commit.
        await ingest(second, [llmResponse(second, 'agent-m', 'm2', 0.3, 'b')]);
        assert.equal((await agentOf(first, 'agent-m')).modelOverride, null);
        // The first instance's window (0.8 USD) misses it; the commit log tells it so.
        await ingest(first, [llmResponse(first, 'agent-m', 'm1', 0, 'c')]);
        await first.service.guardrails.idle();
        assert.equal((await agentOf(first, 'agent-m')).modelOverride, 'small');
      } finally {
        await second.close();
        await first.close();
      }
    });
});
