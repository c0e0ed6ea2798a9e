import assert from 'node:assert/strict';
import { test } from 'node:test';
import { auditedGroupsInFlight, GroupCommitter } from './group-commit.ts';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/** A commit that waits until the test lets it finish, so groups can be held in flight. */
function heldCommits() {
  const running: { items: number[]; finish(): void }[] = [];
  const groups: number[][] = [];
  let peak = 0;
  const commit = (items: number[]) =>
    new Promise<number[]>((resolve) => {
      groups.push(items);
      running.push({ items, finish: () => resolve(items.map((item) => item * 10)) });
      peak = Math.max(peak, running.length);
    });
  const finishOldest = async () => {
    running.shift()!.finish();
    // The finished group schedules the next drain (setImmediate) from its settlement; one more turn runs it.
    await nextTurn();
    await nextTurn();
  };
  return { commit, groups, running, finishOldest, peak: () => peak };
}

test('GroupCommitter: at most maxInFlight groups at once; what arrives meanwhile waits and commits together, in order', async () => {
  const inFlight = auditedGroupsInFlight('postgres');
  assert.equal(inFlight, 2);
  assert.equal(auditedGroupsInFlight('sqlite'), 1);
  const held = heldCommits();
  const committer = new GroupCommitter<number, number>(held.commit, { maxInFlight: inFlight, maxGroupSize: 100 });

  // Two items submitted in separate turns start two groups, and both stay in flight.
  const first = committer.submit(1);
  await nextTurn();
  const second = committer.submit(2);
  await nextTurn();
  assert.deepEqual(held.groups, [[1], [2]]);

  // Items arriving while both are in flight start no third transaction.
  const waiting = [3, 4, 5].map((item) => committer.submit(item));
  await nextTurn();
  assert.equal(held.running.length, inFlight);
  assert.deepEqual(held.groups, [[1], [2]]);

  // One group done: the waiting items go as one group, in the order they came.
  await held.finishOldest();
  assert.deepEqual(held.groups, [[1], [2], [3, 4, 5]]);
  await held.finishOldest();
  await held.finishOldest();

  assert.deepEqual(await Promise.all([first, second, ...waiting]), [10, 20, 30, 40, 50]);
  assert.equal(held.peak(), inFlight);
});

test('GroupCommitter: a group never holds more than maxGroupSize, counted by sizeOf', async () => {
  const held = heldCommits();
  const committer = new GroupCommitter<number, number>(held.commit, { maxInFlight: 1, maxGroupSize: 5, sizeOf: (item) => item });
  const results = [4, 1, 3, 2, 9].map((item) => committer.submit(item));
  await nextTurn();
  while (held.running.length > 0) await held.finishOldest();
  // 4 + 1 fill the first group; 3 + 2 the second; 9 is larger than the bound and goes alone.
  assert.deepEqual(held.groups, [[4, 1], [3, 2], [9]]);
  assert.deepEqual(await Promise.all(results), [40, 10, 30, 20, 90]);
});
