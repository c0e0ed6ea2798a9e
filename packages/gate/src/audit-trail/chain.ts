import { canonicalJson, leafHash, sha256Hex, toIso } from '@vigil/platform';

/**
 * The gate's per-request audit chain (docs/audit.md, "Gate audit chain"). Each entry of a request's
 * trail has a `seq` (0, 1, 2, … in the order written, under the request's row lock) and
 *
 *   hash = sha256_hex(canonical_json({v:1, id, requestId, action, seq, timestamp, event, actor,
 *                                     actorKeyId, actorKeyName, details, prevHash}))
 *
 * with canonical_json RFC 8785, `timestamp` ISO 8601 UTC with milliseconds, `details` the entry's
 * details object (null when it has none) and `prevHash` the previous entry's hash (null for seq 0).
 * The request row records the head (last seq and hash), so a cut tail is seen too.
 */
const AUDIT_CHAIN_VERSION = 1;

/** What one link commits to, in the API's names. */
export interface AuditChainEntry {
  id: string;
  requestId: string;
  action: string;
  seq: number;
  timestamp: string;
  event: string;
  actor: string;
  actorKeyId: string | null;
  actorKeyName: string | null;
  details: Record<string, unknown> | null;
}

const json = JSON.stringify;

/**
 * The canonical text an entry's hash is computed over (what the audit export and walk answer).
 * Written out by hand in RFC 8785 order (keys sorted by UTF-16 code units; strings and numbers as
 * JSON.stringify writes them, which is what RFC 8785 prescribes for finite numbers and well-formed
 * strings, the only ones the API admits), so only `details`, whose keys are the caller's, goes
 * through the general canonicaliser: this runs for every entry the gate writes. chain.test.ts
 * checks it against canonicalJson of the whole object.
 */
export function auditEntryText(entry: AuditChainEntry, prevHash: string | null): string {
  return (
    `{"action":${json(entry.action)},"actor":${json(entry.actor)},"actorKeyId":${json(entry.actorKeyId)}` +
    `,"actorKeyName":${json(entry.actorKeyName)},"details":${entry.details === null ? 'null' : canonicalJson(entry.details)}` +
    `,"event":${json(entry.event)},"id":${json(entry.id)},"prevHash":${json(prevHash)},"requestId":${json(entry.requestId)}` +
    `,"seq":${json(entry.seq)},"timestamp":${json(entry.timestamp)},"v":${AUDIT_CHAIN_VERSION}}`
  );
}

export function auditEntryHash(entry: AuditChainEntry, prevHash: string | null): string {
  return sha256Hex(auditEntryText(entry, prevHash));
}

/** The stored audit columns the chain reads (AuditRow's, without the schema import cycle). */
export interface StoredAuditEntry {
  id: string;
  request_id: string;
  action: string;
  seq: number;
  ts: number;
  event: string;
  actor: string;
  actor_key_id: string | null;
  actor_key_name: string | null;
  details: string | null;
  prev_hash: string | null;
  hash: string;
}

export function chainEntryOf(row: Omit<StoredAuditEntry, 'prev_hash' | 'hash'>): AuditChainEntry {
  return {
    id: row.id,
    requestId: row.request_id,
    action: row.action,
    seq: row.seq,
    timestamp: toIso(row.ts),
    event: row.event,
    actor: row.actor,
    actorKeyId: row.actor_key_id,
    actorKeyName: row.actor_key_name,
    details: row.details === null ? null : (JSON.parse(row.details) as Record<string, unknown>),
  };
}

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
}

/**
 * Verifies a request's stored entries (any order) and, given them, the head its request row records
 * and the audit log's leaf hashes by entry id: seq runs gapless from 0, each prevHash is the hash
 * before it, each hash matches its entry's content and its leaf (SHA-256(0x00 || hash)), and the
 * chain ends exactly at the head.
 */
export function verifyAuditChain(entries: readonly StoredAuditEntry[], head?: AuditChainHead, leaves?: ReadonlyMap<string, string>): AuditChainVerdict {
  const ordered = [...entries].sort((a, b) => a.seq - b.seq || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const headHash = ordered.at(-1)?.hash ?? null;
  const broken = (seq: number, reason: string): AuditChainVerdict => ({ valid: false, brokenAt: seq, reason, headHash });
  let previousHash: string | null = null;
  for (const [seq, entry] of ordered.entries()) {
    if (entry.seq !== seq) {
      if (entry.seq < seq) return broken(entry.seq, `entry ${entry.id} repeats seq ${entry.seq}`);
      return broken(seq, `seq ${seq} is missing: the next stored entry, ${entry.id}, has seq ${entry.seq}`);
    }
    if (entry.prev_hash !== previousHash) return broken(seq, 'prevHash does not match the hash of the previous entry');
    if (auditEntryHash(chainEntryOf(entry), entry.prev_hash) !== entry.hash) return broken(seq, 'hash does not match the entry content');
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
  return { valid: true, brokenAt: null, reason: null, headHash };
}
