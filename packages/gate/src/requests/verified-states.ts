// The row check without the trail read, for a row this instance has already seen vouched for
// (docs/audit.md, "A request's row under its chain"). Reading and replaying the trail on every
// read and decide cost the gate a quarter of its decide throughput (docs/decisions/0007-gate-writes.md).
import { hash } from 'node:crypto';
import type { RequestRow } from './tables.ts';

/** Requests remembered per instance (about 150 bytes each): the requests an agent is still polling or deciding. */
const CAPACITY = 16_384;

/**
 * One field of a fingerprint, in a form no other field's can be read as: null `~`, a number its
 * digits and `;`, a string its length, `:` and itself (no escaping, unlike JSON: the stored params,
 * context and decision are JSON texts, full of quotes).
 */
function field(value: string | number | null): string {
  return value === null ? '~' : typeof value === 'number' ? `${value};` : `${value.length}:${value}`;
}

/**
 * SHA-256 over every stored column but the id (the key it is remembered by): its chain head and
 * each field the row check compares, the input (params, context, urgency, deadline, policy
 * decision) as stored rather than through its requestHash, so one hash covers the row (a creation
 * hashed its input once for its created entry, and hashing it again here cost every POST and read a
 * second SHA-256). Two rows with one fingerprint are equal in every column, so they agree in
 * everything the row check compares.
 */
function fingerprint(row: RequestRow): string {
  return hash(
    'sha256',
    field(row.audit_head_seq) +
      field(row.audit_head_hash) +
      field(row.action) +
      field(row.params) +
      field(row.context) +
      field(row.urgency) +
      field(row.status) +
      field(row.expires_at) +
      field(row.created_at) +
      field(row.decided_at) +
      field(row.decided_by) +
      field(row.decision_reason) +
      field(row.policy_decision) +
      field(row.confirmed_at) +
      field(row.execution_result) +
      field(row.deadline_at) +
      field(row.escalation_tier),
    'base64',
  );
}

/**
 * Per request id, the fingerprint of the last row this instance checked against its logged trail
 * or committed itself. A row read later is vouched for without its trail when its fingerprint is
 * that one and the trail still ends at the head the row records (the highest stored seq, read in
 * the row's own statement): any change to the row in the database (status, params, decider, head)
 * changes its fingerprint, so the trail is read and replayed, and a row that does not match it is
 * refused as before. Another instance's write moves the head, so it is checked here once and
 * remembered; a row put back to an earlier state after another instance moved it on is caught by
 * the trail's higher seq. What is not re-read on a hit is the trail's entries and leaves: a trail
 * rewritten after the row was vouched for is `vigil verify`'s to find, against a saved checkpoint.
 */
export class VerifiedStates {
  private readonly fingerprints = new Map<string, string>();

  /** True when `row` is the state last vouched for and `trailHead` (the highest seq stored for it, null for none) is its head. */
  vouches(row: RequestRow, trailHead: number | null): boolean {
    const known = this.fingerprints.get(row.id);
    return known !== undefined && (trailHead ?? -1) === row.audit_head_seq && known === fingerprint(row);
  }

  /** Records a row that its logged trail vouched for, or that a committed write of this instance left. */
  remember(row: RequestRow): void {
    this.fingerprints.delete(row.id);
    this.fingerprints.set(row.id, fingerprint(row));
    // Oldest written first (a Map keeps insertion order).
    if (this.fingerprints.size > CAPACITY) this.fingerprints.delete(this.fingerprints.keys().next().value!);
  }
}
