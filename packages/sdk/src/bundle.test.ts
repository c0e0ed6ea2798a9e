/**
 * The core entry (`@vigil/sdk`, dist/index.js) bundles for a browser: esbuild, platform browser,
 * finds no Node built-in module among its imports and no unguarded Node global (process, Buffer,
 * require, …) in its code, and the bundle stays small. `@vigil/sdk/node` is bundled too, to prove
 * the check catches both. Then the bundle runs in a page in Chromium (Debian's, driven by
 * playwright-core as in the dashboard tests) and records a session in a real observe.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import { before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import * as esbuild from 'esbuild';
import { chromium } from 'playwright-core';
import { PriceTable } from '@vigil/pricing';
import { startLiveServices } from '@vigil/cli/testing';
import { assertPackagesBuilt, SDK_DIR } from '../scripts/built.ts';
import { GateClient, ObserveClient } from './index.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Minified size the core bundle must stay under (27 KB when this was written). */
const CORE_BUDGET_BYTES = 64 * 1024;

/**
 * Node's globals read as bare identifiers. The core may read `globalThis.process?.env` (a property,
 * absent in a browser), never `process` itself, which throws a ReferenceError there. A name right
 * after `node:` is a built-in's specifier in a string (getBuiltinModule("node:module")), not a read.
 */
const NODE_GLOBAL = /(?<![.\w$])(?<!node:)(process|Buffer|require|module|exports|__dirname|__filename|global|setImmediate|clearImmediate)(?![\w$])/g;

interface BrowserBundle {
  code: string;
  /** Node built-in modules imported, as `specifier (from importer)`. */
  builtins: string[];
  /** Bare Node globals in the minified code (property reads such as globalThis.process are fine). */
  globals: string[];
}

function isBuiltin(specifier: string): boolean {
  if (specifier.startsWith('node:')) return true;
  return builtinModules.includes(specifier) || builtinModules.includes(specifier.split('/')[0]!);
}

/** Bundles `entry` (or stdin source) for the browser, recording Node built-ins instead of failing on the first one. */
async function bundleForBrowser(entry: string | { contents: string }): Promise<BrowserBundle> {
  const builtins: string[] = [];
  const result = await esbuild.build({
    ...(typeof entry === 'string' ? { entryPoints: [entry] } : { stdin: { contents: entry.contents, resolveDir: SDK_DIR, loader: 'js' } }),
    bundle: true,
    platform: 'browser',
    format: 'esm',
    minify: true,
    write: false,
    logLevel: 'silent',
    plugins: [
      {
        name: 'record-node-builtins',
        setup(build) {
          build.onResolve({ filter: /.*/ }, (args) => {
            if (!isBuiltin(args.path)) return undefined;
            builtins.push(`${args.path} (from ${args.importer === '<stdin>' ? 'stdin' : relative(SDK_DIR, args.importer)})`);
            return { path: args.path, external: true };
          });
        },
      },
    ],
  });
  const code = result.outputFiles[0]!.text;
  const globals = [...code.matchAll(NODE_GLOBAL)].map((match) => `${match[1]} in …${code.slice(Math.max(0, match.index - 30), match.index + 30)}…`);
  return { code, builtins, globals };
}

describe('browser bundle of @vigil/sdk', () => {
  before(assertPackagesBuilt);

  test('the core entry uses no Node built-in module and no bare Node global, and stays under its size budget', async () => {
    const bundle = await bundleForBrowser(join(SDK_DIR, 'dist', 'index.js'));
    assert.deepEqual(bundle.builtins, [], 'Node built-in modules imported by the core');
    assert.deepEqual(bundle.globals, [], 'bare Node globals in the core bundle');
    const bytes = Buffer.byteLength(bundle.code);
    const gzipped = gzipSync(bundle.code).length;
    assert.ok(bytes < CORE_BUDGET_BYTES, `core bundle is ${bytes} bytes minified (${gzipped} gzipped), budget ${CORE_BUDGET_BYTES}`);
    // The bundle is the client, not a stub: the price table and the clients are in it.
    assert.match(bundle.code, /gpt-4o-mini/);
    assert.match(bundle.code, /\/api\/events/);
  });

  test('the check catches Node code: @vigil/sdk/node imports node:async_hooks, node:fs (the disk spool) and reads process', async () => {
    const bundle = await bundleForBrowser(join(SDK_DIR, 'dist', 'node.js'));
    assert.deepEqual(bundle.builtins, [
      'node:async_hooks (from dist/node.js)',
      'node:path (from dist/node.js)',
      'node:fs (from dist/spool.js)',
      'node:path (from dist/spool.js)',
    ]);
    assert.ok(
      bundle.globals.some((found) => found.startsWith('process ')),
      `process.on(...) found: ${JSON.stringify(bundle.globals)}`,
    );
    // Without the recording plugin, esbuild itself refuses: the entry cannot be bundled for a browser.
    await assert.rejects(
      esbuild.build({ entryPoints: [join(SDK_DIR, 'dist', 'node.js')], bundle: true, platform: 'browser', write: false, logLevel: 'silent' }),
      /Could not resolve "node:async_hooks"/,
    );
  });

  test('the check catches a bare built-in name and an unguarded process.env read', async () => {
    const bundle = await bundleForBrowser({
      contents: "import { readFileSync } from 'fs'; export const key = process.env.VIGIL_API_KEY ?? readFileSync('key');",
    });
    assert.deepEqual(bundle.builtins, ['fs (from stdin)']);
    assert.equal(bundle.globals.length, 1);
    assert.match(bundle.globals[0]!, /^process /);
    const guarded = await bundleForBrowser({ contents: 'export const key = globalThis.process?.env?.VIGIL_API_KEY;' });
    assert.deepEqual([guarded.builtins, guarded.globals], [[], []]);
  });

  test(
    'the bundle records a session and verifies a gate receipt from a page in Chromium',
    { skip: !existsSync(CHROMIUM) && process.env.REQUIRE_SERVICES !== '1' && `no Chromium at ${CHROMIUM}` },
    async () => {
      const bundle = await bundleForBrowser(join(SDK_DIR, 'dist', 'index.js'));
      const live = await startLiveServices();
      const browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
        headless: true,
      });
      try {
        const page = await browser.newPage();
        const problems: string[] = [];
        page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
        page.on('console', (message) => {
          if (message.type() === 'error' || message.type() === 'warning') problems.push(`console ${message.type()}: ${message.text()}`);
        });
        // The page is served at observe's origin (intercepted by the browser), so the SDK's requests need no CORS.
        const sessionId = `browser-${Date.now()}`;
        // A receipt of the real gate, verified in the page with Web Crypto (docs/guide/receipts.md).
        const gate = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
        const { id } = await gate.createRequest({ action: 'pay', params: { amount: 5 } });
        const decided = await gate.decide(id, 'approved');
        assert.ok('receipt' in decided, 'one approval settles this request');
        const { receipt } = decided;
        const { publicKey } = (await gate.call('get', '/api/audit/public-key', {})) as { publicKey: string };
        const html = `<!doctype html><script type="module">
          import { ObserveClient, verifyReceipt } from './sdk.js';
          const receipt = ${JSON.stringify(receipt)};
          const receiptValid = await verifyReceipt(receipt, ${JSON.stringify(publicKey)});
          const tamperedValid = await verifyReceipt({ ...receipt, action: 'pay_all' }, ${JSON.stringify(publicKey)});
          const client = new ObserveClient({ baseUrl: location.origin, apiKey: ${JSON.stringify(live.observeKey)}, flushIntervalMs: 50 });
          const session = client.startSession({ agentId: 'browser-agent', sessionId: ${JSON.stringify(sessionId)} });
          await session.wrapToolCall('read_clipboard', {}, async () => 'copied text');
          const call = session.recordLlmCall({ provider: 'openai', model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] });
          const { costUsd } = session.recordLlmResponse(call, { completion: 'hello', usage: { inputTokens: 1200, outputTokens: 300 } });
          await session.end();
          window.recorded = { costUsd, receiptValid, tamperedValid };
        </script>`;
        await page.route(`${live.observeUrl}/sdk-page/**`, (route) =>
          route.fulfill(
            route.request().url().endsWith('sdk.js') ? { contentType: 'text/javascript', body: bundle.code } : { contentType: 'text/html', body: html },
          ),
        );
        await page.goto(`${live.observeUrl}/sdk-page/index.html`);
        const recorded = await page
          .waitForFunction(() => (window as unknown as { recorded?: unknown }).recorded, undefined, { timeout: 15_000 })
          .catch((error: Error) => assert.fail(`${error.message}; the page reported: ${JSON.stringify(problems)}`));
        const expectedCost = PriceTable.fromDefaults().costUsd('gpt-4o-mini', 'openai', 1200, 300)!;
        assert.deepEqual(await recorded.jsonValue(), { costUsd: expectedCost, receiptValid: true, tamperedValid: false });
        assert.deepEqual(problems, []);
        const client = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey });
        const { events } = await client.listEvents({ sessionId, order: 'asc', limit: 50 });
        assert.deepEqual(
          events.map((e) => e.eventType),
          ['session_started', 'tool_call', 'tool_response', 'llm_call', 'llm_response', 'session_ended'],
        );
        assert.equal(events[4]!.payload.costUsd, expectedCost);
      } finally {
        await browser.close();
        await live.close();
      }
    },
  );
});
