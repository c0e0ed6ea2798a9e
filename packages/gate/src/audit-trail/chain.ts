// Verification of a request's audit chain; the chain's recipe is a stored format (stored-formats/audit-chain.ts).
import { leafHash } from '@vigil/platform';
import { auditEntryHash, chainEntryOf, erasureOfMarkerText, type ErasureCovers, type StoredAuditEntry } from '../stored-formats/index.ts';

/** The last link of a request's chain, as the request row records it (seq -1 and null: no entry yet). */
export interface AuditChainHead {
  seq: number;
  hash: string | null;
}

export interface AuditChainVerdict {
  valid: boolean;
  /** The first seq that does not verify (the seq a missing entry should have had); null when valid. */
  brokenAt: number | null;
  reason: string | null;
  /** The hash of the last stored entry (null for an empty trail). */
  headHash: string | null;
  /** The erasures whose signed leaves account for entries whose details are the erasure marker (docs/guide/erasure.md). */
  erasures: { erasureId: string; entryIds: string[] }[];
}

/**
 * Verifies a request's stored entries (any order) and, given them, the head its request row records
 * and the audit log's leaf hashes by entry id: seq runs gapless from 0, each prevHash is the hash
 * before it, each hash matches its entry's content and its leaf (SHA-256(0x00 || hash)), and the
 * chain ends exactly at the head. Given `logged`, the number of leaves the log holds of the request,
 * a chain that verifies must have as many entries: entries deleted at the end with the head (and row)
 * rewritten to the last one kept leave a chain that checks, but their leaves stay in the log. An
 * entry whose details are the erasure marker stands for the hash the signed leaf of its erasure
 * (`covers`) lists for it; with none, the marker is a change.
 */
export function verifyAuditChain(
  entries: readonly StoredAuditEntry[],
  head?: AuditChainHead,
  leaves?: ReadonlyMap<string, string>,
  logged?: number,
  covers?: ErasureCovers,
): AuditChainVerdict {
  const ordered = [...entries].sort((a, b) => a.seq - b.seq || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const headHash = ordered.at(-1)?.hash ?? null;
  const erased = new Map<string, string[]>();
  const broken = (seq: number, reason: string): AuditChainVerdict => ({ valid: false, brokenAt: seq, reason, headHash, erasures: [] });
  let previousHash: string | null = null;
  for (const [seq, entry] of ordered.entries()) {
    if (entry.seq !== seq) {
      if (entry.seq < seq) return broken(entry.seq, `entry ${entry.id} repeats seq ${entry.seq}`);
      return broken(seq, `seq ${seq} is missing: the next stored entry, ${entry.id}, has seq ${entry.seq}`);
    }
    if (entry.prev_hash !== previousHash) return broken(seq, 'prevHash does not match the hash of the previous entry');
    const erasure = erasureOfMarkerText(entry.details);
    if (erasure !== null) {
      if (covers?.get(erasure)?.entries.get(entry.id) !== entry.hash)
        return broken(seq, `its details were replaced by an erasure marker (erasure ${erasure}) that no signed erasure leaf covers`);
      erased.set(erasure, [...(erased.get(erasure) ?? []), entry.id]);
    } else if (auditEntryHash(chainEntryOf(entry), entry.prev_hash) !== entry.hash) return broken(seq, 'hash does not match the entry content');
    if (leaves !== undefined) {
      const leaf = leaves.get(entry.id);
      if (leaf === undefined) return broken(seq, `entry ${entry.id} has no leaf in the audit log: it was not written by the gate`);
      if (leaf !== leafHash(Buffer.from(entry.hash, 'hex')).toString('hex')) return broken(seq, `the audit log's leaf of entry ${entry.id} is not its hash`);
    }
    previousHash = entry.hash;
  }
  if (head !== undefined) {
    const lastSeq = ordered.length - 1;
    if (lastSeq < head.seq) return broken(lastSeq + 1, `the request records entries up to seq ${head.seq}: entries are missing at the end`);
    if (lastSeq > head.seq) return broken(head.seq + 1, `entry seq ${head.seq + 1} is stored past the head the request records`);
    if (previousHash !== head.hash) return broken(lastSeq, `the request records another hash for seq ${lastSeq}`);
  }
  if (logged !== undefined && logged > ordered.length) {
    const seq = ordered.length;
    return broken(
      seq,
      `the audit log holds ${logged} entries of this request but its chain ${seq === 0 ? 'has none' : `ends at seq ${seq - 1}`}: the entries from seq ${seq} on were deleted and the request head rewritten`,
    );
  }
  return { valid: true, brokenAt: null, reason: null, headHash, erasures: [...erased].map(([erasureId, entryIds]) => ({ erasureId, entryIds })) };
}
