import { leafHash, readSnapshot, ServiceError, toIso } from '@vigil/platform';
import { auditEntryHash, chainEntryOf, type AuditChainEntry } from '../stored-formats/index.ts';
import { gateErrors } from '../errors.ts';
import type { GateDatabase } from '../schema.ts';
import { chainedRequestState, escalationText, requestEvidenceMismatches, requestInputHash, type RequestEvidence } from './evidence.ts';
import { findRequest, loggedTrail, loggedTrails, type LoggedAuditRow } from './store.ts';
import type { RequestRow } from './tables.ts';

const isoOrNull = (ms: number | null): string | null => (ms === null ? null : toIso(ms));

/** The row's fields its audit chain commits to (evidence.ts), the creation's hashed over its stored canonical texts. */
export function storedRequestState(row: RequestRow): RequestEvidence & { requestHash: string } {
  return {
    action: row.action,
    createdAt: toIso(row.created_at),
    requestHash: requestInputHash({
      action: row.action,
      params: row.params,
      context: row.context,
      urgency: row.urgency,
      expiresAt: isoOrNull(row.expires_at),
      policyDecision: row.policy_decision,
    }),
    status: row.status,
    decidedBy: row.decided_by,
    decidedAt: isoOrNull(row.decided_at),
    decisionReason: row.decision_reason,
    confirmedAt: isoOrNull(row.confirmed_at),
    executionResult: row.execution_result,
    // Tier 0 keeps expiresAt as its deadline; a row whose deadline moved without an escalated entry is refused.
    escalation: row.escalation_tier === 0 && row.deadline_at === row.expires_at ? null : escalationText(row.escalation_tier, isoOrNull(row.deadline_at)),
  };
}

/** Where the row differs from the replay of its trail's entries (seq order from 0), or null when it does not. */
export function rowStateProblem(row: RequestRow, entries: readonly AuditChainEntry[]): string | null {
  const chained = chainedRequestState(entries);
  if (chained === undefined) return 'its audit trail does not start with its created entry';
  // Created before the entry committed to the row: its chain and leaves are all there is to check (docs/audit.md).
  if (chained.requestHash === null) return null;
  const mismatches = requestEvidenceMismatches(storedRequestState(row), chained);
  return mismatches.length === 0 ? null : mismatches.join('; ');
}

/**
 * Why the row may not be served or acted on, or null when its trail vouches for it: the trail must
 * chain from seq 0 to the head the row records, each entry must be its leaf in the audit log, and
 * the row must hold what those logged entries say (evidence.ts). Rewriting the log's leaves as well
 * is what `vigil verify` against a saved or witnessed checkpoint catches. One pass over the entries
 * (verifyAuditChain's checks, without its sort and hex conversions): it runs on every decide.
 */
export function rowEvidenceProblem(row: RequestRow, trail: readonly LoggedAuditRow[]): string | null {
  const entries: AuditChainEntry[] = [];
  let previous: string | null = null;
  for (const [seq, stored] of trail.entries()) {
    const at = `entry ${stored.id} (seq ${stored.seq})`;
    if (stored.seq !== seq) return `its audit chain has no entry at seq ${seq}: the next is ${at}`;
    if (stored.prev_hash !== previous) return `${at}: prevHash does not match the hash of the previous entry`;
    const entry = chainEntryOf(stored);
    if (auditEntryHash(entry, previous) !== stored.hash) return `${at}: hash does not match the entry content`;
    if (stored.leaf_hash === null || !leafHash(Buffer.from(stored.hash, 'hex')).equals(stored.leaf_hash)) return `${at} is not its leaf in the audit log`;
    entries.push(entry);
    previous = stored.hash;
  }
  if (trail.length - 1 !== row.audit_head_seq || previous !== row.audit_head_hash)
    return `its row records its chain head at seq ${row.audit_head_seq}, but its logged trail ends at seq ${trail.length - 1}${trail.length - 1 === row.audit_head_seq ? ' with another hash' : ''}`;
  return rowStateProblem(row, entries);
}

/** The refusal of a row that differs from its logged trail (the catalogue's requestTampered), told apart from other 500s by its class. */
export class RequestTamperedError extends ServiceError {
  constructor(message: string) {
    const { status, code } = gateErrors.requestTampered;
    super(status, code, message);
  }
}

function requestTampered(id: string, problem: string): RequestTamperedError {
  return new RequestTamperedError(`Request ${id} does not match its audit trail: ${problem}`);
}

/** Checks a row and its trail read under its row lock (service.ts lockChecked: no write of it can land between them). */
export function assertLockedRowEvidence(row: RequestRow, trail: readonly LoggedAuditRow[]): void {
  const problem = rowEvidenceProblem(row, trail);
  if (problem !== null) throw requestTampered(row.id, problem);
}

/**
 * Checks rows read without a lock. The row and its trail are two reads, so a write that committed
 * between them can make an honest row look wrong: a row that fails is read again, with its trail,
 * from one snapshot, and refused only if it still fails (the common case costs one read more).
 * Answers the rows their trails vouched for as read (not those that passed only on the second read).
 */
export async function assertRowsEvidence(database: GateDatabase, rows: readonly RequestRow[]): Promise<RequestRow[]> {
  const trails =
    rows.length === 1
      ? new Map([[rows[0]!.id, await loggedTrail(database.db, database, rows[0]!.id)]])
      : await loggedTrails(
          database.db,
          rows.map((row) => row.id),
        );
  const failing = rows.filter((row) => rowEvidenceProblem(row, trails.get(row.id) ?? []) !== null);
  if (failing.length === 0) return [...rows];
  const problems = await readSnapshot(database, async (db) => {
    const found: [string, string][] = [];
    for (const { id } of failing) {
      const row = await findRequest(database, id, db);
      const problem = row === undefined ? null : rowEvidenceProblem(row, await loggedTrail(db, database, id));
      if (problem !== null) found.push([id, problem]);
    }
    return found;
  });
  if (problems.length === 1) throw requestTampered(problems[0]![0], problems[0]![1]);
  if (problems.length > 1)
    throw new RequestTamperedError(
      `Requests ${problems.map(([id]) => id).join(', ')} do not match their audit trails: ${problems.map(([id, problem]) => `${id}: ${problem}`).join(' | ')}`,
    );
  return rows.filter((row) => !failing.includes(row));
}

/** A request's row, checked against its logged audit trail (throws requestTampered); undefined when absent. */
export async function findVerifiedRequest(database: GateDatabase, id: string): Promise<RequestRow | undefined> {
  const row = await findRequest(database, id);
  if (row !== undefined) await assertRowsEvidence(database, [row]);
  return row;
}
