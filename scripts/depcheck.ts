// Runs dependency-cruiser with the repository's rules (.dependency-cruiser.cjs) through its API,
// which works on Node 20 (its command line asks for Node 22). Used by scripts/depcheck.test.ts
// and by `npm run depcheck`, which prints the violations.
import { fileURLToPath } from 'node:url';
import { cruise, type IViolation } from 'dependency-cruiser';
import extractDepcruiseOptions from 'dependency-cruiser/config-utl/extract-depcruise-options';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';

const root = fileURLToPath(new URL('..', import.meta.url));

export interface Violation {
  rule: string;
  from: string;
  to: string;
  /** For a cycle: the modules it goes through, starting at `from`. */
  cycle?: string[];
}

/** Every violation of the repository's rules among `paths` (relative to the repository root), in a stable order. */
export async function depcheck(paths: string[], options: { doNotFollow?: string[] } = {}): Promise<Violation[]> {
  const previous = process.cwd();
  process.chdir(root);
  try {
    const cruiseOptions = await extractDepcruiseOptions('./.dependency-cruiser.cjs');
    if (options.doNotFollow) cruiseOptions.doNotFollow = { path: options.doNotFollow };
    const result = await cruise(paths, cruiseOptions, undefined, { tsConfig: extractTSConfig('tsconfig.json') });
    if (typeof result.output === 'string') throw new Error('dependency-cruiser returned a report instead of its result');
    return result.output.summary.violations.map(toViolation).sort((a, b) => describeViolation(a).localeCompare(describeViolation(b)));
  } finally {
    process.chdir(previous);
  }
}

function toViolation(violation: IViolation): Violation {
  const cycle = violation.cycle?.map((step) => step.name);
  return { rule: violation.rule.name, from: violation.from, to: violation.to, ...(cycle ? { cycle } : {}) };
}

export function describeViolation(violation: Violation): string {
  const path = violation.cycle ? [violation.from, ...violation.cycle].join(' -> ') : `${violation.from} -> ${violation.to}`;
  return `${violation.rule}: ${path}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const violations = await depcheck(['packages']);
  for (const violation of violations) process.stdout.write(`${describeViolation(violation)}\n`);
  process.stdout.write(`${violations.length} violation(s)\n`);
  process.exitCode = violations.length === 0 ? 0 : 1;
}
