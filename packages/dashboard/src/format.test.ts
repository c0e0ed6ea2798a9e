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

  test('money never shows float noise or an exponent, however small or odd the amount', () => {
    assert.equal(fmtUsd(0.000014849999999999998), '$0.000015');
    assert.equal(fmtUsd(0.30000000000000004), '$0.30');
    assert.equal(fmtUsd(1e-7), '$0.0000001');
    assert.equal(fmtUsd(-2.5e-9), '-$0.0000000025');
    for (const value of [1e-9, 3e-8, 0.1 + 0.2, 1234.5678, 0.00999, 1 / 3, 2 / 3e6, 1e6 + 0.1]) {
      assert.match(fmtUsd(value), /^-?\$[\d,]+(\.\d{1,10})?$/, `${value} → ${fmtUsd(value)}`);
      assert.ok(fmtUsd(value).replace(/\D/g, '').replace(/^0+/, '').length <= 9, `${value} → ${fmtUsd(value)}`);
    }
  });
});
