import { hash } from 'node:crypto';
import { sha256 } from './crypto.ts';

/**
 * RFC 9162 (Certificate Transparency v2) §2.1 Merkle tree: hashing, inclusion and consistency
 * proofs and their verification. Pure; shared by every service's audit log.
 *
 * A store never recomputes a tree from its leaves: it keeps the root of every *perfect* subtree
 * (2^level leaves starting at index·2^level, complete once its last leaf is appended). Every
 * subtree the RFC's recursion names is a run of such perfect subtrees, so a root or proof at any
 * size reads O(log² n) stored hashes in the worst case, O(log n) typically. The proof functions
 * take a synchronous `NodeReader`; `nodesNeeded` lists what they will read, so a store fetches
 * them in one query first.
 */

/** A perfect subtree: leaves [index·2^level, (index+1)·2^level). Level 0 is a leaf hash. */
export interface NodeRef {
  level: number;
  index: number;
}

/** The root of a perfect subtree (level 0: the leaf hash). */
export type NodeReader = (level: number, index: number) => Buffer;

/** MTH({}) = SHA-256() */
export const EMPTY_ROOT: Buffer = sha256(Buffer.alloc(0));

// One-shot hashing of a reused input buffer: a verifier hashes tens of thousands of nodes, and a
// Hash object per node costs about twice the hashing itself. hash() reads its input before it returns.
let leafInput = Buffer.alloc(33);
const nodeInput = Buffer.alloc(65, 0x01);

/** SHA-256(0x00 || leaf) */
export function leafHash(leaf: Buffer | string): Buffer {
  const data = typeof leaf === 'string' ? Buffer.from(leaf, 'utf8') : leaf;
  if (data.length + 1 > leafInput.length) leafInput = Buffer.alloc(data.length + 1);
  data.copy(leafInput, 1);
  return sha256(leafInput.subarray(0, data.length + 1));
}

/** SHA-256(0x01 || left || right); both 32 bytes (the tree's hashes). */
export function nodeHash(left: Buffer, right: Buffer): Buffer {
  if (left.length !== 32 || right.length !== 32) return sha256(Buffer.concat([nodeInput.subarray(0, 1), left, right]));
  left.copy(nodeInput, 1);
  right.copy(nodeInput, 33);
  return sha256(nodeInput);
}

/** Writes into a tree kept in one buffer, at `at`, the nodeHash of the two hashes stored side by side at `children`. */
export function writeNodeHash(nodes: Buffer, children: number, at: number): void {
  nodes.copy(nodeInput, 1, children, children + 64);
  nodes.write(hash('sha256', nodeInput, 'binary'), at, 32, 'binary');
}

/** The largest power of two strictly less than n (n ≥ 2): where the RFC splits a tree of n leaves. */
export function splitPoint(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

/**
 * The perfect subtrees that make up leaves [start, end), largest first. `start` must be aligned as
 * in the RFC's recursion (a multiple of the largest power of two ≤ end − start), which every range
 * the proofs name is.
 */
export function perfectRun(start: number, end: number): NodeRef[] {
  const run: NodeRef[] = [];
  let at = start;
  while (at < end) {
    let level = 0;
    while (at % 2 ** (level + 1) === 0 && at + 2 ** (level + 1) <= end) level += 1;
    run.push({ level, index: at / 2 ** level });
    at += 2 ** level;
  }
  return run;
}

/** MTH(D[start:end]) from stored perfect-subtree roots (end > start). */
export function rangeRoot(start: number, end: number, read: NodeReader): Buffer {
  const run = perfectRun(start, end);
  let root = read(run[run.length - 1]!.level, run[run.length - 1]!.index);
  for (let i = run.length - 2; i >= 0; i -= 1) root = nodeHash(read(run[i]!.level, run[i]!.index), root);
  return root;
}

/** MTH(D[0:size]); the empty tree's root for size 0. */
export function treeRoot(size: number, read: NodeReader): Buffer {
  return size === 0 ? EMPTY_ROOT : rangeRoot(0, size, read);
}

/** MTH of leaf hashes, computed from all of them (the naive reference; also fine for small trees). */
export function rootOf(leafHashes: readonly Buffer[]): Buffer {
  if (leafHashes.length === 0) return EMPTY_ROOT;
  if (leafHashes.length === 1) return leafHashes[0]!;
  const k = splitPoint(leafHashes.length);
  return nodeHash(rootOf(leafHashes.slice(0, k)), rootOf(leafHashes.slice(k)));
}

/** RFC 9162 §2.1.3.1 PATH(index, D[0:size]): the audit path, leaf-side first. */
export function inclusionProof(index: number, size: number, read: NodeReader): Buffer[] {
  if (!Number.isSafeInteger(index) || index < 0 || index >= size) throw new RangeError(`leaf ${index} is not in a tree of ${size}`);
  const path: Buffer[] = [];
  // Walk down from the root, then reverse: the RFC lists the path from the leaf up.
  let start = 0;
  let end = size;
  while (end - start > 1) {
    const k = splitPoint(end - start);
    if (index < start + k) {
      path.push(rangeRoot(start + k, end, read));
      end = start + k;
    } else {
      path.push(rangeRoot(start, start + k, read));
      start += k;
    }
  }
  return path.reverse();
}

/** RFC 9162 §2.1.4.1 PROOF(m, D[0:n]) for 0 < m ≤ n (empty for m = n). */
export function consistencyProof(m: number, n: number, read: NodeReader): Buffer[] {
  if (!Number.isSafeInteger(m) || !Number.isSafeInteger(n) || m < 1 || m > n) throw new RangeError(`no consistency proof from ${m} to ${n}`);
  const proof: Buffer[] = [];
  let start = 0;
  let end = n;
  let whole = true; // the RFC's b: whether D[start:end]'s left edge is the old tree's root
  let rest = m; // how many of the old tree's leaves lie in D[start:end]
  while (rest < end - start) {
    const k = splitPoint(end - start);
    if (rest <= k) {
      proof.push(rangeRoot(start + k, end, read));
      end = start + k;
    } else {
      proof.push(rangeRoot(start, start + k, read));
      start += k;
      rest -= k;
      whole = false;
    }
  }
  if (!whole) proof.push(rangeRoot(start, end, read));
  return proof.reverse();
}

/** The perfect subtrees a proof function reads, in first-read order, without duplicates. */
export function nodesNeeded(run: (read: NodeReader) => unknown): NodeRef[] {
  const seen = new Map<string, NodeRef>();
  const placeholder = Buffer.alloc(32);
  run((level, index) => {
    seen.set(`${level}:${index}`, { level, index });
    return placeholder;
  });
  return [...seen.values()];
}

/**
 * The perfect subtrees that become complete when leaf `index` is appended (level 0 is the leaf
 * itself), with how to compute each: the node at level l is nodeHash(its left sibling at l−1, the
 * one just completed at l−1). What a store inserts per leaf: one row, plus one per trailing 1-bit.
 */
export function completedBy(index: number): NodeRef[] {
  const nodes: NodeRef[] = [{ level: 0, index }];
  let level = 0;
  let at = index;
  while (at % 2 === 1) {
    level += 1;
    at = (at - 1) / 2;
    nodes.push({ level, index: at });
  }
  return nodes;
}

/** The tree's hashes are SHA-256: anything else proves nothing (an empty leaf once "matched" an empty root). */
const HASH_BYTES = 32;

function isHash(value: Buffer): boolean {
  return value.length === HASH_BYTES;
}

/** RFC 9162 §2.1.3.2: whether `path` proves leaf `index` (hash `leaf`) is in the tree of `size` leaves with `root`. */
export function verifyInclusion(index: number, size: number, leaf: Buffer, path: readonly Buffer[], root: Buffer): boolean {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return false;
  if (!isHash(leaf) || !isHash(root) || !path.every(isHash)) return false;
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of path) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && r.equals(root);
}

/**
 * RFC 9162 §2.1.4.2: whether `proof` shows the tree of `first` leaves with `firstRoot` is a prefix
 * of the tree of `second` leaves with `secondRoot`. Beyond the RFC (which needs 0 < first < second):
 * first = second holds with an empty proof and equal roots; first = 0 with an empty proof and the
 * empty tree's root (both roots, when second = 0 too). Every hash must be 32 bytes.
 */
export function verifyConsistency(first: number, second: number, firstRoot: Buffer, secondRoot: Buffer, proof: readonly Buffer[]): boolean {
  if (!Number.isSafeInteger(first) || !Number.isSafeInteger(second) || first < 0 || first > second) return false;
  if (!isHash(firstRoot) || !isHash(secondRoot) || !proof.every(isHash)) return false;
  if (first === 0) return proof.length === 0 && firstRoot.equals(EMPTY_ROOT) && (second > 0 || secondRoot.equals(EMPTY_ROOT));
  if (first === second) return proof.length === 0 && firstRoot.equals(secondRoot);
  if (proof.length === 0) return false;
  // Step 2: a power-of-two old tree is a subtree of the new one, so its root starts the path.
  const path = isPowerOfTwo(first) ? [firstRoot, ...proof] : [...proof];
  let fn = first - 1;
  let sn = second - 1;
  while (fn % 2 === 1) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  let fr = path[0]!;
  let sr = path[0]!;
  for (const c of path.slice(1)) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      fr = nodeHash(c, fr);
      sr = nodeHash(c, sr);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      sr = nodeHash(sr, c);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return fr.equals(firstRoot) && sr.equals(secondRoot) && sn === 0;
}

function isPowerOfTwo(n: number): boolean {
  return Number.isSafeInteger(n) && n > 0 && 2 ** Math.round(Math.log2(n)) === n;
}
