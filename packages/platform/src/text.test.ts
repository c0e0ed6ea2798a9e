import assert from 'node:assert/strict';
import { test } from 'node:test';
import { groupedInteger, sharedJsonValue } from './text.ts';

test('sharedJsonValue: a repeated text is parsed once and its value shared, frozen all through', () => {
  const text = '{"decision":"route_to_human","approvers":["ops"],"quorum":{"approvals":2,"groups":["sre"]}}';
  const value = sharedJsonValue(text) as { approvers: string[]; quorum: { groups: string[] } };
  assert.deepEqual(value, JSON.parse(text));
  // The same text read from another row (another string object) answers the same value.
  assert.equal(sharedJsonValue(`${text.slice(0, 10)}${text.slice(10)}`), value);
  for (const part of [value, value.approvers, value.quorum, value.quorum.groups]) assert.ok(Object.isFrozen(part));
  assert.throws(() => value.approvers.push('attacker'), TypeError);
  assert.throws(() => sharedJsonValue('{"unterminated"'), SyntaxError);
});

test('sharedJsonValue: more distinct texts than it keeps, and texts too long to keep, still parse right', () => {
  for (let i = 0; i < 2000; i++) assert.deepEqual(sharedJsonValue(`{"rule":${i}}`), { rule: i });
  assert.deepEqual(sharedJsonValue('{"rule":7}'), { rule: 7 });
  const long = JSON.stringify({ approvers: Array.from({ length: 1000 }, (_, i) => `approver-${i}`) });
  const first = sharedJsonValue(long);
  assert.deepEqual(first, JSON.parse(long));
  assert.ok(Object.isFrozen(first));
  assert.notEqual(sharedJsonValue(long), first, 'a text past the limit is not kept');
});

test('groupedInteger: an integer grouped in thousands exactly as en-US toLocaleString writes it', () => {
  const cases = [0, 7, 42, 999, 1000, 1001, 9999, 10_000, 123_456, 1_000_000, 9_007_199_254_740_991];
  for (const n of [...cases, ...cases.map((c) => -c).filter((c) => c !== 0)]) assert.equal(groupedInteger(n), n.toLocaleString('en-US'), String(n));
  for (let n = 1; n < 1e15; n = n * 7 + 3) assert.equal(groupedInteger(n), n.toLocaleString('en-US'));
});
