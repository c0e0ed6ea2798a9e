import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  completedBy,
  consistencyProof,
  EMPTY_ROOT,
  inclusionProof,
  leafHash,
  nodeHash,
  nodesNeeded,
  rootOf,
  splitPoint,
  treeRoot,
  verifyConsistency,
  verifyInclusion,
  type NodeReader,
} from './merkle.ts';

// The RFC's definitions applied literally to the leaf hashes: the reference the stored-node versions must match.
function naivePath(m: number, leaves: readonly Buffer[]): Buffer[] {
  if (leaves.length <= 1) return [];
  const k = splitPoint(leaves.length);
  return m < k ? [...naivePath(m, leaves.slice(0, k)), rootOf(leaves.slice(k))] : [...naivePath(m - k, leaves.slice(k)), rootOf(leaves.slice(0, k))];
}

function naiveSubproof(m: number, leaves: readonly Buffer[], whole: boolean): Buffer[] {
  const n = leaves.length;
  if (m === n) return whole ? [] : [rootOf(leaves)];
  const k = splitPoint(n);
  return m <= k
    ? [...naiveSubproof(m, leaves.slice(0, k), whole), rootOf(leaves.slice(k))]
    : [...naiveSubproof(m - k, leaves.slice(k), false), rootOf(leaves.slice(0, k))];
}

function leavesOf(size: number, salt = ''): Buffer[] {
  return Array.from({ length: size }, (_, i) => leafHash(`${salt}leaf ${i}`));
}

/** A reader over perfect subtrees built the way a store builds them, leaf by leaf (completedBy). */
function storedReader(leaves: readonly Buffer[]): { read: NodeReader; reads: () => number } {
  const nodes = new Map<string, Buffer>();
  leaves.forEach((leaf, index) => {
    for (const node of completedBy(index)) {
      const hash = node.level === 0 ? leaf : nodeHash(nodes.get(`${node.level - 1}:${node.index * 2}`)!, nodes.get(`${node.level - 1}:${node.index * 2 + 1}`)!);
      nodes.set(`${node.level}:${node.index}`, hash);
    }
  });
  let count = 0;
  return {
    read: (level, index) => {
      count += 1;
      const hash = nodes.get(`${level}:${index}`);
      if (hash === undefined) throw new Error(`node ${level}:${index} is not complete`);
      return hash;
    },
    reads: () => count,
  };
}

const hex = (list: readonly Buffer[]) => list.map((b) => b.toString('hex'));

test('leaf and node hashes are domain-separated SHA-256 (RFC 9162 §2.1.1)', () => {
  assert.equal(leafHash(Buffer.alloc(0)).toString('hex'), '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d');
  assert.equal(EMPTY_ROOT.toString('hex'), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  assert.notEqual(nodeHash(leafHash('a'), leafHash('b')).toString('hex'), nodeHash(leafHash('b'), leafHash('a')).toString('hex'));
});

test('the RFC 9162 §2.1.5 seven-leaf example: audit paths and consistency proofs', () => {
  const [a, b, c, d, e, f, j] = leavesOf(7);
  const g = nodeHash(a!, b!);
  const h = nodeHash(c!, d!);
  const i = nodeHash(e!, f!);
  const k = nodeHash(g, h);
  const l = nodeHash(i, j!);
  const { read } = storedReader([a!, b!, c!, d!, e!, f!, j!]);
  assert.deepEqual(hex([treeRoot(7, read)]), hex([nodeHash(k, l)]));
  assert.deepEqual(hex(inclusionProof(0, 7, read)), hex([b!, h, l]));
  assert.deepEqual(hex(inclusionProof(3, 7, read)), hex([c!, g, l]));
  assert.deepEqual(hex(inclusionProof(4, 7, read)), hex([f!, j!, k]));
  assert.deepEqual(hex(inclusionProof(6, 7, read)), hex([i, k]));
  assert.deepEqual(hex(consistencyProof(3, 7, read)), hex([c!, d!, g, l]));
  assert.deepEqual(hex(consistencyProof(4, 7, read)), hex([l]));
  assert.deepEqual(hex(consistencyProof(6, 7, read)), hex([i, j!, k]));
});

test('every index and size up to 64: stored-node proofs equal the RFC definitions and verify', () => {
  const leaves = leavesOf(64);
  const { read } = storedReader(leaves);
  for (let size = 1; size <= 64; size += 1) {
    const tree = leaves.slice(0, size);
    const root = treeRoot(size, read);
    assert.deepEqual(root, rootOf(tree));
    for (let index = 0; index < size; index += 1) {
      const path = inclusionProof(index, size, read);
      assert.deepEqual(hex(path), hex(naivePath(index, tree)), `path ${index}/${size}`);
      assert.ok(verifyInclusion(index, size, leaves[index]!, path, root), `verify ${index}/${size}`);
      assert.ok(!verifyInclusion(index, size, leafHash('forged'), path, root));
      if (size > 1) assert.ok(!verifyInclusion((index + 1) % size, size, leaves[index]!, path, root), `wrong index ${index}/${size}`);
    }
    for (let m = 1; m <= size; m += 1) {
      const proof = consistencyProof(m, size, read);
      assert.deepEqual(hex(proof), hex(naiveSubproof(m, tree, true)), `proof ${m}->${size}`);
      assert.ok(verifyConsistency(m, size, rootOf(leaves.slice(0, m)), root, proof), `verify ${m}->${size}`);
      if (m < size) assert.ok(!verifyConsistency(m, size, rootOf(leavesOf(m, 'other ')), root, proof), `forked ${m}->${size}`);
    }
  }
});

test('random trees: proofs verify, and any changed byte of leaf, path or root is detected', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 1, max: 3000 }).chain((size) => fc.tuple(fc.constant(size), fc.nat(size - 1), fc.integer({ min: 1, max: size }), fc.nat(31))),
      ([size, index, m, byte]) => {
        const leaves = leavesOf(size);
        const { read } = storedReader(leaves);
        const root = treeRoot(size, read);
        const path = inclusionProof(index, size, read);
        assert.ok(verifyInclusion(index, size, leaves[index]!, path, root));
        const flip = (b: Buffer) => {
          const copy = Buffer.from(b);
          copy[byte] = copy[byte]! ^ 1;
          return copy;
        };
        assert.ok(!verifyInclusion(index, size, flip(leaves[index]!), path, root));
        assert.ok(!verifyInclusion(index, size, leaves[index]!, path, flip(root)));
        if (path.length > 0) assert.ok(!verifyInclusion(index, size, leaves[index]!, [...path.slice(0, -1), flip(path.at(-1)!)], root));

        const oldRoot = treeRoot(m, read);
        const proof = consistencyProof(m, size, read);
        assert.ok(verifyConsistency(m, size, oldRoot, root, proof));
        assert.ok(!verifyConsistency(m, size, flip(oldRoot), root, proof));
        assert.ok(!verifyConsistency(m, size, oldRoot, flip(root), proof));
        if (proof.length > 0) assert.ok(!verifyConsistency(m, size, oldRoot, root, [flip(proof[0]!), ...proof.slice(1)]));
      },
    ),
    { numRuns: 150 },
  );
});

test('a proof at a million leaves reads O(log n) stored nodes', () => {
  const size = 1_000_003;
  for (const index of [0, 1, 524_287, 999_999, size - 1]) {
    const needed = nodesNeeded((read) => inclusionProof(index, size, read));
    assert.ok(needed.length <= 2 * Math.ceil(Math.log2(size)), `${needed.length} reads for leaf ${index}`);
    assert.ok(needed.every((node) => (node.index + 1) * 2 ** node.level <= size));
  }
  const consistency = nodesNeeded((read) => consistencyProof(333_333, size, read));
  assert.ok(consistency.length <= 3 * Math.ceil(Math.log2(size)), `${consistency.length} reads for consistency`);
});

test('completedBy: the nodes one append completes', () => {
  assert.deepEqual(completedBy(0), [{ level: 0, index: 0 }]);
  assert.deepEqual(completedBy(6), [{ level: 0, index: 6 }]);
  assert.deepEqual(completedBy(7), [
    { level: 0, index: 7 },
    { level: 1, index: 3 },
    { level: 2, index: 1 },
    { level: 3, index: 0 },
  ]);
});

test('edge cases: empty and equal-size consistency, out-of-range requests', () => {
  const leaves = leavesOf(5);
  const { read } = storedReader(leaves);
  const root = treeRoot(5, read);
  assert.ok(verifyConsistency(0, 5, EMPTY_ROOT, root, []));
  assert.ok(verifyConsistency(5, 5, root, root, consistencyProof(5, 5, read)));
  assert.ok(!verifyConsistency(5, 5, root, EMPTY_ROOT, []));
  assert.ok(!verifyConsistency(6, 5, root, root, []));
  assert.ok(!verifyConsistency(3, 5, treeRoot(3, read), root, []));
  assert.ok(!verifyInclusion(5, 5, leaves[0]!, [], root));
  assert.throws(() => inclusionProof(5, 5, read), RangeError);
  assert.throws(() => consistencyProof(0, 5, read), RangeError);
  assert.throws(() => consistencyProof(6, 5, read), RangeError);
});

test('hashes of any length but 32 bytes prove nothing, and (0, 0) needs both roots empty', () => {
  const leaves = leavesOf(5);
  const { read } = storedReader(leaves);
  const root = treeRoot(5, read);
  const path = inclusionProof(2, 5, read);
  assert.ok(verifyInclusion(2, 5, leaves[2]!, path, root));
  const empty = Buffer.alloc(0);
  // One leaf is its own root: an empty leaf "matched" an empty root.
  assert.ok(!verifyInclusion(0, 1, empty, [], empty));
  assert.ok(!verifyInclusion(0, 1, Buffer.alloc(31), [], Buffer.alloc(31)));
  assert.ok(!verifyInclusion(2, 5, leaves[2]!, path, Buffer.concat([root, Buffer.alloc(1)])));
  assert.ok(!verifyInclusion(2, 5, leaves[2]!, [...path.slice(0, -1), Buffer.alloc(0)], root));
  assert.ok(!verifyConsistency(1, 1, empty, empty, []));
  assert.ok(!verifyConsistency(5, 5, Buffer.alloc(33), Buffer.alloc(33), []));
  assert.ok(!verifyConsistency(0, 5, EMPTY_ROOT, Buffer.alloc(12), []));
  assert.ok(verifyConsistency(0, 0, EMPTY_ROOT, EMPTY_ROOT, []));
  assert.ok(!verifyConsistency(0, 0, EMPTY_ROOT, root, []));
  const proof = consistencyProof(3, 5, read);
  assert.ok(verifyConsistency(3, 5, treeRoot(3, read), root, proof));
  assert.ok(!verifyConsistency(3, 5, treeRoot(3, read), root, [...proof, Buffer.alloc(0)]));
});
