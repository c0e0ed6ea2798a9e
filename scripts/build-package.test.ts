// The package builds (scripts/build-package.mjs) as `npm start` and `npm test` run them, in this
// checkout: a rebuild never takes @vigil/sdk away from a process importing it, and a build of an
// unchanged checkout compiles nothing.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..');
const DISTS = ['packages/pricing/dist', 'packages/sdk/dist'].map((dir) => join(ROOT, dir));

/** The environment of a plain process: no tsx loader, no npm settings of an enclosing `npm test`. */
function plainEnvironment(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'NODE_OPTIONS' && !/^npm_/i.test(name)));
}

function modificationTimes(): Map<string, number> {
  const times = new Map<string, number>();
  for (const dist of DISTS) {
    for (const name of readdirSync(dist, { recursive: true })) times.set(join(dist, String(name)), statSync(join(dist, String(name))).mtimeMs);
  }
  return times;
}

test('a process importing @vigil/sdk while the SDK rebuilds always finds it', { timeout: 240_000 }, async () => {
  await run('npm', ['run', 'build:packages'], { cwd: ROOT, env: plainEnvironment() });
  // Forced: the build runs although nothing changed, and the tests beside this one still find the SDK built.
  const rebuild = spawn('npm', ['run', 'build', '-w', '@vigil/sdk', '--', '--force'], {
    cwd: ROOT,
    env: plainEnvironment(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let buildOutput = '';
  rebuild.stdout.on('data', (chunk: Buffer) => (buildOutput += chunk.toString()));
  rebuild.stderr.on('data', (chunk: Buffer) => (buildOutput += chunk.toString()));
  const finished = new Promise<number | null>((resolve) => rebuild.once('exit', resolve));
  let building = true;
  void finished.then(() => (building = false));

  const failures: string[] = [];
  let imports = 0;
  while (building) {
    try {
      // A new process each time: it resolves and loads the package afresh, as an agent started meanwhile would.
      await run(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          "const sdk = await import('@vigil/sdk/node'); if (typeof sdk.ObserveClient !== 'function') throw new Error('no ObserveClient');",
        ],
        {
          cwd: ROOT,
          env: plainEnvironment(),
        },
      );
    } catch (error) {
      failures.push(
        String((error as { stderr?: string }).stderr ?? error)
          .split('\n')
          .find((line) => line.includes('Error')) ?? String(error),
      );
    }
    imports += 1;
  }
  assert.equal(await finished, 0, `the rebuild failed:\n${buildOutput}`);
  assert.ok(imports >= 2, `only ${imports} imports ran during the rebuild`);
  assert.deepEqual(failures, [], `${failures.length} of ${imports} imports failed during the rebuild`);
});

test('npm start on an unchanged checkout (its prestart) compiles nothing and leaves dist/ untouched', { timeout: 240_000 }, async () => {
  await run('npm', ['run', 'build:packages'], { cwd: ROOT, env: plainEnvironment() });
  const before = modificationTimes();
  const { stdout } = await run('npm', ['run', 'prestart'], { cwd: ROOT, env: plainEnvironment() });
  assert.match(stdout, /packages\/pricing: dist\/ is up to date/);
  assert.match(stdout, /packages\/sdk: dist\/ is up to date/);
  assert.deepEqual(modificationTimes(), before);
});
