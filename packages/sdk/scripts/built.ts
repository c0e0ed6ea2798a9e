// For the tests of what ships (package.test.ts, bundle.test.ts): they read the built dist/ of
// @vigil/sdk and @vigil/pricing, which `npm test` builds first (npm run build:packages). Run alone,
// they say so instead of testing a missing or outdated build.
import { resolve } from 'node:path';
import { packageBuildState } from '../../../scripts/build-package.mjs';

export const SDK_DIR = resolve(import.meta.dirname, '..');
export const PRICING_DIR = resolve(SDK_DIR, '../pricing');

/** Throws unless both packages are built from their current inputs (scripts/build-package.mjs). */
export function assertPackagesBuilt(): void {
  for (const dir of [PRICING_DIR, SDK_DIR]) {
    const state = packageBuildState(dir);
    if (state !== 'fresh') throw new Error(`${dir}/dist is ${state === 'missing' ? 'missing' : 'older than its inputs'}: run npm run build:packages`);
  }
}
