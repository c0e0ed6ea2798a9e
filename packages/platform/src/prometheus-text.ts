import { spawnSync } from 'node:child_process';
import { serviceSkip } from './test-services.ts';

/** One sample of the Prometheus text format: `name{label="value",…} number`. */
export interface PrometheusSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a scrape (comments skipped), for tests and tools that read GET /metrics. */
export function parsePrometheusText(text: string): PrometheusSample[] {
  const samples: PrometheusSample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The value of the one sample named so whose labels include `labels`; undefined when there is none. */
export function sampleValue(samples: readonly PrometheusSample[], name: string, labels: Record<string, string> = {}): number | undefined {
  return samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

/** Whether `promtool` (Debian's `prometheus` package) is on the PATH; asked once per process. */
let promtoolFound: boolean | undefined;

/**
 * The skip reason of a test that lints a scrape with promtool (false: run it). With
 * REQUIRE_SERVICES=1 (CI, which installs the package) a missing promtool fails the run instead.
 */
export function promtoolSkip(): string | false {
  promtoolFound ??= spawnSync('promtool', ['--version'], { stdio: 'ignore' }).error === undefined;
  return serviceSkip('promtool on the PATH (Debian package prometheus)', promtoolFound);
}

/** `promtool check metrics` on a scrape: its exit status and what it printed (its lint findings). */
export function promtoolCheckMetrics(text: string): { status: number | null; output: string } {
  const result = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 30_000 });
  if (result.error) throw result.error;
  return { status: result.status, output: `${result.stdout}${result.stderr}`.trim() };
}
