/// <reference types="node" />
// The formatters on the values that once came out wrong ("3 min 60 s", "$-0.03", sixteen decimals).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fmtDuration, fmtScore, fmtUsd } from './format.ts';

describe('format', () => {
  test('a score has two decimals', () => {
    assert.equal(fmtScore(0.6666666666666666), '0.67');
  });

  test('a duration carries a rounded-up second into the minute', () => {
    assert.equal(fmtDuration(239_600), '4 min 0 s');
    assert.equal(fmtDuration(240_000), '4 min 0 s');
    assert.equal(fmtDuration(179_990), '3 min 0 s');
  });

  test('money puts the minus sign before the dollar', () => {
    assert.equal(fmtUsd(-0.03), '-$0.03');
  });
});
