// For the tests of what ships (package.test.ts, bundle.test.ts): they read the built dist/ of
// @vigil/sdk and @vigil/pricing, which `npm test` builds first (npm run build:packages). Run alone,
// they say so instead of testing a missing or outdated build.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const SDK_DIR = resolve(import.meta.dirname, '..');
export const PRICING_DIR = resolve(SDK_DIR, '../pricing');

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) {
      newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
    }
  }
  return newest;
}

/** Throws unless both packages are built and their dist/index.js is newer than every source file. */
export function assertPackagesBuilt(): void {
  for (const dir of [PRICING_DIR, SDK_DIR]) {
    const entry = join(dir, 'dist', 'index.js');
    if (!existsSync(entry)) throw new Error(`${entry} is missing: run npm run build:packages`);
    if (statSync(entry).mtimeMs < newestSource(join(dir, 'src'))) throw new Error(`${join(dir, 'dist')} is older than its src/: run npm run build:packages`);
  }
}
