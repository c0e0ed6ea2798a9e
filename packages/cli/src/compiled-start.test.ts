import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, describe, test } from 'node:test';
import { buildState } from '../build.mjs';
import { eventually } from './testing.ts';
import { freePort } from './cluster.ts';

const bin = resolve(import.meta.dirname, '../bin/vigil.mjs');
const dirs: string[] = [];
after(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-compiled-'));
  dirs.push(dir);
  return dir;
}

/**
 * Module hooks that write down every module URL the process imports, so the test can see what a
 * start really loads (Node 20 runs them on the loader thread; they change nothing they see).
 */
function importRecorder(dir: string): { preload: string; imported: () => string[] } {
  const log = join(dir, 'imported.txt');
  const hooks = join(dir, 'hooks.mjs');
  writeFileSync(
    hooks,
    `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  if (result.url.startsWith('file:')) appendFileSync(${JSON.stringify(log)}, result.url + '\\n');
  return result;
}
`,
  );
  const preload = join(dir, 'preload.mjs');
  writeFileSync(preload, `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`);
  writeFileSync(log, '');
  return { preload, imported: () => readFileSync(log, 'utf8').split('\n').filter(Boolean) };
}

describe('compiled start', () => {
  test('vigil up runs the compiled build: no TypeScript and no transpiler loaded, and the assets its sources name are found', async () => {
    const dir = tempDir();
    const recorder = importRecorder(dir);
    const [observePort, gatePort] = [await freePort(), await freePort()];
    const adminKey = `compiled-start-${'k'.repeat(32)}`;
    const child = spawn(process.execPath, ['--import', recorder.preload, bin, 'up', '--data-dir', join(dir, 'data')], {
      env: {
        ...process.env,
        DATABASE_URL: '',
        REDIS_URL: '',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        OBSERVE_PORT: String(observePort),
        GATE_PORT: String(gatePort),
        GATE_ADMIN_KEY: adminKey,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
    try {
      const observe = `http://127.0.0.1:${observePort}`;
      const gate = `http://127.0.0.1:${gatePort}`;
      for (const url of [`${observe}/api/health`, `${gate}/health`]) {
        await eventually(
          () =>
            fetch(url).then(
              (r) => r.ok,
              () => false,
            ),
          (ok) => ok,
          60_000,
          `${url} (output: ${output.slice(-2000)})`,
        );
      }
      // Migrations ran (their tables answer), and the OTLP .proto files are read from the sources'
      // folder by the bundle.
      assert.equal((await fetch(`${gate}/api/policies`, { headers: { authorization: `Bearer ${adminKey}` } })).status, 200);
      const created = (await (
        await fetch(`${observe}/api/keys`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"compiled"}' })
      ).json()) as { key: string };
      const span = {
        traceId: '0af7651916cd43dd8448eb211c80319c',
        spanId: 'b7ad6b7169203331',
        name: 'chat gpt-4o-mini',
        startTimeUnixNano: '1700000000000000000',
        endTimeUnixNano: '1700000000250000000',
        attributes: [
          { key: 'gen_ai.operation.name', value: { stringValue: 'chat' } },
          { key: 'gen_ai.request.model', value: { stringValue: 'gpt-4o-mini' } },
          { key: 'gen_ai.conversation.id', value: { stringValue: 'compiled-start' } },
        ],
      };
      const traces = await fetch(`${observe}/v1/traces`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${created.key}` },
        body: JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [span] }] }] }),
      });
      assert.equal(traces.status, 200, await traces.text());

      // The embedding drain hashes on a worker thread: the thread runs its compiled script too
      // (threads inherit the recorder's --import, so their imports are in the same list).
      const ingested = await fetch(`${observe}/api/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${created.key}` },
        body: JSON.stringify({
          events: [
            { sessionId: 'compiled-start', agentId: 'compiled', eventType: 'custom', payload: { type: 'note', data: { text: 'the invoice email bounced' } } },
          ],
        }),
      });
      assert.equal(ingested.status, 201, await ingested.text());
      await eventually(
        () => fetch(`${observe}/api/recall?query=invoice%20email&scope=events`, { headers: { authorization: `Bearer ${created.key}` } }).then((r) => r.json()),
        (answer) => (answer as { results: unknown[] }).results.length > 0,
        30_000,
        'the event embedded',
      );

      const imported = recorder.imported();
      assert.ok(
        imported.some((url) => /\/packages\/cli\/dist\/embed-thread-[^/]+\.mjs$/.test(url)),
        'the embedding thread ran its compiled script',
      );
      const fromDist = imported.filter((url) => url.includes('/packages/cli/dist/'));
      assert.ok(fromDist.length > 0, 'the CLI ran from packages/cli/dist');
      assert.deepEqual(
        imported.filter((url) => /\.[mc]?tsx?$/.test(url) || url.includes('/node_modules/tsx/') || url.includes('/node_modules/esbuild/')),
        [],
        'no TypeScript source, no tsx and no esbuild at run time',
      );
    } finally {
      if (child.exitCode === null) child.kill('SIGTERM');
    }
    assert.equal(await exited, 0, output);
  });
});

describe('compiled build freshness', () => {
  test('missing without a manifest or its entry, fresh while every input is as built, stale once one changes, goes or a new one appears', () => {
    const root = tempDir();
    const dist = join(root, 'dist');
    assert.equal(buildState(dist, root), 'missing');
    mkdirSync(join(root, 'src'), { recursive: true });
    writeFileSync(join(root, 'src/main.ts'), 'export {};\n');
    const inputs = (): Record<string, number> => ({ 'src/main.ts': statSync(join(root, 'src/main.ts')).mtimeMs });
    mkdirSync(dist);
    writeFileSync(join(dist, 'manifest.json'), JSON.stringify({ entry: 'vigil-1.mjs', inputs: inputs() }));
    assert.equal(buildState(dist, root), 'missing', 'the manifest names an entry that is not there');
    writeFileSync(join(dist, 'vigil-1.mjs'), '');
    assert.equal(buildState(dist, root), 'fresh');

    utimesSync(join(root, 'src/main.ts'), new Date(), new Date(Date.now() + 5000));
    assert.equal(buildState(dist, root), 'stale', 'a source edited since');
    writeFileSync(join(dist, 'manifest.json'), JSON.stringify({ entry: 'vigil-1.mjs', inputs: inputs() }));
    assert.equal(buildState(dist, root), 'fresh');

    // npm's record of node_modules appears (an install): the bundle's paths into it may have moved.
    mkdirSync(join(root, 'node_modules'));
    writeFileSync(join(root, 'node_modules/.package-lock.json'), '{}');
    assert.equal(buildState(dist, root), 'stale', 'an input the build did not see');
    rmSync(join(root, 'node_modules'), { recursive: true });

    rmSync(join(root, 'src/main.ts'));
    assert.equal(buildState(dist, root), 'stale', 'a source removed');
  });
});
