import { roundUsd } from '@vigil/pricing';
/**
 * Agent health scores: pure arithmetic over figures measured in SQL (see service.ts). Every
 * dimension is 0–100 (clamped); the overall score is the weighted sum of the five.
 */

/** The weights in use, in the shape of GET /api/config/health-weights. The one source of truth. */
export const HEALTH_WEIGHTS = Object.freeze({
  errorRate: 0.3,
  costEfficiency: 0.2,
  toolSuccess: 0.2,
  latency: 0.15,
  completionRate: 0.15,
} as const);

export type HealthWeights = { readonly [K in keyof typeof HEALTH_WEIGHTS]: number };

export const DIMENSION_NAMES = ['error_rate', 'cost_efficiency', 'tool_success', 'latency', 'completion_rate'] as const;
export type DimensionName = (typeof DIMENSION_NAMES)[number];

/** Dimension name → key of HEALTH_WEIGHTS. */
export const DIMENSION_WEIGHT_KEYS: Record<DimensionName, keyof typeof HEALTH_WEIGHTS> = {
  error_rate: 'errorRate',
  cost_efficiency: 'costEfficiency',
  tool_success: 'toolSuccess',
  latency: 'latency',
  completion_rate: 'completionRate',
};

/** Trend thresholds: a change of more than this many points is improving / degrading. */
export const TREND_THRESHOLD = 5;

export type Trend = 'improving' | 'stable' | 'degrading';

/** Sums over a set of sessions, as the database answers them. */
export interface SessionFigures {
  sessions: number;
  /** Sessions with at least one error event (error_count > 0). */
  errored: number;
  /** Sessions that are over: ended, or idle (sessions/figures.ts); the ones a completion rate judges. */
  over: number;
  /** Sessions with status `completed`. */
  completed: number;
  /** Sum of the sessions' total cost (USD), exact to the nano-dollar. */
  costSum: number;
  /** Sum of the sessions' durations by the idle rule (sessions/figures.ts), in ms. */
  durationSum: number;
}

/** Tool event counts in a window. */
export interface ToolFigures {
  calls: number;
  responses: number;
  errors: number;
}

export interface WindowFigures {
  sessions: SessionFigures;
  /** The sessions of the 30 days immediately before the window. */
  baseline: SessionFigures;
  tools: ToolFigures;
}

export interface DimensionScore {
  name: DimensionName;
  score: number;
  weight: number;
  rawValue: number;
  description: string;
}

export interface ScoredWindow {
  overallScore: number;
  dimensions: DimensionScore[];
}

export const emptySessionFigures = (): SessionFigures => ({ sessions: 0, errored: 0, over: 0, completed: 0, costSum: 0, durationSum: 0 });
export const emptyToolFigures = (): ToolFigures => ({ calls: 0, responses: 0, errors: 0 });

/** Scores and deltas are reported to two decimals (hundredths of a point). */
export const round2 = (value: number): number => Math.round(value * 100) / 100;

/** 0–100; a non-finite value (never expected) counts as 0. */
export function clampScore(value: number): number {
  if (!Number.isFinite(value)) return 0;
  return Math.min(100, Math.max(0, value));
}

const share = (part: number, whole: number): number => (whole === 0 ? 0 : part / whole);
const percent = (value: number): string => `${round2(value * 100)}%`;
const dollars = (value: number): string => `$${Number(value.toPrecision(6))}`;
const seconds = (ms: number): string => `${round2(ms / 1000)} s`;

/** 100 × (1 − share of sessions with an error event). */
export function errorRateScore(s: SessionFigures): Omit<DimensionScore, 'name' | 'weight'> {
  const rawValue = share(s.errored, s.sessions);
  return {
    score: round2(clampScore(100 * (1 - rawValue))),
    rawValue,
    description: `${s.errored} of ${s.sessions} sessions (${percent(rawValue)}) had an error event`,
  };
}

/** 100 − 100 × (avg session cost / baseline avg − 1); 100 when either average is 0. rawValue: avg cost (USD). */
export function costEfficiencyScore(s: SessionFigures, baseline: SessionFigures): Omit<DimensionScore, 'name' | 'weight'> {
  const average = share(s.costSum, s.sessions);
  const baselineAverage = share(baseline.costSum, baseline.sessions);
  const rawValue = roundUsd(average);
  if (average === 0 || baselineAverage === 0) {
    const why = average === 0 ? 'no spend in the window' : 'no spend in the 30-day baseline';
    return { score: 100, rawValue, description: `Average session cost ${dollars(average)} (${why})` };
  }
  return {
    score: round2(clampScore(100 - 100 * (average / baselineAverage - 1))),
    rawValue,
    description: `Average session cost ${dollars(average)} vs ${dollars(baselineAverage)} in the 30-day baseline (${round2(average / baselineAverage)}×)`,
  };
}

/**
 * 100 × (tool_response − tool_error) / tool_call, 100 with no calls. rawValue: that ratio unclamped
 * (1 when there were no calls).
 */
export function toolSuccessScore(t: ToolFigures): Omit<DimensionScore, 'name' | 'weight'> {
  if (t.calls === 0) return { score: 100, rawValue: 1, description: 'No tool calls in the window' };
  const rawValue = (t.responses - t.errors) / t.calls;
  return {
    score: round2(clampScore(100 * rawValue)),
    rawValue,
    description: `${t.calls} tool calls, ${t.responses} responses, ${t.errors} errors: success ratio ${round2(rawValue)}`,
  };
}

/** 100 − 50 × (avg session duration / baseline avg − 1); 100 when either average is 0. rawValue: avg duration (ms). */
export function latencyScore(s: SessionFigures, baseline: SessionFigures): Omit<DimensionScore, 'name' | 'weight'> {
  const average = share(s.durationSum, s.sessions);
  const baselineAverage = share(baseline.durationSum, baseline.sessions);
  if (average === 0 || baselineAverage === 0) {
    const why = average === 0 ? 'sessions without duration' : 'no baseline duration';
    return { score: 100, rawValue: average, description: `Average session duration ${seconds(average)} (${why})` };
  }
  return {
    score: round2(clampScore(100 - 50 * (average / baselineAverage - 1))),
    rawValue: average,
    description: `Average session duration ${seconds(average)} vs ${seconds(baselineAverage)} in the 30-day baseline (${round2(average / baselineAverage)}×)`,
  };
}

/**
 * 100 × share of the sessions that are over (ended or idle) with status `completed`; sessions still
 * running are not judged yet. 100 (rawValue 1) when none is over, like tool_success without calls.
 */
export function completionRateScore(s: SessionFigures): Omit<DimensionScore, 'name' | 'weight'> {
  if (s.over === 0) return { score: 100, rawValue: 1, description: `No session over yet (${s.sessions} still running)` };
  const rawValue = share(s.completed, s.over);
  const running = s.sessions - s.over;
  return {
    score: round2(clampScore(100 * rawValue)),
    rawValue,
    description: `${s.completed} of ${s.over} sessions (${percent(rawValue)}) completed${running > 0 ? `; ${running} still running, not judged yet` : ''}`,
  };
}

/**
 * The five dimensions and the overall score of one window. Dimension scores are rounded to two
 * decimals and the overall score is the weighted sum of those rounded scores (rounded again), so a
 * client can recompute it from the answer.
 */
export function scoreWindow(figures: WindowFigures, weights: HealthWeights = HEALTH_WEIGHTS): ScoredWindow {
  const parts: Record<DimensionName, Omit<DimensionScore, 'name' | 'weight'>> = {
    error_rate: errorRateScore(figures.sessions),
    cost_efficiency: costEfficiencyScore(figures.sessions, figures.baseline),
    tool_success: toolSuccessScore(figures.tools),
    latency: latencyScore(figures.sessions, figures.baseline),
    completion_rate: completionRateScore(figures.sessions),
  };
  const dimensions = DIMENSION_NAMES.map((name) => ({ name, weight: weights[DIMENSION_WEIGHT_KEYS[name]], ...parts[name] }));
  const overallScore = round2(clampScore(dimensions.reduce((sum, d) => sum + d.weight * d.score, 0)));
  return { overallScore, dimensions: dimensions.map(({ name, score, weight, rawValue, description }) => ({ name, score, weight, rawValue, description })) };
}

/**
 * Trend against the previous window of the same length: delta > +5 improving, < −5 degrading,
 * else stable. Without sessions in the previous window there is nothing to compare: 0, stable.
 */
export function trendOf(overallScore: number, previousOverallScore: number | null): { trend: Trend; trendDelta: number } {
  if (previousOverallScore === null) return { trend: 'stable', trendDelta: 0 };
  const trendDelta = round2(overallScore - previousOverallScore);
  const trend: Trend = trendDelta > TREND_THRESHOLD ? 'improving' : trendDelta < -TREND_THRESHOLD ? 'degrading' : 'stable';
  return { trend, trendDelta };
}
