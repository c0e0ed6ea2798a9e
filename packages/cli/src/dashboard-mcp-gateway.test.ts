/**
 * A human approves an MCP tool call in the dashboard, in a real browser (see dashboard-harness.ts):
 * `vigil mcp-gateway` in front of server-filesystem routes `write_file` to a human; the official
 * MCP SDK clients (2025-11-25 with URL-mode elicitation, 2026-07-28 with input_required) are shown
 * the request's decision page, Chromium opens that very URL, Ada signs in and approves, and the
 * call then runs once, on its receipt.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttpTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { ADMIN_KEY, api, chromiumSkip, signIn, startStack, type Stack } from './dashboard-harness.ts';
import { parseGatewayConfig } from './mcp-gateway/config.ts';
import { Gateway } from './mcp-gateway/gateway.ts';
import { serveGatewayHttp, type GatewayHttpServer } from './mcp-gateway/serve.ts';

const require = createRequire(import.meta.url);
const FS_SERVER = join(dirname(require.resolve('@modelcontextprotocol/server-filesystem/package.json')), 'dist/index.js');

const textOf = (answer: unknown): { isError: boolean; text: string } => {
  const result = answer as { isError?: boolean; content?: Array<{ text?: string }> };
  return { isError: result.isError === true, text: (result.content ?? []).map((c) => c.text ?? '').join('\n') };
};

describe('dashboard in a real browser: an MCP tool call approved on its decision page', { skip: chromiumSkip() }, () => {
  let stack: Stack;
  let dir: string;
  let gateway: Gateway;
  let server: GatewayHttpServer;
  const clients: Array<{ close(): Promise<void> }> = [];

  before(async () => {
    stack = await startStack();
    await api(stack.gateUrl, ADMIN_KEY, 'POST', '/api/policies', {
      name: 'writes need a human',
      priority: 10,
      rules: [{ match: { action: 'write_file' }, decision: 'route_to_human' }],
    });
    const { key } = await api<{ key: string }>(stack.gateUrl, ADMIN_KEY, 'POST', '/api/api-keys', {
      name: 'mcp-gateway',
      scopes: ['request:create', 'request:read'],
    });
    dir = mkdtempSync(join(tmpdir(), 'vigil-gateway-browser-'));
    writeFileSync(join(dir, 'notes.txt'), 'hello');
    gateway = new Gateway(
      parseGatewayConfig({
        upstreams: { fs: { command: process.execPath, args: [FS_SERVER, dir] } },
        gate: { url: stack.gateUrl, apiKey: key },
        observe: { url: stack.observeUrl, apiKey: stack.observeKey },
        agentId: 'browser-gateway-agent',
        approval: { waitSeconds: 20, expiresInSeconds: 300 },
      }),
    );
    server = await serveGatewayHttp(gateway, { port: 0 });
    await signIn(stack, { observe: stack.observeKey, gate: ADMIN_KEY });
  });

  after(async () => {
    for (const client of clients) await client.close().catch(() => undefined);
    await server?.close();
    await gateway?.close();
    await stack?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** What the human does with the URL the client is shown: opens it in Chromium and approves there. Answers the request's id. */
  async function approveInBrowser(url: string): Promise<string> {
    const { page } = stack;
    assert.ok(url.startsWith(`${stack.observeUrl}/approvals/`), `the URL opens the dashboard's decision page: ${url}`);
    await page.goto(url);
    await page.getByRole('heading', { name: 'Request: write_file' }).waitFor();
    await page.getByText('route_to_human').first().waitFor();
    await page.getByRole('button', { name: 'Approve' }).click();
    await page.getByText('Approved as dashboard:Ada.').waitFor();
    return decodeURIComponent(url.slice(url.lastIndexOf('/') + 1));
  }

  /** The request is approved by Ada in the dashboard, and its receipt was redeemed exactly once (the call ran once). */
  async function assertRanOnce(requestId: string, args: Record<string, unknown>): Promise<void> {
    const request = await api<{ status: string; decidedBy: string; action: string; params: unknown }>(
      stack.gateUrl,
      ADMIN_KEY,
      'GET',
      `/api/requests/${requestId}`,
    );
    assert.deepEqual([request.status, request.decidedBy, request.action], ['approved', 'dashboard:Ada', 'write_file']);
    assert.deepEqual(request.params, args);
    const trail = (await api<Array<{ event: string }>>(stack.gateUrl, ADMIN_KEY, 'GET', `/api/requests/${requestId}/audit`)).map((e) => e.event);
    assert.deepEqual(
      trail.filter((event) => event !== 'confirmed'),
      ['created', 'approved', 'redeemed'],
    );
  }

  test('a 2025-11-25 client (URL-mode elicitation): the URL it is shown opens the decision page, Ada approves, the write runs once', async () => {
    const shown: string[] = [];
    const client = new Client({ name: 'legacy-browser', version: '1.0.0' }, { capabilities: { elicitation: { url: {} } } });
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      assert.equal(request.params.mode, 'url');
      const url = (request.params as { url: string }).url;
      shown.push(url);
      await approveInBrowser(url);
      return { action: 'accept' };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    clients.push(client);

    const target = join(dir, 'legacy.txt');
    const args = { path: target, content: 'approved in the browser' };
    assert.equal(existsSync(target), false);
    const answer = textOf(await client.callTool({ name: 'write_file', arguments: args }));
    assert.equal(answer.isError, false, answer.text);
    assert.equal(readFileSync(target, 'utf8'), 'approved in the browser');
    assert.equal(shown.length, 1, 'asked once');
    await assertRanOnce(decodeURIComponent(shown[0]!.slice(shown[0]!.lastIndexOf('/') + 1)), args);
    stack.noProblems();
  });

  test('a 2026-07-28 client (input_required): the URL of the answer opens the decision page, Ada approves, the retried call runs once', async () => {
    const client = new ModernClient(
      { name: 'modern-browser', version: '2.0.0' },
      { capabilities: { elicitation: { url: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
    );
    await client.connect(new ModernHttpTransport(new URL(server.url)));
    clients.push(client);

    const target = join(dir, 'modern.txt');
    const args = { path: target, content: 'approved in the browser, 2026' };
    // The first answer: input_required with the decision page's URL and the sealed requestState; nothing ran.
    const first = (await client.callTool({ name: 'write_file', arguments: args }, { allowInputRequired: true } as never)) as unknown as {
      resultType: string;
      requestState: string;
      inputRequests: Record<string, { params: { mode: string; url: string } }>;
    };
    assert.equal(first.resultType, 'input_required');
    const elicitation = first.inputRequests.approval!.params;
    assert.equal(elicitation.mode, 'url');
    assert.equal(existsSync(target), false, 'nothing runs before the approval');

    const requestId = await approveInBrowser(elicitation.url);
    const answer = textOf(
      await client.callTool({
        name: 'write_file',
        arguments: args,
        requestState: first.requestState,
        inputResponses: { approval: { action: 'accept' } },
      } as never),
    );
    assert.equal(answer.isError, false, answer.text);
    assert.equal(readFileSync(target, 'utf8'), 'approved in the browser, 2026');
    await assertRanOnce(requestId, args);
    stack.noProblems();
  });
});
