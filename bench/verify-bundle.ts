/**
 * Part of bench/audit.ts: verifies an exported bundle file as `vigil verify BUNDLE` does, in a
 * fresh process (nothing of the bench's own work in its heap), and prints the timings as JSON:
 * `{readMs, runs: [ms, …]}`. Arguments: BUNDLE_FILE RUNS.
 */
import { readFileSync } from 'node:fs';
import { parseBundle, verifyBundle } from '@vigil/cli/verify';

const [file, runs] = process.argv.slice(2);
const text = readFileSync(file!, 'utf8');
// Reading the file (JSON.parse) is not verifying it: timed apart.
const readStarted = performance.now();
const bundle = parseBundle(JSON.parse(text));
const readMs = performance.now() - readStarted;
const timings: number[] = [];
for (let run = 0; run < Number(runs); run++) {
  const started = performance.now();
  const verdict = verifyBundle(bundle);
  timings.push(performance.now() - started);
  if (verdict.findings.length > 0) throw new Error(`bundle: ${verdict.findings[0]!.message}`);
}
process.stdout.write(JSON.stringify({ readMs, runs: timings }));
