import { hash } from 'node:crypto';
import { canonicalJson } from './crypto.ts';
import { inclusionProof, leafHash, nodeHash, treeRoot, verifyInclusion, type NodeReader } from './merkle.ts';

/**
 * The map of scope heads (docs/audit.md, "Session heads"): each scope's (session's, request's)
 * recorded chain head, in 4,096 buckets by the first 12 bits of SHA-256 of its id; each bucket
 * hashed whole, the buckets the leaves of an RFC 9162 tree whose root a heads leaf commits at every
 * checkpoint. Pure functions: the service builds it (audit-heads.ts), `vigil verify` checks it.
 */

export const HEAD_MAP_BUCKETS = 4096;
/** The kind of the leaf committing the map (the last leaf of every checkpoint's tree). */
export const HEADS_LEAF = 'heads';

/** A recorded chain head: the last seq (−1: none) and its hash (null: none). */
export interface ScopeHead {
  seq: number;
  hash: string | null;
}

/** The bucket of a scope: the first 12 bits of SHA-256 of its id's UTF-8 bytes. */
export function headBucketOf(scopeId: string): number {
  const digest = hash('sha256', Buffer.from(scopeId, 'utf8'), 'buffer');
  return ((digest[0]! << 8) | digest[1]!) >> 4;
}

/** A map entry: the canonical JSON of {headHash, headSeq, scope}. */
export function headEntryText(scopeId: string, head: ScopeHead): string {
  return canonicalJson({ headHash: head.hash, headSeq: head.seq, scope: scopeId });
}

/** Orders a bucket's entries by scope id (UTF-16 code units, as JavaScript compares strings). */
export function byScope(a: { scopeId: string }, b: { scopeId: string }): number {
  return a.scopeId < b.scopeId ? -1 : a.scopeId > b.scopeId ? 1 : 0;
}

/** A bucket's hash: SHA-256 of its entries' texts, each followed by "\n", in scope order (an empty bucket: SHA-256 of nothing). */
export function headBucketHash(entryTexts: readonly string[]): Buffer {
  return hash('sha256', entryTexts.map((text) => `${text}\n`).join(''), 'buffer');
}

/** The tree over the buckets: leaf `b` is SHA-256(0x00 || bucket b's hash). */
function mapReader(bucketHashes: readonly Buffer[]): NodeReader {
  const known = new Map<number, Buffer>();
  const read: NodeReader = (level, index) => {
    const key = index * 16 + level;
    let node = known.get(key);
    if (node === undefined) {
      node = level === 0 ? leafHash(bucketHashes[index]!) : nodeHash(read(level - 1, index * 2), read(level - 1, index * 2 + 1));
      known.set(key, node);
    }
    return node;
  };
  return read;
}

export function headMapRoot(bucketHashes: readonly Buffer[]): Buffer {
  return treeRoot(HEAD_MAP_BUCKETS, mapReader(bucketHashes));
}

/**
 * The map tree kept whole (every node of every level), so that a changed bucket rehashes only its
 * path (13 hashes) instead of the tree's 8,191: what the service keeps between checkpoints. With
 * 4,096 (a power of two) leaves its root is the RFC 9162 root headMapRoot computes.
 */
export class HeadMapTree {
  private readonly levels: Buffer[][];

  constructor(bucketHashes: readonly Buffer[]) {
    this.levels = [bucketHashes.map((bucketHash) => leafHash(bucketHash))];
    for (let width = HEAD_MAP_BUCKETS / 2; width >= 1; width /= 2) {
      const below = this.levels[this.levels.length - 1]!;
      this.levels.push(Array.from({ length: width }, (_, i) => nodeHash(below[2 * i]!, below[2 * i + 1]!)));
    }
  }

  /**
   * Sets the buckets' hashes, rehashing each node above them once: a node that several changed
   * buckets share is not rehashed for each (K changed buckets cost at most min(12·K, 4,095) inner
   * hashes, not 12·K).
   */
  setAll(changes: ReadonlyMap<number, Buffer>): void {
    let dirty = new Set<number>();
    for (const [bucket, bucketHash] of changes) {
      this.levels[0]![bucket] = leafHash(bucketHash);
      dirty.add(bucket >> 1);
    }
    for (let level = 1; level < this.levels.length; level += 1) {
      const below = this.levels[level - 1]!;
      const above = new Set<number>();
      for (const index of dirty) {
        this.levels[level]![index] = nodeHash(below[2 * index]!, below[2 * index + 1]!);
        above.add(index >> 1);
      }
      dirty = above;
    }
  }

  get root(): Buffer {
    return this.levels[this.levels.length - 1]![0]!;
  }
}

/** The inclusion proof of bucket `bucket` in the map tree (RFC 9162, leaf side first). */
export function headMapPath(bucketHashes: readonly Buffer[], bucket: number): Buffer[] {
  return inclusionProof(bucket, HEAD_MAP_BUCKETS, mapReader(bucketHashes));
}

/** The heads leaf's data: canonical JSON of {buckets, kind: "heads", log, root, treeSize, v: 1}; `treeSize` is its own index. */
export function headsLeafText(log: string, treeSize: number, root: Buffer): string {
  return canonicalJson({ buckets: HEAD_MAP_BUCKETS, kind: HEADS_LEAF, log, root: root.toString('hex'), treeSize, v: 1 });
}

/** A heads leaf parsed: its tree size and map root; undefined when `text` is not the canonical heads leaf of `log`. */
export function parseHeadsLeaf(text: string, log: string): { treeSize: number; root: Buffer } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const leaf = value as Record<string, unknown>;
  if (leaf.v !== 1 || leaf.kind !== HEADS_LEAF || leaf.log !== log || leaf.buckets !== HEAD_MAP_BUCKETS) return undefined;
  if (!Number.isSafeInteger(leaf.treeSize) || typeof leaf.root !== 'string' || !/^[0-9a-f]{64}$/.test(leaf.root)) return undefined;
  const root = Buffer.from(leaf.root, 'hex');
  return headsLeafText(log, leaf.treeSize as number, root) === text ? { treeSize: leaf.treeSize as number, root } : undefined;
}

/**
 * What a bucket and its proof say of a scope: its committed head, `null` when the bucket (proven
 * whole) holds no entry of it, or a string saying why the proof fails.
 */
export function headInBucket(scopeId: string, bucket: number, entries: readonly string[], path: readonly Buffer[], root: Buffer): ScopeHead | null | string {
  if (bucket !== headBucketOf(scopeId)) return `bucket ${bucket} is not the bucket of ${scopeId} (${headBucketOf(scopeId)})`;
  if (!verifyInclusion(bucket, HEAD_MAP_BUCKETS, leafHash(headBucketHash(entries)), path, root))
    return `the entries of bucket ${bucket} are not the ones the map root commits`;
  let found: ScopeHead | null = null;
  let previous: string | undefined;
  for (const text of entries) {
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return `an entry of bucket ${bucket} is not JSON`;
    }
    const scope = entry.scope;
    if (typeof scope !== 'string' || !Number.isSafeInteger(entry.headSeq) || (entry.headHash !== null && typeof entry.headHash !== 'string'))
      return `an entry of bucket ${bucket} is not {headHash, headSeq, scope}`;
    if (previous !== undefined && !(previous < scope)) return `the entries of bucket ${bucket} are not in scope order`;
    previous = scope;
    if (scope === scopeId) found = { seq: entry.headSeq as number, hash: entry.headHash as string | null };
  }
  return found;
}
