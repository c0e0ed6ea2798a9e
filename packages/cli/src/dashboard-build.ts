import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { acquireBuildLock } from '../build-lock.mjs';
import { replaceBuildOutput } from '../build-output.mjs';

/**
 * The web dashboard's build, done by `vigil up` / `vigil observe` when it is missing or older
 * than its sources, so `npm install && npm start` on a fresh clone serves it without a separate
 * step (dist/ is not committed). Vite builds into a temporary folder whose files then replace
 * dist/'s one rename at a time, index.html last (build-output.mjs), so observe never serves a
 * half-written build nor finds dist/ missing; assets of earlier builds stay a day for pages still
 * open. A lock folder keeps two processes from building at once (a lock whose process is gone is
 * taken over).
 */

export const DASHBOARD_DIR = fileURLToPath(new URL('../../dashboard/', import.meta.url));
const DIST = join(DASHBOARD_DIR, 'dist');
const LOCK = join(DASHBOARD_DIR, '.dist-building');
const SOURCES = ['src', 'public', 'index.html', 'vite.config.ts', 'package.json'];
const LOCK_WAIT_MS = 5 * 60_000;
// A page loaded from an earlier build still asks for that build's assets (their names are hashed).
const OLD_ASSETS_MS = 24 * 3600_000;

export type BuildState = 'missing' | 'stale' | 'fresh';

function newestMtime(path: string): number {
  if (!existsSync(path)) return 0;
  const info = statSync(path);
  if (!info.isDirectory()) return info.mtimeMs;
  let newest = info.mtimeMs;
  for (const name of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, name)));
  return newest;
}

/** Missing (no dist/index.html), stale (a source is newer than the build) or fresh. */
export function dashboardBuildState(dir = DASHBOARD_DIR): BuildState {
  const index = join(dir, 'dist', 'index.html');
  if (!existsSync(index)) return 'missing';
  const built = statSync(index).mtimeMs;
  return SOURCES.some((source) => newestMtime(join(dir, source)) > built) ? 'stale' : 'fresh';
}

function viteBin(): string | null {
  try {
    const require = createRequire(join(DASHBOARD_DIR, 'package.json'));
    const manifest = require.resolve('vite/package.json');
    const bin = (JSON.parse(readFileSync(manifest, 'utf8')) as { bin: string | Record<string, string> }).bin;
    return join(manifest, '..', typeof bin === 'string' ? bin : bin.vite!);
  } catch {
    return null;
  }
}

let running: Promise<BuildOutcome> | null = null;
const children = new Set<ChildProcess>();
// A process that exits mid-build (Ctrl-C during the first start) stops its vite (the lock frees itself).
process.once('exit', () => {
  for (const child of children) child.kill('SIGTERM');
});

export type BuildOutcome = { result: 'fresh' } | { result: 'built'; ms: number } | { result: 'unavailable' | 'failed'; reason: string };

/**
 * Builds the dashboard when it is missing or stale; resolves once dist/ is current (or says why
 * it could not be built: vite not installed, e.g. `npm install --omit=dev`, or a build error).
 */
export function ensureDashboardBuilt(): Promise<BuildOutcome> {
  running ??= build().finally(() => {
    running = null;
  });
  return running;
}

async function build(): Promise<BuildOutcome> {
  if (dashboardBuildState() === 'fresh') return { result: 'fresh' };
  const vite = viteBin();
  if (vite === null) return { result: 'unavailable', reason: 'vite is not installed (run npm install, without --omit=dev, to build the dashboard)' };
  const release = await acquireBuildLock(LOCK, { waitMs: LOCK_WAIT_MS, pollMs: 250, what: 'the dashboard' });
  const out = join(DASHBOARD_DIR, `.dist-tmp-${process.pid}`);
  try {
    // Scratch folders of builds whose process was killed (only the lock holder writes one).
    for (const name of readdirSync(DASHBOARD_DIR)) {
      if (/^\.dist-tmp-\d+$/.test(name)) rmSync(join(DASHBOARD_DIR, name), { recursive: true, force: true });
    }
    // Another process may have built it while this one waited for the lock.
    if (dashboardBuildState() === 'fresh') return { result: 'fresh' };
    const started = Date.now();
    const stderr = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, [vite, 'build', '--outDir', out, '--emptyOutDir', '--logLevel', 'error'], {
        cwd: DASHBOARD_DIR,
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, NODE_ENV: 'production' },
      });
      children.add(child);
      let text = '';
      child.stderr!.on('data', (chunk: Buffer) => (text += chunk.toString()));
      child.once('error', reject);
      child.once('exit', (code, signal) => {
        children.delete(child);
        if (code === 0) resolve(text);
        else reject(new Error(`vite build ${signal ? `was stopped (${signal})` : `exited ${code}`}${text ? `:\n${text.trim()}` : ''}`));
      });
    });
    void stderr;
    replaceBuildOutput(out, DIST, { last: ['index.html'], keepObsoleteMs: OLD_ASSETS_MS });
    return { result: 'built', ms: Date.now() - started };
  } catch (error) {
    return { result: 'failed', reason: (error as Error).message };
  } finally {
    rmSync(out, { recursive: true, force: true });
    release();
  }
}
