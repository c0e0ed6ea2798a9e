import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import type { InjectOptions } from 'fastify';
import { startTestGate, type TestGate } from '../testing.ts';
import { MCP_TOOL_ROUTES } from './mcp.ts';
import { routeScopes, SCOPES, type Scope } from './scopes.ts';

/** The ten tools of AgentGate's MCP server (packages/mcp/src/tools.ts), each asked about before it runs. */
const AGENTGATE_TOOLS = [
  'agentgate_request',
  'agentgate_get',
  'agentgate_list',
  'agentgate_decide',
  'agentgate_list_policies',
  'agentgate_create_policy',
  'agentgate_update_policy',
  'agentgate_delete_policy',
  'agentgate_list_audit_logs',
  'agentgate_get_audit_actors',
];

interface Verdict {
  decision: 'allow' | 'deny';
  status?: 'denied';
  toolName: string;
  requiredScope: string | null;
  reason: string | null;
}

await describeEachDatabase('gate POST /api/mcp/authorize (AgentGate MCP server)', (backend) => {
  let gate: TestGate;
  let keyOf: Map<Scope, string>;
  before(async () => {
    gate = await startTestGate(backend);
    keyOf = await gate.keyPerScope();
  });
  after(() => gate.close());

  test('every AgentGate tool maps to a route of the app, and nothing else is mapped', () => {
    const scopeOf = routeScopes(gate.service.app.routeTable);
    assert.deepEqual(Object.keys(MCP_TOOL_ROUTES).sort(), [...AGENTGATE_TOOLS].sort());
    for (const [tool, route] of Object.entries(MCP_TOOL_ROUTES)) assert.ok(route in scopeOf, `${tool} → ${route}`);
  });

  const authorize = async (payload: object, credential?: string): Promise<Verdict> => {
    const response = await gate.call({ method: 'POST', url: '/api/mcp/authorize', payload }, credential);
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as Verdict;
  };

  /** A call of the tool's route that, once past authorization, ends in a 400 or 404 and changes nothing. */
  const probe = (route: string): InjectOptions => {
    const [method, url] = route.split(' ') as [InjectOptions['method'], string];
    const withBody = method === 'POST' || method === 'PUT';
    return { method, url: url.replace(/:[A-Za-z]+/g, 'no-such-id-0000'), ...(withBody && { payload: {} }) };
  };

  test('each of the ten tools × each scope: allowed exactly when the call the tool makes would pass the scope check', async () => {
    for (const tool of AGENTGATE_TOOLS) {
      for (const scope of SCOPES) {
        const key = keyOf.get(scope)!;
        const verdict = await authorize({ toolName: tool, params: { id: 'x' } }, key);
        const call = await gate.call(probe(MCP_TOOL_ROUTES[tool]!), key);
        const context = `${tool} with a ${scope} key: ${JSON.stringify(verdict)}; the call answered ${call.statusCode}`;
        assert.ok(call.statusCode < 500 && call.statusCode !== 401, context);
        assert.equal(verdict.decision, call.statusCode === 403 ? 'deny' : 'allow', context);
        assert.equal(verdict.toolName, tool);
        assert.equal(verdict.requiredScope, routeScopes(gate.service.app.routeTable)[MCP_TOOL_ROUTES[tool]!]);
      }
    }
  });

  test('the answer has the shape AgentGate’s MCP server reads: allow, or deny with status denied and a reason', async () => {
    const reader = keyOf.get('request:read')!;
    assert.deepEqual(await authorize({ toolName: 'agentgate_list', params: { status: 'pending' } }, reader), {
      decision: 'allow',
      toolName: 'agentgate_list',
      requiredScope: 'request:read',
      reason: null,
    });
    const denied = await authorize({ toolName: 'agentgate_decide', params: { id: 'r1', decision: 'approved' } }, reader);
    assert.equal(denied.decision, 'deny');
    assert.equal(denied.status, 'denied');
    assert.equal(denied.requiredScope, 'request:decide');
    assert.match(denied.reason ?? '', /request:decide/);
    // `context` is accepted like AgentGate's own server does; the admin key may run everything.
    assert.equal((await authorize({ toolName: 'agentgate_delete_policy', params: { id: 'p' }, context: { sessionId: 's' } })).decision, 'allow');
  });

  test('an unknown tool is a deny with a reason, not an error; a missing toolName is a 400', async () => {
    for (const toolName of ['delete_everything', 'constructor', '__proto__', 'toString', 'AGENTGATE_REQUEST']) {
      const verdict = await authorize({ toolName }, keyOf.get('admin')!);
      assert.equal(verdict.decision, 'deny', toolName);
      assert.equal(verdict.status, 'denied', toolName);
      assert.equal(verdict.requiredScope, null, toolName);
      assert.match(verdict.reason ?? '', /Unknown tool/, toolName);
    }
    for (const payload of [
      {},
      { toolName: '' },
      { toolName: '   ' },
      { toolName: 7 },
      { toolName: 'agentgate_get', params: 'x' },
      { toolName: 'agentgate_get', extra: 1 },
    ]) {
      const response = await gate.call({ method: 'POST', url: '/api/mcp/authorize', payload });
      assert.equal(response.statusCode, 400, `${JSON.stringify(payload)}: ${response.body}`);
      assert.equal((response.json() as { error: { code: string } }).error.code, 'bad_request');
    }
    const missing = await gate.call({ method: 'POST', url: '/api/mcp/authorize', payload: {} });
    assert.match((missing.json() as { error: { message: string; details?: unknown } }).error.message + JSON.stringify(missing.json()), /toolName is required/);
    assert.equal((await gate.service.app.inject({ method: 'POST', url: '/api/mcp/authorize', payload: { toolName: 'agentgate_get' } })).statusCode, 401);
  });

  test('through an MCP session the verdict follows the scopes its key has now', async () => {
    const key = await gate.createKey(['request:read', 'request:decide'], null, 'agent-key');
    const opened = await gate.call({ method: 'POST', url: '/api/mcp/sessions', payload: { name: 'claude-desktop' } }, key);
    assert.equal(opened.statusCode, 201, opened.body);
    const token = (opened.json() as { token: string }).token;
    assert.equal((await authorize({ toolName: 'agentgate_decide' }, token)).decision, 'allow');
    const patched = await gate.call({ method: 'PATCH', url: `/api/api-keys/${await gate.keyIdOf(key)}`, payload: { scopes: ['request:read'] } });
    assert.equal(patched.statusCode, 200, patched.body);
    assert.equal((await authorize({ toolName: 'agentgate_decide' }, token)).decision, 'deny');
    assert.equal((await authorize({ toolName: 'agentgate_list_audit_logs' }, token)).decision, 'allow');
  });
});
