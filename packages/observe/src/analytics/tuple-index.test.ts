import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TupleIndex } from './tuple-index.ts';

test('TupleIndex finds a row by every part of its tuple: parts that would join to the same text stay apart, and a number is not its string', () => {
  const index = new TupleIndex<string>();
  const tuples: (string | number)[][] = [[1, 'a|b', 'c'], [1, 'a', 'b|c'], ['1', 'a', 'b|c'], [1, 'a', 'b', 'c'].slice(0, 3), [2, '', '']];
  tuples.forEach((tuple, i) => {
    assert.equal(index.get(tuple), undefined, `tuple ${i} is not there before it is set`);
    index.set(tuple, `row ${i}`);
  });
  tuples.forEach((tuple, i) => assert.equal(index.get([...tuple]), `row ${i}`));
  assert.equal(index.get([1, 'a', 'c']), undefined);
  assert.equal(index.get([3, '', '']), undefined);
  index.set([1, 'a', 'b'], 'replaced');
  assert.equal(index.get([1, 'a', 'b']), 'replaced');
});
