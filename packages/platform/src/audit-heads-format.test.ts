import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { HEAD_MAP_BUCKETS, headBucketHash, headMapRoot, HeadMapTree } from './audit-heads-format.ts';

const bucketHash = (seed: string): Buffer => createHash('sha256').update(seed).digest();

test('the map tree kept between checkpoints has the root recomputed from every bucket, after changes of one, several and every bucket', () => {
  const hashes = Array.from({ length: HEAD_MAP_BUCKETS }, () => headBucketHash([]));
  const tree = new HeadMapTree(hashes);
  assert.deepEqual(tree.root, headMapRoot(hashes));
  for (const changed of [[7], [0, 1, 2, 4095, 2048, 1000, 1001], Array.from({ length: HEAD_MAP_BUCKETS }, (_, i) => i)]) {
    const changes = new Map(changed.map((bucket) => [bucket, bucketHash(`${changed.length}:${bucket}`)]));
    for (const [bucket, hash] of changes) hashes[bucket] = hash;
    tree.setAll(changes);
    assert.deepEqual(tree.root, headMapRoot(hashes), `after ${changed.length} changed buckets`);
  }
});
