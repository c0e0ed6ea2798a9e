import { createRequire } from 'node:module';

// recheck is a 3 MB analyser: loaded with the first pattern to judge, so a gate whose policies
// use no regular expression never holds it.
const require = createRequire(import.meta.url);
let recheck: typeof import('recheck') | undefined;

// Bounded: every pattern a policy create or change names is judged, saved or not.
const VERDICTS_KEPT = 1000;
const verdicts = new Map<string, { safe: boolean; reason: string }>();

/**
 * Judges a pattern with recheck (catastrophic backtracking analysis). Verdicts are remembered per
 * process: a pattern is analysed once, when a policy is saved or first loaded. A pattern that
 * does not compile, or that recheck cannot judge, counts as unsafe.
 */
export function judgePattern(pattern: string): { safe: boolean; reason: string } {
  let verdict = verdicts.get(pattern);
  if (verdict === undefined) {
    try {
      new RegExp(pattern);
      if (recheck === undefined) {
        // checkSync otherwise runs the same analysis on a worker thread of its own (synckit) that
        // stays for the life of the process, about 30 MiB; the caller waits for it either way.
        process.env.RECHECK_SYNC_BACKEND ??= 'pure';
        recheck = require('recheck') as typeof import('recheck');
      }
      const diagnostics = recheck.checkSync(pattern, '');
      verdict =
        diagnostics.status === 'safe'
          ? { safe: true, reason: 'safe' }
          : { safe: false, reason: diagnostics.status === 'vulnerable' ? 'it can backtrack catastrophically' : 'its safety could not be established' };
    } catch (error) {
      verdict = { safe: false, reason: `it is not a valid regular expression (${(error as Error).message})` };
    }
    if (verdicts.size >= VERDICTS_KEPT) verdicts.delete(verdicts.keys().next().value!);
    verdicts.set(pattern, verdict);
  }
  return verdict;
}

export const isSafePattern = (pattern: string): boolean => judgePattern(pattern).safe;
