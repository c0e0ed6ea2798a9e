// `npm run chaos`: loops every crash scenario (packages/cli/src/crash-scenarios.ts) against real
// service processes killed with SIGKILL, prints each iteration's outcome and a final table, and
// exits 1 when any iteration found a problem.
//
//   npm run chaos                                   20 iterations of every scenario
//   npm run chaos -- --iterations 50                more
//   npm run chaos -- --only ingest-postgres,embeddings-sqlite
//
// Needs PostgreSQL for the ingest-postgres scenario (TEST_DATABASE_URL, default
// postgres://postgres@127.0.0.1:5432/test); the other scenarios use SQLite files.
import { register } from 'tsx/esm/api';

register();
const { SCENARIOS } = await import('../packages/cli/src/crash-scenarios.ts');

function option(name, fallback) {
  const index = process.argv.indexOf(`--${name}`);
  return index === -1 ? fallback : process.argv[index + 1];
}

const iterations = Number(option('iterations', process.env.CHAOS_ITERATIONS ?? '20'));
if (!Number.isInteger(iterations) || iterations < 1) {
  console.error('--iterations must be a whole number >= 1');
  process.exit(2);
}
const only = option('only', '')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);
for (const name of only) {
  if (!(name in SCENARIOS)) {
    console.error(`unknown scenario ${name}; known: ${Object.keys(SCENARIOS).join(', ')}`);
    process.exit(2);
  }
}
const names = only.length > 0 ? only : Object.keys(SCENARIOS);

const formatStats = (stats) =>
  Object.entries(stats)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');

const summary = [];
const started = Date.now();
for (const name of names) {
  const row = { name, runs: 0, passed: 0, failed: 0, durations: [], variants: new Map(), notes: new Map() };
  summary.push(row);
  for (let i = 0; i < iterations; i++) {
    const result = await SCENARIOS[name](i);
    row.runs += 1;
    row.durations.push(result.durationMs);
    const ok = result.problems.length === 0;
    if (ok) row.passed += 1;
    else row.failed += 1;
    const variant = row.variants.get(result.scenario) ?? { runs: 0, failed: 0 };
    variant.runs += 1;
    if (!ok) variant.failed += 1;
    row.variants.set(result.scenario, variant);
    for (const [key, value] of Object.entries(result.stats)) {
      if (typeof value === 'number') row.notes.set(key, (row.notes.get(key) ?? 0) + value);
      if (value === true) row.notes.set(key, (row.notes.get(key) ?? 0) + 1);
    }
    const label = `${name} #${String(i + 1).padStart(2)}/${iterations}`;
    console.log(`${ok ? 'PASS' : 'FAIL'} ${label} ${result.scenario} ${(result.durationMs / 1000).toFixed(1)} s  ${formatStats(result.stats)}`);
    for (const problem of result.problems.slice(0, 20)) console.log(`     ! ${problem}`);
    if (result.problems.length > 20) console.log(`     ! … ${result.problems.length - 20} more`);
  }
}

const pad = (value, width) => String(value).padEnd(width);
console.log(`\nchaos: ${iterations} iteration(s) per scenario, ${((Date.now() - started) / 1000).toFixed(0)} s in all\n`);
console.log(`${pad('scenario', 22)}${pad('runs', 6)}${pad('passed', 8)}${pad('failed', 8)}${pad('mean s', 8)}${pad('max s', 8)}totals`);
for (const row of summary) {
  const mean = row.durations.reduce((a, b) => a + b, 0) / row.durations.length / 1000;
  const max = Math.max(...row.durations) / 1000;
  const totals = [...row.notes.entries()]
    .filter(([key]) => !/Ms$/.test(key))
    .map(([key, value]) => `${key}=${value}`)
    .join(' ');
  console.log(`${pad(row.name, 22)}${pad(row.runs, 6)}${pad(row.passed, 8)}${pad(row.failed, 8)}${pad(mean.toFixed(1), 8)}${pad(max.toFixed(1), 8)}${totals}`);
  for (const [variant, counts] of row.variants) {
    if (row.variants.size > 1) console.log(`  ${pad(variant, 40)}${counts.runs} runs, ${counts.failed} failed`);
  }
}
const failed = summary.reduce((n, row) => n + row.failed, 0);
console.log(failed === 0 ? '\nevery iteration passed' : `\n${failed} iteration(s) failed`);
// Exit explicitly: the shared test helpers register node:test hooks that would otherwise print an empty TAP report.
process.exit(failed === 0 ? 0 : 1);
