import { EMPTY_ROOT, nodeHash, splitPoint } from '@vigil/platform/audit-verify';
import { isHex64 } from './input.ts';

/**
 * Merkle computations a verifier repeats many times (RFC 9162 §2.1 hashing from
 * @vigil/platform): a root computed while the leaves stream past, and many inclusion proofs checked
 * against one root without rehashing the upper nodes they share.
 */

/**
 * MTH of leaf hashes fed one at a time, in O(log n) memory: a stack of the roots of the perfect
 * subtrees the leaves so far make (largest first), merged as soon as two of the same size meet.
 * The RFC's tree of n leaves is those perfect roots folded from the right.
 */
export class StreamingRoot {
  private readonly frontier: { size: number; hash: Buffer }[] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  add(leafHash: Buffer): void {
    let node = { size: 1, hash: leafHash };
    for (let top = this.frontier.at(-1); top !== undefined && top.size === node.size; top = this.frontier.at(-1)) {
      this.frontier.pop();
      node = { size: node.size * 2, hash: nodeHash(top.hash, node.hash) };
    }
    this.frontier.push(node);
    this.count += 1;
  }

  root(): Buffer {
    if (this.frontier.length === 0) return EMPTY_ROOT;
    let root = this.frontier[this.frontier.length - 1]!.hash;
    for (let i = this.frontier.length - 2; i >= 0; i -= 1) root = nodeHash(this.frontier[i]!.hash, root);
    return root;
  }
}

/**
 * Checks inclusion proofs (RFC 9162 §2.1.3, audit path leaf-side first) of many leaves against one
 * root. Every node a verified path proves — the nodes it computes and the siblings it was given,
 * each identified by its leaf range — is remembered; a later path stops as soon as it reaches a
 * remembered node (equal: proven; different: not in the tree). Proving n neighbouring leaves then
 * costs about n hashes instead of n·log n. The result for each proof is exactly verifyInclusion's,
 * except that a path's elements above the node where it stops are not read (their number still
 * must be right).
 */
export class InclusionBatch {
  /** Node (start leaf · 64 + depth below the root) → its hash, proven to lead to the root. */
  private readonly proven = new Map<number, Buffer>();
  // Scratch space reused by every call (a bundle checks thousands of paths).
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];
  private readonly learnedKeys: number[] = [];
  private readonly learnedHashes: Buffer[] = [];

  constructor(
    readonly size: number,
    private readonly root: Buffer,
  ) {}

  /** Whether `path` (hex, leaf-side first) proves `leaf` at `index`. */
  verify(index: number, leaf: Buffer, path: readonly string[]): boolean {
    if (!Number.isSafeInteger(index) || index < 0 || index >= this.size) return false;
    // The subtrees from the root down to the leaf: [start, end) at each depth.
    const { starts, ends, learnedKeys, learnedHashes } = this;
    let depth = 0;
    let start = 0;
    let end = this.size;
    while (end - start > 1) {
      starts[depth] = start;
      ends[depth] = end;
      depth += 1;
      const k = splitPoint(end - start);
      if (index < start + k) end = start + k;
      else start += k;
    }
    // The leaf's depth: the path has one sibling per level above it.
    if (path.length !== depth) return false;
    learnedKeys.length = 0;
    learnedHashes.length = 0;
    let hash = leaf;
    let nodeStart = index;
    for (let d = depth; d >= 0; d -= 1) {
      const known = this.proven.get(nodeStart * 64 + d);
      if (known !== undefined) {
        if (!known.equals(hash)) return false;
        this.remember();
        return true;
      }
      if (d === 0) break;
      // Lowercase hex only: Buffer.from reads uppercase too, and stops quietly at a stray character.
      const siblingHex = path[depth - d]!;
      if (!isHex64(siblingHex)) return false;
      const sibling = Buffer.from(siblingHex, 'hex');
      const parentStart = starts[d - 1]!;
      learnedKeys.push(nodeStart * 64 + d);
      learnedHashes.push(hash);
      if (nodeStart === parentStart) {
        learnedKeys.push((parentStart + splitPoint(ends[d - 1]! - parentStart)) * 64 + d);
        learnedHashes.push(sibling);
        hash = nodeHash(hash, sibling);
      } else {
        learnedKeys.push(parentStart * 64 + d);
        learnedHashes.push(sibling);
        hash = nodeHash(sibling, hash);
      }
      nodeStart = parentStart;
    }
    if (!hash.equals(this.root)) return false;
    learnedKeys.push(0);
    learnedHashes.push(hash);
    this.remember();
    return true;
  }

  private remember(): void {
    for (let i = 0; i < this.learnedKeys.length; i += 1) this.proven.set(this.learnedKeys[i]!, this.learnedHashes[i]!);
  }
}
