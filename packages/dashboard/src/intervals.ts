/** Confidence intervals of a benchmark variant's per-session means (the benchmark chart). */

/** Student's t at 97.5 % for 1 to 30 degrees of freedom. */
const T_975 = [
  12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.16, 2.145, 2.131, 2.12, 2.11, 2.101, 2.093, 2.086, 2.08, 2.074, 2.069,
  2.064, 2.06, 2.056, 2.052, 2.048, 2.045, 2.042,
];
/** Beyond 30: the value at the nearest tabulated degrees of freedom below (a slightly wider, safe interval). */
const T_975_LARGE: [df: number, t: number][] = [
  [120, 1.98],
  [60, 2.0],
  [40, 2.021],
  [30, 2.042],
];

export function tCritical95(df: number): number {
  if (df < 1) return Number.NaN;
  if (df <= 30) return T_975[Math.floor(df) - 1]!;
  return T_975_LARGE.find(([at]) => df >= at)![1];
}

export interface Interval {
  lower: number;
  upper: number;
}

/**
 * The 95 % interval of a mean of `count` per-session values (mean ± t · sd / √n), clamped to
 * `bounds` (a rate stays within 0…1); null when it cannot be computed (fewer than 2 values).
 */
export function meanInterval(
  stats: { mean: number | null; stddev: number | null; count: number },
  bounds: [number, number] = [Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY],
): Interval | null {
  const { mean, stddev, count } = stats;
  if (mean === null || stddev === null || count < 2) return null;
  const half = (tCritical95(count - 1) * stddev) / Math.sqrt(count);
  return { lower: Math.max(bounds[0], mean - half), upper: Math.min(bounds[1], mean + half) };
}
