/// <reference types="node" />
// The alignment of two sessions' events and the differences the compare page shows.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { alignEvents, alignmentCounts, pairDiff, stepKey, totalsOf, type ComparedEvent } from './compare.ts';

const ev = (eventType: string, figures: Partial<ComparedEvent> = {}): ComparedEvent => ({
  eventType,
  toolName: null,
  model: null,
  costUsd: null,
  latencyMs: null,
  inputTokens: null,
  outputTokens: null,
  ...figures,
});
/** The alignment as text: "x=x" a matched pair, "x<" only in A, ">y" only in B. */
const picture = (a: string[], b: string[], options = {}) =>
  alignEvents(a, b, (s) => s, options).rows.map((r) => (r.a && r.b ? `${r.a}=${r.b}` : r.a ? `${r.a}<` : `>${r.b}`));

describe('compare: aligning two sessions', () => {
  test('identical sequences pair every event', () => {
    assert.deepEqual(picture(['s', 'l', 't', 'e'], ['s', 'l', 't', 'e']), ['s=s', 'l=l', 't=t', 'e=e']);
  });

  test('an inserted and a removed step leave gaps, the rest stays paired', () => {
    assert.deepEqual(picture(['s', 'l', 't', 'e'], ['s', 'l', 'x', 't', 'e']), ['s=s', 'l=l', '>x', 't=t', 'e=e']);
    assert.deepEqual(picture(['s', 'l', 'x', 't', 'e'], ['s', 'l', 't', 'e']), ['s=s', 'l=l', 'x<', 't=t', 'e=e']);
  });

  test('the alignment is a shortest edit script (the longest common subsequence stays paired)', () => {
    const a = 'ABCABBA'.split('');
    const b = 'CBABAC'.split('');
    const rows = alignEvents(a, b, (s) => s).rows;
    // LCS of these is 4 (Myers' own example): 4 pairs, 3 removed, 2 added.
    assert.deepEqual(alignmentCounts(rows), { matched: 4, removed: 3, added: 2 });
    // Every event of each side appears once, in its order.
    assert.deepEqual(
      rows.filter((r) => r.a).map((r) => r.a),
      a,
    );
    assert.deepEqual(
      rows.filter((r) => r.b).map((r) => r.b),
      b,
    );
    for (const r of rows) if (r.a && r.b) assert.equal(r.a, r.b);
  });

  test('on random sequences it pairs as many events as the longest common subsequence has', () => {
    const lcs = (a: string[], b: string[]) => {
      const dp = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
      for (let i = 1; i <= a.length; i += 1)
        for (let j = 1; j <= b.length; j += 1) dp[i]![j] = a[i - 1] === b[j - 1] ? dp[i - 1]![j - 1]! + 1 : Math.max(dp[i - 1]![j]!, dp[i]![j - 1]!);
      return dp[a.length]![b.length]!;
    };
    let seed = 42;
    // Park–Miller: exact in doubles, the same sequences on every run.
    const next = () => (seed = (seed * 16_807) % 2_147_483_647) % 4;
    for (let round = 0; round < 200; round += 1) {
      const a = Array.from({ length: next() * 5 }, () => 'wxyz'[next()]!);
      const b = Array.from({ length: next() * 5 }, () => 'wxyz'[next()]!);
      const rows = alignEvents(a, b, (s) => s).rows;
      assert.equal(alignmentCounts(rows).matched, lcs(a, b), `${a.join('')} vs ${b.join('')}`);
      assert.deepEqual(
        rows.filter((r) => r.a).map((r) => r.a),
        a,
      );
      assert.deepEqual(
        rows.filter((r) => r.b).map((r) => r.b),
        b,
      );
    }
  });

  test('one side empty: every event of the other is a gap', () => {
    assert.deepEqual(picture([], ['a', 'b']), ['>a', '>b']);
    assert.deepEqual(picture(['a'], []), ['a<']);
    assert.deepEqual(picture([], []), []);
  });

  test('past maxEdits differences the middle is paired by position, and the alignment says it is not exact', () => {
    const result = alignEvents(['s', 'a', 'b', 'c', 'e'], ['s', 'x', 'b', 'y', 'e'], (s) => s, { maxEdits: 1 });
    assert.equal(result.exact, false);
    assert.deepEqual(
      result.rows.map((r) => [r.a, r.b]),
      [
        ['s', 's'],
        ['a', null],
        [null, 'x'],
        ['b', 'b'],
        ['c', null],
        [null, 'y'],
        ['e', 'e'],
      ],
    );
    assert.equal(alignEvents(['a'], ['b'], (s) => s, { maxEdits: 2 }).exact, true);
  });

  test('only the first maxEvents of each side are aligned, and the cut is counted', () => {
    const result = alignEvents(['a', 'b', 'c'], ['a', 'b', 'c', 'd', 'e'], (s) => s, { maxEvents: 2 });
    assert.deepEqual(
      result.rows.map((r) => [r.a, r.b]),
      [
        ['a', 'a'],
        ['b', 'b'],
      ],
    );
    assert.deepEqual([result.cutA, result.cutB], [1, 3]);
  });

  test('a step is its type and its tool or model: a call of another tool is not the same step', () => {
    assert.equal(stepKey(ev('tool_call', { toolName: 'web_search' })), 'tool_call:web_search');
    assert.equal(stepKey(ev('llm_response', { model: 'gpt-4o' })), 'llm_response:gpt-4o');
    assert.equal(stepKey(ev('session_started')), 'session_started');
    const rows = alignEvents([ev('tool_call', { toolName: 'a' })], [ev('tool_call', { toolName: 'b' })], stepKey).rows;
    assert.deepEqual(alignmentCounts(rows), { matched: 0, removed: 1, added: 1 });
  });
});

describe('compare: differences', () => {
  test("a pair's cost and latency differences are B − A, null on a gap or where a side has no figure", () => {
    const a = ev('llm_response', { model: 'm', costUsd: 0.002, latencyMs: 900 });
    const b = ev('llm_response', { model: 'm', costUsd: 0.0005, latencyMs: 1500 });
    const diff = pairDiff({ a, b });
    assert.ok(Math.abs(diff.cost! - -0.0015) < 1e-12);
    assert.equal(diff.latency, 600);
    assert.deepEqual(pairDiff({ a, b: null }), { cost: null, latency: null });
    assert.deepEqual(pairDiff({ a: ev('tool_response', { latencyMs: 450 }), b: ev('tool_error', { latencyMs: 1200 }) }), {
      cost: null,
      latency: 750,
    });
    assert.deepEqual(pairDiff({ a: ev('tool_call'), b: ev('tool_call') }), { cost: null, latency: null });
  });

  test("a session's tokens (input plus output) and summed step latency", () => {
    const totals = totalsOf([
      ev('session_started'),
      ev('llm_response', { costUsd: 0.002, latencyMs: 900, inputTokens: 900, outputTokens: 120 }),
      ev('cost_tracked', { costUsd: 0.001, inputTokens: 10, outputTokens: null }),
      ev('tool_error', { latencyMs: 1200 }),
    ]);
    assert.deepEqual(totals, { tokens: 1030, latency: 2100 });
  });
});
