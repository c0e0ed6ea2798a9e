import { leafHash, readSnapshot, ServiceError, toIso } from '@vigil/platform';
import { auditEntryHash, chainEntryOf, type AuditChainEntry } from '../stored-formats/index.ts';
import { gateErrors } from '../errors.ts';
import type { GateDatabase } from '../schema.ts';
import type { Kysely } from 'kysely';
import type { GateSchema } from '../schema.ts';
import { erasureCovers, erasuresNamed } from './erasure-covers.ts';
import { erasureOfMarkerText, type ErasureCovers } from '../stored-formats/index.ts';
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

/** The erasure whose marker the row's params and context are, else null. */
export function erasedRequestOf(row: RequestRow): string | null {
  const erasure = erasureOfMarkerText(row.params);
  return erasure !== null && row.context === row.params ? erasure : null;
}

/**
 * Where the row differs from the replay of its trail's entries (seq order from 0), or null when it
 * does not. An erased row (params and context the erasure marker) stands for the requestHash the
 * signed leaf of its erasure lists for it (`covers`); with none, the marker is a change.
 */
export function rowStateProblem(row: RequestRow, entries: readonly AuditChainEntry[], covers?: ErasureCovers): string | null {
  const chained = chainedRequestState(entries);
  if (chained === undefined) return 'its audit trail does not start with its created entry';
  // Created before the entry committed to the row: its chain and leaves are all there is to check (docs/audit.md).
  if (chained.requestHash === null) return null;
  const stored = storedRequestState(row);
  const erasure = erasureOfMarkerText(row.params);
  if (erasure !== null) {
    const requestHash = covers?.get(erasure)?.requests.get(row.id);
    if (requestHash === undefined || erasedRequestOf(row) === null)
      return `its params and context were replaced by an erasure marker (erasure ${erasure}) that no signed erasure leaf covers`;
    stored.requestHash = requestHash;
  }
  const mismatches = requestEvidenceMismatches(stored, chained);
  return mismatches.length === 0 ? null : mismatches.join('; ');
}

/**
 * Why the row may not be served or acted on, or null when its trail vouches for it: the trail must
 * chain from seq 0 to the head the row records, each entry must be its leaf in the audit log, and
 * the row must hold what those logged entries say (evidence.ts). Rewriting the log's leaves as well
 * is what `vigil verify` against a saved or witnessed checkpoint catches. One pass over the entries
 * (verifyAuditChain's checks, without its sort and hex conversions): it runs on every decide.
 */
export function rowEvidenceProblem(row: RequestRow, trail: readonly LoggedAuditRow[], covers?: ErasureCovers): string | null {
  const entries: AuditChainEntry[] = [];
  let previous: string | null = null;
  for (const [seq, stored] of trail.entries()) {
    const at = `entry ${stored.id} (seq ${stored.seq})`;
    if (stored.seq !== seq) return `its audit chain has no entry at seq ${seq}: the next is ${at}`;
    if (stored.prev_hash !== previous) return `${at}: prevHash does not match the hash of the previous entry`;
    const entry = chainEntryOf(stored);
    // An erased entry stands for the hash its erasure's signed leaf lists for it.
    const erasure = erasureOfMarkerText(stored.details);
    if (erasure !== null) {
      if (covers?.get(erasure)?.entries.get(stored.id) !== stored.hash)
        return `${at}: its details were replaced by an erasure marker (erasure ${erasure}) that no signed erasure leaf covers`;
    } else if (auditEntryHash(entry, previous) !== stored.hash) return `${at}: hash does not match the entry content`;
    if (stored.leaf_hash === null || !leafHash(Buffer.from(stored.hash, 'hex')).equals(stored.leaf_hash)) return `${at} is not its leaf in the audit log`;
    entries.push(entry);
    previous = stored.hash;
  }
  if (trail.length - 1 !== row.audit_head_seq || previous !== row.audit_head_hash)
    return `its row records its chain head at seq ${row.audit_head_seq}, but its logged trail ends at seq ${trail.length - 1}${trail.length - 1 === row.audit_head_seq ? ' with another hash' : ''}`;
  return rowStateProblem(row, entries, covers);
}

/** rowEvidenceProblem, holding a row or entries the erasure marker replaced to the signed leaves of the erasures they name (read only then). */
async function rowProblem(db: Kysely<GateSchema>, row: RequestRow, trail: readonly LoggedAuditRow[]): Promise<string | null> {
  const problem = rowEvidenceProblem(row, trail);
  if (problem === null) return null;
  const named = erasuresNamed(row, trail);
  return named.length === 0 ? problem : rowEvidenceProblem(row, trail, await erasureCovers(db, named));
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
export async function assertLockedRowEvidence(db: Kysely<GateSchema>, row: RequestRow, trail: readonly LoggedAuditRow[]): Promise<void> {
  const problem = await rowProblem(db, row, trail);
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
  const failing: RequestRow[] = [];
  for (const row of rows) if ((await rowProblem(database.db, row, trails.get(row.id) ?? [])) !== null) failing.push(row);
  if (failing.length === 0) return [...rows];
  const problems = await readSnapshot(database, async (db) => {
    const found: [string, string][] = [];
    for (const { id } of failing) {
      const row = await findRequest(database, id, db);
      const problem = row === undefined ? null : await rowProblem(db, row, await loggedTrail(db, database, id));
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
