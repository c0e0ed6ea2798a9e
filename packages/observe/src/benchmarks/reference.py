"""Reference values for statistics.test.ts, computed with scipy (1.17.1) and numpy (2.4.6).

Run:  python3 packages/observe/src/benchmarks/reference.py
and paste the printed values into statistics.test.ts (they are literals there on purpose).

Conventions mirrored from statistics.ts:
- Welch: variant B is compared with variant A, so the statistic is ttest_ind(b, a, equal_var=False)
  and the CI is that result's confidence_interval(0.95), i.e. of mean(b) - mean(a).
- Cohen's d = (mean(b) - mean(a)) / pooled sd, pooled sd = sqrt(((na-1) var_a + (nb-1) var_b) / (na+nb-2)).
- Chi-squared: table [[sA, nA - sA], [sB, nB - sB]]; chi2_contingency(table) (Yates, scipy's default)
  and chi2_contingency(table, correction=False).
- Phi = sign(rateB - rateA) * association(table, method='cramer') (|phi| = Cramer's V for 2x2).
- Newcombe hybrid score CI (method 10) of rateB - rateA from scipy's Wilson intervals:
  lower = d - sqrt((pB - lB)^2 + (uA - pA)^2), upper = d + sqrt((uB - pB)^2 + (pA - lA)^2).
"""
import warnings

import numpy as np
import scipy
from scipy import stats
from scipy.stats.contingency import association


warnings.simplefilter('ignore', RuntimeWarning)  # scipy warns about the constant group of one case


def f(x):
    return repr(float(x))


def gen(n, base, k):
    # Same formula as gen() in statistics.test.ts (identical IEEE operations in JS).
    return [base + ((i * 7) % 13) * k for i in range(n)]


WELCH = {
    'equal_n': (
        [12.1, 14.3, 11.8, 15.2, 13.7, 12.9, 14.8, 13.3],
        [15.4, 16.1, 14.9, 17.2, 15.8, 16.6, 14.7, 16.9],
    ),
    'unequal_n': (
        [0.82, 1.10, 0.95, 1.31, 0.77],
        [1.05, 1.22, 0.98, 1.41, 1.17, 1.09, 1.33, 0.91, 1.26, 1.15, 1.38, 1.02],
    ),
    'unequal_variances': (
        [100, 102, 98, 101, 99, 100.5, 99.5, 101.5, 98.5, 100.2],
        [80, 130, 95, 150, 60, 120, 105, 140, 70],
    ),
    'not_significant': (
        [3.2, 2.9, 3.5, 3.1, 3.0, 3.3],
        [3.1, 3.4, 2.8, 3.2, 3.3, 3.0, 3.1],
    ),
    'b_lower_large_magnitude': (
        [152000, 149500, 161200, 158300, 147800, 155100, 150900, 163400, 149000, 156700, 151300],
        [141200, 139800, 150100, 144600, 137900, 146300, 142800, 139100, 148700],
    ),
    'one_group_constant': (
        [5, 5, 5, 5],
        [4.1, 5.3, 6.2, 5.9, 4.8],
    ),
    'p_1e-20': (gen(60, 10, 0.1), gen(50, 10.82, 0.12)),
    'p_1e-50': (gen(60, 10, 0.1), gen(50, 12.3, 0.12)),
    'large_n': (gen(2000, 100, 0.37), gen(3000, 100.015, 0.41)),
}

CHI = {
    'balanced': (45, 100, 60, 100),
    'unbalanced': (30, 250, 18, 90),
    'b_lower': (80, 200, 50, 200),
    'small_counts_yates_cap': (5, 10, 5, 11),
    'large_counts': (12000, 100000, 12500, 100000),
    'p_1e-30': (600, 1000, 340, 1000),
}

DESCRIBE = {
    'odd': [7, 1, 3, 9, 4],
    'even': [2.5, 10, -1, 4, 5, 8.25],
    'single': [42],
}

TAILS_T = [(40, 5), (15, 123456), (2.5, 3.3), (0.7, 12), (30, 60)]
TAILS_CHI = [0.5, 3.841458820694124, 137, 1000]
QUANTILES = [1.5, 7.3, 44.14141559921858, 4570.35]

print(f'// scipy {scipy.__version__}, numpy {np.__version__}')
print('// --- welch: r = scipy.stats.ttest_ind(b, a, equal_var=False); ci = r.confidence_interval(0.95)')
for name, (a, b) in WELCH.items():
    r = stats.ttest_ind(b, a, equal_var=False)
    ci = r.confidence_interval(0.95)
    na, nb = len(a), len(b)
    va, vb = np.var(a, ddof=1), np.var(b, ddof=1)
    pooled = np.sqrt(((na - 1) * va + (nb - 1) * vb) / (na + nb - 2))
    d = (np.mean(b) - np.mean(a)) / pooled
    print(
        f"  '{name}': {{ t: {f(r.statistic)}, df: {f(r.df)}, pValue: {f(r.pvalue)}, "
        f"meanDifference: {f(np.mean(b) - np.mean(a))}, ci95: [{f(ci.low)}, {f(ci.high)}], cohensD: {f(d)} }},"
    )

print("// --- chi-squared: table = [[sA, nA - sA], [sB, nB - sB]]; scipy.stats.chi2_contingency(table, correction=...)")
for name, (sa, na, sb, nb) in CHI.items():
    table = [[sa, na - sa], [sb, nb - sb]]
    yates = stats.chi2_contingency(table)  # correction=True is scipy's default
    plain = stats.chi2_contingency(table, correction=False)
    pa, pb = sa / na, sb / nb
    la, ua = stats.binomtest(sa, na).proportion_ci(0.95, method='wilson')
    lb, ub = stats.binomtest(sb, nb).proportion_ci(0.95, method='wilson')
    diff = pb - pa
    lower = diff - np.sqrt((pb - lb) ** 2 + (ua - pa) ** 2)
    upper = diff + np.sqrt((ub - pb) ** 2 + (pa - la) ** 2)
    phi = np.sign(diff) * association(table, method='cramer')
    print(
        f"  '{name}': {{ yates: {{ chi2: {f(yates.statistic)}, pValue: {f(yates.pvalue)} }}, "
        f"plain: {{ chi2: {f(plain.statistic)}, pValue: {f(plain.pvalue)} }}, "
        f"difference: {f(diff)}, ci95: [{f(lower)}, {f(upper)}], phi: {f(phi)} }},"
    )

print('// --- describe: numpy.mean, numpy.median, numpy.std(ddof=1), min, max')
for name, v in DESCRIBE.items():
    sd = np.std(v, ddof=1) if len(v) > 1 else 0.0
    print(f"  '{name}': {{ mean: {f(np.mean(v))}, median: {f(np.median(v))}, stddev: {f(sd)}, min: {f(min(v))}, max: {f(max(v))} }},")

print('// --- tails: 2 * scipy.stats.t.sf(t, df); scipy.stats.chi2.sf(x, 1); scipy.stats.t.ppf(0.975, df)')
for t, df in TAILS_T:
    print(f'  [{f(t)}, {f(df)}, {f(2 * stats.t.sf(t, df))}],')
for x in TAILS_CHI:
    print(f'  [{f(x)}, {f(stats.chi2.sf(x, 1))}],')
for df in QUANTILES:
    print(f'  [{f(df)}, {f(stats.t.ppf(0.975, df))}],')
