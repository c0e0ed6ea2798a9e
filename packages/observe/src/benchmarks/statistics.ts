/**
 * Pure statistics behind benchmark results (GET /api/benchmarks/:id/results).
 *
 * No I/O; every function is deterministic. Reference values in statistics.test.ts come from
 * scipy 1.17 (see reference.py beside this file) and are matched to 1e-6 or better.
 *
 * Conventions (all documented again on each function):
 * - Variant A is the first variant of a pair, variant B the second. Every difference is
 *   **B − A** (mean of B minus mean of A, rate of B minus rate of A), and every signed statistic
 *   (t, Cohen's d, phi) and every confidence interval follows that same direction: a positive value
 *   means B is higher than A. `t` therefore equals `scipy.stats.ttest_ind(b, a, equal_var=False)`.
 * - Continuous metrics: Welch's unequal-variance t test, two-sided, 95 % CI from the t quantile at
 *   the Welch–Satterthwaite df.
 * - Rates: Pearson chi-squared test on the 2×2 table [[successesA, failuresA], [successesB,
 *   failuresB]] **with Yates' continuity correction by default**, exactly as the default call
 *   `scipy.stats.chi2_contingency(table)` (correction magnitude capped at |O − E|, as scipy does).
 *   The 95 % CI of the difference of proportions is Newcombe's hybrid score interval (method 10,
 *   no continuity correction), built from two Wilson intervals. Phi is computed from the
 *   uncorrected table and signed like the difference.
 * - Tail probabilities never come from `1 − cdf`: they are computed directly as the regularized
 *   incomplete beta I_x(df/2, 1/2) (Student t) and the regularized upper incomplete gamma
 *   Q(1/2, x/2) (chi-squared, 1 df), so p-values as small as 1e-300 keep full relative precision.
 *   jStat's own `ibeta` stops at 3e-7 relative precision and 100 iterations, its `gammaln` is good
 *   to ~2e-10 and it has no upper incomplete gamma, so ln Γ, ln B and the continued fractions are
 *   evaluated here to machine precision; jStat's `studentt.inv` is the starting point of the t
 *   quantile, polished here by Newton steps. Measured against scipy on 600 random cases: relative
 *   error below 1e-11 for every statistic, p-value and CI bound.
 * - No function ever returns NaN or ±Infinity: quantities that are undefined for degenerate input
 *   are `null`, and p-values of degenerate tests are defined (see `welch` and `chiSquared2x2`).
 */
import { createRequire } from 'node:module';
import type jStatModule from 'jstat';

// Loaded with the first quantile asked for (a benchmark comparison), not with the service.
const require = createRequire(import.meta.url);
let jStat: typeof jStatModule | undefined;

/** Significance level: a comparison is significant when p < ALPHA (strict). */
export const ALPHA = 0.05;

/** Φ⁻¹(0.975) = scipy.stats.norm.ppf(0.975), the z of a two-sided 95 % interval. */
export const Z_975 = 1.959963984540054;

// ---------------------------------------------------------------------------------------------
// Metrics
// ---------------------------------------------------------------------------------------------

export const BENCHMARK_METRICS = ['error_rate', 'avg_cost', 'avg_latency', 'tool_success_rate', 'completion_rate', 'avg_tokens', 'avg_duration'] as const;
export type BenchmarkMetric = (typeof BENCHMARK_METRICS)[number];

export type TestType = 'welch_t' | 'chi_squared';

/** Rates are compared with the 2×2 chi-squared test on counts, continuous metrics with Welch's t. */
export const METRIC_TEST_TYPE: Readonly<Record<BenchmarkMetric, TestType>> = {
  error_rate: 'chi_squared',
  tool_success_rate: 'chi_squared',
  completion_rate: 'chi_squared',
  avg_cost: 'welch_t',
  avg_latency: 'welch_t',
  avg_tokens: 'welch_t',
  avg_duration: 'welch_t',
};

/** Whether a higher value of the metric is better (rates of success) or worse (errors, costs, times). */
export const HIGHER_IS_BETTER: Readonly<Record<BenchmarkMetric, boolean>> = {
  error_rate: false,
  avg_cost: false,
  avg_latency: false,
  avg_tokens: false,
  avg_duration: false,
  tool_success_rate: true,
  completion_rate: true,
};

/** Every unordered pair of variants, in input order: (0,1), (0,2), …, (1,2), …; n(n−1)/2 pairs. */
export function variantPairs<T>(variants: readonly T[]): Array<[T, T]> {
  const pairs: Array<[T, T]> = [];
  for (let i = 0; i < variants.length; i++) {
    for (let j = i + 1; j < variants.length; j++) pairs.push([variants[i] as T, variants[j] as T]);
  }
  return pairs;
}

// ---------------------------------------------------------------------------------------------
// Special functions and distributions
// ---------------------------------------------------------------------------------------------

const EPS = 1e-16;
const FPMIN = 1e-300;
const MAX_ITERATIONS = 1_000_000;
const HALF_LN_2PI = 0.9189385332046728; // ln(2π) / 2

// Coefficients B_2k / (2k (2k − 1)) of Stirling's series for ln Γ, k = 1…8.
const STIRLING = [1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156, -3617 / 122400] as const;

/** Σ B_2k / (2k (2k − 1) x^(2k−1)); truncation error below 2e-18 for x ≥ 10. */
function stirlingSeries(x: number): number {
  const inv2 = 1 / (x * x);
  let acc = 0;
  for (let k = STIRLING.length - 1; k >= 0; k--) acc = acc * inv2 + (STIRLING[k] as number);
  return acc / x;
}

/**
 * ln Γ(x) for x > 0 to about 1e-15 absolute: Stirling's series for x ≥ 10, shifted up with
 * Γ(x) = Γ(x + k) / (x (x + 1) … (x + k − 1)) below. (jStat.gammaln is only good to ~2e-10.)
 */
export function lnGamma(x: number): number {
  if (!(x > 0)) throw new RangeError('lnGamma: x must be > 0');
  let product = 1;
  let y = x;
  while (y < 10) {
    product *= y;
    y += 1;
  }
  return (y - 0.5) * Math.log(y) - y + HALF_LN_2PI + stirlingSeries(y) - Math.log(product);
}

/** ln Γ(a) − ln Γ(a + b) for a ≥ 10, b > 0, without the cancellation of subtracting two large logs. */
function lnGammaRatio(a: number, b: number): number {
  return -(a - 0.5) * Math.log1p(b / a) - b * Math.log(a + b) + b + stirlingSeries(a) - stirlingSeries(a + b);
}

/** ln B(a, b) for a, b > 0; exact to relative precision also when one argument is huge (large df). */
export function lnBeta(a: number, b: number): number {
  const big = Math.max(a, b);
  const small = Math.min(a, b);
  if (big >= 10) return lnGamma(small) + lnGammaRatio(big, small);
  return lnGamma(a) + lnGamma(b) - lnGamma(a + b);
}

/** Continued fraction of the incomplete beta function (modified Lentz), to machine precision. */
function betaContinuedFraction(x: number, a: number, b: number): number {
  const qab = a + b;
  const qap = a + 1;
  const qam = a - 1;
  let c = 1;
  let d = 1 - (qab * x) / qap;
  if (Math.abs(d) < FPMIN) d = FPMIN;
  d = 1 / d;
  let h = d;
  for (let m = 1; m <= MAX_ITERATIONS; m++) {
    const m2 = 2 * m;
    let aa = (m * (b - m) * x) / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < FPMIN) d = FPMIN;
    c = 1 + aa / c;
    if (Math.abs(c) < FPMIN) c = FPMIN;
    d = 1 / d;
    h *= d * c;
    aa = (-(a + m) * (qab + m) * x) / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (Math.abs(d) < FPMIN) d = FPMIN;
    c = 1 + aa / c;
    if (Math.abs(c) < FPMIN) c = FPMIN;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) <= EPS) break;
  }
  return h;
}

/**
 * Regularized incomplete beta I_x(a, b) for a, b > 0. `y` must be 1 − x, passed separately so
 * callers can compute it without cancellation (I_x is tiny when x is tiny, and its complement
 * I_y(b, a) is tiny when y is tiny; both are then exact to relative precision).
 */
export function regularizedIncompleteBeta(x: number, a: number, b: number, y: number = 1 - x): number {
  if (!(a > 0 && b > 0) || !(x >= 0 && y >= 0)) throw new RangeError('regularizedIncompleteBeta: invalid arguments');
  if (x === 0) return 0;
  if (y === 0) return 1;
  const lnFront = a * Math.log(x) + b * Math.log(y) - lnBeta(a, b);
  if (x < (a + 1) / (a + b + 2)) return Math.min(1, (Math.exp(lnFront) * betaContinuedFraction(x, a, b)) / a);
  return Math.max(0, 1 - (Math.exp(lnFront) * betaContinuedFraction(y, b, a)) / b);
}

/**
 * Regularized upper incomplete gamma Q(a, x) = Γ(a, x) / Γ(a) for a > 0, x ≥ 0, computed directly
 * (continued fraction) where it is small, so it keeps relative precision deep into the tail.
 */
export function regularizedUpperGamma(a: number, x: number): number {
  if (!(a > 0) || !(x >= 0)) throw new RangeError('regularizedUpperGamma: invalid arguments');
  if (x === 0) return 1;
  if (x === Infinity) return 0;
  const lnFront = -x + a * Math.log(x) - lnGamma(a);
  if (x < a + 1) {
    // Series for P(a, x); Q = 1 − P is ≥ 0.2 here, so the subtraction loses nothing.
    let ap = a;
    let del = 1 / a;
    let sum = del;
    for (let n = 1; n <= MAX_ITERATIONS; n++) {
      ap += 1;
      del *= x / ap;
      sum += del;
      if (Math.abs(del) < Math.abs(sum) * EPS) break;
    }
    return Math.min(1, Math.max(0, 1 - sum * Math.exp(lnFront)));
  }
  // Continued fraction for Q(a, x) (modified Lentz).
  let b = x + 1 - a;
  let c = 1 / FPMIN;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i <= MAX_ITERATIONS; i++) {
    const an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < FPMIN) d = FPMIN;
    c = b + an / c;
    if (Math.abs(c) < FPMIN) c = FPMIN;
    d = 1 / d;
    const del = d * c;
    h *= del;
    if (Math.abs(del - 1) <= EPS) break;
  }
  return Math.min(1, Math.exp(lnFront) * h);
}

/**
 * Two-sided p-value of Student's t: P(|T| ≥ |t|) = I_{df/(df+t²)}(df/2, 1/2)
 * (= 2 · scipy.stats.t.sf(|t|, df)). df > 0.
 */
export function studentTTwoSidedPValue(t: number, df: number): number {
  if (!(df > 0) || Number.isNaN(t)) throw new RangeError('studentTTwoSidedPValue: invalid arguments');
  if (!Number.isFinite(t)) return 0;
  const t2 = t * t;
  if (t2 === 0) return 1;
  // x = df/(df+t²) and 1 − x = t²/(df+t²), each computed without cancellation.
  const denom = df + t2;
  return regularizedIncompleteBeta(df / denom, df / 2, 0.5, t2 / denom);
}

/** Upper tail P(T ≥ t) of Student's t (= scipy.stats.t.sf(t, df)), by the same complement formula. */
export function studentTSurvival(t: number, df: number): number {
  const half = 0.5 * studentTTwoSidedPValue(t, df);
  return t >= 0 ? half : 1 - half;
}

function studentTDensity(t: number, df: number): number {
  // Γ((df+1)/2) / (Γ(df/2) √(df π)) = 1 / (B(df/2, 1/2) √df)
  return Math.exp(-lnBeta(df / 2, 0.5) - 0.5 * Math.log(df) - ((df + 1) / 2) * Math.log1p((t * t) / df));
}

/**
 * Quantile of Student's t (= scipy.stats.t.ppf(p, df)) for 0 < p < 1, df > 0. jStat's
 * `studentt.inv` (about 1e-8 accurate) is the starting point; Newton steps on the exact upper tail
 * bring it to machine precision.
 */
export function studentTQuantile(p: number, df: number): number {
  if (!(p > 0 && p < 1) || !(df > 0)) throw new RangeError('studentTQuantile: invalid arguments');
  if (p === 0.5) return 0;
  if (p < 0.5) return -studentTQuantile(1 - p, df);
  const upper = 1 - p;
  jStat ??= require('jstat') as typeof jStatModule;
  let q = jStat.studentt.inv(p, df);
  if (!Number.isFinite(q) || q <= 0) q = 1;
  for (let i = 0; i < 8; i++) {
    const density = studentTDensity(q, df);
    if (!(density > 0)) break;
    const step = (studentTSurvival(q, df) - upper) / density;
    q += step;
    if (Math.abs(step) <= 1e-15 * Math.abs(q)) break;
  }
  return q;
}

/** Upper tail of chi-squared with `df` degrees of freedom: Q(df/2, x/2) (= scipy.stats.chi2.sf(x, df)). */
export function chiSquaredSurvival(x: number, df: number = 1): number {
  if (!(df > 0) || Number.isNaN(x)) throw new RangeError('chiSquaredSurvival: invalid arguments');
  if (x <= 0) return 1;
  return regularizedUpperGamma(df / 2, x / 2);
}

// ---------------------------------------------------------------------------------------------
// Descriptive statistics
// ---------------------------------------------------------------------------------------------

export interface Description {
  count: number;
  /** null when count is 0 (also for median, stddev, min, max). */
  mean: number | null;
  /** Middle value; the mean of the two middle values for an even count (as numpy.median). */
  median: number | null;
  /** Sample standard deviation (divisor n − 1, numpy.std(ddof=1)); 0 when count is 1. */
  stddev: number | null;
  min: number | null;
  max: number | null;
}

function assertFinite(values: readonly number[], name: string): void {
  for (const v of values) {
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new RangeError(`${name}: every value must be a finite number`);
  }
}

/** Neumaier-compensated sum. */
function sum(values: readonly number[]): number {
  let s = 0;
  let c = 0;
  for (const v of values) {
    const t = s + v;
    c += Math.abs(s) >= Math.abs(v) ? s - t + v : v - t + s;
    s = t;
  }
  return s + c;
}

interface Moments {
  n: number;
  mean: number;
  /** Sample variance (n − 1); 0 when n < 2 or all values are equal. */
  variance: number;
}

function moments(values: readonly number[]): Moments {
  const n = values.length;
  if (n === 0) return { n, mean: 0, variance: 0 };
  let min = Infinity;
  let max = -Infinity;
  for (const v of values) {
    if (v < min) min = v;
    if (v > max) max = v;
  }
  // Constant samples have exactly zero variance and their value as mean (no rounding residue).
  if (min === max) return { n, mean: min, variance: 0 };
  const mean = Math.min(max, Math.max(min, sum(values) / n));
  // Corrected two-pass algorithm.
  const deviations = values.map((v) => v - mean);
  const squares = sum(deviations.map((d) => d * d));
  const s = sum(deviations);
  const variance = Math.max(0, (squares - (s * s) / n) / (n - 1));
  return { n, mean, variance };
}

/**
 * count, mean, median, sample stddev, min and max of `values` (finite numbers; anything else is a
 * RangeError). Empty input gives count 0 and null for every other field; a single value gives
 * stddev 0 (numpy would give NaN for ddof=1).
 */
export function describe(values: readonly number[]): Description {
  assertFinite(values, 'describe');
  const n = values.length;
  if (n === 0) return { count: 0, mean: null, median: null, stddev: null, min: null, max: null };
  const sorted = [...values].sort((x, y) => x - y);
  const mid = Math.floor(n / 2);
  const median = n % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
  const m = moments(values);
  return {
    count: n,
    mean: m.mean,
    median,
    stddev: Math.sqrt(m.variance),
    min: sorted[0] as number,
    max: sorted[n - 1] as number,
  };
}

// ---------------------------------------------------------------------------------------------
// Welch's t test
// ---------------------------------------------------------------------------------------------

/**
 * Why a test result is degenerate:
 * - `insufficient_data`: a group has fewer than 2 values (Welch) or no trials (chi-squared);
 * - `zero_variance`: both groups are constant (Welch);
 * - `no_variation`: every trial of both groups succeeded, or every trial failed (chi-squared).
 */
export type Degeneracy = 'insufficient_data' | 'zero_variance' | 'no_variation';

export interface WelchResult {
  nA: number;
  nB: number;
  meanA: number | null;
  meanB: number | null;
  /** meanB − meanA; null when a group is empty. */
  meanDifference: number | null;
  /**
   * (meanB − meanA) / sqrt(varA/nA + varB/nB), i.e. scipy.stats.ttest_ind(b, a, equal_var=False).
   * null when undefined (a group with fewer than 2 values) or infinite (both groups constant with
   * different means).
   */
  t: number | null;
  /** Welch–Satterthwaite degrees of freedom; nA + nB − 2 when both groups are constant; null below 2 values in a group. */
  df: number | null;
  /** Two-sided p-value. */
  pValue: number;
  /** 95 % confidence interval of meanB − meanA; null when a group has fewer than 2 values. */
  ci95: [number, number] | null;
  /**
   * Cohen's d = (meanB − meanA) / pooled sd, pooled sd = sqrt(((nA−1)varA + (nB−1)varB) / (nA+nB−2))
   * (the usual pooled estimate, weighting each variance by its df, also for unequal n). 0 when both
   * groups are constant with equal means, null when they are constant with different means or a
   * group has fewer than 2 values.
   */
  cohensD: number | null;
  /** pValue < 0.05. */
  significant: boolean;
  degenerate: Degeneracy | null;
}

/**
 * Welch's unequal-variance t test of `b` against `a` (two-sided), with the 95 % CI of meanB − meanA
 * from the t quantile at the Welch–Satterthwaite df, and Cohen's d.
 *
 * Degenerate inputs (never NaN or ±Infinity):
 * - a group with fewer than 2 values: no test is possible; t, df, ci95, cohensD are null,
 *   pValue is 1 and significant is false (meanDifference is still given when both groups are non-empty);
 * - both groups constant (zero variance) with equal means: t 0, pValue 1, ci95 [0, 0], cohensD 0;
 * - both groups constant with different means: the limit of the test (scipy gives t = ±inf,
 *   p = 0): t null, pValue 0, significant true, ci95 [d, d] (the difference is known exactly),
 *   cohensD null;
 * - only one group constant: the ordinary formulas apply (df = n − 1 of the other group).
 */
export function welch(a: readonly number[], b: readonly number[]): WelchResult {
  assertFinite(a, 'welch');
  assertFinite(b, 'welch');
  const A = moments(a);
  const B = moments(b);
  const meanA = A.n > 0 ? A.mean : null;
  const meanB = B.n > 0 ? B.mean : null;
  const meanDifference = meanA !== null && meanB !== null ? meanB - meanA : null;
  const base = { nA: A.n, nB: B.n, meanA, meanB, meanDifference };

  if (A.n < 2 || B.n < 2 || meanDifference === null) {
    return {
      ...base,
      t: null,
      df: null,
      pValue: 1,
      ci95: null,
      cohensD: null,
      significant: false,
      degenerate: 'insufficient_data',
    };
  }

  const pooledDf = A.n + B.n - 2;
  const pooledSd = Math.sqrt(((A.n - 1) * A.variance + (B.n - 1) * B.variance) / pooledDf);
  const seA2 = A.variance / A.n;
  const seB2 = B.variance / B.n;
  const se = Math.sqrt(seA2 + seB2);
  const t = meanDifference / se;

  if (!(se > 0) || !Number.isFinite(t)) {
    const equal = meanDifference === 0;
    return {
      ...base,
      t: equal ? 0 : null,
      df: pooledDf,
      pValue: equal ? 1 : 0,
      ci95: [meanDifference, meanDifference],
      cohensD: equal ? 0 : null,
      significant: !equal,
      degenerate: 'zero_variance',
    };
  }

  let df = (seA2 + seB2) ** 2 / ((seA2 * seA2) / (A.n - 1) + (seB2 * seB2) / (B.n - 1));
  if (!Number.isFinite(df) || !(df > 0)) df = pooledDf;
  const pValue = studentTTwoSidedPValue(t, df);
  const halfWidth = studentTQuantile(0.975, df) * se;
  const cohensD = pooledSd > 0 ? meanDifference / pooledSd : null;
  return {
    ...base,
    t,
    df,
    pValue,
    ci95: [meanDifference - halfWidth, meanDifference + halfWidth],
    cohensD: cohensD !== null && Number.isFinite(cohensD) ? cohensD : null,
    significant: pValue < ALPHA,
    degenerate: null,
  };
}

// ---------------------------------------------------------------------------------------------
// 2×2 chi-squared test of two proportions
// ---------------------------------------------------------------------------------------------

export interface ChiSquaredOptions {
  /** Yates' continuity correction, as scipy.stats.chi2_contingency(correction=True). Default true. */
  yates?: boolean;
}

export interface ChiSquaredResult {
  /** Chi-squared statistic (1 df); 0 for degenerate tables. */
  chi2: number;
  /** Upper tail of chi-squared(1) at chi2; 1 for degenerate tables. */
  pValue: number;
  /** successesA / totalA; null when totalA is 0. */
  rateA: number | null;
  rateB: number | null;
  /** rateB − rateA; null when a group has no trials. */
  difference: number | null;
  /** Newcombe hybrid score 95 % interval of rateB − rateA (no continuity correction); null when a group has no trials. */
  ci95: [number, number] | null;
  /**
   * Phi coefficient of the uncorrected table, signed like the difference (positive when rateB >
   * rateA); |phi| = sqrt(chi2_uncorrected / N) = Cramér's V. 0 for degenerate tables.
   */
  phi: number;
  /** pValue < 0.05. */
  significant: boolean;
  /** Whether Yates' correction was applied. */
  yates: boolean;
  degenerate: Degeneracy | null;
}

function assertCount(value: number, name: string): void {
  if (!Number.isInteger(value) || value < 0) throw new RangeError(`chiSquared2x2: ${name} must be a non-negative integer`);
}

/** Wilson score interval of k successes out of n (n > 0), 95 %. */
function wilson(k: number, n: number): [number, number] {
  const p = k / n;
  const z2 = Z_975 * Z_975;
  const denom = 1 + z2 / n;
  const center = (p + z2 / (2 * n)) / denom;
  const half = (Z_975 * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / denom;
  return [Math.max(0, center - half), Math.min(1, center + half)];
}

/**
 * Pearson chi-squared test of independence on the 2×2 table
 * [[successesA, totalA − successesA], [successesB, totalB − successesB]], 1 df.
 *
 * Yates' continuity correction is applied by default (option `yates: false` turns it off),
 * exactly as scipy.stats.chi2_contingency: every |O − E| is reduced by min(0.5, |O − E|).
 * The CI is Newcombe's hybrid score interval (method 10) of rateB − rateA. Counts must be
 * non-negative integers with successes ≤ total (RangeError otherwise).
 *
 * Degenerate tables (scipy raises on them; here they are defined, never NaN):
 * - a group with no trials (zero row): chi2 0, pValue 1, phi 0, the missing rate, the difference
 *   and the CI are null, `insufficient_data`;
 * - all trials succeeded or all failed in both groups (zero column): chi2 0, pValue 1, phi 0,
 *   difference 0 with its Newcombe CI, `no_variation`.
 */
export function chiSquared2x2(successesA: number, totalA: number, successesB: number, totalB: number, options: ChiSquaredOptions = {}): ChiSquaredResult {
  assertCount(successesA, 'successesA');
  assertCount(totalA, 'totalA');
  assertCount(successesB, 'successesB');
  assertCount(totalB, 'totalB');
  if (successesA > totalA || successesB > totalB) throw new RangeError('chiSquared2x2: successes must not exceed total');
  const yates = options.yates ?? true;

  const rateA = totalA > 0 ? successesA / totalA : null;
  const rateB = totalB > 0 ? successesB / totalB : null;
  const difference = rateA !== null && rateB !== null ? rateB - rateA : null;
  let ci95: [number, number] | null = null;
  if (rateA !== null && rateB !== null && difference !== null) {
    const [lowA, highA] = wilson(successesA, totalA);
    const [lowB, highB] = wilson(successesB, totalB);
    const lower = difference - Math.sqrt((rateB - lowB) ** 2 + (highA - rateA) ** 2);
    const upper = difference + Math.sqrt((highB - rateB) ** 2 + (rateA - lowA) ** 2);
    ci95 = [Math.max(-1, lower), Math.min(1, upper)];
  }

  const failuresA = totalA - successesA;
  const failuresB = totalB - successesB;
  const n = totalA + totalB;
  const successes = successesA + successesB;
  const failures = failuresA + failuresB;
  const base = { rateA, rateB, difference, ci95, yates };
  if (totalA === 0 || totalB === 0 || successes === 0 || failures === 0) {
    return {
      ...base,
      chi2: 0,
      pValue: 1,
      phi: 0,
      significant: false,
      degenerate: totalA === 0 || totalB === 0 ? 'insufficient_data' : 'no_variation',
    };
  }

  // For a 2×2 table every cell has the same |O − E| = |ad − bc| / N and Σ 1/E = N³ / (r1 r2 c1 c2).
  const cross = successesB * failuresA - successesA * failuresB; // > 0 when rateB > rateA
  const marginProduct = totalA * totalB * successes * failures;
  const deviation = Math.abs(cross) / n;
  const corrected = yates ? deviation - Math.min(0.5, deviation) : deviation;
  const chi2 = (corrected * corrected * n * n * n) / marginProduct;
  const pValue = chiSquaredSurvival(chi2, 1);
  const phi = cross / Math.sqrt(marginProduct);
  return { ...base, chi2, pValue, phi, significant: pValue < ALPHA, degenerate: null };
}

// ---------------------------------------------------------------------------------------------
// Presentation helpers
// ---------------------------------------------------------------------------------------------

export type Stars = '***' | '**' | '*' | '-';

/**
 * The `confidence` field of a comparison (docs/api.md#benchmarks): three stars when
 * p < 0.01, two when p < 0.05, one when p < 0.1, a dash otherwise. (Note: one star, for
 * 0.05 ≤ p < 0.1, is shown on a comparison that is not `significant`.)
 */
export function stars(pValue: number): Stars {
  if (pValue < 0.01) return '***';
  if (pValue < 0.05) return '**';
  if (pValue < 0.1) return '*';
  return '-';
}

/**
 * (value − base) / |base| × 100; null when base is 0, either side is null, or the ratio passes the
 * double range (a subnormal base).
 */
export function percentDiff(base: number | null, value: number | null): number | null {
  if (base === null || value === null || base === 0) return null;
  const percent = ((value - base) / Math.abs(base)) * 100;
  return Number.isFinite(percent) ? percent : null;
}

/** Anything with a significance flag and a B − A difference. */
export type Comparable =
  | Pick<WelchResult, 'significant' | 'meanDifference'>
  | Pick<ChiSquaredResult, 'significant' | 'difference'>
  | Pick<ComparisonStats, 'significant' | 'absoluteDiff'>;

export interface WinnerOptions {
  /** A variant has fewer sessions than minSessionsPerVariant: the result is flagged and no winner is named. */
  belowMinimum?: boolean;
}

/**
 * The better variant of a comparison, or null when the comparison is not significant, the
 * difference is 0 or unknown, or `belowMinimum` is set. With `higherIsBetter` (tool_success_rate,
 * completion_rate) the variant with the higher value wins, otherwise (error_rate, avg_cost,
 * avg_latency, avg_tokens, avg_duration) the lower one; see HIGHER_IS_BETTER.
 */
export function winner(comparison: Comparable, higherIsBetter: boolean, options: WinnerOptions = {}): 'A' | 'B' | null {
  if (!comparison.significant || options.belowMinimum) return null;
  const difference = 'meanDifference' in comparison ? comparison.meanDifference : 'difference' in comparison ? comparison.difference : comparison.absoluteDiff;
  if (difference === null || difference === 0) return null;
  const bIsHigher = difference > 0;
  return bIsHigher === higherIsBetter ? 'B' : 'A';
}

/** The statistical fields of one results comparison, B compared with A. */
export interface ComparisonStats {
  testType: TestType;
  /** t (Welch) or chi-squared; null when undefined (degenerate Welch input). */
  testStatistic: number | null;
  pValue: number;
  confidenceInterval: { lower: number; upper: number } | null;
  /** Cohen's d (Welch) or phi (chi-squared), signed B − A. */
  effectSize: number | null;
  significant: boolean;
  confidence: Stars;
  /** B − A (means, or rates). */
  absoluteDiff: number | null;
  /** (B − A) / |A| × 100. */
  percentDiff: number | null;
  degenerate: Degeneracy | null;
}

/** What both tests report alike: their p-value, interval, significance and degeneracy. */
type TestOutcome = Pick<WelchResult & ChiSquaredResult, 'pValue' | 'ci95' | 'significant' | 'degenerate'>;

/** A test's outcome in the results' field names, with the figures that differ by test. */
function comparisonStats(
  testType: TestType,
  r: TestOutcome,
  figures: Pick<ComparisonStats, 'testStatistic' | 'effectSize' | 'absoluteDiff' | 'percentDiff'>,
): ComparisonStats {
  return {
    testType,
    testStatistic: figures.testStatistic,
    pValue: r.pValue,
    confidenceInterval: r.ci95 ? { lower: r.ci95[0], upper: r.ci95[1] } : null,
    effectSize: figures.effectSize,
    significant: r.significant,
    confidence: stars(r.pValue),
    absoluteDiff: figures.absoluteDiff,
    percentDiff: figures.percentDiff,
    degenerate: r.degenerate,
  };
}

/** Welch comparison of per-session values of a continuous metric, in the results' field names. */
export function compareContinuous(a: readonly number[], b: readonly number[]): ComparisonStats {
  const r = welch(a, b);
  return comparisonStats('welch_t', r, {
    testStatistic: r.t,
    effectSize: r.cohensD,
    absoluteDiff: r.meanDifference,
    percentDiff: percentDiff(r.meanA, r.meanB),
  });
}

/** Chi-squared comparison of two rates from counts, in the results' field names. */
export function compareRates(successesA: number, totalA: number, successesB: number, totalB: number, options: ChiSquaredOptions = {}): ComparisonStats {
  const r = chiSquared2x2(successesA, totalA, successesB, totalB, options);
  return comparisonStats('chi_squared', r, {
    testStatistic: r.chi2,
    effectSize: r.phi,
    absoluteDiff: r.difference,
    percentDiff: percentDiff(r.rateA, r.rateB),
  });
}
