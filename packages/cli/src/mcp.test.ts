import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client, LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { sendJson, TestHttpServer } from '@vigil/platform/testing';
import { GateClient } from '@vigil/sdk';
import { eventually, forwardTo, startLiveServices, type LiveServices } from './testing.ts';
import { GateIdentity, MCP_SESSIONS_PATH, sessionName } from './mcp-identity.ts';

const bin = resolve(import.meta.dirname, '../bin/vigil.mjs');
const CLIENT = { name: 'vigil-test-client', version: '1.2.3' };

interface Connected {
  client: Client;
  stderr: () => string;
  close(): Promise<void>;
}

/**
 * `vigil mcp` as a child process on stdio, driven by the MCP SDK's client: protocol 2026-07-28
 * unless `legacy` (the 2025-11-25 initialize handshake).
 */
async function connect(env: Record<string, string>, clientInfo = CLIENT, legacy = false): Promise<Connected> {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k, v]) => v !== undefined && !k.startsWith('VIGIL_'))) as Record<string, string>;
  const transport = new StdioClientTransport({ command: process.execPath, args: [bin, 'mcp'], env: { ...inherited, ...env }, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client(clientInfo, { versionNegotiation: { mode: legacy ? 'legacy' : { pin: '2026-07-28' } } });
  await client.connect(transport);
  assert.equal(client.getNegotiatedProtocolVersion(), legacy ? LATEST_PROTOCOL_VERSION : '2026-07-28');
  return { client, stderr: () => stderr, close: () => client.close() };
}

interface ToolAnswer {
  isError: boolean;
  text: string;
  json: any;
}

async function callTool(client: Client, name: string, args: Record<string, unknown>): Promise<ToolAnswer> {
  const answer = (await client.callTool({ name, arguments: args })) as { isError?: boolean; content: Array<{ type: string; text: string }> };
  const text = answer.content.map((c) => c.text).join('\n');
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    // An error answer is plain text.
  }
  return { isError: answer.isError === true, text, json };
}

async function ok(client: Client, name: string, args: Record<string, unknown>) {
  const answer = await callTool(client, name, args);
  assert.equal(answer.isError, false, `${name} failed: ${answer.text}`);
  return answer.json;
}

let live: LiveServices;
let gateRecorder: TestHttpServer;
let mcp: Connected;
let deciderKey: string;
const servers: TestHttpServer[] = [];

before(async () => {
  live = await startLiveServices();
  // The gate is reached through a recording proxy, to see which credential each call carries.
  gateRecorder = new TestHttpServer((request, res) => void forwardTo(live.gateUrl, request, res));
  servers.push(await gateRecorder.start());
  deciderKey = await live.gateKey('mcp-operator', ['request:create', 'request:read', 'request:decide']);
  mcp = await connect({ VIGIL_URL: live.observeUrl, VIGIL_API_KEY: live.observeKey, VIGIL_GATE_URL: gateRecorder.url, VIGIL_GATE_API_KEY: deciderKey });
});

after(async () => {
  await mcp?.close();
  for (const server of servers) await server.stop();
  await live?.close();
});

describe('vigil mcp over stdio', () => {
  test('lists the observe and gate tools, each with an input schema', async () => {
    const { tools } = await mcp.client.listTools();
    const names = tools.map((t) => t.name).sort();
    assert.deepEqual(names, [
      'create_approval_request',
      'decide_approval_request',
      'end_session',
      'get_analytics',
      'get_approval_request',
      'get_context',
      'get_session',
      'list_approval_requests',
      'log_event',
      'query_events',
      'query_sessions',
      'recall',
      'start_session',
    ]);
    const logEvent = tools.find((t) => t.name === 'log_event')!;
    assert.deepEqual([...(logEvent.inputSchema.required ?? [])].sort(), ['agentId', 'eventType', 'payload', 'sessionId']);
    assert.equal(tools.find((t) => t.name === 'query_sessions')!.annotations?.readOnlyHint, true);
    assert.equal(tools.find((t) => t.name === 'decide_approval_request')!.annotations?.readOnlyHint, false);
  });

  test('a session logged through the tools is stored, chained and queryable', async () => {
    const started = await ok(mcp.client, 'start_session', { agentId: 'mcp-agent', agentName: 'MCP Agent', tags: ['mcp'] });
    const sessionId = started.sessionId as string;
    assert.match(sessionId, /^[0-9a-f-]{36}$/);
    await ok(mcp.client, 'log_event', {
      sessionId,
      agentId: 'mcp-agent',
      eventType: 'tool_call',
      payload: { toolName: 'stripe_refund', callId: 'c1', arguments: { charge: 'ch_42', amount: 1200 } },
    });
    await ok(mcp.client, 'log_event', {
      sessionId,
      agentId: 'mcp-agent',
      eventType: 'tool_error',
      severity: 'error',
      payload: { toolName: 'stripe_refund', callId: 'c1', error: 'refund window expired for charge', durationMs: 85 },
    });
    const ended = await ok(mcp.client, 'end_session', { sessionId, agentId: 'mcp-agent', reason: 'error', summary: 'refund failed: window expired' });
    assert.equal(ended.status, 'error');
    assert.equal(ended.errorCount, 1);

    const listed = await ok(mcp.client, 'query_sessions', { agentId: 'mcp-agent', tags: ['mcp'] });
    assert.deepEqual(
      listed.sessions.map((s: { id: string }) => s.id),
      [sessionId],
    );

    const detail = await ok(mcp.client, 'get_session', { sessionId, includeEvents: true });
    assert.equal(detail.chainValid, true);
    assert.deepEqual(
      detail.events.map((e: { eventType: string }) => e.eventType),
      ['session_started', 'tool_call', 'tool_error', 'session_ended'],
    );
    assert.deepEqual(detail.events[0].payload.mcpClientInfo, CLIENT, 'session_started names the MCP client');

    const found = await ok(mcp.client, 'query_events', { search: 'refund window expired', sessionId });
    assert.equal(found.total, 1);
    assert.equal(found.events[0].eventType, 'tool_error');

    const tools = await ok(mcp.client, 'get_analytics', { report: 'tools' });
    const refund = tools.tools.find((t: { toolName: string }) => t.toolName === 'stripe_refund');
    assert.deepEqual([refund.callCount, refund.errorCount], [1, 1]);
    const overview = await ok(mcp.client, 'get_analytics', {});
    assert.ok(overview.totals.eventCount >= 4);

    // Recall and context read the embeddings, computed by observe's background job.
    await eventually(
      async () => {
        await live.observe.jobs.embeddings.tick();
        return ok(mcp.client, 'recall', { query: 'stripe refund window expired', scope: 'events' });
      },
      (answer) => answer.results.some((r: { metadata: { sessionId: string } }) => r.metadata.sessionId === sessionId),
      20_000,
      'recall of the tool error',
    );
    const context = await eventually(
      async () => {
        await live.observe.jobs.embeddings.tick();
        return ok(mcp.client, 'get_context', { topic: 'stripe refund failures' });
      },
      (answer) => answer.sessions.some((s: { sessionId: string }) => s.sessionId === sessionId),
      20_000,
      'context of the session',
    );
    assert.equal(context.topic, 'stripe refund failures');
  });

  test('get_analytics: agentId narrows every report; a parameter a report cannot honour is refused by name, never dropped', async () => {
    const cost = { provider: 'openai', model: 'gpt-4o', inputTokens: 10, outputTokens: 5, totalTokens: 15 };
    for (const [agentId, toolName, costUsd] of [
      ['analytics-a', 'lookup_a', 1.5],
      ['analytics-b', 'lookup_b', 2.25],
    ] as const) {
      await ok(mcp.client, 'log_event', { sessionId: `s-${agentId}`, agentId, eventType: 'tool_call', payload: { toolName, callId: 'c1', arguments: {} } });
      await ok(mcp.client, 'log_event', { sessionId: `s-${agentId}`, agentId, eventType: 'cost_tracked', payload: { ...cost, costUsd } });
    }
    const tools = await ok(mcp.client, 'get_analytics', { report: 'tools', agentId: 'analytics-a' });
    assert.deepEqual(
      tools.tools.map((t: { toolName: string }) => t.toolName),
      ['lookup_a'],
    );
    const agents = await ok(mcp.client, 'get_analytics', { report: 'agents', agentId: 'analytics-b' });
    assert.deepEqual(
      agents.agents.map((a: { agentId: string; sessionCount: number }) => [a.agentId, a.sessionCount]),
      [['analytics-b', 1]],
    );
    const costs = await ok(mcp.client, 'get_analytics', { report: 'costs', agentId: 'analytics-a' });
    assert.deepEqual(
      costs.byAgent.map((a: { agentId: string; totalCostUsd: number }) => [a.agentId, a.totalCostUsd]),
      [['analytics-a', 1.5]],
    );

    const refused = await callTool(mcp.client, 'get_analytics', { report: 'agents', agentId: 'analytics-a', granularity: 'day', model: 'gpt-4o' });
    assert.equal(refused.isError, true);
    assert.match(refused.text, /The agents report does not take granularity, model; it takes from, to, agentId/);
  });

  test('a refused event answers a tool error with the server message and the field', async () => {
    const answer = await callTool(mcp.client, 'log_event', { sessionId: 's', agentId: 'a', eventType: 'tool_call', payload: { toolName: 'x', arguments: {} } });
    assert.equal(answer.isError, true);
    assert.match(answer.text, /^observe answered 400 validation_error: /);
    assert.match(answer.text, /events\.0\.payload\.callId/);
  });

  test('approval requests: create, list, get, decide — the decision is attributed to the MCP client', async () => {
    const created = await ok(mcp.client, 'create_approval_request', {
      action: 'refund',
      params: { amount: 1200 },
      urgency: 'high',
      context: { sessionId: 'x' },
    });
    assert.equal(created.status, 'pending');
    const listed = await ok(mcp.client, 'list_approval_requests', { status: 'pending', action: 'refund' });
    assert.deepEqual(
      listed.requests.map((r: { id: string }) => r.id),
      [created.id],
    );
    const fetched = await ok(mcp.client, 'get_approval_request', { requestId: created.id });
    assert.deepEqual(fetched.params, { amount: 1200 });

    const decided = await ok(mcp.client, 'decide_approval_request', { requestId: created.id, decision: 'approved', reason: 'customer is eligible' });
    assert.equal(decided.status, 'approved');

    // The MCP server asked the gate for an MCP session named after the client, with its API key.
    const signIns = gateRecorder.requests.filter((r) => r.method === 'POST' && r.url === MCP_SESSIONS_PATH);
    assert.ok(signIns.length >= 1, 'the MCP server asks for an MCP session');
    assert.deepEqual(JSON.parse(signIns[0]!.body), { name: CLIENT.name });
    assert.equal(signIns[0]!.headers.authorization, `Bearer ${deciderKey}`);

    const served = (await (await fetch(`${live.gateUrl}/api/openapi.json`, { headers: { authorization: `Bearer ${live.gateAdminKey}` } })).json()) as {
      paths: Record<string, unknown>;
    };
    const decide = gateRecorder.requests.find((r) => r.method === 'POST' && r.url === `/api/requests/${created.id}/decide`)!;
    if (served.paths[MCP_SESSIONS_PATH] !== undefined) {
      // The gate supports MCP sessions: the decision carries the session token and reads mcp:<client>.
      assert.equal(decided.decidedBy, `mcp:${CLIENT.name}`);
      assert.notEqual(decide.headers.authorization, `Bearer ${deciderKey}`);
    } else {
      // A gate without MCP sessions: the API key decides (api:<key name>), and the operator is told why.
      assert.equal(decided.decidedBy, 'api:mcp-operator');
      assert.equal(decide.headers.authorization, `Bearer ${deciderKey}`);
      assert.match(mcp.stderr(), /no \/api\/mcp\/sessions route/);
    }
    const audited = await ok(mcp.client, 'get_approval_request', { requestId: created.id, includeAudit: true });
    assert.equal(audited.decidedBy, decided.decidedBy);
    assert.deepEqual(
      audited.audit.map((a: { event: string }) => a.event),
      ['created', 'approved'],
    );
    assert.equal(audited.audit[1].actor, decided.decidedBy);

    const again = await callTool(mcp.client, 'decide_approval_request', { requestId: created.id, decision: 'denied' });
    assert.equal(again.isError, true);
    assert.equal(again.text, 'gate answered 409 conflict: Request already decided');
  });

  test('create_approval_request with waitSeconds returns the decision a human makes meanwhile', async () => {
    const human = new GateClient({ baseUrl: live.gateUrl, apiKey: await live.gateKey('bob', ['request:read', 'request:decide']) });
    const waiting = ok(mcp.client, 'create_approval_request', { action: 'wire_transfer', waitSeconds: 30 });
    const [pending] = await eventually(
      () => human.listRequests({ action: 'wire_transfer', status: 'pending' }),
      (list) => list.length === 1,
      15_000,
      'the request',
    );
    await human.decide(pending!.id, 'denied', 'not today');
    const outcome = await waiting;
    assert.deepEqual(
      [outcome.id, outcome.status, outcome.approved, outcome.decidedBy, outcome.decisionReason],
      [pending!.id, 'denied', false, 'api:bob', 'not today'],
    );
  });

  test('without VIGIL_GATE_API_KEY, gate tools answer a 401 that names the variable', async () => {
    const keyless = await connect({ VIGIL_URL: live.observeUrl, VIGIL_API_KEY: live.observeKey, VIGIL_GATE_URL: live.gateUrl });
    try {
      const answer = await callTool(keyless.client, 'list_approval_requests', {});
      assert.equal(answer.isError, true);
      assert.match(answer.text, /^gate answered 401 unauthorized: .*VIGIL_GATE_API_KEY, which is not set/);
      assert.match(keyless.stderr(), /not set: VIGIL_GATE_API_KEY/);
    } finally {
      await keyless.close();
    }
  });
});

describe('vigil mcp over stdio with a 2025-11-25 client', () => {
  test('the handshake names the client: its session and its decisions carry that name', async () => {
    const legacyClient = { name: 'legacy-client', version: '0.9.0' };
    const older = await connect(
      { VIGIL_URL: live.observeUrl, VIGIL_API_KEY: live.observeKey, VIGIL_GATE_URL: live.gateUrl, VIGIL_GATE_API_KEY: deciderKey },
      legacyClient,
      true,
    );
    try {
      assert.equal((await older.client.listTools()).tools.length, 13);
      const started = await ok(older.client, 'start_session', { agentId: 'legacy-agent' });
      const detail = await ok(older.client, 'get_session', { sessionId: started.sessionId, includeEvents: true });
      assert.deepEqual(detail.events[0].payload.mcpClientInfo, legacyClient);
      const created = await ok(older.client, 'create_approval_request', { action: 'legacy_refund' });
      const decided = await ok(older.client, 'decide_approval_request', { requestId: created.id, decision: 'approved' });
      assert.equal(decided.decidedBy, `mcp:${legacyClient.name}`);
    } finally {
      await older.close();
    }
  });
});

describe('MCP gate identity (against a gate that serves MCP sessions)', () => {
  /** A stand-in gate: MCP sign-in answers a token; every other call records its bearer. */
  async function fakeGate(options: { actor?: (name: string) => string; expireFirstToken?: boolean; noRoute?: boolean } = {}) {
    let issued = 0;
    const gate = new TestHttpServer((request, res) => {
      if (request.url === MCP_SESSIONS_PATH) {
        if (options.noRoute) return sendJson(res, 404, { error: { code: 'not_found', message: `Route POST ${MCP_SESSIONS_PATH} not found` } });
        const { name } = JSON.parse(request.body) as { name: string };
        issued += 1;
        return sendJson(res, 201, {
          token: `gms_token_${issued}`,
          actor: options.actor ? options.actor(name) : `mcp:${name}`,
          expiresAt: new Date(Date.now() + 8 * 3_600_000).toISOString(),
        });
      }
      if (options.expireFirstToken && request.headers.authorization === 'Bearer gms_token_1') {
        return sendJson(res, 401, { error: { code: 'unauthorized', message: 'The session has expired; sign in again' } });
      }
      sendJson(res, 200, []);
    });
    servers.push(await gate.start());
    return gate;
  }

  test('signs in once with the API key and the client name, then uses the session token', async () => {
    const gate = await fakeGate();
    const identity = new GateIdentity({ baseUrl: gate.url, apiKey: 'gk_key' }, () => 'Claude Desktop');
    await identity.run((client) => client.listRequests());
    await identity.run((client) => client.listRequests());
    assert.deepEqual(
      gate.requests.map((r) => [r.method, r.url, r.headers.authorization]),
      [
        ['POST', MCP_SESSIONS_PATH, 'Bearer gk_key'],
        ['GET', '/api/requests', 'Bearer gms_token_1'],
        ['GET', '/api/requests', 'Bearer gms_token_1'],
      ],
    );
    assert.deepEqual(JSON.parse(gate.requests[0]!.body), { name: 'Claude Desktop' });
    assert.deepEqual(identity.credential, { kind: 'mcp_session', actor: 'mcp:Claude Desktop' });
  });

  test('a 401 on the session token signs in again and retries once', async () => {
    const gate = await fakeGate({ expireFirstToken: true });
    const identity = new GateIdentity({ baseUrl: gate.url, apiKey: 'gk_key' }, () => 'cursor');
    await identity.run((client) => client.listRequests());
    assert.deepEqual(
      gate.requests.map((r) => r.headers.authorization),
      ['Bearer gk_key', 'Bearer gms_token_1', 'Bearer gk_key', 'Bearer gms_token_2'],
    );
  });

  test('an answer with another actor is not used: the API key acts, with one warning', async () => {
    const gate = await fakeGate({ actor: (name) => `dashboard:${name}` });
    const warnings: string[] = [];
    const identity = new GateIdentity(
      { baseUrl: gate.url, apiKey: 'gk_key' },
      () => 'cursor',
      (m) => warnings.push(m),
    );
    await identity.run((client) => client.listRequests());
    await identity.run((client) => client.listRequests());
    assert.deepEqual(
      gate.requests.slice(1).map((r) => r.headers.authorization),
      ['Bearer gk_key', 'Bearer gk_key'],
    );
    assert.equal(identity.credential?.kind, 'api_key');
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /dashboard:cursor/);
  });

  test('client names are made acceptable session names', () => {
    assert.equal(sessionName('Claude Desktop'), 'Claude Desktop');
    assert.equal(sessionName('acme/agent:v2'), 'acme-agent-v2');
    assert.equal(sessionName('  --x'), 'x');
    assert.equal(sessionName(undefined), 'unknown-client');
    assert.equal(sessionName('a'.repeat(150)).length, 100);
  });
});
