import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import {
  HEAD_MAP_BUCKETS,
  HEAD_MAP_MAX_BUCKETS,
  headBucketCount,
  headBucketHash,
  headBucketKeys,
  headBucketOf,
  headEntryText,
  headKeyOf,
  HeadMapTree,
  headsLeafText,
  parseHeadsLeaf,
} from './audit-heads-format.ts';
import { canonicalJson } from './crypto.ts';
import { inclusionProof, leafHash, nodeHash, treeRoot, type NodeReader } from './merkle.ts';

const bucketHash = (seed: string): Buffer => createHash('sha256').update(seed).digest();

/** The RFC 9162 tree over the buckets' leaf hashes, read through merkle.ts (the log's own tree code), not through HeadMapTree. */
function reference(hashes: ReadonlyMap<number, Buffer>): NodeReader {
  const empty = headBucketHash([]);
  const known = new Map<string, Buffer>();
  const read: NodeReader = (level, index) => {
    const key = `${level}:${index}`;
    let node = known.get(key);
    if (node === undefined) {
      node = level === 0 ? leafHash(hashes.get(index) ?? empty) : nodeHash(read(level - 1, index * 2), read(level - 1, index * 2 + 1));
      known.set(key, node);
    }
    return node;
  };
  return read;
}

describe('the map of heads', () => {
  for (const count of [HEAD_MAP_BUCKETS, 2 * HEAD_MAP_BUCKETS]) {
    test(`${count} buckets: the tree kept between checkpoints has the RFC 9162 root and paths, after changes of one, several and every bucket`, () => {
      const hashes = new Map<number, Buffer>();
      const tree = new HeadMapTree(count, hashes);
      assert.deepEqual(tree.root, treeRoot(count, reference(hashes)));
      for (const changed of [[7], [0, 1, 2, count - 1, count / 2, 1000, 1001], Array.from({ length: count }, (_, i) => i)]) {
        const changes = new Map(changed.map((bucket) => [bucket, bucketHash(`${changed.length}:${bucket}`)]));
        for (const [bucket, hash] of changes) hashes.set(bucket, hash);
        tree.setAll(changes);
        const read = reference(hashes);
        assert.deepEqual(tree.root, treeRoot(count, read), `after ${changed.length} changed buckets`);
        for (const bucket of [0, 7, count - 1]) assert.deepEqual(tree.path(bucket), inclusionProof(bucket, count, read), `bucket ${bucket}'s path`);
      }
    });
  }

  test('a map doubles its buckets while it holds more than 8 scopes per bucket, never shrinks, and stops at 2^24', () => {
    assert.equal(headBucketCount(HEAD_MAP_BUCKETS, 0), 4096);
    assert.equal(headBucketCount(HEAD_MAP_BUCKETS, 8 * 4096), 4096);
    assert.equal(headBucketCount(HEAD_MAP_BUCKETS, 8 * 4096 + 1), 8192);
    assert.equal(headBucketCount(HEAD_MAP_BUCKETS, 1_000_000), 131_072);
    assert.equal(headBucketCount(131_072, 10), 131_072);
    assert.equal(headBucketCount(HEAD_MAP_BUCKETS, 10 ** 12), HEAD_MAP_MAX_BUCKETS);
  });

  test("a scope's bucket is the first log2(buckets) bits of SHA-256 of its id, inside its bucket's key range at every count", () => {
    const digest = createHash('sha256').update('session-42').digest();
    assert.equal(headBucketOf('session-42'), ((digest[0]! << 8) | digest[1]!) >> 4);
    assert.equal(headBucketOf('session-42', 8192), ((digest[0]! << 8) | digest[1]!) >> 3);
    assert.equal(headKeyOf('session-42'), (digest[0]! << 16) | (digest[1]! << 8) | digest[2]!);
    for (const count of [4096, 8192, 1 << 20]) {
      const { first, last } = headBucketKeys(headBucketOf('session-42', count), count);
      assert.ok(first <= headKeyOf('session-42') && headKeyOf('session-42') <= last);
    }
  });

  test("an entry is the canonical JSON of {headHash, headSeq, scope}, whatever the id's characters; a lone surrogate is refused as canonicalJson refuses it", () => {
    for (const scope of ['s-1', 'q"uote\\back', 'line\nbreak\u0001', 'é中😀', '\u2028\u007f']) {
      for (const head of [
        { seq: 0, hash: null },
        { seq: 41, hash: 'ab'.repeat(32) },
        { seq: -1, hash: null },
      ])
        assert.equal(headEntryText(scope, head), canonicalJson({ headHash: head.hash, headSeq: head.seq, scope }), scope);
      const digest = createHash('sha256').update(scope, 'utf8').digest();
      assert.equal(headKeyOf(scope), (digest[0]! << 16) | (digest[1]! << 8) | digest[2]!, `${scope}'s key is read from SHA-256 of its UTF-8`);
    }
    assert.throws(() => headEntryText('a\ud800b', { seq: 0, hash: null }), /Lone surrogate/);
  });

  test('a heads leaf names its bucket count: a power of two from 4,096 to 2^24, anything else is not a heads leaf', () => {
    const root = bucketHash('root');
    assert.deepEqual(parseHeadsLeaf(headsLeafText('log', 9, root, 8192), 'log'), { treeSize: 9, root, buckets: 8192 });
    assert.deepEqual(parseHeadsLeaf(headsLeafText('log', 9, root), 'log')?.buckets, 4096);
    for (const buckets of [2048, 3000, 6144, 2 ** 25])
      assert.equal(parseHeadsLeaf(headsLeafText('log', 9, root, buckets), 'log'), undefined, `${buckets} buckets`);
  });
});
