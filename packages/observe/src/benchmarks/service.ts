import { toIso, toIsoOrNull } from '@vigil/platform';
import type { Kysely } from 'kysely';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import type { ObserveSchema } from '../schema.ts';
import type { BenchmarkOut, BenchmarkListItemOut, BenchmarkStatus } from './schemas.ts';
import {
  compareContinuous,
  compareRates,
  describe,
  HIGHER_IS_BETTER,
  METRIC_TEST_TYPE,
  stars,
  variantPairs,
  winner,
  type BenchmarkMetric,
  type ComparisonStats,
  type Description,
} from './statistics.ts';
import {
  deleteBenchmark,
  findBenchmark,
  lockBenchmark,
  updateStatus,
  variantSessionCounts,
  variantSessionValues,
  type Benchmark,
  type SessionValues,
  type Variant,
} from './store.ts';

/** Every benchmark belongs to the single tenant of this service. */
export const TENANT_ID = 'default';

/** The state table (docs/api.md#benchmarks): the only moves a PUT /status may make. */
export const ALLOWED_TRANSITIONS: Readonly<Record<BenchmarkStatus, readonly BenchmarkStatus[]>> = {
  draft: ['running', 'cancelled'],
  running: ['completed', 'cancelled'],
  completed: [],
  cancelled: [],
};

type Executor = Kysely<ObserveSchema>;

// ---------------------------------------------------------------------------------------------
// Output shapes
// ---------------------------------------------------------------------------------------------

export function toBenchmarkOut(benchmark: Benchmark, counts: ReadonlyMap<string, number>): BenchmarkOut {
  return {
    id: benchmark.id,
    name: benchmark.name,
    description: benchmark.description,
    agentId: benchmark.agentId,
    status: benchmark.status,
    variants: benchmark.variants.map((v) => ({
      id: v.id,
      name: v.name,
      tag: v.tag,
      description: v.description,
      agentId: v.agentId,
      sessionCount: counts.get(v.id) ?? 0,
    })),
    metrics: benchmark.metrics,
    minSessionsPerVariant: benchmark.minSessionsPerVariant,
    timeRange:
      benchmark.timeFrom === null && benchmark.timeTo === null
        ? null
        : {
            from: toIsoOrNull(benchmark.timeFrom),
            to: toIsoOrNull(benchmark.timeTo),
          },
    createdAt: toIso(benchmark.createdAt),
    updatedAt: toIso(benchmark.updatedAt),
  };
}

export function toListItem(benchmark: Benchmark): BenchmarkListItemOut {
  return {
    id: benchmark.id,
    name: benchmark.name,
    description: benchmark.description,
    status: benchmark.status,
    agentId: benchmark.agentId,
    metrics: benchmark.metrics,
    variants: benchmark.variants.map((v) => ({ id: v.id, name: v.name, tag: v.tag })),
    createdAt: toIso(benchmark.createdAt),
    updatedAt: toIso(benchmark.updatedAt),
  };
}

/** The benchmark with per-variant sessionCount (counted in SQL). */
export async function benchmarkDetail(executor: Executor, benchmark: Benchmark): Promise<BenchmarkOut> {
  return toBenchmarkOut(benchmark, await variantSessionCounts(executor, benchmark.id));
}

// ---------------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------------

/** A comparison side: the variant's description of the metric, plus the counts a rate test used. */
export interface SideStats extends Description {
  /** Rates only: numerator / denominator, the proportion the chi-squared test compares (null without trials). */
  rate?: number | null;
  numerator?: number;
  denominator?: number;
}

export interface VariantResult {
  variantId: string;
  variantName: string;
  tag: string;
  sessionCount: number;
  belowMinimum: boolean;
  metrics: Partial<Record<BenchmarkMetric, Description>>;
  /** Raw per-session values of each metric (only with includeDistributions=true). */
  distributions?: Partial<Record<BenchmarkMetric, number[]>>;
}

export interface Comparison {
  metric: BenchmarkMetric;
  variantA: { id: string; name: string; stats: SideStats };
  variantB: { id: string; name: string; stats: SideStats };
  absoluteDiff: number | null;
  percentDiff: number | null;
  testType: ComparisonStats['testType'];
  testStatistic: number | null;
  pValue: number;
  confidenceInterval: { lower: number; upper: number } | null;
  effectSize: number | null;
  significant: boolean;
  winner?: string;
  confidence: ComparisonStats['confidence'];
  belowMinimum: boolean;
  degenerate: ComparisonStats['degenerate'];
}

export interface BenchmarkResults {
  benchmarkId: string;
  tenantId: string;
  status: BenchmarkStatus;
  minSessionsPerVariant: number;
  /** Some variant has fewer sessions than minSessionsPerVariant: no winner is named anywhere. */
  belowMinimum: boolean;
  variants: VariantResult[];
  comparisons: Comparison[];
  summary: string;
  computedAt: string;
}

/** Per-session values and rate counts of one variant. */
interface VariantSample {
  variant: Variant;
  sessionCount: number;
  values: Record<BenchmarkMetric, number[]>;
  /** Rate metrics: [numerator, denominator] of the 2×2 test. */
  counts: Record<'error_rate' | 'completion_rate' | 'tool_success_rate', [number, number]>;
}

const finite = (values: number[]): number[] => values.filter((v) => Number.isFinite(v));

/**
 * The per-session values of every metric (docs/api.md#benchmarks; docs/guide/behaviour.md, *Benchmarks*):
 * - error_rate: 1 when the session has an error event, else 0; counts: sessions with an error / sessions;
 * - completion_rate: 1 when the session is `completed`, else 0; counts: completed / sessions;
 * - tool_success_rate: the session's tool_response / (tool_response + tool_error), sessions without
 *   tool results have no value; counts: every tool_response / every tool result of the variant;
 * - avg_cost: the session's spend; avg_tokens: its input + output tokens of llm_response and
 *   cost_tracked events; avg_duration: the session's duration in ms (sessions/figures.ts);
 * - avg_latency: mean durationMs of the session's tool_response and tool_error events (no value
 *   without any).
 */
export function sampleOf(variant: Variant, sessions: readonly SessionValues[]): VariantSample {
  const values: Record<BenchmarkMetric, number[]> = {
    error_rate: [],
    completion_rate: [],
    tool_success_rate: [],
    avg_cost: [],
    avg_latency: [],
    avg_tokens: [],
    avg_duration: [],
  };
  let errored = 0;
  let completed = 0;
  let toolSuccesses = 0;
  let toolResults = 0;
  for (const s of sessions) {
    values.error_rate.push(s.errored);
    values.completion_rate.push(s.completed);
    const results = s.toolSuccesses + s.toolFailures;
    if (results > 0) values.tool_success_rate.push(s.toolSuccesses / results);
    values.avg_cost.push(s.costUsd);
    if (s.latencyCount > 0) values.avg_latency.push(s.latencySum / s.latencyCount);
    values.avg_tokens.push(s.tokens);
    values.avg_duration.push(s.durationMs);
    errored += s.errored;
    completed += s.completed;
    toolSuccesses += s.toolSuccesses;
    toolResults += results;
  }
  for (const key of Object.keys(values) as BenchmarkMetric[]) values[key] = finite(values[key]);
  return {
    variant,
    sessionCount: sessions.length,
    values,
    counts: {
      error_rate: [errored, sessions.length],
      completion_rate: [completed, sessions.length],
      tool_success_rate: [toolSuccesses, toolResults],
    },
  };
}

/** A comparison that could not be computed (statistics refused its input): reported as no evidence, never a 500. */
function inconclusive(metric: BenchmarkMetric): ComparisonStats {
  return {
    testType: METRIC_TEST_TYPE[metric],
    testStatistic: null,
    pValue: 1,
    confidenceInterval: null,
    effectSize: null,
    significant: false,
    confidence: stars(1),
    absoluteDiff: null,
    percentDiff: null,
    degenerate: 'insufficient_data',
  };
}

function isRate(metric: BenchmarkMetric): metric is 'error_rate' | 'completion_rate' | 'tool_success_rate' {
  return METRIC_TEST_TYPE[metric] === 'chi_squared';
}

/** B compared with A on one metric: Welch on per-session values, chi-squared on the 2×2 counts for rates. */
export function compareMetric(metric: BenchmarkMetric, a: VariantSample, b: VariantSample): ComparisonStats {
  try {
    if (isRate(metric)) {
      const [successesA, totalA] = a.counts[metric];
      const [successesB, totalB] = b.counts[metric];
      return compareRates(successesA, totalA, successesB, totalB);
    }
    return compareContinuous(a.values[metric], b.values[metric]);
  } catch (error) {
    if (error instanceof RangeError) return inconclusive(metric);
    throw error;
  }
}

function sideStats(metric: BenchmarkMetric, sample: VariantSample, description: Description): SideStats {
  if (!isRate(metric)) return description;
  const [numerator, denominator] = sample.counts[metric];
  return { ...description, rate: denominator > 0 ? numerator / denominator : null, numerator, denominator };
}

function formatP(p: number): string {
  if (p < 0.0001) return 'p < 0.0001';
  return `p = ${Number(p.toPrecision(2))}`;
}

function quoteList(names: readonly string[]): string {
  const quoted = names.map((n) => `"${n}"`);
  if (quoted.length <= 1) return quoted.join('');
  return `${quoted.slice(0, -1).join(', ')} and ${quoted[quoted.length - 1]}`;
}

/**
 * One readable paragraph: the winners (variant, metric, p and stars), then the variants below
 * minSessionsPerVariant, whose comparisons are preliminary and name no winner.
 */
function summarize(samples: readonly VariantSample[], comparisons: readonly Comparison[], minSessions: number, metrics: readonly BenchmarkMetric[]): string {
  const parts: string[] = [];
  const won = comparisons.filter((c) => c.winner !== undefined);
  if (won.length > 0) {
    const phrases = won.map((c) => {
      const loser = c.winner === c.variantA.name ? c.variantB.name : c.variantA.name;
      return `"${c.winner}" beats "${loser}" on ${c.metric} (${formatP(c.pValue)}, ${c.confidence})`;
    });
    parts.push(`Significant differences (p < 0.05): ${phrases.join('; ')}.`);
  }
  const below = samples.filter((s) => s.sessionCount < minSessions).map((s) => s.variant.name);
  if (below.length > 0) {
    if (won.length === 0) parts.push('No winner is named.');
    const preliminary = comparisons.filter((c) => c.belowMinimum);
    const significant = preliminary.filter((c) => c.significant).length;
    const one = below.length === 1;
    parts.push(
      `${quoteList(below)} ${one ? 'has' : 'have'} fewer than ${minSessions} sessions (minSessionsPerVariant), so the ` +
        `${preliminary.length} comparisons involving ${one ? 'it' : 'them'} are preliminary and name no winner` +
        (significant > 0 ? ` (${significant} of them significant at p < 0.05).` : '.'),
    );
  } else if (won.length === 0) {
    parts.push(`No significant difference (p < 0.05) between ${quoteList(samples.map((s) => s.variant.name))} on ${metrics.join(', ')}.`);
  }
  return parts.join(' ');
}

/**
 * The results of the benchmark over its variants' sessions now: per variant the description of
 * each selected metric (and every per-session value, under `distributions`), and every pair of
 * variants (in variant order) compared on every selected metric (metric by metric, in the order
 * of `metrics`). Below minSessionsPerVariant the figures are all there but no winner is named.
 */
export async function computeResults(executor: Executor, benchmark: Benchmark, status: BenchmarkStatus, now: number): Promise<BenchmarkResults> {
  const rows = await variantSessionValues(executor, benchmark.id);
  const byVariant = new Map<string, SessionValues[]>();
  for (const row of rows) {
    const list = byVariant.get(row.variantId) ?? [];
    list.push(row);
    byVariant.set(row.variantId, list);
  }
  const samples = benchmark.variants.map((variant) => sampleOf(variant, byVariant.get(variant.id) ?? []));
  const minSessions = benchmark.minSessionsPerVariant;
  const metrics = benchmark.metrics;

  const descriptions = new Map<string, Record<string, Description>>();
  const variants: VariantResult[] = samples.map((sample) => {
    const described: Partial<Record<BenchmarkMetric, Description>> = {};
    const distributions: Partial<Record<BenchmarkMetric, number[]>> = {};
    for (const metric of metrics) {
      described[metric] = describe(sample.values[metric]);
      distributions[metric] = sample.values[metric];
    }
    descriptions.set(sample.variant.id, described as Record<string, Description>);
    return {
      variantId: sample.variant.id,
      variantName: sample.variant.name,
      tag: sample.variant.tag,
      sessionCount: sample.sessionCount,
      belowMinimum: sample.sessionCount < minSessions,
      metrics: described,
      distributions,
    };
  });

  const comparisons: Comparison[] = [];
  const pairs = variantPairs(samples);
  for (const metric of metrics) {
    for (const [a, b] of pairs) {
      const stats = compareMetric(metric, a, b);
      const belowMinimum = a.sessionCount < minSessions || b.sessionCount < minSessions;
      const better = winner(stats, HIGHER_IS_BETTER[metric], { belowMinimum });
      const comparison: Comparison = {
        metric,
        variantA: { id: a.variant.id, name: a.variant.name, stats: sideStats(metric, a, descriptions.get(a.variant.id)![metric]!) },
        variantB: { id: b.variant.id, name: b.variant.name, stats: sideStats(metric, b, descriptions.get(b.variant.id)![metric]!) },
        absoluteDiff: stats.absoluteDiff,
        percentDiff: stats.percentDiff,
        testType: stats.testType,
        testStatistic: stats.testStatistic,
        pValue: stats.pValue,
        confidenceInterval: stats.confidenceInterval,
        effectSize: stats.effectSize,
        significant: stats.significant,
        // Only when significant, never below minSessionsPerVariant (absent otherwise).
        ...(better === null ? {} : { winner: better === 'A' ? a.variant.name : b.variant.name }),
        confidence: stats.confidence,
        belowMinimum,
        degenerate: stats.degenerate,
      };
      comparisons.push(comparison);
    }
  }

  return {
    benchmarkId: benchmark.id,
    tenantId: TENANT_ID,
    status,
    minSessionsPerVariant: minSessions,
    belowMinimum: samples.some((s) => s.sessionCount < minSessions),
    variants,
    comparisons,
    summary: summarize(samples, comparisons, minSessions, metrics),
    computedAt: toIso(now),
  };
}

/** Drops the raw per-session arrays unless asked for. */
export function withoutDistributions(results: BenchmarkResults): BenchmarkResults {
  return { ...results, variants: results.variants.map(({ distributions: _dropped, ...variant }) => variant) };
}

/**
 * GET /api/benchmarks/:id/results: 400 while draft; a completed benchmark answers the results
 * cached when it completed; running and cancelled benchmarks are computed now.
 */
export async function benchmarkResults(ctx: ObserveContext, id: string, includeDistributions: boolean): Promise<BenchmarkResults> {
  const benchmark = await findBenchmark(ctx.database.db, id);
  if (!benchmark) throw observeError('benchmarkNotFound');
  if (benchmark.status === 'draft') throw observeError('benchmarkDraft');
  const results =
    benchmark.status === 'completed' && benchmark.cachedResults !== null
      ? (JSON.parse(benchmark.cachedResults) as BenchmarkResults)
      : await computeResults(ctx.database.db, benchmark, benchmark.status, ctx.clock.now());
  return includeDistributions ? results : withoutDistributions(results);
}

// ---------------------------------------------------------------------------------------------
// Transitions and deletion
// ---------------------------------------------------------------------------------------------

function refusal(from: BenchmarkStatus, to: BenchmarkStatus): string {
  const allowed = ALLOWED_TRANSITIONS[from];
  const options = allowed.length === 0 ? `a ${from} benchmark cannot change status` : `from ${from} the status can only become ${allowed.join(' or ')}`;
  return `Cannot change the status of a ${from} benchmark to ${to}: ${options}`;
}

/**
 * PUT /api/benchmarks/:id/status, in one transaction with the benchmark locked: moves outside the
 * state table are 409; draft → running needs at least one session per variant (409 naming the
 * variants without); running → completed computes the results and caches them with the status.
 */
export async function changeStatus(ctx: ObserveContext, id: string, to: BenchmarkStatus): Promise<BenchmarkOut> {
  const { database } = ctx;
  return database.db.transaction().execute(async (trx) => {
    const benchmark = await lockBenchmark(trx, database.dialect, id);
    if (!benchmark) throw observeError('benchmarkNotFound');
    const from = benchmark.status;
    if (!ALLOWED_TRANSITIONS[from].includes(to)) throw observeError('benchmarkConflict', refusal(from, to));
    const now = ctx.clock.now();
    if (to === 'running') {
      const counts = await variantSessionCounts(trx, id);
      const empty = benchmark.variants.filter((v) => (counts.get(v.id) ?? 0) === 0);
      if (empty.length > 0) {
        const names = empty.map((v) => `"${v.name}" (tag ${JSON.stringify(v.tag)})`).join(', ');
        throw observeError('benchmarkConflict', `Cannot start the benchmark: every variant needs at least 1 session; none found for ${names}`);
      }
    }
    if (to === 'completed') {
      const results = await computeResults(trx, benchmark, 'completed', now);
      await updateStatus(trx, id, to, now, JSON.stringify(results));
    } else {
      await updateStatus(trx, id, to, now);
    }
    return benchmarkDetail(trx, { ...benchmark, status: to, updatedAt: now });
  });
}

/** DELETE /api/benchmarks/:id: only draft and cancelled benchmarks (409 otherwise). */
export async function removeBenchmark(ctx: ObserveContext, id: string): Promise<void> {
  const { database } = ctx;
  await database.db.transaction().execute(async (trx) => {
    const benchmark = await lockBenchmark(trx, database.dialect, id);
    if (!benchmark) throw observeError('benchmarkNotFound');
    if (benchmark.status === 'running' || benchmark.status === 'completed') {
      throw observeError(
        'benchmarkConflict',
        `Cannot delete a ${benchmark.status} benchmark: only draft and cancelled benchmarks can be deleted${benchmark.status === 'running' ? ' (cancel it first)' : ''}`,
      );
    }
    await deleteBenchmark(trx, id);
  });
}
