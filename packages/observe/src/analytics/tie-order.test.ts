import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { startTestObserve, type TestObserve } from '../testing.ts';

// The test clock stands at 2026-11-22T10:00:00.000Z; every event lies in the default window.
const at = '2026-11-22T09:00:00.000Z';
// Names whose code-unit order (upper case before lower, accents after z) is not a locale's order.
const NAMES = ['beta', 'Beta', 'alpha', 'éclair', 'Zulu'];
const CODE_UNIT_ORDER = ['Beta', 'Zulu', 'alpha', 'beta', 'éclair'];

const llm = (agentId: string, model: string) => ({
  sessionId: `s-${agentId}`,
  agentId,
  timestamp: at,
  eventType: 'llm_response',
  payload: {
    callId: `l-${agentId}`,
    provider: 'openai',
    model,
    completion: 'ok',
    finishReason: 'stop',
    usage: { inputTokens: 10, outputTokens: 10 },
    costUsd: 0.5,
    latencyMs: 100,
  },
});
const tool = (agentId: string, toolName: string) => ({
  sessionId: `s-${agentId}`,
  agentId,
  timestamp: at,
  eventType: 'tool_call',
  payload: { toolName, callId: `t-${agentId}`, arguments: {} },
});

await describeEachDatabase('analytics ties are ordered by code units, the same on every host', (backend) => {
  let observe: TestObserve;
  const get = async <T>(url: string): Promise<T> => {
    const response = await observe.call({ method: 'GET', url });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as T;
  };

  before(async () => {
    observe = await startTestObserve(backend);
    // Each agent: one LLM call of equal cost on a model named like it, one call of a tool named like it.
    const events = NAMES.flatMap((name) => [llm(name, `m-${name}`), tool(name, name)]);
    const response = await observe.call({ method: 'POST', url: '/api/events', payload: { events } });
    assert.equal(response.statusCode, 201, response.body);
  });
  after(() => observe.close());

  test('the fixture tells the orders apart: a locale would sort these names otherwise', () => {
    assert.notDeepEqual(
      [...NAMES].sort((a, b) => a.localeCompare(b, 'en')),
      CODE_UNIT_ORDER,
    );
    assert.deepEqual([...NAMES].sort(), CODE_UNIT_ORDER);
  });

  test('agents, costs by agent, tools and LLM models: equal figures are ordered by name in code units', async () => {
    // Each report, the list it orders and the name of its rows.
    const reports: [url: string, list: string, name: string, expected: string[]][] = [
      ['/api/analytics/agents', 'agents', 'agentId', CODE_UNIT_ORDER],
      ['/api/analytics/costs', 'byAgent', 'agentId', CODE_UNIT_ORDER],
      ['/api/analytics/tools', 'tools', 'toolName', CODE_UNIT_ORDER],
      ['/api/analytics/llm', 'byModel', 'model', CODE_UNIT_ORDER.map((name) => `m-${name}`)],
    ];
    for (const [url, list, name, expected] of reports) {
      const body = await get<Record<string, Record<string, string>[]>>(url);
      assert.deepEqual(
        body[list]!.map((row) => row[name]),
        expected,
        url,
      );
    }
  });
});
