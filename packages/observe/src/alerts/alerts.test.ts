import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { after, before, test } from 'node:test';
import { describeEachDatabase, sendJson, TestHttpServer, type TestBackend } from '@vigil/platform/testing';
import { buildObserveService, type ObserveService } from '../app.ts';
import { assertErrorBody, clockOf, ingest, startTestObserve, type TestObserve } from '../testing.ts';
import { evaluateRules } from './evaluator.ts';
import type { Event } from '../events/index.ts';

const NOW = Date.parse('2026-11-22T10:00:00.000Z');
const MINUTE = 60_000;

interface Rule {
  id: string;
  name: string;
  description: string | null;
  enabled: boolean;
  condition: string;
  threshold: number;
  windowMinutes: number;
  scope: { agentId?: string; tags?: string[] };
  notifyChannels: string[];
  createdAt: string;
  updatedAt: string;
}

interface HistoryEntry {
  id: string;
  ruleId: string;
  triggeredAt: string;
  resolvedAt?: string;
  currentValue: number;
  threshold: number;
  notified: boolean;
}

interface HistoryPage {
  entries: HistoryEntry[];
  total: number;
  hasMore: boolean;
}

/** An event as the API answers it. */
type EventOut = Event;

type EventInput = Record<string, unknown>;

const RULE_FIELDS = ['condition', 'createdAt', 'description', 'enabled', 'id', 'name', 'notifyChannels', 'scope', 'threshold', 'updatedAt', 'windowMinutes'];
const BODY_FIELDS = ['alertName', 'alertRuleId', 'condition', 'currentValue', 'message', 'scope', 'threshold', 'triggeredAt', 'windowMinutes'];

/** ISO time `minutes` from the observe instance's current clock. */
const at = (observe: TestObserve, minutes: number): string => new Date(observe.clock.now() + minutes * MINUTE).toISOString();

async function createRule(observe: TestObserve, body: Record<string, unknown>): Promise<Rule> {
  const response = await observe.call({ method: 'POST', url: '/api/alerts/rules', payload: body });
  assert.equal(response.statusCode, 201, response.body);
  return response.json() as Rule;
}

async function listRules(observe: TestObserve): Promise<Rule[]> {
  const response = await observe.call({ method: 'GET', url: '/api/alerts/rules' });
  assert.equal(response.statusCode, 200, response.body);
  return (response.json() as { rules: Rule[] }).rules;
}

async function history(observe: TestObserve, query = ''): Promise<HistoryPage> {
  const response = await observe.call({ method: 'GET', url: `/api/alerts/history${query}` });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as HistoryPage;
}

async function entriesOf(observe: TestObserve, ruleId: string): Promise<HistoryEntry[]> {
  return (await history(observe, `?ruleId=${ruleId}&limit=500`)).entries;
}

async function tick(observe: TestObserve | ObserveService): Promise<void> {
  const service = 'service' in observe ? observe.service : observe;
  assert.equal(await service.jobs.alerts.tick(), true, 'the tick ran');
}

async function timeline(observe: TestObserve, sessionId: string): Promise<{ events: EventOut[]; chainValid: boolean }> {
  const response = await observe.call({ method: 'GET', url: `/api/sessions/${encodeURIComponent(sessionId)}/timeline` });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as { events: EventOut[]; chainValid: boolean };
}

/** A real HTTP receiver for notifications: records every request; a path can be told to fail first. */
interface Received {
  path: string;
  body: Record<string, unknown>;
  headers: IncomingHttpHeaders;
}

interface Receiver {
  url(path: string): string;
  readonly received: Received[];
  on(path: string): Received[];
  /** The next answers of `path`, before it settles on 200. */
  failNext(path: string, ...statuses: number[]): void;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const scripted = new Map<string, number[]>();
  const server = await new TestHttpServer((request, res) => sendJson(res, scripted.get(request.url)?.shift() ?? 200, {})).start();
  const received = (): Received[] => server.requests.map((r) => ({ path: r.url, body: JSON.parse(r.body) as Record<string, unknown>, headers: r.headers }));
  return {
    url: (path) => `${server.url}${path}`,
    get received() {
      return received();
    },
    on: (path) => received().filter((r) => r.path === path),
    failNext: (path, ...statuses) => scripted.set(path, [...(scripted.get(path) ?? []), ...statuses]),
    close: () => server.stop(),
  };
}

/** A fresh observe instance for a test that drives the evaluator (rules of other tests would interfere). */
async function withObserve(backend: TestBackend, run: (observe: TestObserve) => Promise<void>): Promise<void> {
  const observe = await startTestObserve(backend);
  try {
    await run(observe);
  } finally {
    await observe.close();
  }
}

/** withObserve with a webhook receiver that lives as long as the test. */
async function withObserveAndReceiver(backend: TestBackend, run: (observe: TestObserve, receiver: Receiver) => Promise<void>): Promise<void> {
  const receiver = await startReceiver();
  try {
    await withObserve(backend, (observe) => run(observe, receiver));
  } finally {
    await receiver.close();
  }
}

const toolCall = (sessionId: string, agentId: string, timestamp: string): EventInput => ({
  sessionId,
  agentId,
  eventType: 'tool_call',
  timestamp,
  payload: { toolName: 'search', callId: 'c1', arguments: {} },
});

await describeEachDatabase('alert rules: CRUD and validation', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  const valid = { name: 'High error rate', condition: 'error_rate_exceeds', threshold: 0.2, windowMinutes: 5 };

  test('POST creates a rule with defaults; GET one and GET list return it', async () => {
    const rule = await createRule(observe, { ...valid, name: '  High error rate  ' });
    assert.deepEqual(Object.keys(rule).sort(), RULE_FIELDS);
    assert.match(rule.id, /^[0-9a-f-]{36}$/);
    assert.deepEqual(
      { ...rule, id: undefined },
      {
        id: undefined,
        name: 'High error rate',
        description: null,
        enabled: true,
        condition: 'error_rate_exceeds',
        threshold: 0.2,
        windowMinutes: 5,
        scope: {},
        notifyChannels: [],
        createdAt: new Date(NOW).toISOString(),
        updatedAt: new Date(NOW).toISOString(),
      },
    );
    const one = await observe.call({ method: 'GET', url: `/api/alerts/rules/${rule.id}` });
    assert.equal(one.statusCode, 200);
    assert.deepEqual(one.json(), rule);
    assert.ok((await listRules(observe)).some((r) => r.id === rule.id));

    const full = await createRule(observe, {
      name: 'Costly agent',
      enabled: false,
      condition: 'cost_exceeds',
      threshold: 12.5,
      windowMinutes: 60,
      scope: { agentId: 'billing-bot', tags: ['prod', 'eu'] },
      notifyChannels: ['https://hooks.example.com/a', 'http://10.0.0.1:8080/alert'],
    });
    assert.equal(full.enabled, false);
    assert.deepEqual(full.scope, { agentId: 'billing-bot', tags: ['prod', 'eu'] });
    assert.deepEqual(full.notifyChannels, ['https://hooks.example.com/a', 'http://10.0.0.1:8080/alert']);
    // Newest first.
    const ids = (await listRules(observe)).map((r) => r.id);
    assert.ok(ids.indexOf(full.id) < ids.indexOf(rule.id));
  });

  test('every bound is enforced: 400 in the observe error body, nothing stored', async () => {
    const before = (await listRules(observe)).length;
    const channels = (n: number) => Array.from({ length: n }, (_, i) => `https://hooks.example.com/${i}`);
    const cases: [string, Record<string, unknown>, string][] = [
      ['empty name', { ...valid, name: '' }, 'name'],
      ['blank name', { ...valid, name: '    ' }, 'name'],
      ['name of 201 characters', { ...valid, name: 'x'.repeat(201) }, 'name'],
      ['missing name', { condition: 'cost_exceeds', threshold: 1, windowMinutes: 5 }, 'name'],
      ['negative threshold', { ...valid, threshold: -1 }, 'threshold'],
      ['error rate above 1', { ...valid, threshold: 1.5 }, 'threshold'],
      ['threshold as text', { ...valid, threshold: '0.5' }, 'threshold'],
      ['missing threshold', { name: 'n', condition: 'cost_exceeds', windowMinutes: 5 }, 'threshold'],
      ['window 0', { ...valid, windowMinutes: 0 }, 'windowMinutes'],
      ['window 43201', { ...valid, windowMinutes: 43_201 }, 'windowMinutes'],
      ['fractional window', { ...valid, windowMinutes: 1.5 }, 'windowMinutes'],
      ['missing window', { name: 'n', condition: 'cost_exceeds', threshold: 1 }, 'windowMinutes'],
      ['unknown condition', { ...valid, condition: 'cpu_exceeds' }, 'condition'],
      ['not a URL', { ...valid, notifyChannels: ['not a url'] }, 'notifyChannels.0'],
      ['ftp URL', { ...valid, notifyChannels: ['ftp://files.example.com/x'] }, 'notifyChannels.0'],
      ['21 channels', { ...valid, notifyChannels: channels(21) }, 'notifyChannels'],
      ['a channel twice', { ...valid, notifyChannels: ['https://a.example.com', 'https://a.example.com'] }, 'notifyChannels.1'],
      ['unknown key', { ...valid, severity: 'high' }, ''],
      ['unknown scope key', { ...valid, scope: { agent: 'x' } }, 'scope'],
      ['enabled as text', { ...valid, enabled: 'yes' }, 'enabled'],
      ['tags not strings', { ...valid, scope: { tags: [1] } }, 'scope.tags.0'],
    ];
    for (const [label, payload, path] of cases) {
      const response = await observe.call({ method: 'POST', url: '/api/alerts/rules', payload });
      const body = assertErrorBody(response, 400);
      assert.ok(Array.isArray(body.details) && body.details.length > 0, `${label}: details`);
      assert.ok(
        body.details.some((d) => d.path === path || d.path.startsWith(`${path}.`) || path === ''),
        `${label}: a detail at ${path} in ${JSON.stringify(body.details)}`,
      );
    }
    assert.equal((await listRules(observe)).length, before, 'nothing stored');
  });

  test('the bounds themselves are accepted', async () => {
    const accepted = [
      { ...valid, name: 'x'.repeat(200) },
      { ...valid, name: 'y' },
      { ...valid, threshold: 1 },
      { ...valid, threshold: 0 },
      { ...valid, windowMinutes: 1 },
      { ...valid, windowMinutes: 43_200 },
      { name: 'many', condition: 'event_count_exceeds', threshold: 1_000_000, windowMinutes: 5 },
      { ...valid, notifyChannels: Array.from({ length: 20 }, (_, i) => `https://hooks.example.com/${i}`) },
    ];
    for (const payload of accepted) await createRule(observe, payload);
  });

  test('PUT changes only the given fields', async () => {
    const rule = await createRule(observe, {
      name: 'Latency',
      condition: 'latency_exceeds',
      threshold: 500,
      windowMinutes: 15,
      scope: { agentId: 'a' },
      notifyChannels: ['https://hooks.example.com/l'],
    });
    clockOf(observe).advance(MINUTE);
    try {
      const response = await observe.call({ method: 'PUT', url: `/api/alerts/rules/${rule.id}`, payload: { threshold: 750 } });
      assert.equal(response.statusCode, 200, response.body);
      const updated = response.json() as Rule;
      assert.deepEqual(updated, { ...rule, threshold: 750, updatedAt: new Date(NOW + MINUTE).toISOString() });

      const renamed = (
        await observe.call({ method: 'PUT', url: `/api/alerts/rules/${rule.id}`, payload: { name: ' Slow tools ', enabled: false, scope: { tags: ['x'] } } })
      ).json() as Rule;
      assert.deepEqual(renamed, { ...updated, name: 'Slow tools', enabled: false, scope: { tags: ['x'] } });
      const stored = (await observe.call({ method: 'GET', url: `/api/alerts/rules/${rule.id}` })).json() as Rule;
      assert.deepEqual(stored, renamed);
      assert.equal(stored.createdAt, rule.createdAt);
    } finally {
      clockOf(observe).set(NOW);
    }
  });

  test('PUT refuses unknown keys and anything that leaves the rule invalid; nothing changes', async () => {
    const rule = await createRule(observe, { name: 'Spend', condition: 'cost_exceeds', threshold: 10, windowMinutes: 60 });
    const errorRule = await createRule(observe, valid);
    const cases: [string, Record<string, unknown>][] = [
      [rule.id, { colour: 'red' }],
      [rule.id, { threshold: -0.5 }],
      [rule.id, { windowMinutes: 43_201 }],
      [rule.id, { name: '' }],
      [rule.id, { notifyChannels: ['mailto:ops@example.com'] }],
      // The merged rule: an error rate is a ratio, so a cost threshold of 10 cannot become one.
      [rule.id, { condition: 'error_rate_exceeds' }],
      [errorRule.id, { threshold: 1.5 }],
      [rule.id, { condition: 'nope' }],
    ];
    for (const [id, payload] of cases) {
      const response = await observe.call({ method: 'PUT', url: `/api/alerts/rules/${id}`, payload });
      const body = assertErrorBody(response, 400);
      assert.ok(body.details && body.details.length > 0, JSON.stringify(payload));
    }
    const merged = assertErrorBody(
      await observe.call({ method: 'PUT', url: `/api/alerts/rules/${rule.id}`, payload: { condition: 'error_rate_exceeds' } }),
      400,
    );
    assert.deepEqual(
      merged.details?.map((d) => d.path),
      ['threshold'],
    );
    assert.deepEqual((await observe.call({ method: 'GET', url: `/api/alerts/rules/${rule.id}` })).json(), rule);
    assert.deepEqual((await observe.call({ method: 'GET', url: `/api/alerts/rules/${errorRule.id}` })).json(), errorRule);
    // Both changes together make a valid rule.
    const both = await observe.call({ method: 'PUT', url: `/api/alerts/rules/${rule.id}`, payload: { condition: 'error_rate_exceeds', threshold: 0.5 } });
    assert.equal(both.statusCode, 200, both.body);
  });

  test('description: optional text stored and answered by create, get, list and PUT; null clears it; over 1,000 characters is 400', async () => {
    const text = 'Pages the on-call engineer.\nSee the runbook.';
    const rule = await createRule(observe, { ...valid, description: text });
    assert.equal(rule.description, text);
    assert.equal(((await observe.call({ method: 'GET', url: `/api/alerts/rules/${rule.id}` })).json() as Rule).description, text);
    assert.equal((await listRules(observe)).find((r) => r.id === rule.id)!.description, text);

    const changed = await observe.call({ method: 'PUT', url: `/api/alerts/rules/${rule.id}`, payload: { description: 'x'.repeat(1000) } });
    assert.equal(changed.statusCode, 200, changed.body);
    assert.equal((changed.json() as Rule).description, 'x'.repeat(1000));
    const kept = (await observe.call({ method: 'PUT', url: `/api/alerts/rules/${rule.id}`, payload: { threshold: 0.3 } })).json() as Rule;
    assert.equal(kept.description, 'x'.repeat(1000), 'a PUT without description keeps it');
    const cleared = (await observe.call({ method: 'PUT', url: `/api/alerts/rules/${rule.id}`, payload: { description: null } })).json() as Rule;
    assert.equal(cleared.description, null);
    assert.equal(((await observe.call({ method: 'GET', url: `/api/alerts/rules/${rule.id}` })).json() as Rule).description, null);

    for (const [method, url] of [
      ['POST', '/api/alerts/rules'],
      ['PUT', `/api/alerts/rules/${rule.id}`],
    ] as const) {
      const body = assertErrorBody(await observe.call({ method, url, payload: { ...valid, description: 'x'.repeat(1001) } }), 400);
      assert.deepEqual(
        body.details?.map((d) => d.path),
        ['description'],
      );
      assertErrorBody(await observe.call({ method, url, payload: { ...valid, description: 5 } }), 400);
    }
    assert.equal(((await observe.call({ method: 'GET', url: `/api/alerts/rules/${rule.id}` })).json() as Rule).description, null);
  });

  test('PUT accepts the rule GET answered, with changes: id and times are ignored; a typo is still 400', async () => {
    const rule = await createRule(observe, { ...valid, description: 'before', scope: { agentId: 'a' }, notifyChannels: ['https://hooks.example.com/w'] });
    clockOf(observe).advance(MINUTE);
    try {
      const read = (await observe.call({ method: 'GET', url: `/api/alerts/rules/${rule.id}` })).json() as Rule;
      const response = await observe.call({
        method: 'PUT',
        url: `/api/alerts/rules/${rule.id}`,
        payload: {
          ...read,
          threshold: 0.4,
          description: 'after',
          id: 'another-id',
          createdAt: '2020-01-01T00:00:00.000Z',
          updatedAt: '2020-01-01T00:00:00.000Z',
        },
      });
      assert.equal(response.statusCode, 200, response.body);
      const expected = { ...rule, threshold: 0.4, description: 'after', updatedAt: new Date(NOW + MINUTE).toISOString() };
      assert.deepEqual(response.json(), expected);
      assert.deepEqual((await observe.call({ method: 'GET', url: `/api/alerts/rules/${rule.id}` })).json(), expected);

      const typo = assertErrorBody(await observe.call({ method: 'PUT', url: `/api/alerts/rules/${rule.id}`, payload: { ...read, treshold: 0.9 } }), 400);
      assert.match(typo.error, /treshold/);
      assert.deepEqual((await observe.call({ method: 'GET', url: `/api/alerts/rules/${rule.id}` })).json(), expected);
    } finally {
      clockOf(observe).set(NOW);
    }
  });

  test('unknown ids are 404 in the catalogue body', async () => {
    const id = '0192a4e0-7c1d-7000-8000-000000000000';
    assert.equal(assertErrorBody(await observe.call({ method: 'GET', url: `/api/alerts/rules/${id}` }), 404).error, 'Alert rule not found');
    assert.equal(
      assertErrorBody(await observe.call({ method: 'PUT', url: `/api/alerts/rules/${id}`, payload: { threshold: 1 } }), 404).error,
      'Alert rule not found',
    );
    assert.equal(assertErrorBody(await observe.call({ method: 'DELETE', url: `/api/alerts/rules/${id}` }), 404).error, 'Alert rule not found');
  });

  test('DELETE answers {id, deleted: true}; the rule is gone', async () => {
    const rule = await createRule(observe, valid);
    const response = await observe.call({ method: 'DELETE', url: `/api/alerts/rules/${rule.id}` });
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json(), { id: rule.id, deleted: true });
    assertErrorBody(await observe.call({ method: 'GET', url: `/api/alerts/rules/${rule.id}` }), 404);
    assertErrorBody(await observe.call({ method: 'DELETE', url: `/api/alerts/rules/${rule.id}` }), 404);
    assert.ok(!(await listRules(observe)).some((r) => r.id === rule.id));
  });

  test('history query bounds', async () => {
    assert.deepEqual(await history(observe), { entries: [], total: 0, hasMore: false });
    for (const query of ['?limit=0', '?limit=501', '?limit=abc', '?offset=-1']) {
      assertErrorBody(await observe.call({ method: 'GET', url: `/api/alerts/history${query}` }), 400);
    }
    assert.deepEqual(await history(observe, '?limit=500&offset=0&ruleId=unknown'), { entries: [], total: 0, hasMore: false });
  });

  test('the routes are documented in the OpenAPI document', async () => {
    const doc = (await observe.call({ method: 'GET', url: '/api/openapi.json' })).json() as { paths: Record<string, Record<string, unknown>> };
    for (const [path, method] of [
      ['/api/alerts/rules', 'post'],
      ['/api/alerts/rules', 'get'],
      ['/api/alerts/rules/{id}', 'get'],
      ['/api/alerts/rules/{id}', 'put'],
      ['/api/alerts/rules/{id}', 'delete'],
      ['/api/alerts/history', 'get'],
    ] as const) {
      assert.ok(doc.paths[path]?.[method], `${method} ${path}`);
    }
  });
});

await describeEachDatabase('alert rules: evaluation', (backend) => {
  test('each condition fires with its exact value, and not at exactly the threshold', async () => {
    await withObserve(backend, async (observe) => {
      const agent = 'a1';
      const s = 's-a1';
      await ingest(observe, [
        // Exactly at the window start (included) ...
        toolCall(s, agent, at(observe, -5)),
        // ... and 1 ms before it (excluded), with values that would change every figure.
        {
          sessionId: s,
          agentId: agent,
          eventType: 'tool_error',
          timestamp: new Date(NOW - 5 * MINUTE - 1).toISOString(),
          payload: { callId: 'x', toolName: 't', error: 'boom', durationMs: 10_000 },
        },
        { sessionId: s, agentId: agent, eventType: 'llm_response', timestamp: at(observe, -10), payload: llmResponse(5) },
        {
          sessionId: s,
          agentId: agent,
          eventType: 'tool_response',
          timestamp: at(observe, -4),
          payload: { callId: 'c1', toolName: 'search', result: 'ok', durationMs: 100 },
        },
        {
          sessionId: s,
          agentId: agent,
          eventType: 'tool_error',
          timestamp: at(observe, -3),
          payload: { callId: 'c2', toolName: 'search', error: 'no', durationMs: 300 },
        },
        { sessionId: s, agentId: agent, eventType: 'llm_response', timestamp: at(observe, -3), payload: llmResponse(0.25) },
        {
          sessionId: s,
          agentId: agent,
          eventType: 'cost_tracked',
          timestamp: at(observe, -2),
          payload: { provider: 'openai', model: 'gpt-4o', inputTokens: 10, outputTokens: 5, totalTokens: 15, costUsd: 0.5 },
        },
        { sessionId: s, agentId: agent, eventType: 'custom', severity: 'critical', timestamp: at(observe, -2), payload: { type: 'x', data: 1 } },
        { sessionId: s, agentId: agent, eventType: 'custom', timestamp: at(observe, -1.5), payload: { type: 'x', data: 2 } },
        { sessionId: s, agentId: agent, eventType: 'custom', severity: 'warn', timestamp: at(observe, -1), payload: { type: 'x', data: 3 } },
        // Another agent in the window, outside the rules' scope.
        {
          sessionId: 's-b',
          agentId: 'b',
          eventType: 'tool_error',
          timestamp: at(observe, -1),
          payload: { callId: 'y', toolName: 't', error: 'e', durationMs: 9999 },
        },
        { sessionId: 's-b', agentId: 'b', eventType: 'llm_response', timestamp: at(observe, -1), payload: llmResponse(99) },
      ]);
      // In scope and window: 8 events, 2 of them errors (tool_error, critical); spend 0.25 + 0.5;
      // tool latency mean(100, 300); newest event 1 minute ago.
      const expected: Record<string, number> = {
        error_rate_exceeds: 0.25,
        cost_exceeds: 0.75,
        latency_exceeds: 200,
        event_count_exceeds: 8,
        no_events_for: 1,
      };
      const below: Record<string, number> = {
        error_rate_exceeds: 0.2,
        cost_exceeds: 0.5,
        latency_exceeds: 199.5,
        event_count_exceeds: 7,
        no_events_for: 0.5,
      };
      const rules = new Map<string, { at: Rule; under: Rule }>();
      for (const condition of Object.keys(expected)) {
        const base = { condition, windowMinutes: 5, scope: { agentId: agent } };
        rules.set(condition, {
          at: await createRule(observe, { ...base, name: `${condition} at`, threshold: expected[condition] }),
          under: await createRule(observe, { ...base, name: `${condition} under`, threshold: below[condition] }),
        });
      }
      await tick(observe);
      for (const [condition, { at: atThreshold, under }] of rules) {
        assert.deepEqual(await entriesOf(observe, atThreshold.id), [], `${condition} does not fire at exactly its threshold`);
        const entries = await entriesOf(observe, under.id);
        assert.equal(entries.length, 1, `${condition} fires`);
        const entry = entries[0]!;
        assert.deepEqual(Object.keys(entry).sort(), ['currentValue', 'id', 'notified', 'ruleId', 'threshold', 'triggeredAt']);
        assert.deepEqual(
          { ...entry, id: undefined },
          {
            id: undefined,
            ruleId: under.id,
            triggeredAt: new Date(NOW).toISOString(),
            currentValue: expected[condition],
            threshold: below[condition],
            notified: false,
          },
          condition,
        );
      }
      const triggered = (await timeline(observe, `alert:${rules.get('latency_exceeds')!.under.id}`)).events;
      assert.equal(triggered.length, 1);
      assert.equal(triggered[0]!.eventType, 'alert_triggered');
      assert.equal(triggered[0]!.agentId, 'system', "alert events belong to the system agent, not to the rule's");
      assert.equal(triggered[0]!.timestamp, new Date(NOW).toISOString());
      assert.deepEqual(triggered[0]!.payload, {
        alertRuleId: rules.get('latency_exceeds')!.under.id,
        alertName: 'latency_exceeds under',
        condition: 'latency_exceeds',
        currentValue: 200,
        threshold: 199.5,
        message: 'latency_exceeds under: average tool latency 200 ms exceeds 199.5 ms over the last 5 minutes',
      });
    });
  });

  test('no_events_for with no event at all counts from the rule creation', async () => {
    await withObserve(backend, async (observe) => {
      const rule = await createRule(observe, { name: 'Silent', condition: 'no_events_for', threshold: 10, windowMinutes: 60, scope: { agentId: 'ghost' } });
      await tick(observe);
      clockOf(observe).advance(10 * MINUTE);
      await tick(observe);
      assert.deepEqual(await entriesOf(observe, rule.id), [], 'exactly 10 minutes of silence: not yet');
      clockOf(observe).advance(MINUTE);
      await tick(observe);
      const [entry] = await entriesOf(observe, rule.id);
      assert.equal(entry?.currentValue, 11);
      // The agent shows up: the condition clears.
      await ingest(observe, [toolCall('s-ghost', 'ghost', at(observe, 0))]);
      clockOf(observe).advance(MINUTE);
      await tick(observe);
      const [resolved] = await entriesOf(observe, rule.id);
      assert.equal(resolved?.resolvedAt, new Date(NOW + 12 * MINUTE).toISOString());
      const events = (await timeline(observe, `alert:${rule.id}`)).events;
      assert.deepEqual(
        events.map((e) => [e.eventType, e.agentId]),
        [
          ['alert_triggered', 'system'],
          ['alert_resolved', 'system'],
        ],
      );
    });
  });

  test('scope by tags keeps sessions that carry every listed tag; agentId and tags combine', async () => {
    await withObserve(backend, async (observe) => {
      const started = (sessionId: string, agentId: string, tags: string[]): EventInput => ({
        sessionId,
        agentId,
        eventType: 'session_started',
        timestamp: at(observe, -4),
        payload: { tags },
      });
      await ingest(observe, [
        started('s1', 'x', ['prod', 'eu']),
        toolCall('s1', 'x', at(observe, -3)),
        toolCall('s1', 'x', at(observe, -2)),
        started('s2', 'x', ['prod']),
        toolCall('s2', 'x', at(observe, -2)),
        started('s3', 'y', ['prod', 'eu', 'beta']),
        toolCall('s4', 'x', at(observe, -1)),
        toolCall('s4', 'x', at(observe, -1)),
        toolCall('s4', 'x', at(observe, -1)),
      ]);
      const count = (name: string, scope: Record<string, unknown>) =>
        createRule(observe, { name, condition: 'event_count_exceeds', threshold: 0, windowMinutes: 5, scope });
      const both = await count('prod+eu', { tags: ['prod', 'eu'] });
      const prod = await count('prod', { tags: ['prod'] });
      const xProd = await count('x prod', { agentId: 'x', tags: ['prod'] });
      const all = await count('all', {});
      const none = await count('nobody', { tags: ['nowhere'] });
      await tick(observe);
      const value = async (rule: Rule) => (await entriesOf(observe, rule.id))[0]?.currentValue;
      assert.equal(await value(both), 4); // s1 (3) + s3 (1)
      assert.equal(await value(prod), 6); // s1, s2, s3
      assert.equal(await value(xProd), 5); // s1, s2
      assert.equal(await value(all), 9);
      assert.equal(await value(none), undefined);
      // The alerts' own sessions are never tagged, so they never count; `all` stays at one entry.
      await tick(observe);
      assert.equal((await entriesOf(observe, all.id)).length, 1);
    });
  });

  test('fires once while open, resolves when the condition clears, notifies every channel, retries a failed one', async () => {
    await withObserveAndReceiver(backend, async (observe, receiver) => {
      receiver.failNext('/flaky', 500);
      const rule = await createRule(observe, {
        name: 'Busy agent',
        condition: 'event_count_exceeds',
        threshold: 2,
        windowMinutes: 5,
        scope: { agentId: 'life' },
        notifyChannels: [receiver.url('/ok'), receiver.url('/flaky')],
      });
      const events = (n: number) => Array.from({ length: n }, () => toolCall('s-life', 'life', at(observe, -1)));
      await ingest(observe, events(3));
      await tick(observe);

      let entries = await entriesOf(observe, rule.id);
      assert.equal(entries.length, 1);
      assert.equal(entries[0]!.currentValue, 3);
      assert.equal(entries[0]!.notified, false, 'one channel answered 500');
      const expectedBody = {
        alertRuleId: rule.id,
        alertName: 'Busy agent',
        condition: 'event_count_exceeds',
        currentValue: 3,
        threshold: 2,
        message: 'Busy agent: 3 events exceed 2 over the last 5 minutes',
        windowMinutes: 5,
        scope: { agentId: 'life' },
        triggeredAt: new Date(NOW).toISOString(),
      };
      assert.deepEqual(
        receiver.on('/ok').map((r) => r.body),
        [expectedBody],
      );
      assert.deepEqual(
        receiver.on('/flaky').map((r) => r.body),
        [expectedBody],
      );
      assert.deepEqual(Object.keys(receiver.on('/ok')[0]!.body).sort(), BODY_FIELDS);
      assert.equal(receiver.on('/ok')[0]!.headers['content-type'], 'application/json');

      // Still over the threshold a minute later: no second entry, no second notification to /ok,
      // and the failed channel is retried and succeeds.
      clockOf(observe).advance(MINUTE);
      await ingest(observe, events(1));
      await tick(observe);
      entries = await entriesOf(observe, rule.id);
      assert.equal(entries.length, 1, 'an open alert does not fire again');
      assert.equal(entries[0]!.notified, true, 'every channel answered 2xx');
      assert.equal(receiver.on('/ok').length, 1);
      assert.deepEqual(
        receiver.on('/flaky').map((r) => r.body),
        [expectedBody, expectedBody],
      );

      // Quiet for 10 minutes: the window is empty, the condition clears.
      clockOf(observe).advance(10 * MINUTE);
      await tick(observe);
      entries = await entriesOf(observe, rule.id);
      const resolvedAt = new Date(NOW + 11 * MINUTE).toISOString();
      assert.deepEqual(entries, [{ ...entries[0]!, resolvedAt }]);
      assert.equal(entries[0]!.notified, true);
      for (const path of ['/ok', '/flaky']) {
        const bodies = receiver.on(path).map((r) => r.body);
        assert.deepEqual(bodies.at(-1), { ...expectedBody, resolvedAt }, path);
      }

      // The alert's session: triggered then resolved, chained, verifiable.
      const sessionId = `alert:${rule.id}`;
      const line = await timeline(observe, sessionId);
      assert.equal(line.chainValid, true);
      assert.deepEqual(
        line.events.map((e) => [e.eventType, e.seq, e.agentId, e.timestamp]),
        [
          ['alert_triggered', 0, 'system', new Date(NOW).toISOString()],
          ['alert_resolved', 1, 'system', resolvedAt],
        ],
      );
      assert.deepEqual(line.events[1]!.payload, { alertRuleId: rule.id, alertName: 'Busy agent', resolvedBy: 'condition_cleared' });
      const verify = await observe.call({ method: 'GET', url: `/api/audit/verify?sessionId=${encodeURIComponent(sessionId)}` });
      assert.equal(verify.statusCode, 200, verify.body);
      assert.equal((verify.json() as { valid: boolean }).valid, true);
      assert.equal((verify.json() as { eventCount: number }).eventCount, 2);

      // Nothing more while it stays clear; busy again: a new entry.
      const sent = receiver.received.length;
      await tick(observe);
      assert.equal(receiver.received.length, sent);
      await ingest(observe, events(3));
      await tick(observe);
      entries = await entriesOf(observe, rule.id);
      assert.equal(entries.length, 2);
      assert.equal(entries[0]!.resolvedAt, undefined, 'newest first: the new open entry');
      assert.equal(entries[1]!.resolvedAt, resolvedAt);
    });
  });

  test('a channel that keeps failing is tried 3 times, 2^n s apart; notified stays false', async () => {
    await withObserveAndReceiver(backend, async (observe, receiver) => {
      receiver.failNext('/down', 500, 502, 503, 500, 500);
      const rule = await createRule(observe, {
        name: 'Down',
        condition: 'event_count_exceeds',
        threshold: 0,
        windowMinutes: 60,
        notifyChannels: [receiver.url('/down')],
      });
      await ingest(observe, [toolCall('s', 'a', at(observe, 0))]);
      await tick(observe); // attempt 1
      assert.equal(receiver.on('/down').length, 1);
      clockOf(observe).advance(1999);
      await tick(observe); // attempt 2 is due 2 s after attempt 1: not yet
      assert.equal(receiver.on('/down').length, 1);
      clockOf(observe).advance(1);
      await tick(observe);
      assert.equal(receiver.on('/down').length, 2);
      clockOf(observe).advance(3999);
      await tick(observe);
      assert.equal(receiver.on('/down').length, 2, 'attempt 3 is due 4 s after attempt 2');
      clockOf(observe).advance(1);
      await tick(observe);
      assert.equal(receiver.on('/down').length, 3);
      clockOf(observe).advance(10 * MINUTE);
      await tick(observe);
      assert.equal(receiver.on('/down').length, 3, 'no fourth attempt');
      assert.equal((await entriesOf(observe, rule.id))[0]!.notified, false);
    });
  });

  test("the alerts' own events never count toward a rule", async () => {
    await withObserve(backend, async (observe) => {
      const counter = await createRule(observe, { name: 'Any event', condition: 'event_count_exceeds', threshold: 0, windowMinutes: 60 });
      const quiet = await createRule(observe, { name: 'Quiet', condition: 'no_events_for', threshold: 0.5, windowMinutes: 60, scope: { agentId: 'quiet' } });
      clockOf(observe).advance(MINUTE);
      await tick(observe);
      assert.equal((await entriesOf(observe, quiet.id)).length, 1, 'quiet fired and wrote its alert_triggered event');
      const written = await observe.call({ method: 'GET', url: `/api/events?sessionId=${encodeURIComponent(`alert:${quiet.id}`)}` });
      assert.equal((written.json() as { total: number }).total, 1);
      // Alert events sent by clients are not counted either.
      await ingest(observe, [
        {
          sessionId: 'normal',
          agentId: 'someone',
          eventType: 'alert_triggered',
          timestamp: at(observe, 0),
          payload: { alertRuleId: 'r', alertName: 'n', condition: 'c', currentValue: 1, threshold: 0, message: 'm' },
        },
        { sessionId: 'normal', agentId: 'someone', eventType: 'alert_resolved', timestamp: at(observe, 0), payload: { alertRuleId: 'r', alertName: 'n' } },
      ]);
      clockOf(observe).advance(MINUTE);
      await tick(observe);
      assert.deepEqual(await entriesOf(observe, counter.id), []);
      await ingest(observe, [toolCall('real', 'someone', at(observe, 0))]);
      await tick(observe);
      const [entry] = await entriesOf(observe, counter.id);
      assert.equal(entry?.currentValue, 1);
    });
  });

  test('a disabled rule is not evaluated', async () => {
    await withObserve(backend, async (observe) => {
      const rule = await createRule(observe, { name: 'Off', enabled: false, condition: 'event_count_exceeds', threshold: 0, windowMinutes: 5 });
      await ingest(observe, [toolCall('s', 'a', at(observe, 0))]);
      await tick(observe);
      assert.deepEqual(await entriesOf(observe, rule.id), []);
      await observe.call({ method: 'PUT', url: `/api/alerts/rules/${rule.id}`, payload: { enabled: true } });
      await tick(observe);
      assert.equal((await entriesOf(observe, rule.id)).length, 1);
    });
  });

  test('deleting a rule keeps its history, resolves an open entry and stops evaluation', async () => {
    await withObserveAndReceiver(backend, async (observe, receiver) => {
      const rule = await createRule(observe, {
        name: 'Doomed',
        condition: 'event_count_exceeds',
        threshold: 0,
        windowMinutes: 60,
        notifyChannels: [receiver.url('/hook')],
      });
      await ingest(observe, [toolCall('s', 'a', at(observe, 0))]);
      await tick(observe);
      clockOf(observe).advance(MINUTE);
      const deleted = await observe.call({ method: 'DELETE', url: `/api/alerts/rules/${rule.id}` });
      assert.deepEqual(deleted.json(), { id: rule.id, deleted: true });
      const resolvedAt = new Date(NOW + MINUTE).toISOString();
      const [entry] = await entriesOf(observe, rule.id);
      assert.equal(entry?.resolvedAt, resolvedAt);
      const line = await timeline(observe, `alert:${rule.id}`);
      assert.equal(line.chainValid, true);
      assert.deepEqual(line.events.at(-1)!.payload, { alertRuleId: rule.id, alertName: 'Doomed', resolvedBy: 'rule_deleted' });
      // The resolved notification goes out with the next tick, never from the DELETE request.
      assert.equal(receiver.on('/hook').length, 1);
      clockOf(observe).advance(MINUTE);
      await tick(observe);
      assert.deepEqual(
        receiver.on('/hook').map((r) => r.body.resolvedAt),
        [undefined, resolvedAt],
      );
      await ingest(observe, [toolCall('s', 'a', at(observe, 0))]);
      clockOf(observe).advance(MINUTE);
      await tick(observe);
      assert.equal((await entriesOf(observe, rule.id)).length, 1, 'no further evaluation');
    });
  });

  test('history pages newest first with total and hasMore', async () => {
    await withObserve(backend, async (observe) => {
      const rules: Rule[] = [];
      for (let i = 0; i < 3; i++) {
        rules.push(await createRule(observe, { name: `r${i}`, condition: 'event_count_exceeds', threshold: 0, windowMinutes: 60 }));
        await ingest(observe, [toolCall('s', 'a', at(observe, 0))]);
        await tick(observe);
        clockOf(observe).advance(MINUTE);
      }
      const first = await history(observe, '?limit=2');
      assert.deepEqual(
        first.entries.map((e) => e.ruleId),
        [rules[2]!.id, rules[1]!.id],
      );
      assert.equal(first.total, 3);
      assert.equal(first.hasMore, true);
      const second = await history(observe, '?limit=2&offset=2');
      assert.deepEqual(
        second.entries.map((e) => e.ruleId),
        [rules[0]!.id],
      );
      assert.equal(second.total, 3);
      assert.equal(second.hasMore, false);
      const all = await history(observe);
      assert.deepEqual(
        all.entries.map((e) => e.triggeredAt),
        [2, 1, 0].map((m) => new Date(NOW + m * MINUTE).toISOString()),
      );
      const one = await history(observe, `?ruleId=${rules[1]!.id}`);
      assert.equal(one.total, 1);
      assert.equal(one.hasMore, false);
      assert.equal(one.entries[0]!.ruleId, rules[1]!.id);
      // The period (an evidence pack's): from and to are inclusive bounds on triggeredAt; from after to is a 400.
      const minute = (m: number) => new Date(NOW + m * MINUTE).toISOString();
      const period = await history(observe, `?from=${minute(1)}&to=${minute(2)}`);
      assert.deepEqual(
        period.entries.map((e) => e.ruleId),
        [rules[2]!.id, rules[1]!.id],
      );
      assert.equal(period.total, 2);
      assert.deepEqual(
        (await history(observe, `?to=${minute(0)}`)).entries.map((e) => e.ruleId),
        [rules[0]!.id],
      );
      assertErrorBody(await observe.call({ method: 'GET', url: `/api/alerts/history?from=${minute(2)}&to=${minute(1)}` }), 400);
    });
  });

  test('history limit defaults to 50 and offset to 0', async () => {
    await withObserve(backend, async (observe) => {
      for (let i = 0; i < 51; i++) await createRule(observe, { name: `r${i}`, condition: 'event_count_exceeds', threshold: 0, windowMinutes: 60 });
      await ingest(observe, [toolCall('s', 'a', at(observe, 0))]);
      await tick(observe);
      const page = await history(observe);
      assert.equal(page.entries.length, 50);
      assert.equal(page.total, 51);
      assert.equal(page.hasMore, true);
      assert.deepEqual(page, await history(observe, '?limit=50&offset=0'));
    });
  });

  if (backend.kind === 'postgres') {
    test('two instances on one database ticking together open one history entry', async () => {
      await withObserve(backend, async (observe) => {
        const other: ObserveService = await buildObserveService({ ...observe.config }, { runJobs: false, clock: observe.clock });
        try {
          const rule = await createRule(observe, { name: 'Shared', condition: 'event_count_exceeds', threshold: 0, windowMinutes: 60 });
          await ingest(observe, [toolCall('s', 'a', at(observe, 0))]);
          const ran = await Promise.all([observe.service.jobs.alerts.tick(), other.jobs.alerts.tick()]);
          assert.equal(ran.filter(Boolean).length, 1, 'one instance holds the lease');
          assert.equal((await entriesOf(observe, rule.id)).length, 1);

          // Even without the lease (evaluation run directly on both at once): one entry, one event.
          const second = await createRule(observe, { name: 'Shared 2', condition: 'event_count_exceeds', threshold: 0, windowMinutes: 60 });
          const now = observe.clock.now();
          await Promise.all([
            evaluateRules(observe.service.context, now, observe.service.app.log),
            evaluateRules(other.context, now, other.app.log),
            evaluateRules(other.context, now, other.app.log),
          ]);
          assert.equal((await entriesOf(observe, second.id)).length, 1);
          assert.equal((await timeline(observe, `alert:${second.id}`)).events.length, 1);
          assert.equal((await entriesOf(observe, rule.id)).length, 1);
        } finally {
          await other.app.close();
        }
      });
    });
  }
});

function llmResponse(costUsd: number): Record<string, unknown> {
  return {
    callId: `llm-${costUsd}`,
    provider: 'openai',
    model: 'gpt-4o',
    completion: 'hi',
    finishReason: 'stop',
    usage: { inputTokens: 10, outputTokens: 5 },
    costUsd,
    latencyMs: 1000,
  };
}
