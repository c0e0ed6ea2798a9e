// Reference values: scipy 1.17.1 / numpy 2.4.6, produced by reference.py beside this file
// (`python3 packages/observe/src/benchmarks/reference.py` prints every literal below).
import assert from 'node:assert/strict';
import { describe as suite, test } from 'node:test';
import {
  BENCHMARK_METRICS,
  HIGHER_IS_BETTER,
  METRIC_TEST_TYPE,
  chiSquared2x2,
  chiSquaredSurvival,
  compareContinuous,
  compareRates,
  describe,
  lnBeta,
  lnGamma,
  percentDiff,
  regularizedIncompleteBeta,
  regularizedUpperGamma,
  stars,
  studentTQuantile,
  studentTSurvival,
  studentTTwoSidedPValue,
  variantPairs,
  welch,
  winner,
} from './statistics.ts';

const TOL = 1e-6;

function closeAbs(actual: number | null | undefined, expected: number, tol: number, label: string): void {
  assert.ok(typeof actual === 'number', `${label}: expected a number, got ${actual}`);
  assert.ok(Math.abs(actual - expected) <= tol, `${label}: ${actual} vs ${expected} (abs tol ${tol})`);
}

function closeRel(actual: number | null | undefined, expected: number, tol: number, label: string): void {
  assert.ok(typeof actual === 'number', `${label}: expected a number, got ${actual}`);
  const scale = Math.max(Math.abs(expected), Number.MIN_VALUE);
  assert.ok(Math.abs(actual - expected) <= tol * scale, `${label}: ${actual} vs ${expected} (rel tol ${tol})`);
}

/** p-values: absolute 1e-6 and, so tiny p-values are really checked, relative 1e-6 too. */
function closeP(actual: number | null | undefined, expected: number, label: string): void {
  closeAbs(actual, expected, TOL, label);
  closeRel(actual, expected, TOL, label);
}

/** Fails on any NaN or ±Infinity anywhere inside a result. */
function assertAllFinite(value: unknown, path = 'result'): void {
  if (typeof value === 'number') assert.ok(Number.isFinite(value), `${path} is ${value}`);
  else if (Array.isArray(value)) value.forEach((v, i) => assertAllFinite(v, `${path}[${i}]`));
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) assertAllFinite(v, `${path}.${k}`);
  }
}

/** Same formula as gen() in reference.py: identical IEEE operations. */
function gen(n: number, base: number, k: number): number[] {
  return Array.from({ length: n }, (_, i) => base + ((i * 7) % 13) * k);
}

// ---------------------------------------------------------------------------------------------

suite('describe', () => {
  // numpy.mean, numpy.median, numpy.std(v, ddof=1), min, max
  test('odd count', () => {
    const d = describe([7, 1, 3, 9, 4]);
    assert.equal(d.count, 5);
    closeRel(d.mean, 4.8, TOL, 'mean');
    assert.equal(d.median, 4);
    closeRel(d.stddev, 3.1937438845342623, TOL, 'stddev');
    assert.equal(d.min, 1);
    assert.equal(d.max, 9);
  });

  test('even count: median is the mean of the two middle values', () => {
    const input = [2.5, 10, -1, 4, 5, 8.25];
    const d = describe(input);
    assert.equal(d.count, 6);
    closeRel(d.mean, 4.791666666666667, TOL, 'mean');
    assert.equal(d.median, 4.5);
    closeRel(d.stddev, 3.963636798026109, TOL, 'stddev');
    assert.equal(d.min, -1);
    assert.equal(d.max, 10);
    assert.deepEqual(input, [2.5, 10, -1, 4, 5, 8.25], 'input is not mutated');
  });

  test('single value: stddev 0 (not NaN)', () => {
    assert.deepEqual(describe([42]), { count: 1, mean: 42, median: 42, stddev: 0, min: 42, max: 42 });
  });

  test('empty: count 0 and nulls', () => {
    assert.deepEqual(describe([]), { count: 0, mean: null, median: null, stddev: null, min: null, max: null });
  });

  test('constant values: exact mean and zero stddev without rounding residue', () => {
    const d = describe([0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1]);
    assert.equal(d.mean, 0.1);
    assert.equal(d.stddev, 0);
  });

  test('non-finite values are rejected', () => {
    assert.throws(() => describe([1, Number.NaN]), RangeError);
    assert.throws(() => describe([1, Infinity]), RangeError);
  });
});

// ---------------------------------------------------------------------------------------------

interface WelchReference {
  a: number[];
  b: number[];
  t: number;
  df: number;
  pValue: number;
  meanDifference: number;
  ci95: [number, number];
  cohensD: number;
}

// r = scipy.stats.ttest_ind(b, a, equal_var=False); ci = r.confidence_interval(0.95) (of mean(b) − mean(a));
// cohensD = (mean(b) − mean(a)) / sqrt(((na−1)·var(a, ddof=1) + (nb−1)·var(b, ddof=1)) / (na+nb−2)).
const WELCH: Record<string, WelchReference> = {
  'equal n': {
    a: [12.1, 14.3, 11.8, 15.2, 13.7, 12.9, 14.8, 13.3],
    b: [15.4, 16.1, 14.9, 17.2, 15.8, 16.6, 14.7, 16.9],
    t: 4.502989027869672,
    df: 12.976314247177177,
    pValue: 0.0005966805275653299,
    meanDifference: 2.4375,
    ci95: [1.2678600539217462, 3.607139946078254],
    cohensD: 2.2514945139348357,
  },
  'unequal n': {
    a: [0.82, 1.1, 0.95, 1.31, 0.77],
    b: [1.05, 1.22, 0.98, 1.41, 1.17, 1.09, 1.33, 0.91, 1.26, 1.15, 1.38, 1.02],
    t: 1.6014169525485087,
    df: 5.878315620872269,
    pValue: 0.1614235071343496,
    meanDifference: 0.1741666666666667,
    ci95: [-0.09329528927801711, 0.4416286226113505],
    cohensD: 0.9753584762314558,
  },
  'unequal variances': {
    a: [100, 102, 98, 101, 99, 100.5, 99.5, 101.5, 98.5, 100.2],
    b: [80, 130, 95, 150, 60, 120, 105, 140, 70],
    t: 0.5224052909659628,
    df: 8.023844283252018,
    pValue: 0.6155006591548076,
    meanDifference: 5.535555555555547,
    ci95: [-18.886888854283168, 29.95799996539426],
    cohensD: 0.2537961439616645,
  },
  'not significant, B slightly lower': {
    a: [3.2, 2.9, 3.5, 3.1, 3.0, 3.3],
    b: [3.1, 3.4, 2.8, 3.2, 3.3, 3.0, 3.1],
    t: -0.32963425737212665,
    df: 10.320176821613645,
    pValue: 0.7482694768751578,
    meanDifference: -0.038095238095237516,
    ci95: [-0.29451845894837053, 0.2183279827578955],
    cohensD: -0.18476552412201247,
  },
  'B lower, large magnitudes': {
    a: [152000, 149500, 161200, 158300, 147800, 155100, 150900, 163400, 149000, 156700, 151300],
    b: [141200, 139800, 150100, 144600, 137900, 146300, 142800, 139100, 148700],
    t: -5.026202533365832,
    df: 17.988261915437217,
    pValue: 8.789308708078593e-5,
    meanDifference: -10720.202020202036,
    ci95: [-15201.390760906055, -6239.013279498017],
    cohensD: -2.215660951632898,
  },
  'one group constant': {
    a: [5, 5, 5, 5],
    b: [4.1, 5.3, 6.2, 5.9, 4.8],
    t: 0.688515283732088,
    df: 4.0,
    pValue: 0.528981325785976,
    meanDifference: 0.2599999999999998,
    ci95: [-0.7884527277862416, 1.3084527277862412],
    cohensD: 0.4073311350442502,
  },
  'large t, p ~ 1e-20': {
    a: gen(60, 10, 0.1),
    b: gen(50, 10.82, 0.12),
    t: 11.696346233979591,
    df: 95.90613258692474,
    pValue: 3.6450170730783667e-20,
    meanDifference: 0.938933333333333,
    ci95: [0.7795851763047591, 1.0982814903619067],
    cohensD: 2.2757754138937805,
  },
  'large t, p ~ 1e-50': {
    a: gen(60, 10, 0.1),
    b: gen(50, 12.3, 0.12),
    t: 30.132790879985492,
    df: 95.90613258692474,
    pValue: 1.0635381231925973e-50,
    meanDifference: 2.4189333333333334,
    ci95: [2.2595851763047596, 2.578281490361907],
    cohensD: 5.862981760701644,
  },
  'large n (df ~ 4570)': {
    a: gen(2000, 100, 0.37),
    b: gen(3000, 100.015, 0.41),
    t: 6.117541010333139,
    df: 4570.35027878865,
    pValue: 1.0296869522859155e-9,
    meanDifference: 0.2554266666666507,
    ci95: [0.17357029954586004, 0.3372830337874414],
    cohensD: 0.17301660684517237,
  },
};

suite('welch', () => {
  for (const [name, ref] of Object.entries(WELCH)) {
    test(`matches scipy: ${name}`, () => {
      const r = welch(ref.a, ref.b);
      closeRel(r.t, ref.t, TOL, 't');
      closeRel(r.df, ref.df, TOL, 'df');
      closeP(r.pValue, ref.pValue, 'pValue');
      closeRel(r.meanDifference, ref.meanDifference, TOL, 'meanDifference');
      assert.ok(r.ci95, 'ci95');
      closeRel(r.ci95[0], ref.ci95[0], TOL, 'ci95 lower');
      closeRel(r.ci95[1], ref.ci95[1], TOL, 'ci95 upper');
      closeRel(r.cohensD, ref.cohensD, TOL, 'cohensD');
      assert.equal(r.significant, ref.pValue < 0.05);
      assert.equal(r.degenerate, null);
      assert.equal(r.nA, ref.a.length);
      assert.equal(r.nB, ref.b.length);
      assertAllFinite(r);
    });
  }

  test('direction: swapping the groups negates t, the difference, the CI and d but keeps p and df', () => {
    const ref = WELCH['equal n'] as WelchReference;
    const forward = welch(ref.a, ref.b);
    const backward = welch(ref.b, ref.a);
    closeRel(backward.t, -ref.t, TOL, 't');
    closeRel(backward.meanDifference, -ref.meanDifference, TOL, 'meanDifference');
    closeRel(backward.cohensD, -ref.cohensD, TOL, 'cohensD');
    assert.ok(backward.ci95 && forward.ci95);
    closeRel(backward.ci95[0], -ref.ci95[1], TOL, 'ci95 lower');
    closeRel(backward.ci95[1], -ref.ci95[0], TOL, 'ci95 upper');
    assert.equal(backward.pValue, forward.pValue);
    assert.equal(backward.df, forward.df);
  });

  test('degenerate: a group with a single value (scipy: nan) → no test, p = 1', () => {
    const r = welch([3], [1, 2, 3]);
    assert.deepEqual(r, {
      nA: 1,
      nB: 3,
      meanA: 3,
      meanB: 2,
      meanDifference: -1,
      t: null,
      df: null,
      pValue: 1,
      ci95: null,
      cohensD: null,
      significant: false,
      degenerate: 'insufficient_data',
    });
  });

  test('degenerate: an empty group → null means and difference, p = 1', () => {
    const r = welch([], [1, 2, 3]);
    assert.equal(r.meanA, null);
    assert.equal(r.meanDifference, null);
    assert.equal(r.pValue, 1);
    assert.equal(r.significant, false);
    assert.equal(r.degenerate, 'insufficient_data');
    assertAllFinite(welch([], []));
  });

  test('degenerate: both groups constant and equal → t 0, p 1, CI [0, 0], d 0', () => {
    const r = welch([0.1, 0.1, 0.1], [0.1, 0.1]);
    assert.deepEqual(r, {
      nA: 3,
      nB: 2,
      meanA: 0.1,
      meanB: 0.1,
      meanDifference: 0,
      t: 0,
      df: 3,
      pValue: 1,
      ci95: [0, 0],
      cohensD: 0,
      significant: false,
      degenerate: 'zero_variance',
    });
  });

  test('degenerate: both groups constant and different (scipy: t = inf, p = 0) → p 0, t and d null', () => {
    const r = welch([5, 5, 5, 5], [7, 7, 7]);
    assert.deepEqual(r, {
      nA: 4,
      nB: 3,
      meanA: 5,
      meanB: 7,
      meanDifference: 2,
      t: null,
      df: 5,
      pValue: 0,
      ci95: [2, 2],
      cohensD: null,
      significant: true,
      degenerate: 'zero_variance',
    });
  });

  test('non-finite values are rejected', () => {
    assert.throws(() => welch([1, 2, Number.NaN], [1, 2]), RangeError);
  });
});

// ---------------------------------------------------------------------------------------------

interface ChiReference {
  counts: [number, number, number, number];
  yates: { chi2: number; pValue: number };
  plain: { chi2: number; pValue: number };
  difference: number;
  ci95: [number, number];
  phi: number;
}

// table = [[sA, nA − sA], [sB, nB − sB]]
// yates = scipy.stats.chi2_contingency(table) (correction=True, scipy's default); plain = …(table, correction=False)
// ci95: Newcombe hybrid score from scipy.stats.binomtest(k, n).proportion_ci(0.95, method='wilson') of A and B
// phi = sign(rateB − rateA) · scipy.stats.contingency.association(table, method='cramer')
const CHI: Record<string, ChiReference> = {
  balanced: {
    counts: [45, 100, 60, 100],
    yates: { chi2: 3.929824561403509, pValue: 0.04743689282486537 },
    plain: { chi2: 4.511278195488721, pValue: 0.033672068856345896 },
    difference: 0.14999999999999997,
    ci95: [0.011723935319973455, 0.2804485210107637],
    phi: 0.15018785229652765,
  },
  unbalanced: {
    counts: [30, 250, 18, 90],
    yates: { chi2: 2.8644913749365815, pValue: 0.09055433133405522 },
    plain: { chi2: 3.493150684931509, pValue: 0.0616231983030332 },
    difference: 0.08000000000000002,
    ci95: [-0.003483789614827565, 0.18030728358889647],
    phi: 0.10136060675992292,
  },
  'B lower': {
    counts: [80, 200, 50, 200],
    yates: { chi2: 9.584045584045583, pValue: 0.001962754410582054 },
    plain: { chi2: 10.256410256410257, pValue: 0.0013621046715842056 },
    difference: -0.15000000000000002,
    ci95: [-0.23831523713483937, -0.05826033912752314],
    phi: -0.16012815380508713,
  },
  'small counts (Yates correction capped at |O − E|)': {
    counts: [5, 10, 5, 11],
    yates: { chi2: 0.0, pValue: 1.0 },
    plain: { chi2: 0.043388429752066124, pValue: 0.8349955942110459 },
    difference: -0.04545454545454547,
    ci95: [-0.40303848425701233, 0.3284448073190741],
    phi: -0.04545454545454546,
  },
  'large counts': {
    counts: [12000, 100000, 12500, 100000],
    yates: { chi2: 11.582115239258096, pValue: 0.0006658915355665411 },
    plain: { chi2: 11.628583057154486, pValue: 0.0006494601055841081 },
    difference: 0.0050000000000000044,
    ci95: [0.0021262488375235734, 0.007873839645044404],
    phi: 0.007625150181194626,
  },
  'tiny p ~ 1e-31': {
    counts: [600, 1000, 340, 1000],
    yates: { chi2: 134.64672822159775, pValue: 3.944654656741224e-31 },
    plain: { chi2: 135.68847852268166, pValue: 2.3342431586546663e-31 },
    difference: -0.25999999999999995,
    ci95: [-0.3014620390088917, -0.21713651997710753],
    phi: -0.26046926740277987,
  },
};

suite('chiSquared2x2', () => {
  for (const [name, ref] of Object.entries(CHI)) {
    test(`matches scipy: ${name}`, () => {
      const [sA, nA, sB, nB] = ref.counts;
      const withYates = chiSquared2x2(sA, nA, sB, nB);
      const plain = chiSquared2x2(sA, nA, sB, nB, { yates: false });
      for (const [r, expected, yates] of [
        [withYates, ref.yates, true],
        [plain, ref.plain, false],
      ] as const) {
        assert.equal(r.yates, yates);
        closeRel(r.chi2, expected.chi2, TOL, `chi2 (yates ${yates})`);
        closeP(r.pValue, expected.pValue, `pValue (yates ${yates})`);
        assert.equal(r.significant, expected.pValue < 0.05);
        assert.equal(r.rateA, sA / nA);
        assert.equal(r.rateB, sB / nB);
        closeRel(r.difference, ref.difference, TOL, 'difference');
        assert.ok(r.ci95, 'ci95');
        closeRel(r.ci95[0], ref.ci95[0], TOL, 'ci95 lower');
        closeRel(r.ci95[1], ref.ci95[1], TOL, 'ci95 upper');
        closeRel(r.phi, ref.phi, TOL, 'phi');
        assert.equal(r.degenerate, null);
        assertAllFinite(r);
      }
    });
  }

  test('Yates is the default', () => {
    assert.deepEqual(chiSquared2x2(45, 100, 60, 100), chiSquared2x2(45, 100, 60, 100, { yates: true }));
  });

  test('degenerate: a group without trials (zero row) → p 1, null rate, difference and CI', () => {
    assert.deepEqual(chiSquared2x2(0, 0, 5, 10), {
      chi2: 0,
      pValue: 1,
      rateA: null,
      rateB: 0.5,
      difference: null,
      ci95: null,
      phi: 0,
      significant: false,
      yates: true,
      degenerate: 'insufficient_data',
    });
    assertAllFinite(chiSquared2x2(0, 0, 0, 0));
  });

  test('degenerate: no successes at all (zero column) → p 1, difference 0 with a finite CI', () => {
    const r = chiSquared2x2(0, 50, 0, 60);
    assert.equal(r.chi2, 0);
    assert.equal(r.pValue, 1);
    assert.equal(r.phi, 0);
    assert.equal(r.difference, 0);
    assert.equal(r.significant, false);
    assert.equal(r.degenerate, 'no_variation');
    assert.ok(r.ci95 && r.ci95[0] < 0 && r.ci95[1] > 0);
    assertAllFinite(r);
  });

  test('degenerate: every trial succeeded → p 1', () => {
    const r = chiSquared2x2(40, 40, 25, 25);
    assert.equal(r.pValue, 1);
    assert.equal(r.degenerate, 'no_variation');
    assertAllFinite(r);
  });

  test('invalid counts are rejected', () => {
    assert.throws(() => chiSquared2x2(11, 10, 1, 10), RangeError);
    assert.throws(() => chiSquared2x2(-1, 10, 1, 10), RangeError);
    assert.throws(() => chiSquared2x2(1.5, 10, 1, 10), RangeError);
  });
});

// ---------------------------------------------------------------------------------------------

suite('distribution tails and quantiles', () => {
  // 2 * scipy.stats.t.sf(t, df)
  const T_TAILS: Array<[number, number, number]> = [
    [40, 5, 1.8411962171772954e-7],
    [15, 123456, 8.140913860309913e-51],
    [2.5, 3.3, 0.08005283630835447],
    [0.7, 12, 0.49727415379070755],
    [30, 60, 7.961667948569781e-38],
  ];
  // scipy.stats.chi2.sf(x, 1)
  const CHI_TAILS: Array<[number, number]> = [
    [0.5, 0.47950012218695337],
    [3.841458820694124, 0.04999999999999989],
    [137, 1.205850870042699e-31],
    [1000, 1.7958327848007363e-219],
  ];
  // scipy.stats.t.ppf(0.975, df)
  const QUANTILES: Array<[number, number]> = [
    [1.5, 6.016663104427929],
    [7.3, 2.345066736547703],
    [44.14141559921858, 2.015185227140726],
    [4570.35, 1.9604831764881436],
  ];

  test('two-sided Student t p-values, relative 1e-9 down to 1e-51', () => {
    for (const [t, df, p] of T_TAILS) {
      closeRel(studentTTwoSidedPValue(t, df), p, 1e-9, `t=${t} df=${df}`);
      closeRel(studentTTwoSidedPValue(-t, df), p, 1e-9, `t=${-t} df=${df}`);
      closeRel(studentTSurvival(t, df), p / 2, 1e-9, `sf t=${t} df=${df}`);
    }
    assert.equal(studentTTwoSidedPValue(0, 7), 1);
  });

  test('chi-squared(1) upper tail, relative 1e-9 down to 1e-219', () => {
    for (const [x, p] of CHI_TAILS) closeRel(chiSquaredSurvival(x, 1), p, 1e-9, `x=${x}`);
    assert.equal(chiSquaredSurvival(0), 1);
  });

  test('Student t quantile', () => {
    for (const [df, q] of QUANTILES) {
      closeRel(studentTQuantile(0.975, df), q, 1e-9, `df=${df}`);
      closeRel(studentTQuantile(0.025, df), -q, 1e-9, `df=${df} lower`);
    }
  });

  test('special functions against closed forms', () => {
    closeRel(lnGamma(0.5), 0.5 * Math.log(Math.PI), 1e-14, 'lnGamma(1/2)');
    closeAbs(lnGamma(1), 0, 1e-14, 'lnGamma(1)');
    closeRel(lnGamma(11), Math.log(3628800), 1e-14, 'lnGamma(11)');
    closeRel(lnBeta(0.5, 0.5), Math.log(Math.PI), 1e-14, 'lnBeta(1/2, 1/2)');
    // I_x(1, b) = 1 − (1 − x)^b; I_x(a, 1) = x^a
    closeRel(regularizedIncompleteBeta(0.3, 1, 2.5), 1 - 0.7 ** 2.5, 1e-13, 'I(1, 2.5)');
    closeRel(regularizedIncompleteBeta(0.9, 3.5, 1), 0.9 ** 3.5, 1e-13, 'I(3.5, 1)');
    // Q(1, x) = e^−x
    closeRel(regularizedUpperGamma(1, 50), Math.exp(-50), 1e-13, 'Q(1, 50)');
    closeRel(regularizedUpperGamma(1, 0.2), Math.exp(-0.2), 1e-13, 'Q(1, 0.2)');
  });
});

// ---------------------------------------------------------------------------------------------

suite('presentation helpers', () => {
  test('stars follow docs/api.md: *** p < 0.01, ** p < 0.05, * p < 0.1, - otherwise', () => {
    assert.equal(stars(1e-50), '***');
    assert.equal(stars(0.0099), '***');
    assert.equal(stars(0.01), '**');
    assert.equal(stars(0.0499), '**');
    assert.equal(stars(0.05), '*');
    assert.equal(stars(0.0999), '*');
    assert.equal(stars(0.1), '-');
    assert.equal(stars(1), '-');
  });

  test('percentDiff is (B − A) / |A| × 100, null for a zero or missing base and beyond the double range', () => {
    assert.equal(percentDiff(200, 250), 25);
    assert.equal(percentDiff(-4, -2), 50);
    assert.equal(percentDiff(0, 3), null);
    assert.equal(percentDiff(Number.MIN_VALUE, 1e6), null, 'beyond the double range');
    assert.equal(percentDiff(null, 3), null);
  });

  test('winner: lower is better for costs, errors and times, higher for success rates', () => {
    const bHigher = { significant: true, meanDifference: 2 };
    assert.equal(winner(bHigher, false), 'A');
    assert.equal(winner(bHigher, true), 'B');
    const bLowerRate = chiSquared2x2(80, 200, 50, 200); // significant, rateB < rateA
    assert.equal(winner(bLowerRate, HIGHER_IS_BETTER.error_rate), 'B');
    assert.equal(winner(bLowerRate, HIGHER_IS_BETTER.completion_rate), 'A');
    const ref = WELCH['equal n'] as WelchReference; // significant, B higher
    assert.equal(winner(welch(ref.a, ref.b), HIGHER_IS_BETTER.avg_latency), 'A');
    assert.equal(winner(compareContinuous(ref.a, ref.b), HIGHER_IS_BETTER.avg_cost), 'A');
  });

  test('winner: none when not significant, below the session minimum, or without a difference', () => {
    assert.equal(winner({ significant: false, difference: 0.3 }, true), null);
    assert.equal(winner({ significant: true, difference: 0.3 }, true, { belowMinimum: true }), null);
    assert.equal(winner({ significant: true, absoluteDiff: null }, true), null);
  });

  test('metric tables cover every metric', () => {
    assert.deepEqual(Object.keys(METRIC_TEST_TYPE).sort(), [...BENCHMARK_METRICS].sort());
    assert.deepEqual(Object.keys(HIGHER_IS_BETTER).sort(), [...BENCHMARK_METRICS].sort());
    const higher = BENCHMARK_METRICS.filter((m) => HIGHER_IS_BETTER[m]).sort();
    assert.deepEqual(higher, ['completion_rate', 'tool_success_rate']);
    const rates = BENCHMARK_METRICS.filter((m) => METRIC_TEST_TYPE[m] === 'chi_squared').sort();
    assert.deepEqual(rates, ['completion_rate', 'error_rate', 'tool_success_rate']);
  });

  test('variantPairs lists every unordered pair once', () => {
    assert.deepEqual(variantPairs(['a', 'b', 'c']), [
      ['a', 'b'],
      ['a', 'c'],
      ['b', 'c'],
    ]);
    assert.equal(variantPairs(Array.from({ length: 10 }, (_, i) => i)).length, 45);
    assert.deepEqual(variantPairs(['a']), []);
  });

  test('compareContinuous maps Welch onto the results fields', () => {
    const ref = WELCH['B lower, large magnitudes'] as WelchReference;
    const c = compareContinuous(ref.a, ref.b);
    assert.equal(c.testType, 'welch_t');
    closeRel(c.testStatistic, ref.t, TOL, 'testStatistic');
    closeP(c.pValue, ref.pValue, 'pValue');
    assert.ok(c.confidenceInterval);
    closeRel(c.confidenceInterval.lower, ref.ci95[0], TOL, 'lower');
    closeRel(c.confidenceInterval.upper, ref.ci95[1], TOL, 'upper');
    closeRel(c.effectSize, ref.cohensD, TOL, 'effectSize');
    closeRel(c.absoluteDiff, ref.meanDifference, TOL, 'absoluteDiff');
    const meanA = describe(ref.a).mean as number;
    closeRel(c.percentDiff, (ref.meanDifference / meanA) * 100, TOL, 'percentDiff');
    assert.equal(c.significant, true);
    assert.equal(c.confidence, '***');
  });

  test('compareRates maps chi-squared onto the results fields', () => {
    const ref = CHI.balanced as ChiReference;
    const c = compareRates(...ref.counts);
    assert.equal(c.testType, 'chi_squared');
    closeRel(c.testStatistic, ref.yates.chi2, TOL, 'testStatistic');
    closeP(c.pValue, ref.yates.pValue, 'pValue');
    closeRel(c.effectSize, ref.phi, TOL, 'effectSize');
    closeRel(c.absoluteDiff, ref.difference, TOL, 'absoluteDiff');
    closeRel(c.percentDiff, (ref.difference / 0.45) * 100, TOL, 'percentDiff');
    assert.ok(c.confidenceInterval);
    closeRel(c.confidenceInterval.lower, ref.ci95[0], TOL, 'lower');
    closeRel(c.confidenceInterval.upper, ref.ci95[1], TOL, 'upper');
    assert.equal(c.significant, true);
    assert.equal(c.confidence, '**');
  });
});
