// Regenerates docs/screenshots/: runs the dashboard's browser tests (packages/cli/src/dashboard-*.test.ts)
// with VIGIL_SCREENSHOTS=1, under which each test saves the pages it visits (dashboard-harness.ts
// `shot`), the console test each page at a phone's width and in the dark scheme too. One file at a
// time, since they share the machine's few cores. `npm run screenshots [-- file.test.ts …]` runs
// only the files named.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(import.meta.dirname, '..');
const testDir = join(root, 'packages/cli/src');
const shots = join(root, 'docs/screenshots');

const named = process.argv.slice(2);
const files = (named.length > 0 ? named : readdirSync(testDir).filter((name) => /^dashboard-.*\.test\.ts$/.test(name))).map((name) => join(testDir, name));
const started = Date.now();
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=1', ...files], {
  cwd: root,
  env: { ...process.env, VIGIL_SCREENSHOTS: '1' },
  stdio: 'inherit',
});
const written = readdirSync(shots).filter((name) => name.endsWith('.png') && statSync(join(shots, name)).mtimeMs >= started);
console.log(`${written.length} screenshots written to ${relative(root, shots)}/: ${written.sort().join(', ')}`);
process.exit(result.status ?? 1);
