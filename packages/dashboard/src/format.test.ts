/// <reference types="node" />
// The formatters on the values that once came out wrong ("3 min 60 s", "$-0.03", sixteen decimals).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  fmtActor,
  fmtCountChange,
  fmtDecisionReason,
  fmtDuration,
  fmtDurationChange,
  fmtRule,
  fmtScore,
  fmtUsd,
  fmtWindow,
  minutesToMs,
  msToMinutes,
  plural,
  rulesWithIds,
} from './format.ts';

describe('format', () => {
  test('a change of a duration or a count carries its sign', () => {
    assert.equal(fmtDurationChange(600), '+600 ms');
    assert.equal(fmtDurationChange(-1200), '-1.20 s');
    assert.equal(fmtDurationChange(0.2), '0 ms');
    assert.equal(fmtCountChange(3), '+3');
    assert.equal(fmtCountChange(-2), '-2');
    assert.equal(fmtCountChange(0), '0');
    assert.equal(fmtCountChange(null), '—');
  });

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

  test('a count agrees with its noun: "1 message", "0 messages", "1,200 events"', () => {
    assert.equal(plural(1, 'message'), '1 message');
    assert.equal(plural(0, 'message'), '0 messages');
    assert.equal(plural(2, 'match', 'matches'), '2 matches');
    assert.equal(plural(1200, 'event').replace(/\D/g, ''), '1200');
  });

  test('a window is written in minutes, hours or days, whichever divides it, alerts and guardrails alike', () => {
    assert.equal(fmtWindow(1), '1 minute');
    assert.equal(fmtWindow(90), '90 minutes');
    assert.equal(fmtWindow(120), '2 hours');
    assert.equal(fmtWindow(1440), '1 day');
    assert.equal(fmtWindow(msToMinutes(300_000)), '5 minutes');
    assert.equal(fmtWindow(msToMinutes(86_400_000)), '1 day');
    assert.equal(minutesToMs(msToMinutes(86_400_000)), 86_400_000);
    assert.equal(minutesToMs(0.5), 30_000);
  });

  test('rules are counted from 1, also in the reasons the gate wrote counting from 0', () => {
    assert.equal(fmtRule(0), 'rule 1');
    assert.equal(fmtDecisionReason('Denied by policy "payments" (0195b2c4-7a1e-7000-8000-000000000001), rule 0'), 'Denied by policy “payments”, rule 1');
    assert.equal(fmtDecisionReason('Approved by policy "a (b)" (p-1), rule 2'), 'Approved by policy “a (b)”, rule 3');
    assert.equal(fmtDecisionReason('invoice 4411 was already paid'), 'invoice 4411 was already paid');
  });

  test('a policy acting is named by its name when known, by its id otherwise', () => {
    const names = new Map([['p-1', 'payments']]);
    assert.equal(fmtActor('policy:p-1', undefined, names), 'policy “payments”');
    assert.equal(fmtActor('policy:p-2', undefined, names), 'policy p-2');
    assert.equal(fmtActor('dashboard:Ada', undefined, names), 'dashboard:Ada');
    assert.equal(fmtActor('slack:U1', 'alice'), 'Slack · alice (U1)');
  });

  test('evaluator rules typed without an id get one by their place, from 1; a given id is kept', () => {
    assert.deepEqual(rulesWithIds('{"type": "max_cost", "maxUsd": 1}\n\n{"id": "no-shell", "type": "tool_denylist", "tools": ["shell_*"]}'), [
      { id: 'rule-1', type: 'max_cost', maxUsd: 1 },
      { id: 'no-shell', type: 'tool_denylist', tools: ['shell_*'] },
    ]);
  });
});
