import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  clampScore,
  completionRateScore,
  costEfficiencyScore,
  DIMENSION_NAMES,
  emptySessionFigures,
  errorRateScore,
  HEALTH_WEIGHTS,
  latencyScore,
  scoreWindow,
  toolSuccessScore,
  trendOf,
  type SessionFigures,
} from './scores.ts';

const figures = (patch: Partial<SessionFigures>): SessionFigures => ({ ...emptySessionFigures(), ...patch });

describe('health scores (pure)', () => {
  test('the weights are those of docs/api.md and sum to 1', () => {
    assert.deepEqual({ ...HEALTH_WEIGHTS }, { errorRate: 0.3, costEfficiency: 0.2, toolSuccess: 0.2, latency: 0.15, completionRate: 0.15 });
    assert.equal(Math.round(Object.values(HEALTH_WEIGHTS).reduce((a, b) => a + b, 0) * 1e9) / 1e9, 1);
    assert.ok(Object.isFrozen(HEALTH_WEIGHTS));
  });

  test('clampScore keeps 0..100', () => {
    assert.equal(clampScore(-3), 0);
    assert.equal(clampScore(150), 100);
    assert.equal(clampScore(42.5), 42.5);
    assert.equal(clampScore(Number.NaN), 0);
  });

  test('error_rate: 100 × (1 − share of sessions with an error event)', () => {
    assert.deepEqual(
      { ...errorRateScore(figures({ sessions: 4, errored: 1 })), description: undefined },
      { score: 75, rawValue: 0.25, description: undefined },
    );
    assert.equal(errorRateScore(figures({ sessions: 3, errored: 1 })).score, 66.67);
    assert.equal(errorRateScore(figures({ sessions: 3, errored: 3 })).score, 0);
    assert.equal(errorRateScore(figures({ sessions: 3, errored: 0 })).score, 100);
    assert.equal(errorRateScore(figures({ sessions: 4, errored: 1 })).description, '1 of 4 sessions (25%) had an error event');
  });

  test('cost_efficiency: 100 − 100 × (avg / baseline avg − 1), clamped, 100 when either is 0', () => {
    const baseline = figures({ sessions: 2, costSum: 0.02 }); // avg 0.01
    assert.deepEqual(
      [
        costEfficiencyScore(figures({ sessions: 1, costSum: 0.012 }), baseline).score,
        costEfficiencyScore(figures({ sessions: 1, costSum: 0.012 }), baseline).rawValue,
      ],
      [80, 0.012],
    );
    assert.equal(costEfficiencyScore(figures({ sessions: 1, costSum: 0.01 }), baseline).score, 100);
    assert.equal(costEfficiencyScore(figures({ sessions: 1, costSum: 0.015 }), baseline).score, 50);
    // Twice the baseline or more: 0; cheaper than the baseline: more than 100, clamped.
    assert.equal(costEfficiencyScore(figures({ sessions: 1, costSum: 0.02 }), baseline).score, 0);
    assert.equal(costEfficiencyScore(figures({ sessions: 1, costSum: 0.05 }), baseline).score, 0);
    assert.equal(costEfficiencyScore(figures({ sessions: 2, costSum: 0.005 }), baseline).score, 100);
    // Either average 0: 100.
    assert.deepEqual(costEfficiencyScore(figures({ sessions: 3, costSum: 0 }), baseline).score, 100);
    const noBaseline = costEfficiencyScore(figures({ sessions: 1, costSum: 0.3 }), figures({}));
    assert.equal(noBaseline.score, 100);
    assert.equal(noBaseline.rawValue, 0.3);
    assert.match(noBaseline.description, /no spend in the 30-day baseline/);
    assert.equal(costEfficiencyScore(figures({ sessions: 1, costSum: 0.3 }), figures({ sessions: 4, costSum: 0 })).score, 100);
  });

  test('tool_success: 100 × (responses − errors) / calls, 100 with no calls', () => {
    assert.deepEqual({ ...toolSuccessScore({ calls: 10, responses: 9, errors: 1 }), description: '' }, { score: 80, rawValue: 0.8, description: '' });
    assert.equal(toolSuccessScore({ calls: 4, responses: 4, errors: 0 }).score, 100);
    // More responses than calls (a call before the window): clamped at 100, rawValue unclamped.
    assert.deepEqual(
      [toolSuccessScore({ calls: 2, responses: 3, errors: 0 }).score, toolSuccessScore({ calls: 2, responses: 3, errors: 0 }).rawValue],
      [100, 1.5],
    );
    // Only errors: negative ratio, clamped at 0.
    assert.deepEqual(
      [toolSuccessScore({ calls: 1, responses: 0, errors: 1 }).score, toolSuccessScore({ calls: 1, responses: 0, errors: 1 }).rawValue],
      [0, -1],
    );
    const none = toolSuccessScore({ calls: 0, responses: 5, errors: 2 });
    assert.deepEqual([none.score, none.rawValue], [100, 1]);
    assert.equal(none.description, 'No tool calls in the window');
  });

  test('latency: 100 − 50 × (avg duration / baseline avg − 1), clamped, 100 when either is 0', () => {
    const baseline = figures({ sessions: 2, durationSum: 120_000 }); // avg 60 s
    assert.deepEqual(
      [
        latencyScore(figures({ sessions: 1, durationSum: 90_000 }), baseline).score,
        latencyScore(figures({ sessions: 1, durationSum: 90_000 }), baseline).rawValue,
      ],
      [75, 90_000],
    );
    assert.equal(latencyScore(figures({ sessions: 1, durationSum: 180_000 }), baseline).score, 0);
    assert.equal(latencyScore(figures({ sessions: 1, durationSum: 600_000 }), baseline).score, 0);
    assert.equal(latencyScore(figures({ sessions: 1, durationSum: 30_000 }), baseline).score, 100);
    assert.equal(latencyScore(figures({ sessions: 1, durationSum: 0 }), baseline).score, 100);
    assert.equal(latencyScore(figures({ sessions: 1, durationSum: 600_000 }), figures({})).score, 100);
  });

  test('completion_rate: 100 × share of completed sessions among those over; running ones are not judged yet', () => {
    const part = completionRateScore(figures({ sessions: 8, over: 8, completed: 6 }));
    assert.deepEqual([part.score, part.rawValue, part.description], [75, 0.75, '6 of 8 sessions (75%) completed']);
    assert.equal(completionRateScore(figures({ sessions: 3, over: 3, completed: 0 })).score, 0);
    const running = completionRateScore(figures({ sessions: 10, over: 8, completed: 6 }));
    assert.deepEqual([running.score, running.rawValue, running.description], [75, 0.75, '6 of 8 sessions (75%) completed; 2 still running, not judged yet']);
    assert.deepEqual([completionRateScore(figures({ sessions: 2, over: 0 })).score, completionRateScore(figures({ sessions: 2, over: 0 })).rawValue], [100, 1]);
  });

  test('scoreWindow: dimensions in order with their weights; overall = Σ weight × score', () => {
    const scored = scoreWindow({
      sessions: { sessions: 4, errored: 1, over: 4, completed: 2, costSum: 0.06, durationSum: 300_000 },
      baseline: { sessions: 3, errored: 0, over: 3, completed: 3, costSum: 0.0375, durationSum: 187_500 },
      tools: { calls: 5, responses: 4, errors: 1 },
    });
    assert.deepEqual(
      scored.dimensions.map((d) => d.name),
      [...DIMENSION_NAMES],
    );
    assert.deepEqual(
      scored.dimensions.map((d) => d.weight),
      [0.3, 0.2, 0.2, 0.15, 0.15],
    );
    assert.deepEqual(
      scored.dimensions.map((d) => d.score),
      [75, 80, 60, 90, 50],
    );
    // 0.3×75 + 0.2×80 + 0.2×60 + 0.15×90 + 0.15×50
    assert.equal(scored.overallScore, 71.5);
    for (const d of scored.dimensions) assert.ok(d.description.length > 0);
  });

  test('scoreWindow: all perfect is 100, all worst is 0', () => {
    const perfect = scoreWindow({
      sessions: figures({ sessions: 2, over: 2, completed: 2 }),
      baseline: figures({}),
      tools: { calls: 0, responses: 0, errors: 0 },
    });
    assert.equal(perfect.overallScore, 100);
    const worst = scoreWindow({
      sessions: figures({ sessions: 2, errored: 2, over: 2, completed: 0, costSum: 10, durationSum: 10_000_000 }),
      baseline: figures({ sessions: 1, costSum: 1, durationSum: 1000 }),
      tools: { calls: 3, responses: 0, errors: 3 },
    });
    assert.equal(worst.overallScore, 0);
    assert.deepEqual(
      worst.dimensions.map((d) => d.score),
      [0, 0, 0, 0, 0],
    );
  });

  test('trendOf: > +5 improving, < −5 degrading, else stable; no previous window: 0, stable', () => {
    assert.deepEqual(trendOf(70, 60), { trend: 'improving', trendDelta: 10 });
    assert.deepEqual(trendOf(50, 60), { trend: 'degrading', trendDelta: -10 });
    assert.deepEqual(trendOf(65, 60), { trend: 'stable', trendDelta: 5 });
    assert.deepEqual(trendOf(55, 60), { trend: 'stable', trendDelta: -5 });
    assert.deepEqual(trendOf(65.01, 60), { trend: 'improving', trendDelta: 5.01 });
    assert.deepEqual(trendOf(54.99, 60), { trend: 'degrading', trendDelta: -5.01 });
    assert.deepEqual(trendOf(42, null), { trend: 'stable', trendDelta: 0 });
  });
});
