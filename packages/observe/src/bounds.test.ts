// Numeric bounds (bounds.ts): events at the largest accepted values, across agents, sessions,
// tools, models and the webhook path, leave every figure the service reports finite and exact;
// a value just beyond a bound is a 400 naming its path, and nothing is stored.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { hmacSha256Hex } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import type { LightMyRequestResponse } from 'fastify';
import { MAX_COST_USD, MAX_COUNT, MAX_DURATION_MS, MAX_FIGURE, MAX_TOKENS } from './bounds.ts';
import { isErrorEvent } from './events/index.ts';
import { ANALYSES } from './reflect/index.ts';
import { backfillSessionHours } from './analytics/session-hours.ts';
import { DAILY, HOURLY } from './analytics/spans.ts';
import { startTestObserve, type TestObserve } from './testing.ts';

type Body = Record<string, unknown>;

const NOW = Date.parse('2026-11-22T10:00:00.000Z');
const HOUR = 3_600_000;
const FORM_SECRET = 'bounds-form-secret';
const AGENTS = ['poison-a', 'poison-b', 'poison-c'];
const MODELS = [
  { provider: 'openai', model: 'gpt-4o' },
  { provider: 'openai', model: 'gpt-4.1' },
  { provider: 'anthropic', model: 'claude-sonnet-4-20250514' },
];
const TOOLS = ['search', 'fetch', 'write'];
/** Hours before the clock: two inside the default 24 h window, two on earlier days (one the week before). */
const HOURS_BACK = [150, 30, 5, 1];
const TAGS = ['variant-a', 'variant-b'];
/** llm_response events per model and hour in each session. */
const REPEAT = 5;

/** Payload data no schema bounds: any finite JSON number, read only by custom metrics. */
const EXTREME_DATA = { quality: { score: Number.MAX_VALUE }, low: -Number.MAX_VALUE, tiny: Number.MIN_VALUE, zero: -0 };

interface Event {
  sessionId: string;
  agentId: string;
  eventType: string;
  severity?: string;
  timestamp: string;
  payload: Body;
  metadata?: Body;
}

const iso = (ms: number) => new Date(ms).toISOString();

const llmResponse = (callId: string, provider: string, model: string, finishReason: string): Body => ({
  callId,
  provider,
  model,
  completion: 'ok',
  finishReason,
  toolCalls: [],
  usage: { inputTokens: MAX_TOKENS, outputTokens: MAX_TOKENS, totalTokens: 2 * MAX_TOKENS },
  costUsd: MAX_COST_USD,
  latencyMs: MAX_DURATION_MS,
});

/** Every event type with a number, at its largest accepted value. */
function sessionEvents(agentId: string, index: number): Event[] {
  const sessionId = `${agentId}-s${index}`;
  const events: Event[] = [];
  const add = (ms: number, eventType: string, payload: Body, extra: Partial<Event> = {}) =>
    events.push({ sessionId, agentId, eventType, timestamp: iso(ms), payload, ...extra });
  add(NOW - HOURS_BACK[0]! * HOUR - 60_000, 'session_started', { agentName: agentId, tags: [TAGS[index]!] });
  for (const hoursBack of HOURS_BACK) {
    const at = NOW - hoursBack * HOUR + index * 60_000;
    MODELS.forEach(({ provider, model }, m) => {
      for (let r = 0; r < REPEAT; r++) add(at, 'llm_response', llmResponse(`${sessionId}-${hoursBack}-${m}-${r}`, provider, model, r === 0 ? 'error' : 'stop'));
      add(at, 'cost_tracked', {
        provider,
        model,
        inputTokens: MAX_TOKENS,
        outputTokens: MAX_TOKENS,
        totalTokens: 2 * MAX_TOKENS,
        costUsd: MAX_COST_USD,
      });
    });
    for (const toolName of TOOLS) {
      const callId = `${sessionId}-${hoursBack}-${toolName}`;
      add(at, 'tool_call', { toolName, callId, arguments: {} });
      add(at, 'tool_response', { toolName, callId, result: 'ok', durationMs: MAX_DURATION_MS });
    }
    add(at, 'tool_error', { toolName: TOOLS[0]!, callId: `${sessionId}-${hoursBack}-err`, error: 'boom', durationMs: MAX_DURATION_MS }, { severity: 'error' });
    const submissionId = `${sessionId}-${hoursBack}-form`;
    add(at, 'form_submitted', { submissionId, formId: 'f', fieldCount: MAX_COUNT });
    add(at, 'form_completed', { submissionId, formId: 'f', completedBy: 'u', durationMs: MAX_DURATION_MS });
    add(at, 'form_expired', { submissionId: `${submissionId}-2`, formId: 'f', expiredAfterMs: MAX_DURATION_MS });
    add(at, 'alert_triggered', { alertRuleId: 'r', alertName: 'r', condition: 'x', currentValue: MAX_FIGURE, threshold: -MAX_FIGURE, message: 'm' });
    add(at, 'custom', { type: 'quality', data: EXTREME_DATA }, { metadata: EXTREME_DATA });
  }
  if (index === 0) {
    add(NOW - 30 * 60_000, 'session_ended', { reason: 'completed', totalToolCalls: MAX_COUNT, totalDurationMs: MAX_DURATION_MS });
  }
  return events;
}

/** Through POST /api/events/ingest: a generic llm_response and a signed form completion. */
const WEBHOOK_AT = NOW - 2 * HOUR;
const GENERIC_WEBHOOK = {
  source: 'generic',
  event: 'llm.done',
  timestamp: iso(WEBHOOK_AT),
  context: { service_session_id: 'poison-a-s0', service_agent_id: 'poison-a' },
  data: { eventType: 'llm_response', ...llmResponse('webhook-call', 'openai', 'gpt-4o', 'stop') },
};
const FORM_WEBHOOK = {
  source: 'form_service',
  event: 'submission.completed',
  timestamp: iso(WEBHOOK_AT),
  context: { service_agent_id: 'poison-b' },
  data: { submissionId: 'webhook-form', formId: 'f', completedBy: 'u', durationMs: MAX_DURATION_MS },
};
const WEBHOOK_EVENTS: Pick<Event, 'eventType' | 'timestamp'>[] = [
  { eventType: 'llm_response', timestamp: iso(WEBHOOK_AT) },
  { eventType: 'form_completed', timestamp: iso(WEBHOOK_AT) },
];

async function sendWebhook(observe: TestObserve, body: Body): Promise<LightMyRequestResponse> {
  const payload = JSON.stringify(body);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (body.source === 'form_service') headers['x-webhook-signature'] = hmacSha256Hex(FORM_SECRET, payload);
  return observe.call({ method: 'POST', url: '/api/events/ingest', headers, payload });
}

/** Every number in a JSON answer, with its path; each must be finite. */
function assertFiniteNumbers(value: unknown, where: string, path = ''): number {
  if (typeof value === 'number') {
    assert.ok(Number.isFinite(value), `${where}: ${path} is ${value}`);
    return 1;
  }
  if (value === null || typeof value !== 'object') return 0;
  let count = 0;
  for (const [key, item] of Object.entries(value)) count += assertFiniteNumbers(item, where, `${path}.${key}`);
  return count;
}

function errorDetails(response: LightMyRequestResponse): { path: string; message: string }[] {
  assert.equal(response.statusCode, 400, response.body);
  const body = response.json() as { error: string; status: number; details?: { path: string; message: string }[] };
  assert.deepEqual(Object.keys(body).sort(), ['code', 'details', 'error', 'status'], response.body);
  assert.equal(body.status, 400);
  return body.details!;
}

/** Rows of the tables a rejected request must leave alone. */
async function rowCounts(observe: TestObserve): Promise<Record<string, number>> {
  const { db } = observe.service.context.database;
  const out: Record<string, number> = {};
  for (const table of ['events', 'sessions', 'agents', 'event_rollups', 'guardrail_rules', 'alert_rules', 'evaluators'] as const) {
    const row = await db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    out[table] = Number(row.n);
  }
  return out;
}

await describeEachDatabase('numeric bounds: events at the largest accepted values', (backend) => {
  let observe: TestObserve;
  const events = AGENTS.flatMap((agentId) => [0, 1].flatMap((index) => sessionEvents(agentId, index)));
  const stored = [...events, ...WEBHOOK_EVENTS.map((e) => ({ ...e, severity: 'info' }))];

  const get = async <T>(url: string): Promise<T> => {
    const response = await observe.call({ method: 'GET', url });
    assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
    const body = response.json() as T;
    assertFiniteNumbers(body, url);
    return body;
  };

  before(async () => {
    observe = await startTestObserve(backend, { env: { FORM_SERVICE_WEBHOOK_SECRET: FORM_SECRET } });
    // The first agents' events come in one batch each (their rollup cells are summed before the
    // write); the last agent's one per request (the database adds each to its cell).
    const last = AGENTS.at(-1);
    const batches = [
      ...AGENTS.slice(0, -1).map((agentId) => events.filter((e) => e.agentId === agentId)),
      ...events.filter((e) => e.agentId === last).map((e) => [e]),
    ];
    for (const batch of batches) {
      const response = await observe.call({ method: 'POST', url: '/api/events', payload: { events: batch } });
      assert.equal(response.statusCode, 201, response.body.slice(0, 1000));
    }
    for (const body of [GENERIC_WEBHOOK, FORM_WEBHOOK]) {
      const response = await sendWebhook(observe, body);
      assert.equal(response.statusCode, 201, response.body);
    }
  });
  after(() => observe.close());

  test('analytics report exact sums of the largest values over the default 24 h', async () => {
    const inDay = stored.filter((e) => Date.parse(e.timestamp) >= NOW - 24 * HOUR);
    const spend = inDay.filter((e) => e.eventType === 'llm_response' || e.eventType === 'cost_tracked');
    const llm = inDay.filter((e) => e.eventType === 'llm_response');
    const tools = inDay.filter((e) => e.eventType === 'tool_call');
    // Percentiles come from the latency sketches: within their 1 % of the one value timed.
    const withoutPercentiles = (body: Body): Body => {
      const { p50LatencyMs, p95LatencyMs, p99LatencyMs, ...rest } = body;
      for (const p of [p50LatencyMs, p95LatencyMs, p99LatencyMs] as number[])
        assert.ok(Math.abs(p - MAX_DURATION_MS) <= 0.01 * MAX_DURATION_MS, `percentile ${p}`);
      return rest;
    };
    const overview = await get<{ totals: Body }>('/api/analytics');
    assert.deepEqual(withoutPercentiles(overview.totals), {
      eventCount: inDay.length,
      toolCallCount: tools.length,
      errorCount: inDay.filter((e) => isErrorEvent(e.eventType, e.severity ?? 'info')).length,
      avgLatencyMs: MAX_DURATION_MS,
      totalCostUsd: spend.length * MAX_COST_USD,
    });
    const llmFigures = await get<{ summary: Body }>('/api/analytics/llm');
    assert.deepEqual(withoutPercentiles(llmFigures.summary), {
      totalCalls: llm.length,
      totalCostUsd: llm.length * MAX_COST_USD,
      totalInputTokens: llm.length * MAX_TOKENS,
      totalOutputTokens: llm.length * MAX_TOKENS,
      avgLatencyMs: MAX_DURATION_MS,
      avgCostPerCall: MAX_COST_USD,
    });
    const costs = await get<{ totals: Body }>('/api/analytics/costs');
    assert.deepEqual(costs.totals, {
      totalCostUsd: spend.length * MAX_COST_USD,
      totalInputTokens: spend.length * MAX_TOKENS,
      totalOutputTokens: spend.length * MAX_TOKENS,
      totalTokens: spend.length * 2 * MAX_TOKENS,
    });
    const byTool = await get<{ tools: { toolName: string; avgDurationMs: number }[] }>('/api/analytics/tools');
    assert.deepEqual(byTool.tools.map((t) => [t.toolName, t.avgDurationMs]).sort(), TOOLS.map((t) => [t, MAX_DURATION_MS]).sort());
  });

  test('alerts, guardrails and compliance measure the largest values and custom metrics of ±Number.MAX_VALUE', async () => {
    const post = async (url: string, payload: Body) => {
      const response = await observe.call({ method: 'POST', url, payload });
      assert.ok(response.statusCode === 200 || response.statusCode === 201, `${url}: ${response.body}`);
      return response.json() as Body;
    };
    for (const [condition, threshold] of [
      ['cost_exceeds', 0],
      ['latency_exceeds', 0],
      ['event_count_exceeds', 0],
      ['error_rate_exceeds', 0],
      ['cost_exceeds', MAX_FIGURE],
    ] as const) {
      await post('/api/alerts/rules', { name: `${condition} ${threshold}`, condition, threshold, windowMinutes: 43_200 });
    }
    const guardrails = [
      { conditionType: 'custom_metric', conditionConfig: { metricKey: 'quality.score', operator: 'gte', value: MAX_FIGURE } },
      { conditionType: 'custom_metric', conditionConfig: { metricKey: 'low', operator: 'lte', value: -MAX_FIGURE } },
      { conditionType: 'custom_metric', conditionConfig: { metricKey: 'tiny', operator: 'gt', value: 0 } },
      { conditionType: 'cost_limit', conditionConfig: { maxCostUsd: 0, periodMs: 90 * 24 * HOUR } },
      { conditionType: 'cost_limit', conditionConfig: { maxCostUsd: MAX_FIGURE } },
      { conditionType: 'error_rate_threshold', conditionConfig: { threshold: 0 } },
      { conditionType: 'health_score_threshold', conditionConfig: { minScore: 100 } },
    ];
    for (const [i, rule] of guardrails.entries()) {
      await post('/api/guardrails', { name: `g${i}`, ...rule, actionType: 'pause_agent', dryRun: true });
    }
    assert.equal(await observe.service.jobs.alerts.tick(), true);
    assert.equal(await observe.service.jobs.guardrails.tick(), true);

    const history = await get<{ entries: { currentValue: number }[] }>('/api/alerts/history');
    assert.equal(history.entries.length, 4, 'every alert but the one at the bound fired');
    const triggers = await get<{ triggers: { ruleName: string; agentId: string; currentValue: number }[] }>('/api/guardrails/history?limit=100');
    const valuesOf = (name: string) => new Set(triggers.triggers.filter((t) => t.ruleName === name).map((t) => t.currentValue));
    assert.deepEqual(valuesOf('g0'), new Set([Number.MAX_VALUE]), 'the custom metric is read as sent');
    assert.deepEqual(valuesOf('g1'), new Set([-Number.MAX_VALUE]));
    assert.deepEqual(valuesOf('g2'), new Set([Number.MIN_VALUE]));
    assert.equal(triggers.triggers.filter((t) => t.ruleName === 'g3').length, AGENTS.length, 'the cost limit fired for every agent');
    assert.equal(valuesOf('g4').size, 0, 'a limit at the bound is above every reachable spend');

    const verdict = await post('/api/eval/sessions/poison-a-s0/compliance', { rules: [{ id: 'budget', type: 'max_cost', maxUsd: MAX_FIGURE }] });
    assert.equal(verdict.passed, true);
    assertFiniteNumbers(verdict, 'compliance');
  });

  test('every figure route answers 200 with finite numbers', async () => {
    const agentId = AGENTS[0]!;
    const sessionId = `${agentId}-s0`;
    const created = await observe.call({
      method: 'POST',
      url: '/api/benchmarks',
      payload: { name: 'poison', variants: TAGS.map((tag) => ({ name: tag, tag })), minSessionsPerVariant: 1 },
    });
    assert.equal(created.statusCode, 201, created.body);
    const benchmark = created.json() as { id: string };
    assert.equal((await observe.call({ method: 'PUT', url: `/api/benchmarks/${benchmark.id}/status`, payload: { status: 'running' } })).statusCode, 200);
    const everything = 'from=0000-01-01T00:00:00.000Z&to=9999-12-31T23:59:59.999Z';
    const urls = [
      ...['hour', 'day', 'week'].map((g) => `/api/analytics?granularity=${g}&from=${iso(NOW - 7 * 24 * HOUR)}`),
      '/api/analytics/llm',
      `/api/analytics/llm?granularity=day&from=${iso(NOW - 9 * 24 * HOUR)}`,
      '/api/analytics/costs',
      `/api/analytics/costs?granularity=week&from=${iso(NOW - 9 * 24 * HOUR)}`,
      '/api/analytics/agents',
      `/api/analytics/agents?${everything}`,
      '/api/analytics/tools',
      `/api/analytics/tools?${everything}`,
      ...AGENTS.flatMap((id) => [`/api/agents/${id}/health`, `/api/agents/${id}/health?window=90`]),
      '/api/health/overview',
      '/api/health/overview?window=90',
      `/api/health/history?agentId=${agentId}`,
      '/api/stats',
      '/api/optimize/recommendations',
      '/api/optimize/recommendations?period=90',
      ...ANALYSES.map((analysis) => `/api/reflect?analysis=${analysis}`),
      ...ANALYSES.map((analysis) => `/api/reflect?analysis=${analysis}&agentId=${agentId}`),
      '/api/sessions',
      `/api/sessions?agentId=${agentId}`,
      `/api/sessions/${sessionId}`,
      `/api/sessions/${sessionId}/timeline`,
      `/api/sessions/${sessionId}/replay?limit=500`,
      `/api/sessions/${sessionId}/replay?offset=100&limit=10`,
      '/api/agents',
      `/api/agents/${agentId}`,
      `/api/benchmarks/${benchmark.id}/results`,
      '/api/events?limit=500',
      `/api/audit/verify?sessionId=${sessionId}`,
    ];
    // Every route that reports figures is read above: a new one must be added here.
    const FIGURE_ROUTES = /^\/api\/(analytics|health\/|agents\/:id\/health|stats|optimize|reflect|benchmarks\/:id\/results)/;
    const routes = observe.service.app.routeTable.filter((r) => r.method === 'GET' && FIGURE_ROUTES.test(r.url)).map((r) => r.url);
    const read = new Set(urls.map((url) => url.split('?')[0]!.replace(new RegExp(`/(${[...AGENTS, sessionId, benchmark.id].join('|')})(?=/|$)`), '/:id')));
    assert.deepEqual(
      routes.filter((url) => !read.has(url)),
      [],
      'every figure route is read',
    );

    for (const url of urls) await get(url);

    const health = await get<{ overallScore: number; dimensions: { name: string; rawValue: number }[] }>(`/api/agents/${agentId}/health`);
    assert.ok(health.overallScore >= 0 && health.overallScore <= 100);
    const stats = await get<{ totalEvents: number }>('/api/stats');
    assert.ok(stats.totalEvents >= stored.length);
    const results = await get<{ comparisons: unknown[] }>(`/api/benchmarks/${benchmark.id}/results`);
    assert.ok(results.comparisons.length > 0, 'the variants are compared');
  });
});

/** The smallest double above `x`. */
function nextUp(x: number): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x === 0 ? 0 : x);
  const bits = view.getBigUint64(0);
  view.setBigUint64(0, x >= 0 ? bits + 1n : bits - 1n);
  return view.getFloat64(0);
}
const nextDown = (x: number): number => -nextUp(-x);

/** A value just past a bound: above a maximum, below a minimum (whole numbers step by one). */
interface Beyond {
  name: string;
  request: { method: 'POST' | 'PUT'; url: string; payload: Body } | { webhook: Body };
  path: string;
}

const BASE: Record<string, Body> = {
  llm_response: llmResponse('c', 'openai', 'gpt-4o', 'stop'),
  cost_tracked: { provider: 'openai', model: 'gpt-4o', inputTokens: 1, outputTokens: 1, totalTokens: 2, costUsd: 1 },
  tool_response: { toolName: 't', callId: 'c', result: 1, durationMs: 1 },
  tool_error: { toolName: 't', callId: 'c', error: 'x', durationMs: 1 },
  session_ended: { reason: 'completed', totalToolCalls: 1, totalDurationMs: 1 },
  form_submitted: { submissionId: 's', formId: 'f', fieldCount: 1 },
  form_completed: { submissionId: 's', formId: 'f', completedBy: 'u', durationMs: 1 },
  form_expired: { submissionId: 's', formId: 'f', expiredAfterMs: 1 },
  alert_triggered: { alertRuleId: 'r', alertName: 'r', condition: 'x', currentValue: 1, threshold: 1, message: 'm' },
};

/** [event type, field path in the payload, minimum, maximum, whole number]. */
const EVENT_FIELDS: [string, string, number, number, boolean][] = [
  ['llm_response', 'costUsd', 0, MAX_COST_USD, false],
  ['llm_response', 'latencyMs', 0, MAX_DURATION_MS, false],
  ['llm_response', 'usage.inputTokens', 0, MAX_TOKENS, true],
  ['llm_response', 'usage.outputTokens', 0, MAX_TOKENS, true],
  ['llm_response', 'usage.totalTokens', 0, 2 * MAX_TOKENS, true],
  ['cost_tracked', 'costUsd', 0, MAX_COST_USD, false],
  ['cost_tracked', 'inputTokens', 0, MAX_TOKENS, true],
  ['cost_tracked', 'outputTokens', 0, MAX_TOKENS, true],
  ['cost_tracked', 'totalTokens', 0, 2 * MAX_TOKENS, true],
  ['tool_response', 'durationMs', 0, MAX_DURATION_MS, false],
  ['tool_error', 'durationMs', 0, MAX_DURATION_MS, false],
  ['session_ended', 'totalDurationMs', 0, MAX_DURATION_MS, false],
  ['session_ended', 'totalToolCalls', 0, MAX_COUNT, true],
  ['form_submitted', 'fieldCount', 0, MAX_COUNT, true],
  ['form_completed', 'durationMs', 0, MAX_DURATION_MS, false],
  ['form_expired', 'expiredAfterMs', 0, MAX_DURATION_MS, false],
  ['alert_triggered', 'currentValue', -MAX_FIGURE, MAX_FIGURE, false],
  ['alert_triggered', 'threshold', -MAX_FIGURE, MAX_FIGURE, false],
];

function withField(payload: Body, path: string, value: number): Body {
  const copy = structuredClone(payload);
  const keys = path.split('.');
  let node = copy;
  for (const key of keys.slice(0, -1)) node = node[key] as Body;
  node[keys.at(-1)!] = value;
  return copy;
}

function beyond(min: number, max: number, whole: boolean): [string, number][] {
  return [
    ['above', whole ? max + 1 : nextUp(max)],
    ['below', whole ? min - 1 : nextDown(min)],
  ];
}

const CASES: Beyond[] = [
  ...EVENT_FIELDS.flatMap(([eventType, field, min, max, whole]) =>
    beyond(min, max, whole).map(([side, value]): Beyond => ({
      name: `${eventType} ${field} ${side} (${value})`,
      request: {
        method: 'POST',
        url: '/api/events',
        payload: {
          events: [
            { sessionId: 'bound-s', agentId: 'bound-a', eventType: 'tool_call', payload: { toolName: 't', callId: 'c', arguments: {} } },
            { sessionId: 'bound-s', agentId: 'bound-a', eventType, payload: withField(BASE[eventType]!, field, value) },
          ],
        },
      },
      path: `events.1.payload.${field}`,
    })),
  ),
  ...beyond(0, MAX_COST_USD, false).map(([side, value]): Beyond => ({
    name: `webhook generic llm_response costUsd ${side}`,
    request: { webhook: { ...GENERIC_WEBHOOK, data: { ...GENERIC_WEBHOOK.data, costUsd: value } } },
    path: 'data.costUsd',
  })),
  ...beyond(0, MAX_DURATION_MS, false).map(([side, value]): Beyond => ({
    name: `webhook form_service durationMs ${side}`,
    request: { webhook: { ...FORM_WEBHOOK, data: { ...FORM_WEBHOOK.data, durationMs: value } } },
    path: 'data.durationMs',
  })),
  ...beyond(0, MAX_FIGURE, false).flatMap(([side, value]): Beyond[] => [
    {
      name: `alert threshold ${side}`,
      request: { method: 'POST', url: '/api/alerts/rules', payload: { name: 'a', condition: 'cost_exceeds', threshold: value, windowMinutes: 5 } },
      path: 'threshold',
    },
    {
      name: `guardrail maxCostUsd ${side}`,
      request: {
        method: 'POST',
        url: '/api/guardrails',
        payload: { name: 'g', conditionType: 'cost_limit', conditionConfig: { maxCostUsd: value }, actionType: 'pause_agent' },
      },
      path: 'conditionConfig.maxCostUsd',
    },
    {
      name: `evaluator max_cost maxUsd ${side}`,
      request: { method: 'POST', url: '/api/evaluators', payload: { name: 'e', kind: 'compliance', rules: [{ id: 'b', type: 'max_cost', maxUsd: value }] } },
      path: 'rules.0.maxUsd',
    },
    {
      name: `compliance max_cost maxUsd ${side}`,
      request: { method: 'POST', url: '/api/eval/sessions/bound-s/compliance', payload: { rules: [{ id: 'b', type: 'max_cost', maxUsd: value }] } },
      path: 'rules.0.maxUsd',
    },
  ]),
  ...beyond(-MAX_FIGURE, MAX_FIGURE, false).map(([side, value]): Beyond => ({
    name: `guardrail custom metric value ${side}`,
    request: {
      method: 'POST',
      url: '/api/guardrails',
      payload: { name: 'g', conditionType: 'custom_metric', conditionConfig: { metricKey: 'm', operator: 'gt', value }, actionType: 'pause_agent' },
    },
    path: 'conditionConfig.value',
  })),
];

await describeEachDatabase('numeric bounds: a value just beyond a bound', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend, { env: { FORM_SERVICE_WEBHOOK_SECRET: FORM_SECRET } });
    // An existing session for the compliance route, and rows the refused requests must leave alone.
    const response = await observe.call({
      method: 'POST',
      url: '/api/events',
      payload: { events: [{ sessionId: 'bound-s', agentId: 'bound-a', eventType: 'custom', payload: { type: 'x', data: {} } }] },
    });
    assert.equal(response.statusCode, 201, response.body);
  });
  after(() => observe.close());

  test('is a 400 naming the field, and nothing is stored', async () => {
    for (const c of CASES) {
      const before = await rowCounts(observe);
      const response = 'webhook' in c.request ? await sendWebhook(observe, c.request.webhook) : await observe.call(c.request);
      const details = errorDetails(response);
      assert.ok(
        details.some((d) => d.path === c.path),
        `${c.name}: ${response.body}`,
      );
      assert.deepEqual(await rowCounts(observe), before, `${c.name}: nothing stored`);
    }
    assert.ok(CASES.length >= 50);
  });

  test('the bounds themselves are accepted', async () => {
    const events = EVENT_FIELDS.flatMap(([eventType, field, min, max], i) =>
      [min, max].map((value, j) => ({ sessionId: `bound-ok-${i}-${j}`, agentId: 'bound-a', eventType, payload: withField(BASE[eventType]!, field, value) })),
    );
    const response = await observe.call({ method: 'POST', url: '/api/events', payload: { events } });
    assert.equal(response.statusCode, 201, response.body);
  });
});

await describeEachDatabase('numeric bounds: session durations from the widest timestamps', (backend) => {
  // Each session runs from an hour ago to the last millisecond of year 9999 (about 2.5e14 ms);
  // SQLite's sum() of that many such integers overflows BIGINT, so durations are summed as doubles.
  const start = NOW - HOUR;
  const duration = Date.parse('9999-12-31T23:59:59.999Z') - start;
  const sessions = Math.ceil(2 ** 63 / duration) + 100;
  const agentId = 'long-runner';
  let observe: TestObserve;

  before(async () => {
    observe = await startTestObserve(backend);
    const events = [
      { sessionId: 'long-0', agentId, eventType: 'custom', timestamp: iso(start), payload: { type: 'begin', data: {} } },
      // Ended, so the idle rule (a silence past SESSION_IDLE_TIMEOUT_MS) does not cut the duration.
      { sessionId: 'long-0', agentId, eventType: 'session_ended', timestamp: '9999-12-31T23:59:59.999Z', payload: { reason: 'completed' } },
    ];
    const response = await observe.call({ method: 'POST', url: '/api/events', payload: { events } });
    assert.equal(response.statusCode, 201, response.body);
    // The other sessions are copies of the row ingest made: tens of thousands of sessions through
    // HTTP would take minutes.
    const { db } = observe.service.context.database;
    const template = await db.selectFrom('sessions').selectAll().where('id', '=', 'long-0').executeTakeFirstOrThrow();
    for (let first = 1; first < sessions; first += 1000) {
      const rows = Array.from({ length: Math.min(1000, sessions - first) }, (_, i) => ({ ...template, id: `long-${first + i}` }));
      await db.insertInto('sessions').values(rows).execute();
    }
    // The agents report reads sessions per agent and hour and day: rebuilt from the copies, as ingest would keep them.
    for (const span of [HOURLY, DAILY]) {
      await db.deleteFrom(span.sessions).execute();
      await backfillSessionHours(db, span);
    }
  });
  after(() => observe.close());

  test('analytics, health and reflect sum them without overflow', async () => {
    const read = async <T>(url: string): Promise<T> => {
      const response = await observe.call({ method: 'GET', url });
      assert.equal(response.statusCode, 200, `${url}: ${response.body.slice(0, 1000)}`);
      const body = response.json() as T;
      assertFiniteNumbers(body, url);
      return body;
    };
    const near = (value: number, expected: number, what: string) =>
      assert.ok(Math.abs(value - expected) <= expected * 1e-9, `${what}: ${value} vs ${expected}`);
    const { agents } = await read<{ agents: { agentId: string; sessionCount: number; avgDurationMs: number }[] }>('/api/analytics/agents');
    assert.equal(agents[0]!.sessionCount, sessions);
    near(agents[0]!.avgDurationMs, duration, 'mean session duration');
    const health = await read<{ dimensions: { name: string; rawValue: number }[] }>(`/api/agents/${agentId}/health`);
    near(health.dimensions.find((d) => d.name === 'latency')!.rawValue, duration, 'health latency (mean session duration)');
    await read('/api/health/overview');
    const trends = await read<{ insights: { data: { avgDuration?: number } }[] }>(`/api/reflect?analysis=performance_trends&agentId=${agentId}`);
    near(trends.insights.find((i) => i.data.avgDuration !== undefined)!.data.avgDuration!, duration, 'reflect mean duration');
  });
});
