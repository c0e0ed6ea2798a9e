/**
 * @vigil/sdk as a user gets it, from outside the monorepo: `npm pack` of @vigil/sdk and
 * @vigil/pricing, the two tarballs installed with npm into an empty folder under the system's
 * temporary directory, then plain `node` (no tsx) runs scripts there that record sessions against
 * a real observe service listening in this process, and the repository's TypeScript checks a file
 * that imports the installed package with `moduleResolution: NodeNext` (packing and installing:
 * packed-harness.ts).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { PriceTable } from '@vigil/pricing';
import { startLiveServices, type LiveServices } from '@vigil/cli/testing';
import { assertPackagesBuilt, SDK_DIR } from '../scripts/built.ts';
import { ObserveClient } from './index.ts';
import { cleanEnvironment, installPackedSdk, npm, type Packed } from './packed-harness.ts';

const run = promisify(execFile);
const TSC = resolve(SDK_DIR, '../../node_modules/typescript/bin/tsc');
const NODE_TYPES = resolve(SDK_DIR, '../../node_modules/@types');

/** Packages of the server side; none may reach a user's install. */
const SERVER_PACKAGES = ['better-sqlite3', 'pg', 'fastify', 'kysely', 'ioredis', 'pino', '@vigil/observe', '@vigil/gate', '@vigil/platform', '@vigil/cli'];

let live: LiveServices;
let workDir: string;
let appDir: string;
let packed: Record<'sdk' | 'pricing', Packed>;

/** Runs a plain-node script of the install folder against the live observe; answers its JSON output. */
async function runScript(file: string, source: string, ...args: string[]): Promise<Record<string, unknown>> {
  writeFileSync(join(appDir, file), source);
  const env = cleanEnvironment({ VIGIL_URL: live.observeUrl, VIGIL_API_KEY: live.observeKey });
  const { stdout, stderr } = await run(process.execPath, [file, ...args], { cwd: appDir, env });
  assert.equal(stderr, '', `${file} wrote to stderr`);
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
}

async function storedEvents(sessionId: string) {
  const client = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey });
  return (await client.listEvents({ sessionId, order: 'asc', limit: 100 })).events;
}

const expectedCost = PriceTable.fromDefaults().costUsd('gpt-4o-mini', 'openai', 1200, 300)!;

describe('@vigil/sdk packed and installed outside the monorepo', { timeout: 300_000 }, () => {
  before(async () => {
    assertPackagesBuilt();
    live = await startLiveServices();
    ({ workDir, appDir, packed } = await installPackedSdk());
  });

  after(async () => {
    await live?.close();
    for (const dir of [workDir, appDir]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('each tarball holds its built JavaScript, type declarations, LICENSE and package.json, and no source or tests', () => {
    for (const [name, tarball] of Object.entries(packed)) {
      const paths = tarball.files.map((f) => f.path);
      for (const required of ['package.json', 'LICENSE', 'dist/index.js', 'dist/index.d.ts'])
        assert.ok(paths.includes(required), `${name}: ${required} in ${paths.join(', ')}`);
      assert.deepEqual(
        paths.filter((path) => !/^dist\/.+\.(js|d\.ts)$/.test(path) && !['package.json', 'LICENSE', 'README.md'].includes(path)),
        [],
        `${name}: nothing beside dist/*.js, dist/*.d.ts, package.json, LICENSE and README.md`,
      );
    }
  });

  test('each tarball has its README', () => {
    for (const [name, tarball] of Object.entries(packed))
      assert.ok(
        tarball.files.some((f) => f.path === 'README.md'),
        `${name}'s tarball has README.md`,
      );
  });

  test("every entry of @vigil/sdk's exports map is in its tarball", () => {
    const manifest = JSON.parse(readFileSync(join(SDK_DIR, 'package.json'), 'utf8')) as { exports: Record<string, string | Record<string, string>> };
    const paths = new Set(packed.sdk.files.map((f) => f.path));
    const targets = Object.values(manifest.exports).flatMap((target) => (typeof target === 'string' ? [target] : Object.values(target)));
    assert.deepEqual(
      targets.map((target) => target.replace(/^\.\//, '')).filter((target) => !paths.has(target)),
      [],
      'exports targets missing from the tarball',
    );
  });

  test('the install holds the SDK, the price table and zod, and no server package', async () => {
    const listed = (await npm(['ls', '--omit=dev', '--all', '--parseable'], appDir)).trim().split('\n').slice(1);
    const names = listed.map((path) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length)).sort();
    assert.deepEqual(
      names.filter((name) => SERVER_PACKAGES.includes(name)),
      [],
    );
    assert.deepEqual(names, ['@vigil/pricing', '@vigil/sdk', 'zod']);
  });

  test("a plain node script records a session through '@vigil/sdk' (the web-only core)", async () => {
    const sessionId = `packed-core-${Date.now()}`;
    const output = await runScript(
      'record-core.mjs',
      `import { ObserveClient, traceTool } from '@vigil/sdk';
// VIGIL_URL and VIGIL_API_KEY come from the environment.
const client = new ObserveClient({ flushIntervalMs: 50 });
const weather = traceTool('get_weather', async (city) => ({ city, tempC: 4 }));
const session = client.startSession({ agentId: 'packed-agent', sessionId: process.argv[2], agentName: 'Packed' });
await session.run(() => weather('Oslo'));
await session.wrapToolCall('lookup', { id: 7 }, () => 'found');
const call = session.recordLlmCall({ provider: 'openai', model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Weather in Oslo?' }] });
const response = session.recordLlmResponse(call, { completion: 'It is 4 °C in Oslo.', usage: { inputTokens: 1200, outputTokens: 300 } });
await session.end({ summary: 'answered' });
await client.close();
console.log(JSON.stringify({ sessionId: session.id, costUsd: response.costUsd }));
`,
      sessionId,
    );
    assert.deepEqual(output, { sessionId, costUsd: expectedCost });

    const events = await storedEvents(sessionId);
    assert.deepEqual(
      events.map((e) => e.eventType),
      ['session_started', 'tool_call', 'tool_response', 'tool_call', 'tool_response', 'llm_call', 'llm_response', 'session_ended'],
    );
    assert.deepEqual(events[1]!.payload, { toolName: 'get_weather', callId: events[2]!.payload.callId, arguments: 'Oslo' });
    assert.deepEqual(events[2]!.payload.result, { city: 'Oslo', tempC: 4 });
    const llm = events[6]!.payload;
    assert.equal(llm.costUsd, expectedCost);
    assert.ok(expectedCost > 0);
    assert.deepEqual(llm.usage, { inputTokens: 1200, outputTokens: 300, totalTokens: 1500 });
    const stored = await new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey }).getSession(sessionId);
    assert.equal(stored.status, 'completed');
    assert.equal(stored.agentName, 'Packed');
    assert.equal(stored.toolCallCount, 2);
    assert.ok(Math.abs(stored.totalCostUsd - expectedCost) < 1e-12, `${stored.totalCostUsd} vs ${expectedCost}`);
  });

  test("'@vigil/sdk/node' follows the session across awaits and sends what is queued when the script ends", async () => {
    const sessionId = `packed-node-${Date.now()}`;
    const output = await runScript(
      'record-node.mjs',
      `import { ObserveClient, currentSession, traceTool } from '@vigil/sdk/node';
const client = new ObserveClient({ flushIntervalMs: 60_000 });
const search = traceTool('search', async (query) => {
  await new Promise((resolve) => setTimeout(resolve, 5));
  return { hits: query.length };
});
await client.withSession({ agentId: 'packed-agent', sessionId: process.argv[2] }, async (session) => {
  await new Promise((resolve) => setTimeout(resolve, 5));
  const [a, b] = await Promise.all([search('vigil'), search('sdk')]);
  const call = session.recordLlmCall({ provider: 'openai', model: 'gpt-4o-mini', messages: [] });
  session.recordLlmResponse(call, { completion: String(a.hits + b.hits), usage: { inputTokens: 1200, outputTokens: 300 } });
});
// Queued after the session was sent, never flushed by the script: the exit hook sends it.
const late = client.startSession({ agentId: 'packed-agent', sessionId: process.argv[2] + '-late' });
late.custom('note', { sentOnExit: true });
console.log(JSON.stringify({ ambientAfterSession: currentSession() === undefined, pending: client.pendingEvents }));
`,
      sessionId,
    );
    assert.deepEqual(output, { ambientAfterSession: true, pending: 2 });

    const events = await storedEvents(sessionId);
    assert.deepEqual(
      events.map((e) => e.eventType),
      ['session_started', 'tool_call', 'tool_call', 'tool_response', 'tool_response', 'llm_call', 'llm_response', 'session_ended'],
    );
    assert.deepEqual(
      events
        .filter((e) => e.eventType === 'tool_response')
        .map((e) => e.payload.result)
        .sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y))),
      [{ hits: 3 }, { hits: 5 }],
    );
    assert.equal(events[6]!.payload.costUsd, expectedCost);
    assert.deepEqual(
      (await storedEvents(`${sessionId}-late`)).map((e) => [e.eventType, e.payload]),
      [
        ['session_started', {}],
        ['custom', { type: 'note', data: { sentOnExit: true } }],
      ],
    );
  });

  test('the installed type declarations check with moduleResolution NodeNext, for Node and for a browser', async () => {
    writeFileSync(
      join(appDir, 'check-node.mts'),
      `import { ObserveClient as CoreClient, traceTool, type IncomingEvent, type VigilSession } from '@vigil/sdk';
import { ObserveClient } from '@vigil/sdk/node';
import type { ModelPrice } from '@vigil/pricing';

const client = new ObserveClient({ baseUrl: 'http://localhost:3400', flushOnExit: false, batchSize: 50 });
const core: CoreClient = client;
const session: VigilSession = core.startSession({ agentId: 'typed' });
const search = traceTool('search', async (query: string) => query.length);
const hits: Promise<number> = search('vigil');
const event: IncomingEvent = { sessionId: session.id, agentId: 'typed', eventType: 'custom', payload: { type: 'note', data: 1 } };
client.track(event);
// @ts-expect-error an unknown event type is refused
client.track({ sessionId: 's', agentId: 'a', eventType: 'no_such_type', payload: {} });
// @ts-expect-error traceTool keeps the tool's parameter types
void search(42);
const price: ModelPrice | undefined = client.prices.find('gpt-4o-mini');
export { hits, price };
`,
    );
    writeFileSync(
      join(appDir, 'check-browser.mts'),
      `import { GateClient, ObserveClient } from '@vigil/sdk';
const observe = new ObserveClient({ baseUrl: location.origin });
const gate = new GateClient({ baseUrl: location.origin, apiKey: 'gk_x' });
export const started = observe.startSession({ agentId: 'browser' }).id;
export const asked = gate.createRequest({ action: 'send_email', params: {} }).then((request) => request.id);
`,
    );
    // The installed .d.ts files are checked too (skipLibCheck off); TypeScript's own lib files are not.
    const base = {
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      target: 'ES2022',
      strict: true,
      noEmit: true,
      skipLibCheck: false,
      skipDefaultLibCheck: true,
    };
    const projects = {
      'tsconfig.node.json': { compilerOptions: { ...base, lib: ['ES2022'], types: ['node'], typeRoots: [NODE_TYPES] }, files: ['check-node.mts'] },
      'tsconfig.browser.json': { compilerOptions: { ...base, lib: ['ES2022', 'DOM'], types: [] }, files: ['check-browser.mts'] },
    };
    const reports = await Promise.all(
      Object.entries(projects).map(async ([file, project]) => {
        writeFileSync(join(appDir, file), JSON.stringify(project));
        const checked = await run(process.execPath, [TSC, '-p', file], { cwd: appDir, env: cleanEnvironment() }).catch((error: { stdout: string }) => error);
        return [file, checked.stdout];
      }),
    );
    assert.deepEqual(
      reports,
      Object.keys(projects).map((file) => [file, '']),
      'tsc reports no error',
    );
  });
});
