// The compiled CLI and services: packages/cli/src/main.ts and everything it reaches in the
// workspace (@vigil/platform, observe, gate) bundled by esbuild into packages/cli/dist/, with
// npm packages left as imports. bin/vigil.mjs runs it, building it first when it is missing or
// older than its sources, so production runs plain JavaScript (no run-time transpiler) and a
// source edit is picked up by the next start. `node build.mjs` (npm run build) builds it when stale.
// Plain JavaScript: it runs before anything is compiled. docs/architecture.md (Compiled services).
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { acquireBuildLock } from './build-lock.mjs';

const CLI_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT = join(CLI_DIR, '..', '..');
export const DIST_DIR = join(CLI_DIR, 'dist');
const MANIFEST = 'manifest.json';
const LOCK_WAIT_MS = 5 * 60_000;
// Outputs of earlier builds stay this long: a process started from one may still import a chunk.
const OLD_OUTPUT_MS = 24 * 3600_000;
const WORKSPACE = /^@vigil\/(platform|observe|gate|cli|pricing)(\/|$)/;
// npm packages bundled in rather than imported: pure ESM loaded by every start, whose hundreds of
// small modules (kysely ~260, zod ~95) each cost V8 a module record, its source and its scope;
// bundled, they are a few chunks. docs/architecture.md (Compiled services and memory).
const BUNDLED_NPM = /^(kysely|zod|fastify-type-provider-zod)(\/|$)/;

/**
 * Files whose change makes a build stale besides the bundled sources: this script, the bundled
 * packages' manifests (their `exports`), and npm's record of node_modules (the bundle names a few
 * nested packages by path).
 */
function extraInputs(root) {
  return [
    'packages/cli/build.mjs',
    ...['cli', 'platform', 'observe', 'gate', 'pricing'].map((name) => `packages/${name}/package.json`),
    'package-lock.json',
    'node_modules/.package-lock.json',
  ].filter((path) => existsSync(join(root, path)));
}

/** `missing` (never built), `stale` (an input changed, appeared or went since) or `fresh`. */
export function buildState(dist = DIST_DIR, root = ROOT) {
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(join(dist, MANIFEST), 'utf8'));
  } catch {
    return 'missing';
  }
  if (!existsSync(join(dist, manifest.entry))) return 'missing';
  for (const [path, mtimeMs] of Object.entries(manifest.inputs)) {
    try {
      if (statSync(join(root, path)).mtimeMs !== mtimeMs) return 'stale';
    } catch {
      return 'stale';
    }
  }
  return extraInputs(root).every((path) => path in manifest.inputs) ? 'fresh' : 'stale';
}

/**
 * Source files say where their assets are with `import.meta.url` (migrations, the OTLP .proto
 * files, the dashboard's build, a worker's script). In the bundle each such URL is rewritten to
 * the source file's own location, so assets are read from where they live in the repository.
 */
function sourceLocations(outdir) {
  return {
    name: 'vigil-source-locations',
    setup(build) {
      build.onLoad({ filter: /\.ts$/ }, (args) => {
        const text = readFileSync(args.path, 'utf8');
        if (/import\.meta\.(dirname|filename)/.test(text)) {
          return { errors: [{ text: `${relative(ROOT, args.path)}: use import.meta.url (the build rewrites it), not import.meta.dirname/filename` }] };
        }
        const fromOutput = relative(outdir, args.path).split(sep).join('/');
        return { contents: text.replaceAll('import.meta.url', `new URL(${JSON.stringify(fromOutput)}, import.meta.url).href`), loader: 'ts' };
      });
    },
  };
}

/**
 * npm packages stay imports, resolved by Node at run time from dist/ as from their importer. A
 * package npm installed under a workspace package (packages/platform/node_modules/better-sqlite3)
 * cannot be found from dist/ by name, so it is imported by its path instead.
 */
function npmPackagesExternal(outdir) {
  return {
    name: 'vigil-npm-external',
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, async (args) => {
        if (WORKSPACE.test(args.path) || BUNDLED_NPM.test(args.path) || args.pluginData === 'inner') return undefined;
        const options = { kind: args.kind, pluginData: 'inner' };
        const fromImporter = await build.resolve(args.path, { ...options, resolveDir: args.resolveDir });
        if (fromImporter.errors.length > 0) return { errors: fromImporter.errors };
        if (fromImporter.external) return { path: args.path, external: true };
        const fromOutput = await build.resolve(args.path, { ...options, resolveDir: dirname(outdir) });
        if (fromOutput.errors.length === 0 && fromOutput.path === fromImporter.path) return { path: args.path, external: true };
        return { path: `./${relative(outdir, fromImporter.path).split(sep).join('/')}`, external: true };
      });
    },
  };
}

/** What both builds share: the bundle's format, names, source locations and npm packages left as imports. */
function bundleOptions(dist) {
  return {
    outdir: dist,
    // Inputs in the metafile (and so in the manifest) are named relative to this.
    absWorkingDir: ROOT,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // Node's own conditions only (esbuild would add `module`), so a package resolves as Node resolves it.
    conditions: [],
    // Class and function names stay as written (errors and logs show them).
    keepNames: true,
    minifyWhitespace: true,
    minifySyntax: true,
    // For `node --enable-source-maps`: stack traces then name the TypeScript sources.
    sourcemap: 'linked',
    // Every output is named by its content, so one build never overwrites a file another uses.
    entryNames: '[name]-[hash]',
    chunkNames: '[name]-[hash]',
    outExtension: { '.js': '.mjs' },
    banner: { js: '// Built by packages/cli/build.mjs from packages/*/src: edit the sources, not this file.' },
    metafile: true,
    write: false,
    // Compile errors are printed (and the build throws).
    logLevel: 'error',
    plugins: [sourceLocations(dist), npmPackagesExternal(dist)],
  };
}

/**
 * Worker-thread scripts (`*-thread.ts` under a bundled package's src/, beside the module that starts
 * the thread): each is an entry of its own, since a thread loads a file, not a chunk of the bundle.
 */
function threadScripts() {
  const scripts = [];
  for (const name of ['platform', 'observe', 'gate', 'cli']) {
    const src = join(ROOT, 'packages', name, 'src');
    for (const path of readdirSync(src, { recursive: true })) {
      if (String(path).endsWith('-thread.ts')) scripts.push(join(src, String(path)));
    }
  }
  return scripts;
}

/**
 * Builds dist/ now: new outputs beside the old ones, then the manifest naming them, replaced at once.
 * Thread scripts are built first; the bundle gets `VIGIL_COMPILED_THREADS` (a script's name → its
 * compiled file, relative to the script's source folder, where the starting module's rewritten
 * `import.meta.url` points), so a compiled process starts compiled threads.
 */
export async function buildServices(dist = DIST_DIR) {
  const esbuild = await import('esbuild');
  const started = Date.now();
  const options = bundleOptions(dist);
  const threads = await esbuild.build({ ...options, entryPoints: threadScripts(), splitting: false });
  const compiledThreads = {};
  for (const [output, { entryPoint }] of Object.entries(threads.metafile.outputs)) {
    if (entryPoint === undefined) continue;
    compiledThreads[basename(entryPoint, '.ts')] = relative(dirname(join(ROOT, entryPoint)), join(ROOT, output))
      .split(sep)
      .join('/');
  }
  const result = await esbuild.build({
    ...options,
    entryPoints: { vigil: join(CLI_DIR, 'src', 'main.ts') },
    define: { VIGIL_COMPILED_THREADS: JSON.stringify(compiledThreads) },
  });
  mkdirSync(dist, { recursive: true });
  const names = new Set([MANIFEST]);
  for (const file of [...threads.outputFiles, ...result.outputFiles]) {
    const name = basename(file.path);
    names.add(name);
    if (existsSync(file.path)) continue;
    const scratch = `${file.path}.${process.pid}.tmp`;
    writeFileSync(scratch, file.contents);
    renameSync(scratch, file.path);
  }
  // Dynamically imported modules are entry points in the metafile too: pick main.ts's output by name.
  const main = relative(ROOT, join(CLI_DIR, 'src', 'main.ts'))
    .split(sep)
    .join('/');
  const entry = Object.entries(result.metafile.outputs).find(([, output]) => output.entryPoint === main)[0];
  const inputs = {};
  const sources = [...Object.keys(threads.metafile.inputs), ...Object.keys(result.metafile.inputs)].filter((path) => !path.startsWith('<define:'));
  for (const path of [...sources, ...extraInputs(ROOT)]) inputs[path] = statSync(join(ROOT, path)).mtimeMs;
  const scratch = join(dist, `${MANIFEST}.${process.pid}.tmp`);
  writeFileSync(scratch, `${JSON.stringify({ entry: basename(entry), inputs }, null, 1)}\n`);
  renameSync(scratch, join(dist, MANIFEST));
  for (const name of readdirSync(dist)) {
    const path = join(dist, name);
    if (!names.has(name) && Date.now() - statSync(path).mtimeMs > OLD_OUTPUT_MS) rmSync(path, { force: true });
  }
  return { ms: Date.now() - started };
}

/** One build at a time across processes (build-lock.mjs). */
async function withLock(dist, work) {
  const release = await acquireBuildLock(join(dirname(dist), '.dist-building'), { waitMs: LOCK_WAIT_MS, pollMs: 100, what: 'packages/cli/dist' });
  try {
    return await work();
  } finally {
    release();
  }
}

/** Builds dist/ if it is missing or stale (waiting for another process's build), then returns the URL of its entry. */
export async function compiledEntry(dist = DIST_DIR) {
  if (buildState(dist) !== 'fresh') {
    await withLock(dist, async () => {
      // Another process may have built it while this one waited for the lock.
      if (buildState(dist) !== 'fresh') await buildServices(dist);
    });
  }
  const { entry } = JSON.parse(readFileSync(join(dist, MANIFEST), 'utf8'));
  return pathToFileURL(join(dist, entry)).href;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    // As bin/vigil.mjs does: nothing to do while every input is the one of the last build.
    const outcome = await withLock(DIST_DIR, async () => (buildState() === 'fresh' ? null : await buildServices()));
    process.stdout.write(outcome === null ? 'packages/cli/dist is up to date\n' : `packages/cli/dist built in ${outcome.ms} ms\n`);
  } catch (error) {
    process.stderr.write(`${error.errors ? 'the build failed (see above)' : error.message}\n`);
    process.exitCode = 1;
  }
}
