// The build of a published workspace package (@vigil/pricing, @vigil/sdk): `npm run build` in its
// folder runs `node ../../scripts/build-package.mjs <tsconfig>...`. It never takes dist/ away from a
// process importing the package meanwhile (an agent run from the checkout, a test beside `npm test`):
// tsc compiles into a scratch folder beside dist/, whose files then replace dist/'s one rename at a
// time (packages/cli/build-output.mjs). It builds nothing when its inputs are the
// ones of the last build (their SHA-256 is kept in .dist-inputs.json beside dist/), so `npm start`
// on an unchanged checkout runs no tsc. `--force` builds anyway (the old build stays recorded until then).
// Plain JavaScript: it runs before anything is compiled. docs/architecture.md (Package builds).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { acquireBuildLock } from '../packages/cli/build-lock.mjs';
import { filesUnder, replaceBuildOutput } from '../packages/cli/build-output.mjs';

const ROOT = resolve(fileURLToPath(import.meta.url), '..', '..');
const STAMP = '.dist-inputs.json';
const LOCK_WAIT_MS = 5 * 60_000;

/**
 * The SHA-256 of everything the build reads: the package's src/, package.json and tsconfig files,
 * the root tsconfig.json they extend, the TypeScript compiler's version, and the last build of each
 * workspace package it depends on (the SDK compiles against @vigil/pricing's declarations).
 */
function buildInputsHash(packageDir) {
  const hash = createHash('sha256');
  const add = (path) =>
    hash
      .update(`${relative(ROOT, path).split(sep).join('/')}\0`)
      .update(readFileSync(path))
      .update('\0');
  const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));
  for (const name of readdirSync(packageDir).sort()) if (name === 'package.json' || /^tsconfig.*\.json$/.test(name)) add(join(packageDir, name));
  for (const file of filesUnder(join(packageDir, 'src')).sort()) add(join(packageDir, 'src', file));
  add(join(ROOT, 'tsconfig.json'));
  hash.update(`typescript ${createRequire(join(packageDir, 'package.json'))('typescript/package.json').version}\0`);
  for (const name of Object.keys(manifest.dependencies ?? {}).filter((dependency) => dependency.startsWith('@vigil/'))) {
    const stamp = join(ROOT, 'packages', name.slice('@vigil/'.length), STAMP);
    hash.update(`${name} ${existsSync(stamp) ? readFileSync(stamp, 'utf8') : 'unbuilt'}\0`);
  }
  return hash.digest('hex');
}

/** `missing` (never built, or an output is gone), `stale` (an input changed since) or `fresh`. */
export function packageBuildState(packageDir) {
  let stamp;
  try {
    stamp = JSON.parse(readFileSync(join(packageDir, STAMP), 'utf8'));
  } catch {
    return 'missing';
  }
  if (!stamp.outputs.every((file) => existsSync(join(packageDir, 'dist', file)))) return 'missing';
  return stamp.inputs === buildInputsHash(packageDir) ? 'fresh' : 'stale';
}

/** The files of dist/ that the package's `exports` name (its entry points), relative to dist/. */
function exportedFiles(packageDir) {
  const { exports } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'));
  const targets = Object.values(exports).flatMap((target) => (typeof target === 'string' ? [target] : Object.values(target)));
  return targets.filter((target) => target.startsWith('./dist/')).map((target) => target.slice('./dist/'.length));
}

/** Compiles each tsconfig into a scratch folder, then puts its files into dist/ and records the inputs. */
function build(packageDir, tsconfigs) {
  const inputs = buildInputsHash(packageDir);
  const scratch = join(packageDir, `.dist-build-${process.pid}`);
  const tsc = createRequire(join(packageDir, 'package.json')).resolve('typescript/bin/tsc');
  try {
    for (const tsconfig of tsconfigs) execFileSync(process.execPath, [tsc, '-p', tsconfig, '--outDir', scratch], { cwd: packageDir, stdio: 'inherit' });
    const outputs = replaceBuildOutput(scratch, join(packageDir, 'dist'), { last: exportedFiles(packageDir), keepObsoleteMs: 0 });
    // Written then renamed, so a reader never sees half a stamp.
    const stampScratch = join(packageDir, `${STAMP}.${process.pid}.tmp`);
    writeFileSync(stampScratch, `${JSON.stringify({ inputs, outputs })}\n`);
    renameSync(stampScratch, join(packageDir, STAMP));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const packageDir = process.cwd();
  const force = process.argv.includes('--force');
  const tsconfigs = process.argv.slice(2).filter((arg) => arg !== '--force');
  const name = relative(ROOT, packageDir);
  if (!force && packageBuildState(packageDir) === 'fresh') {
    process.stdout.write(`${name}: dist/ is up to date\n`);
  } else {
    const release = await acquireBuildLock(join(packageDir, '.dist-building'), { waitMs: LOCK_WAIT_MS, pollMs: 100, what: `${name}/dist` });
    try {
      // Another process may have built it while this one waited for the lock.
      if (force || packageBuildState(packageDir) !== 'fresh') {
        const started = Date.now();
        build(packageDir, tsconfigs);
        process.stdout.write(`${name}/dist built in ${Date.now() - started} ms\n`);
      } else process.stdout.write(`${name}: dist/ is up to date\n`);
    } catch (error) {
      process.stderr.write(`${name}: the build failed${error.status ? ' (see above)' : `: ${error.message}`}\n`);
      process.exitCode = 1;
    } finally {
      release();
    }
  }
}
