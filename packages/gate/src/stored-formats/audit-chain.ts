// The gate's audit chain recipe, version 1: a stored format. Every stored entry's hash was computed
// with it (by live code, and by the frozen migration 0005 for the entries that existed before the
// chain), and verification, the walk and proofs recompute it, so it never changes: another recipe
// would be a version 2 beside it. A feature-free module, importing only the platform, so that the
// audit trail and the frozen migration history share the one recipe.
import { canonicalJson, sha256Hex, toIso } from '@vigil/platform';

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
  return linkText(entry, entry.details === null ? 'null' : canonicalJson(entry.details), prevHash);
}

/** The link's text with `details` given as its canonical text (`null` for none). */
function linkText(entry: Omit<AuditChainEntry, 'details'>, detailsText: string, prevHash: string | null): string {
  return (
    `{"action":${json(entry.action)},"actor":${json(entry.actor)},"actorKeyId":${json(entry.actorKeyId)}` +
    `,"actorKeyName":${json(entry.actorKeyName)},"details":${detailsText}` +
    `,"event":${json(entry.event)},"id":${json(entry.id)},"prevHash":${json(prevHash)},"requestId":${json(entry.requestId)}` +
    `,"seq":${json(entry.seq)},"timestamp":${json(entry.timestamp)},"v":${AUDIT_CHAIN_VERSION}}`
  );
}

export function auditEntryHash(entry: AuditChainEntry, prevHash: string | null): string {
  return sha256Hex(auditEntryText(entry, prevHash));
}

/**
 * The hash of an entry being written, whose stored `details` is the canonical text of its details
 * (the gate writes them so): the text goes into the link as it is, with no parse and no second
 * serialisation. A stored entry is hashed through chainEntryOf instead, which parses its details:
 * one stored before its details were canonical, or edited since, hashes as its value does.
 */
export function writtenEntryHash(row: Omit<StoredAuditEntry, 'prev_hash' | 'hash'>, prevHash: string | null): string {
  return sha256Hex(linkText(linkFieldsOf(row), row.details ?? 'null', prevHash));
}

/** An audit entry as stored (requests/tables.ts AuditRow): the columns its link commits to, and the link. */
export interface StoredAuditEntry {
  id: string;
  request_id: string;
  /** The request's action, copied so the audit list filters by it through an index. */
  action: string;
  ts: number;
  event: string;
  actor: string;
  /** The API key behind the credential that acted, and its name at that time; null for policy and expiry. */
  actor_key_id: string | null;
  actor_key_name: string | null;
  details: string | null;
  /** The entry's link in its request's audit chain: 0, 1, 2, … per request. */
  seq: number;
  prev_hash: string | null;
  hash: string;
}

/** A stored entry's fields in its link, but its details. */
function linkFieldsOf(row: Omit<StoredAuditEntry, 'prev_hash' | 'hash'>): Omit<AuditChainEntry, 'details'> {
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
  };
}

export function chainEntryOf(row: Omit<StoredAuditEntry, 'prev_hash' | 'hash'>): AuditChainEntry {
  return { ...linkFieldsOf(row), details: row.details === null ? null : (JSON.parse(row.details) as Record<string, unknown>) };
}
