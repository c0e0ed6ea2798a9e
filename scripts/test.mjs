// Runs every *.test.ts of the workspace (and scripts/depcheck.test.ts, the dependency rules) in one
// node:test run, so CI reads one summary line.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function findTests(dir, found = []) {
  for (const name of readdirSync(dir)) {
    // depcheck-fixtures breaks the dependency rules on purpose; its files are read, never run.
    if (name === 'node_modules' || name === 'depcheck-fixtures' || name.startsWith('.')) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) findTests(path, found);
    else if (name.endsWith('.test.ts')) found.push(path);
  }
  return found;
}

// Arguments: path fragments; a file runs when its path holds any of them (all files without any).
const filters = process.argv.slice(2);
const files = [...findTests('packages'), ...findTests('scripts')].filter((f) => filters.length === 0 || filters.some((filter) => f.includes(filter))).sort();
if (files.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
// The timeout bounds each file's process as a whole too: the slowest files (npm pack and install,
// browsers) take about a minute on a quiet 2-core machine, and up to 5 minutes at a load average of
// 20 (the gate's requests tests: 308 s), so a loaded one gets room before a hang fails.
const result = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-concurrency=2', '--test-timeout=600000', ...files], {
  stdio: 'inherit',
  env: process.env,
});
process.exit(result.status ?? 1);
