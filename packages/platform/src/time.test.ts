import assert from 'node:assert/strict';
import { test } from 'node:test';
import { toIso, toIsoOrNull } from './time.ts';

test('toIso answers each time its own text, whatever came before (it keeps the last answer)', () => {
  const times = [Date.parse('2026-12-01T12:00:00.000Z'), Date.parse('2026-12-01T12:00:00.001Z'), 0, -1, 8.64e15];
  for (const a of times) {
    for (const b of times) {
      assert.equal(toIso(a), new Date(a).toISOString());
      assert.equal(toIso(b), new Date(b).toISOString());
      assert.equal(toIso(b), new Date(b).toISOString());
    }
  }
  assert.equal(toIsoOrNull(null), null);
  // A time with no ISO text is refused, also right after a valid one and again after that.
  toIso(0);
  assert.throws(() => toIso(Number.NaN), RangeError);
  assert.throws(() => toIso(8.64e15 + 1), RangeError);
  assert.equal(toIso(0), '1970-01-01T00:00:00.000Z');
});
