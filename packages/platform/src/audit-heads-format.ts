import { hash } from 'node:crypto';
import { canonicalJson, canonicalString, sha256 } from './crypto.ts';
import { leafHash, verifyInclusion, writeNodeHash } from './merkle.ts';

/**
 * The map of scope heads (docs/audit.md, "Session heads"): each scope's (session's, request's)
 * recorded chain head, in buckets by the first bits of SHA-256 of its id; each bucket hashed whole,
 * the buckets the leaves of an RFC 9162 tree whose root a heads leaf commits at every checkpoint.
 * The map starts with 4,096 buckets and doubles them whenever it holds more than 8 scopes per
 * bucket, so that rehashing a changed bucket costs the same however long the log's history.
 * Pure functions: the service builds it (audit-heads.ts), `vigil verify` checks it.
 */

export const HEAD_MAP_BUCKETS = 4096;
/** The most buckets a map has: its buckets are named by the first 24 bits of a scope's hash (headKeyOf). */
export const HEAD_MAP_MAX_BUCKETS = 1 << 24;
/** Scopes per bucket, on average, above which a map doubles its buckets. */
const SCOPES_PER_BUCKET = 8;
/** The kind of the leaf committing the map (the last leaf of every checkpoint's tree). */
export const HEADS_LEAF = 'heads';

/** The buckets of a map that had `previous` buckets once it holds `scopes` scopes: never fewer, doubled while over 8 scopes per bucket. */
export function headBucketCount(previous: number, scopes: number): number {
  let buckets = Math.max(previous, HEAD_MAP_BUCKETS);
  while (buckets < HEAD_MAP_MAX_BUCKETS && scopes > SCOPES_PER_BUCKET * buckets) buckets *= 2;
  return buckets;
}

/** Whether `buckets` is a bucket count a map can have: a power of two from 4,096 to 2^24. */
function isBucketCount(buckets: unknown): buckets is number {
  return (
    Number.isSafeInteger(buckets) &&
    (buckets as number) >= HEAD_MAP_BUCKETS &&
    (buckets as number) <= HEAD_MAP_MAX_BUCKETS &&
    ((buckets as number) & ((buckets as number) - 1)) === 0
  );
}

/** A recorded chain head: the last seq (−1: none) and its hash (null: none). */
export interface ScopeHead {
  seq: number;
  hash: string | null;
}

/** The first 24 bits of SHA-256 of a scope's id (UTF-8): its bucket under every bucket count (headBucketOf). */
export function headKeyOf(scopeId: string): number {
  // One byte a character: no Buffer made for the three bytes read.
  const digest = hash('sha256', scopeId, 'binary');
  return (digest.charCodeAt(0) << 16) | (digest.charCodeAt(1) << 8) | digest.charCodeAt(2);
}

/** The bits a key keeps to name its bucket among `buckets`. */
function bucketShift(buckets: number): number {
  return 24 - (31 - Math.clz32(buckets));
}

/** The bucket among `buckets` of a scope whose key (headKeyOf) is `key`. */
export function headBucketOfKey(key: number, buckets: number): number {
  return key >> bucketShift(buckets);
}

/** The bucket of a scope among `buckets`: the first log2(buckets) bits of SHA-256 of its id. */
export function headBucketOf(scopeId: string, buckets = HEAD_MAP_BUCKETS): number {
  return headBucketOfKey(headKeyOf(scopeId), buckets);
}

/** The keys (headKeyOf) of bucket `bucket` among `buckets`: from `first` to `last` inclusive. */
export function headBucketKeys(bucket: number, buckets: number): { first: number; last: number } {
  const shift = bucketShift(buckets);
  return { first: bucket << shift, last: ((bucket + 1) << shift) - 1 };
}

/** How an entry's last member, its scope, begins. */
export const HEAD_SCOPE_MEMBER = ',"scope":';

/** The end of every entry of `scopeId`, whatever its head: its last member and the closing brace. */
export function headScopeMember(scopeId: string): string {
  return `${HEAD_SCOPE_MEMBER}${canonicalString(scopeId)}}`;
}

/** A map entry: the canonical JSON of {headHash, headSeq, scope}. */
export function headEntryText(scopeId: string, head: ScopeHead): string {
  // Written out (a checkpoint writes one per changed scope): its members in RFC 8785's order, a safe integer as its digits.
  return `{"headHash":${head.hash === null ? 'null' : canonicalString(head.hash)},"headSeq":${head.seq}${headScopeMember(scopeId)}`;
}

/** Orders a bucket's entries by scope id (UTF-16 code units, as JavaScript compares strings). */
export function byScope(a: { scopeId: string }, b: { scopeId: string }): number {
  return a.scopeId < b.scopeId ? -1 : a.scopeId > b.scopeId ? 1 : 0;
}

/** A bucket's text, what its hash covers: its entries' texts in scope order, each followed by "\n". */
export function headBucketText(entryTexts: readonly string[]): string {
  return entryTexts.map((text) => `${text}\n`).join('');
}

/** A bucket's hash: SHA-256 of its text (headBucketText; an empty bucket: SHA-256 of nothing). */
export function headBucketHash(entryTexts: readonly string[]): Buffer {
  return headBucketTextHash(headBucketText(entryTexts));
}

/** The same from the bucket's text. */
export function headBucketTextHash(text: string): Buffer {
  return sha256(text);
}

const EMPTY_BUCKET_LEAF = leafHash(headBucketHash([]));

/**
 * The tree over a map's buckets (leaf b: SHA-256(0x00 || bucket b's hash)), kept whole in one
 * buffer, heap-ordered (node 1 the root, node i's children 2i and 2i + 1, bucket b at buckets + b):
 * a changed bucket rehashes only its path. With a power-of-two number of leaves, its root is the
 * RFC 9162 root of the buckets and a bucket's path its RFC 9162 inclusion proof.
 */
export class HeadMapTree {
  private readonly nodes: Buffer;

  /** The tree of `buckets` buckets whose hashes are `bucketHashes` (the others empty). */
  constructor(
    readonly buckets: number,
    bucketHashes: ReadonlyMap<number, Buffer>,
  ) {
    this.nodes = Buffer.alloc(2 * buckets * 32);
    for (let bucket = 0; bucket < buckets; bucket += 1) {
      const bucketHash = bucketHashes.get(bucket);
      (bucketHash === undefined ? EMPTY_BUCKET_LEAF : leafHash(bucketHash)).copy(this.nodes, (buckets + bucket) * 32);
    }
    for (let node = buckets - 1; node >= 1; node -= 1) this.rehash(node);
  }

  private node(index: number): Buffer {
    return this.nodes.subarray(index * 32, index * 32 + 32);
  }

  private rehash(index: number): void {
    // A node's children are adjacent (2i, 2i + 1): hashed in the tree's buffer, no Buffer made.
    writeNodeHash(this.nodes, index * 64, index * 32);
  }

  /** Sets the buckets' hashes, rehashing each node above them once (a node several changed buckets share is not rehashed for each). */
  setAll(changes: ReadonlyMap<number, Buffer>): void {
    // Node indices in ascending order, each once: a level's parents (i >> 1) come out in order too.
    let dirty: number[] = [];
    for (const [bucket, bucketHash] of changes) {
      leafHash(bucketHash).copy(this.nodes, (this.buckets + bucket) * 32);
      dirty.push((this.buckets + bucket) >> 1);
    }
    dirty.sort((a, b) => a - b);
    while (dirty.length > 0) {
      const above: number[] = [];
      for (let i = 0; i < dirty.length; i++) {
        const index = dirty[i]!;
        if (i > 0 && index === dirty[i - 1]) continue;
        this.rehash(index);
        if (index > 1) above.push(index >> 1);
      }
      dirty = above;
    }
  }

  /** Whether bucket `bucket` is empty: its leaf is the empty bucket's. */
  isEmpty(bucket: number): boolean {
    const at = (this.buckets + bucket) * 32;
    return EMPTY_BUCKET_LEAF.compare(this.nodes, at, at + 32) === 0;
  }

  get root(): Buffer {
    return Buffer.from(this.node(1));
  }

  /** The inclusion proof of bucket `bucket` (RFC 9162, leaf side first). */
  path(bucket: number): Buffer[] {
    const path: Buffer[] = [];
    for (let index = this.buckets + bucket; index > 1; index >>= 1) path.push(Buffer.from(this.node(index ^ 1)));
    return path;
  }
}

/** The heads leaf's data: canonical JSON of {buckets, kind: "heads", log, root, treeSize, v: 1}; `treeSize` is its own index. */
export function headsLeafText(log: string, treeSize: number, root: Buffer, buckets = HEAD_MAP_BUCKETS): string {
  return canonicalJson({ buckets, kind: HEADS_LEAF, log, root: root.toString('hex'), treeSize, v: 1 });
}

/** A heads leaf parsed: its tree size, map root and bucket count; undefined when `text` is not the canonical heads leaf of `log`. */
export function parseHeadsLeaf(text: string, log: string): { treeSize: number; root: Buffer; buckets: number } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const leaf = value as Record<string, unknown>;
  if (leaf.v !== 1 || leaf.kind !== HEADS_LEAF || leaf.log !== log || !isBucketCount(leaf.buckets)) return undefined;
  if (!Number.isSafeInteger(leaf.treeSize) || typeof leaf.root !== 'string' || !/^[0-9a-f]{64}$/.test(leaf.root)) return undefined;
  const root = Buffer.from(leaf.root, 'hex');
  const buckets = leaf.buckets;
  return headsLeafText(log, leaf.treeSize as number, root, buckets) === text ? { treeSize: leaf.treeSize as number, root, buckets } : undefined;
}

/**
 * What a bucket and its proof say of a scope: its committed head, `null` when the bucket (proven
 * whole) holds no entry of it, or a string saying why the proof fails.
 */
export function headInBucket(
  scopeId: string,
  bucket: number,
  entries: readonly string[],
  path: readonly Buffer[],
  map: { root: Buffer; buckets: number },
): ScopeHead | null | string {
  const { root, buckets } = map;
  if (bucket !== headBucketOf(scopeId, buckets)) return `bucket ${bucket} is not the bucket of ${scopeId} (${headBucketOf(scopeId, buckets)})`;
  if (!verifyInclusion(bucket, buckets, leafHash(headBucketHash(entries)), path, root))
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
