// MCP over Streamable HTTP at /mcp of both services, driven by the official SDK client, on SQLite and PostgreSQL.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client, LATEST_PROTOCOL_VERSION, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { dropSchemas, newSchemaName, POSTGRES_URL, servicesSkipReason, startLiveServices, type LiveServices } from './testing.ts';

const postgresSkip = await servicesSkipReason(false);

/** The protocol versions /mcp serves to the official client: 2026-07-28 (no handshake) and 2025-11-25 (initialize first). */
const VERSIONS = ['2026-07-28', LATEST_PROTOCOL_VERSION] as const;
type Version = (typeof VERSIONS)[number];

async function connect(url: string, key: string | undefined, version: Version): Promise<Client> {
  const client = new Client(
    { name: 'mcp-http-test', version: '1.0.0' },
    { versionNegotiation: { mode: version === '2026-07-28' ? { pin: version } : 'legacy' } },
  );
  const headers: Record<string, string> = key === undefined ? {} : { authorization: `Bearer ${key}` };
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } }));
  assert.equal(client.getNegotiatedProtocolVersion(), version);
  return client;
}

async function call(client: Client, name: string, args: Record<string, unknown>): Promise<{ isError: boolean; text: string }> {
  const answer = (await client.callTool({ name, arguments: args })) as { isError?: boolean; content: Array<{ text: string }> };
  return { isError: answer.isError === true, text: answer.content.map((part) => part.text).join('\n') };
}

async function observeKey(live: LiveServices, name: string, scopes: string[]): Promise<string> {
  const response = await fetch(`${live.observeUrl}/api/keys`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${live.observeKey}` },
    body: JSON.stringify({ name, scopes }),
  });
  assert.equal(response.status, 201, await response.clone().text());
  return ((await response.json()) as { key: string }).key;
}

/** A 2026-07-28 request: its version and client in `_meta`, no handshake before it. */
const modernRequest = (method: string, params: Record<string, unknown> = {}, id = 1) => ({
  jsonrpc: '2.0',
  id,
  method,
  params: {
    ...params,
    _meta: {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': {},
    },
  },
});

const post = (url: string, body: string, headers: Record<string, string> = {}, signal?: AbortSignal) =>
  fetch(`${url}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body,
    signal,
  });

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`/mcp on ${backend}`, { skip: backend === 'postgres' && postgresSkip }, () => {
    const schemas = [newSchemaName('mcp_observe'), newSchemaName('mcp_gate')];
    let live: LiveServices;
    before(async () => {
      live = await startLiveServices(
        backend === 'postgres'
          ? { observeEnv: { DATABASE_URL: POSTGRES_URL, OBSERVE_DB_SCHEMA: schemas[0]! }, gateEnv: { DATABASE_URL: POSTGRES_URL, GATE_DB_SCHEMA: schemas[1]! } }
          : {},
      );
    });
    after(async () => {
      await live?.close();
      if (backend === 'postgres') await dropSchemas(...schemas);
    });

    for (const version of VERSIONS) {
      test(`${version}: observe: the client lists the tools, logs an event and finds it`, async () => {
        const client = await connect(live.observeUrl, live.observeKey, version);
        try {
          assert.equal((client.getServerVersion() ?? {}).name, 'vigil-observe');
          const { tools } = await client.listTools();
          assert.deepEqual(tools.map((tool) => tool.name).sort(), [
            'get_analytics',
            'get_context',
            'get_session',
            'get_session_timeline',
            'log_event',
            'query_events',
            'query_sessions',
            'recall',
          ]);
          assert.match(tools.find((tool) => tool.name === 'query_events')!.description!, /GET \/api\/events; needs the read scope/);
          // What the suite's tools-list and json-schema-2020-12 scenarios look for, on every tool.
          for (const tool of tools) {
            assert.ok(tool.description, tool.name);
            assert.equal(tool.inputSchema.type, 'object', tool.name);
            assert.equal(tool.inputSchema.$schema, 'https://json-schema.org/draft/2020-12/schema', tool.name);
          }
          const logged = await call(client, 'log_event', {
            sessionId: `s-${backend}-${version}`,
            agentId: 'mcp-agent',
            eventType: 'session_started',
            payload: {},
          });
          assert.equal(logged.isError, false, logged.text);
          const found = await call(client, 'query_events', { sessionId: `s-${backend}-${version}` });
          assert.equal(found.isError, false, found.text);
          assert.deepEqual(
            (JSON.parse(found.text) as { events: Array<{ eventType: string }> }).events.map((event) => event.eventType),
            ['session_started'],
          );
        } finally {
          await client.close();
        }
      });

      test(`${version}: observe: a key without the scope of the route a tool calls gets a tool error naming the 403; other tools still run`, async () => {
        const client = await connect(live.observeUrl, await observeKey(live, `ingest-only-${backend}-${version}`, ['ingest']), version);
        try {
          const refused = await call(client, 'query_events', {});
          assert.equal(refused.isError, true);
          assert.match(refused.text, /^GET \/api\/events answered 403: .*read/);
          const logged = await call(client, 'log_event', {
            sessionId: `s2-${backend}-${version}`,
            agentId: 'mcp-agent',
            eventType: 'session_started',
            payload: {},
          });
          assert.equal(logged.isError, false, logged.text);
        } finally {
          await client.close();
        }
      });

      test(`${version}: gate: create, read and decide an approval request with the admin key; a create-only key cannot decide`, async () => {
        const admin = await connect(live.gateUrl, live.gateAdminKey, version);
        const creator = await connect(live.gateUrl, await live.gateKey(`creator-${backend}-${version}`, ['request:create']), version);
        try {
          assert.deepEqual((await admin.listTools()).tools.map((tool) => tool.name).sort(), [
            'claude_code_permission_prompt',
            'create_approval_request',
            'decide_approval_request',
            'get_approval_request',
            'list_approval_requests',
          ]);
          const created = await call(creator, 'create_approval_request', { action: 'deploy', params: { env: 'prod' } });
          assert.equal(created.isError, false, created.text);
          const id = (JSON.parse(created.text) as { id: string }).id;
          const refused = await call(creator, 'decide_approval_request', { requestId: id, decision: 'approved' });
          assert.equal(refused.isError, true);
          assert.match(refused.text, /^POST \/api\/requests\/:id\/decide answered 403: .*request:decide/);
          const decided = await call(admin, 'decide_approval_request', { requestId: id, decision: 'approved', reason: 'ok' });
          assert.equal(decided.isError, false, decided.text);
          const read = await call(admin, 'get_approval_request', { requestId: id });
          assert.deepEqual((({ status, decidedBy }) => ({ status, decidedBy }))(JSON.parse(read.text) as { status: string; decidedBy: string }), {
            status: 'approved',
            decidedBy: 'api:admin (GATE_ADMIN_KEY)',
          });
        } finally {
          await admin.close();
          await creator.close();
        }
      });

      test(`${version}: gate: an MCP session token works as the bearer, and its decisions are recorded as mcp:<name>`, async () => {
        const opened = await fetch(`${live.gateUrl}/api/mcp/sessions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${live.gateAdminKey}` },
          body: JSON.stringify({ name: `desk-agent-${version}` }),
        });
        assert.equal(opened.status, 201, await opened.clone().text());
        const session = await connect(live.gateUrl, ((await opened.json()) as { token: string }).token, version);
        try {
          const created = await call(session, 'create_approval_request', { action: 'refund' });
          const id = (JSON.parse(created.text) as { id: string }).id;
          const decided = await call(session, 'decide_approval_request', { requestId: id, decision: 'denied', reason: 'no' });
          assert.equal(decided.isError, false, decided.text);
          assert.equal((JSON.parse(decided.text) as { decidedBy: string }).decidedBy, `mcp:desk-agent-${version}`);
        } finally {
          await session.close();
        }
      });
    }

    test('no key, or a wrong one: 401 on both services, and the SDK client cannot connect', async () => {
      for (const url of [live.observeUrl, live.gateUrl]) {
        for (const key of [undefined, 'vgl_not_a_key_0123456789abcdef']) {
          for (const version of VERSIONS) {
            await assert.rejects(connect(url, key, version), (error: { status?: number; message: string }) =>
              version === '2026-07-28'
                ? /requires authorization \(HTTP 401\)/.test(error.message)
                : error.status === 401 && /Missing or invalid API key/.test(error.message),
            );
          }
        }
        const initialize = JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
        });
        assert.equal((await post(url, initialize)).status, 401);
        const discover = await post(url, JSON.stringify(modernRequest('server/discover')), {
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'server/discover',
        });
        assert.equal(discover.status, 401);
        // The service's own error body, as for any of its routes.
        assert.match(await discover.text(), /Missing or invalid API key/);
      }
    });

    test('bad input is a 4xx JSON-RPC error, never a 500; GET and DELETE are 405 (stateless)', async () => {
      for (const [url, key] of [
        [live.observeUrl, live.observeKey],
        [live.gateUrl, live.gateAdminKey],
      ] as const) {
        const auth = { authorization: `Bearer ${key}` };
        // The gate's limit is fixed at 1 MiB (gate/app.ts); observe's is BODY_LIMIT_BYTES.
        const bodyLimit = url === live.observeUrl ? live.observe.context.config.bodyLimitBytes : 1024 * 1024;
        const malformed = await post(url, '{"jsonrpc": "2.0", "id": 1,', auth);
        assert.equal(malformed.status, 400);
        assert.equal(((await malformed.json()) as { error: { code: number } }).error.code, -32700);
        const notJsonRpc = await post(url, '{"hello": "world"}', auth);
        assert.equal(notJsonRpc.status, 400);
        assert.equal(((await notJsonRpc.json()) as { jsonrpc: string }).jsonrpc, '2.0');
        const tooLarge = await post(url, JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(bodyLimit) } }), auth);
        assert.equal(tooLarge.status, 413);
        const wrongType = await post(url, '{}', { ...auth, 'content-type': 'text/plain' });
        assert.equal(wrongType.status, 415);
        assert.equal(((await wrongType.json()) as { error: { code: number } }).error.code, -32000);
        for (const method of ['GET', 'DELETE']) {
          const response = await fetch(`${url}/mcp`, { method, headers: { ...auth, accept: 'text/event-stream' } });
          assert.equal(response.status, 405, method);
          assert.equal(response.headers.get('allow'), 'POST');
        }
      }
    });

    test('2026-07-28 needs no handshake: a lone tools/call is answered; an unknown version is refused naming the supported ones', async () => {
      const auth = { authorization: `Bearer ${live.observeKey}`, 'mcp-protocol-version': '2026-07-28' };
      const called = await post(live.observeUrl, JSON.stringify(modernRequest('tools/call', { name: 'query_sessions', arguments: { limit: 1 } }, 7)), {
        ...auth,
        'mcp-method': 'tools/call',
        'mcp-name': 'query_sessions',
      });
      assert.equal(called.status, 200, await called.clone().text());
      const answer = (await called.json()) as { id: number; result: { isError?: boolean; structuredContent: { sessions: unknown[] } } };
      assert.equal(answer.id, 7);
      assert.equal(answer.result.isError, undefined);
      assert.ok(Array.isArray(answer.result.structuredContent.sessions));
      const future = modernRequest('tools/list');
      future.params._meta['io.modelcontextprotocol/protocolVersion'] = '2099-01-01';
      const refused = await post(live.observeUrl, JSON.stringify(future), { ...auth, 'mcp-protocol-version': '2099-01-01', 'mcp-method': 'tools/list' });
      const error = ((await refused.json()) as { error: { code: number; message: string; data?: { supported?: string[] } } }).error;
      assert.ok(refused.status >= 400 && refused.status < 500, `${refused.status}`);
      assert.deepEqual(error.data?.supported, ['2026-07-28'], JSON.stringify(error));
    });

    test('2026-07-28: server/discover advertises no listChanged, and subscriptions/listen is answered at once as a method not found (no stream held open)', async () => {
      for (const [url, key] of [
        [live.observeUrl, live.observeKey],
        [live.gateUrl, live.gateAdminKey],
      ] as const) {
        const auth = { authorization: `Bearer ${key}`, 'mcp-protocol-version': '2026-07-28' };
        const discover = await post(url, JSON.stringify(modernRequest('server/discover')), { ...auth, 'mcp-method': 'server/discover' });
        const capabilities = ((await discover.json()) as { result: { capabilities: { tools: { listChanged?: boolean } } } }).result.capabilities;
        assert.equal(capabilities.tools.listChanged, false, url);
        const listen = modernRequest('subscriptions/listen', { notifications: { toolsListChanged: true } }, 9);
        const refused = await post(url, JSON.stringify(listen), { ...auth, 'mcp-method': 'subscriptions/listen' }, AbortSignal.timeout(5000));
        assert.equal(refused.status, 404, url);
        assert.deepEqual(await refused.json(), {
          jsonrpc: '2.0',
          id: 9,
          error: { code: -32601, message: 'Method not found: subscriptions/listen (this server sends no notifications)' },
        });
      }
    });

    test('an older protocol version the client asks for is answered with that version', async () => {
      for (const version of ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']) {
        const response = await post(
          live.observeUrl,
          JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'old', version: '1' } },
          }),
          { authorization: `Bearer ${live.observeKey}` },
        );
        assert.equal(response.status, 200);
        assert.equal(((await response.json()) as { result: { protocolVersion: string } }).result.protocolVersion, version);
      }
    });
  });
}
