/**
 * `vigil mcp-gateway` end to end: the official MCP SDK clients (v1 for protocol 2025-11-25 with
 * URL-mode elicitation, v2 for 2026-07-28 with input_required) over stdio (the real `vigil`
 * binary) and Streamable HTTP, in front of two real MCP servers from npm (server-filesystem and
 * server-everything) as stdio children, with a real gate and observe on SQLite and PostgreSQL.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client as ModernClient } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport as ModernHttpTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import { GateClient, ObserveClient } from '@vigil/sdk';
import { dropSchemas, newSchemaName, POSTGRES_URL, servicesSkipReason, startLiveServices, type LiveServices, eventually } from '../testing.ts';
import { parseGatewayConfig, type GatewayConfig } from './config.ts';
import { Gateway } from './gateway.ts';
import { serveGatewayHttp, type GatewayHttpServer } from './serve.ts';

const require = createRequire(import.meta.url);
const bin = resolve(import.meta.dirname, '../../bin/vigil.mjs');
const FS_SERVER = join(dirname(require.resolve('@modelcontextprotocol/server-filesystem/package.json')), 'dist/index.js');
const EVERYTHING_SERVER = join(dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')), 'dist/index.js');
const AGENT = 'gateway-test-agent';

interface Text {
  isError: boolean;
  text: string;
}

const textOf = (answer: unknown): Text => {
  const result = answer as { isError?: boolean; content?: Array<{ type: string; text?: string }> };
  return { isError: result.isError === true, text: (result.content ?? []).map((c) => c.text ?? '').join('\n') };
};

/** What an approver does when the client is shown the decision page. */
type Approver = (requestId: string) => Promise<void>;

function requestIdOf(url: string): string {
  const match = /\/approvals\/([^/?#]+)$/.exec(url);
  assert.ok(match, `the elicitation URL opens one request's decision page: ${url}`);
  return decodeURIComponent(match[1]!);
}

/** A 2025-11-25 client (MCP SDK v1) that supports URL-mode elicitation and calls `approver` with the request it is shown. */
function legacyClient(name: string, approver: () => Approver, seen: string[] = []): Client {
  const client = new Client({ name, version: '1.0.0' }, { capabilities: { elicitation: { url: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async (request: ElicitRequest) => {
    assert.equal(request.params.mode, 'url');
    const url = (request.params as { url: string }).url;
    seen.push(url);
    await approver()(requestIdOf(url));
    return { action: 'accept' };
  });
  return client;
}

/** A 2026-07-28 client (MCP SDK v2) that fulfils input_required rounds through the same elicitation handler. */
function modernClient(name: string, approver: () => Approver, seen: string[] = [], autoFulfill = true): ModernClient {
  const client = new ModernClient(
    { name, version: '2.0.0' },
    { capabilities: { elicitation: { url: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } }, inputRequired: { autoFulfill } },
  );
  client.setRequestHandler('elicitation/create', async (request) => {
    const params = request.params as { mode?: string; url?: string };
    assert.equal(params.mode, 'url');
    seen.push(params.url!);
    await approver()(requestIdOf(params.url!));
    return { action: 'accept' };
  });
  return client;
}

// Probed before any service starts (a busy machine can slow the probe past its timeout).
const postgresSkip = await servicesSkipReason(false);

for (const database of ['sqlite', 'postgres'] as const) {
  describe(`vigil mcp-gateway (${database})`, () => {
    const skip = database === 'postgres' ? postgresSkip : false;
    let live: LiveServices;
    let admin: GateClient;
    let observe: ObserveClient;
    let dir: string;
    let config: GatewayConfig;
    const schemas = [newSchemaName('gw_observe'), newSchemaName('gw_gate')];
    const cleanups: Array<() => Promise<unknown>> = [];
    let approver: Approver = async () => undefined;
    const approve: Approver = async (id) => void (await admin.decide(id, 'approved', 'looks right'));
    const deny: Approver = async (id) => void (await admin.decide(id, 'denied', 'not this file'));

    const configFor = (overrides: Partial<GatewayConfig> = {}): GatewayConfig => ({ ...config, ...overrides });

    async function httpGateway(gatewayConfig: GatewayConfig): Promise<{ gateway: Gateway; server: GatewayHttpServer }> {
      const gateway = new Gateway(gatewayConfig);
      const server = await serveGatewayHttp(gateway, { port: 0 });
      cleanups.push(async () => {
        await server.close();
        await gateway.close();
      });
      return { gateway, server };
    }

    async function legacyHttp(url: string, name: string, seen: string[] = []): Promise<Client> {
      const client = legacyClient(name, () => approver, seen);
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      cleanups.push(() => client.close());
      return client;
    }

    async function modernHttp(url: string, name: string, seen: string[] = [], autoFulfill = true): Promise<ModernClient> {
      const client = modernClient(name, () => approver, seen, autoFulfill);
      await client.connect(new ModernHttpTransport(new URL(url)));
      cleanups.push(() => client.close());
      return client;
    }

    /** The events observe stored for the gateway's agent, of these types, oldest first. */
    async function events(types: string, count: number, match: (e: any) => boolean = () => true): Promise<any[]> {
      return eventually(
        async () => (await observe.listEvents({ agentId: AGENT, eventType: types, order: 'asc', limit: 500 })).events.filter(match),
        (found) => found.length >= count,
        10_000,
        `${count} ${types} events`,
      );
    }

    before(async () => {
      if (skip) return;
      const postgres = database === 'postgres';
      live = await startLiveServices({
        observeEnv: postgres ? { DATABASE_URL: POSTGRES_URL, OBSERVE_DB_SCHEMA: schemas[0]! } : {},
        gateEnv: postgres ? { DATABASE_URL: POSTGRES_URL, GATE_DB_SCHEMA: schemas[1]! } : {},
      });
      admin = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
      observe = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey });
      // "Filesystem writes need a human, reads are fine", moves are refused, everything's tools run.
      await admin.createPolicy({
        name: 'reads are fine',
        priority: 10,
        rules: [
          {
            match: { action: { $in: ['fs__read_text_file', 'fs__list_directory', 'everything__echo', 'everything__trigger-long-running-operation'] } },
            decision: 'auto_approve',
          },
        ],
      });
      await admin.createPolicy({ name: 'no moves', priority: 20, rules: [{ match: { action: 'fs__move_file' }, decision: 'auto_deny' }] });
      await admin.createPolicy({ name: 'writes need a human', priority: 30, rules: [{ match: { action: 'fs__write_file' }, decision: 'route_to_human' }] });
      const gatewayKey = await live.gateKey('mcp-gateway', ['request:create', 'request:read']);
      dir = mkdtempSync(join(tmpdir(), 'vigil-gateway-fs-'));
      writeFileSync(join(dir, 'notes.txt'), 'hello from the filesystem');
      config = parseGatewayConfig({
        upstreams: {
          fs: { command: process.execPath, args: [FS_SERVER, dir] },
          everything: { command: process.execPath, args: [EVERYTHING_SERVER, 'stdio'] },
        },
        gate: { url: live.gateUrl, apiKey: gatewayKey },
        observe: { url: live.observeUrl, apiKey: live.observeKey },
        agentId: AGENT,
        approval: { waitSeconds: 5, expiresInSeconds: 60 },
      });
    });

    after(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
      await live?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
      if (database === 'postgres' && !skip) await dropSchemas(...schemas);
    });

    test(
      'over stdio (the vigil binary, a 2025-11-25 client): namespaced tools, an allowed read, a refused move, a write approved by a human through the decision page URL',
      { skip },
      async () => {
        const file = join(dir, 'gateway.config.json');
        writeFileSync(file, JSON.stringify(config));
        const seen: string[] = [];
        approver = approve;
        const client = legacyClient('stdio-client', () => approver, seen);
        const inherited = Object.fromEntries(Object.entries(process.env).filter(([, v]) => v !== undefined)) as Record<string, string>;
        await client.connect(
          new StdioClientTransport({ command: process.execPath, args: [bin, 'mcp-gateway', '--config', file], env: inherited, stderr: 'ignore' }),
        );
        cleanups.push(() => client.close());

        const names = (await client.listTools()).tools.map((t) => t.name);
        for (const name of ['fs__read_text_file', 'fs__write_file', 'fs__move_file', 'everything__echo'])
          assert.ok(names.includes(name), `${name} in ${names.join(', ')}`);

        const read = textOf(await client.callTool({ name: 'fs__read_text_file', arguments: { path: join(dir, 'notes.txt') } }));
        assert.equal(read.isError, false, read.text);
        assert.match(read.text, /hello from the filesystem/);

        const moved = textOf(
          await client.callTool({ name: 'fs__move_file', arguments: { source: join(dir, 'notes.txt'), destination: join(dir, 'moved.txt') } }),
        );
        assert.equal(moved.isError, true);
        assert.match(moved.text, /denied fs__move_file by policy:.*no moves/);
        assert.ok(existsSync(join(dir, 'notes.txt')) && !existsSync(join(dir, 'moved.txt')), 'a denied call never runs');

        const target = join(dir, 'approved-stdio.txt');
        const written = textOf(await client.callTool({ name: 'fs__write_file', arguments: { path: target, content: 'approved by a human' } }));
        assert.equal(written.isError, false, written.text);
        assert.equal(readFileSync(target, 'utf8'), 'approved by a human');
        assert.equal(seen.length, 1);
        const requestId = requestIdOf(seen[0]!);
        assert.ok(seen[0]!.startsWith(`${live.observeUrl}/approvals/`), 'the URL opens the dashboard (served by observe)');
        const request = await admin.getRequest(requestId);
        assert.equal(request.status, 'approved');
        assert.equal(request.action, 'fs__write_file');
        assert.deepEqual(request.params, { content: 'approved by a human', path: target });
        // The call ran on the approval's receipt, redeemed once for exactly these arguments.
        const trail = (await admin.getAudit(requestId)).map((entry) => entry.event);
        assert.equal(trail.filter((event) => event === 'redeemed').length, 1, trail.join(', '));
        for (const event of ['created', 'approved']) assert.ok(trail.includes(event), trail.join(', '));

        // Recorded in observe: the call with its approval linked, in the stdio client's session.
        const [call] = await events('tool_call', 1, (e) => e.payload.toolName === 'fs__write_file' && e.metadata?.approvalRequestId === requestId);
        const [response] = await events('tool_response', 1, (e) => e.payload.callId === call.payload.callId);
        assert.equal(response.sessionId, call.sessionId);
        await events('approval_granted', 1, (e) => e.payload.requestId === requestId && e.sessionId === call.sessionId);
        const [session] = await events('session_started', 1, (e) => e.sessionId === call.sessionId);
        assert.equal(session.payload.mcpClientInfo.name, 'stdio-client');
      },
    );

    test('over HTTP, 2025-11-25 and 2026-07-28 clients: approved through the URL, denied by the human, and both at once', { skip }, async () => {
      const { server } = await httpGateway(configFor());
      const legacySeen: string[] = [];
      const modernSeen: string[] = [];
      const legacy = await legacyHttp(server.url, 'legacy-http', legacySeen);
      const modern = await modernHttp(server.url, 'modern-http', modernSeen);
      approver = approve;

      const legacyFile = join(dir, 'legacy.txt');
      const modernFile = join(dir, 'modern.txt');
      // Two clients at once, each through its own approval.
      const [a, b] = await Promise.all([
        legacy.callTool({ name: 'fs__write_file', arguments: { path: legacyFile, content: 'legacy' } }),
        modern.callTool({ name: 'fs__write_file', arguments: { path: modernFile, content: 'modern' } }),
      ]);
      assert.equal(textOf(a).isError, false, textOf(a).text);
      assert.equal(textOf(b).isError, false, textOf(b).text);
      assert.equal(readFileSync(legacyFile, 'utf8'), 'legacy');
      assert.equal(readFileSync(modernFile, 'utf8'), 'modern');
      assert.equal(legacySeen.length, 1);
      assert.equal(modernSeen.length, 1);
      assert.notEqual(requestIdOf(legacySeen[0]!), requestIdOf(modernSeen[0]!));

      // Each client in a session of its own.
      const calls = await events('tool_call', 2, (e) => [legacySeen, modernSeen].some((s) => e.metadata?.approvalRequestId === requestIdOf(s[0]!)));
      assert.notEqual(calls[0].sessionId, calls[1].sessionId);

      approver = deny;
      const refused = join(dir, 'refused.txt');
      for (const client of [legacy, modern]) {
        const answer = textOf(await client.callTool({ name: 'fs__write_file', arguments: { path: refused, content: 'no' } }));
        assert.equal(answer.isError, true);
        assert.match(answer.text, /denied fs__write_file by .*: not this file/);
      }
      assert.equal(existsSync(refused), false, 'a call denied by a human never runs');
    });

    test(
      'an allowed call answered, then the gateway stopped at once: its records and the gate confirmation all arrive, in order, timed when they happened',
      { skip },
      async () => {
        const gateway = new Gateway(configFor());
        const server = await serveGatewayHttp(gateway, { port: 0 });
        const client = modernClient('records-client', () => approver);
        await client.connect(new ModernHttpTransport(new URL(server.url)));
        const message = `recorded off the path ${Date.now()}`;
        const answer = textOf(await client.callTool({ name: 'everything__echo', arguments: { message } }));
        const answeredAt = Date.now();
        assert.equal(answer.isError, false, answer.text);
        assert.match(answer.text, new RegExp(message));
        // Recording and confirming are left to after the answer: stopping now must still deliver them.
        await client.close();
        await server.close();
        await gateway.close();

        const [requested] = await events('approval_requested', 1, (e) => e.payload.params?.message === message);
        const requestId: string = requested.payload.requestId;
        const ofCall = (e: any): boolean =>
          e.payload.requestId === requestId || e.payload.data?.requestId === requestId || e.metadata?.approvalRequestId === requestId;
        const records = await events('approval_requested,custom,tool_call,tool_response', 4, ofCall);
        assert.deepEqual(
          records.map((e) => (e.eventType === 'custom' ? e.payload.type : e.eventType)),
          ['approval_requested', 'approval_redeemed', 'tool_call', 'tool_response'],
        );
        assert.ok(records.every((e) => e.sessionId === requested.sessionId));
        const times = records.map((e) => Date.parse(e.timestamp));
        assert.deepEqual(
          [...times].sort((x, y) => x - y),
          times,
        );
        assert.ok(times.at(-1)! <= answeredAt, 'each record carries the time it happened, not the time it was sent');
        const request = await admin.getRequest(requestId);
        assert.equal(request.status, 'approved');
        assert.notEqual(request.confirmedAt, null, 'the gate was told the call ran');
        const trail = (await admin.getAudit(requestId)).map((entry) => entry.event);
        assert.equal(trail.filter((event) => event === 'redeemed').length, 1, trail.join(', '));
      },
    );

    test('a client without URL-mode elicitation: the call waits for the decision, or answers the page to open', { skip }, async () => {
      const { server } = await httpGateway(configFor({ approval: { waitSeconds: 3, expiresInSeconds: 60 } }));
      const client = new Client({ name: 'plain-client', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
      cleanups.push(() => client.close());
      const target = join(dir, 'plain.txt');
      const call = () => client.callTool({ name: 'fs__write_file', arguments: { path: target, content: 'plain' } });

      const waited = textOf(await call());
      assert.equal(waited.isError, true);
      assert.match(waited.text, new RegExp(`needs a human's approval: open ${live.observeUrl}/approvals/[^ ]+ \\(request`));
      assert.equal(existsSync(target), false);

      // A human approves while the call waits.
      const approving = (async () => {
        const [pending] = await eventually(
          async () => (await admin.listRequests({ status: 'pending', action: 'fs__write_file' })).filter((r) => r.params.path === target),
          (found) => found.length === 2,
          10_000,
          'the second request',
        ).then((found) => found.filter((r) => !waited.text.includes(r.id)));
        await admin.decide(pending!.id, 'approved');
      })();
      const approved = textOf(await call());
      await approving;
      assert.equal(approved.isError, false, approved.text);
      assert.equal(readFileSync(target, 'utf8'), 'plain');
    });

    test('a request that expires before anyone decides never runs', { skip }, async () => {
      const { server } = await httpGateway(configFor({ approval: { waitSeconds: 2, expiresInSeconds: 1 } }));
      approver = async () => undefined; // the page is opened, nobody decides
      const target = join(dir, 'expired.txt');
      for (const client of [await legacyHttp(server.url, 'legacy-expiry'), await modernHttp(server.url, 'modern-expiry')]) {
        const answer = textOf(await client.callTool({ name: 'fs__write_file', arguments: { path: target, content: 'late' } }));
        assert.equal(answer.isError, true);
        assert.match(answer.text, /expired fs__write_file/);
      }
      assert.equal(existsSync(target), false);
      await events('approval_expired', 2);
    });

    test('a forged, altered or replayed requestState is refused and the call never runs', { skip }, async () => {
      const { server } = await httpGateway(configFor());
      const client = await modernHttp(server.url, 'modern-manual', [], false);
      const target = join(dir, 'forged.txt');
      const args = { path: target, content: 'forged' };
      const first = (await client.callTool({ name: 'fs__write_file', arguments: args }, { allowInputRequired: true } as never)) as unknown as {
        resultType: string;
        requestState: string;
        inputRequests: Record<string, { params: { url: string } }>;
      };
      assert.equal(first.resultType, 'input_required');
      const requestId = requestIdOf(first.inputRequests.approval!.params.url);
      await admin.decide(requestId, 'approved');
      const retry = (requestState: string, callArgs: Record<string, unknown> = args) =>
        client.callTool({ name: 'fs__write_file', arguments: callArgs, requestState, inputResponses: { approval: { action: 'accept' } } } as never);

      const [body, mac] = first.requestState.split('.').slice(1);
      const decoded = JSON.parse(Buffer.from(body!, 'base64url').toString());
      const forgedBody = Buffer.from(JSON.stringify({ ...decoded, p: { ...decoded.p, requestId: 'someone-elses' } })).toString('base64url');
      await assert.rejects(retry(`v1.${forgedBody}.${mac}`), /Invalid or expired requestState/);
      await assert.rejects(retry('v1.e30.AAAA'), /Invalid or expired requestState/);
      assert.equal(existsSync(target), false);

      // The authentic state for other arguments: refused, not run.
      const other = textOf(await retry(first.requestState, { path: target, content: 'changed after approval' }));
      assert.equal(other.isError, true);
      assert.match(other.text, /another tool call/);
      assert.equal(existsSync(target), false);
      // The state was used once; replaying it is refused.
      await assert.rejects(retry(first.requestState), /Invalid or expired requestState/);
      assert.equal(existsSync(target), false);
    });

    test('an upstream that crashes mid-call or hangs answers a clear tool error, and is started again', { skip }, async () => {
      const { gateway, server } = await httpGateway(configFor({ timeouts: { connectSeconds: 15, callSeconds: 3, serviceSeconds: 10 } }));
      const client = await modernHttp(server.url, 'modern-crash');
      const everything = gateway.upstreams.get('everything')!;

      const started = Date.now();
      const hung = textOf(await client.callTool({ name: 'everything__trigger-long-running-operation', arguments: { duration: 30, steps: 3 } }));
      assert.equal(hung.isError, true);
      assert.match(hung.text, /did not answer trigger-long-running-operation within 3 s/);
      assert.ok(Date.now() - started < 10_000);

      const running = client.callTool({ name: 'everything__trigger-long-running-operation', arguments: { duration: 2.5, steps: 5 } });
      // Killed once the call has been approved and handed to the upstream (its receipt redeemed).
      const pid = everything.pid;
      assert.ok(pid !== undefined);
      await eventually(
        async () => {
          const [request] = (await admin.listRequests({ action: 'everything__trigger-long-running-operation' })).filter((r) => r.params.duration === 2.5);
          return request ? (await admin.getAudit(request.id)).some((entry) => entry.event === 'redeemed') : false;
        },
        (redeemed) => redeemed,
        10_000,
        'the redemption',
      );
      await new Promise((r) => setTimeout(r, 200));
      process.kill(pid, 'SIGKILL');
      const crashed = textOf(await running);
      assert.equal(crashed.isError, true);
      assert.match(crashed.text, /upstream MCP server "everything" failed during trigger-long-running-operation/);
      await events('tool_error', 1, (e) => /failed during/.test(e.payload.error));

      const echoed = textOf(await client.callTool({ name: 'everything__echo', arguments: { message: 'back again' } }));
      assert.equal(echoed.isError, false, echoed.text);
      assert.match(echoed.text, /back again/);
      assert.notEqual(everything.pid, pid, 'a new upstream process');
    });
  });
}
