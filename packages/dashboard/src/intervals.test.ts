/// <reference types="node" />
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { meanInterval, tCritical95 } from './intervals.ts';

describe('benchmark intervals', () => {
  test("Student's t at 97.5 %: tabulated to 30 degrees of freedom, the nearest lower table value beyond", () => {
    assert.equal(tCritical95(1), 12.706);
    assert.equal(tCritical95(9), 2.262);
    assert.equal(tCritical95(30), 2.042);
    assert.equal(tCritical95(45), 2.021);
    assert.equal(tCritical95(10_000), 1.98);
  });

  test('a mean of 10 values with sd 2: mean ± 2.262 · 2 / √10', () => {
    const interval = meanInterval({ mean: 5, stddev: 2, count: 10 })!;
    const half = (2.262 * 2) / Math.sqrt(10);
    assert.ok(Math.abs(interval.lower - (5 - half)) < 1e-12);
    assert.ok(Math.abs(interval.upper - (5 + half)) < 1e-12);
  });

  test('a rate stays within its bounds; one value or none has no interval', () => {
    assert.deepEqual(meanInterval({ mean: 0.05, stddev: 0.2, count: 4 }, [0, 1])?.lower, 0);
    assert.equal(meanInterval({ mean: 1, stddev: 0, count: 1 }), null);
    assert.equal(meanInterval({ mean: null, stddev: null, count: 0 }), null);
  });
});
