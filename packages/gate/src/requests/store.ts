import { countScopeLeaves, forUpdateOf, hashHex, jsonText, PreparedQuery, readSnapshot, sharedJsonValue, toIso } from '@vigil/platform';
import { verifyAuditChain, type AuditChainHead, type AuditChainVerdict } from '../audit-trail/index.ts';
import type { Kysely, Transaction } from 'kysely';
import type { GateDatabase, GateSchema } from '../schema.ts';
import type { ErasureCovers, Receipt, RequestStatus } from '../stored-formats/index.ts';
import type { AuditRow, RequestRow } from './tables.ts';
import { erasureCovers, erasuresNamed } from './erasure-covers.ts';
import type { PolicyDecision, Urgency } from '../policies/index.ts';
import type { QuorumProgress } from '../approvers/index.ts';

export function storedDecision(row: RequestRow): Readonly<PolicyDecision> {
  return sharedJsonValue(row.policy_decision) as PolicyDecision;
}

const isoOrNullJson = (ms: number | null): string => (ms === null ? 'null' : `"${toIso(ms)}"`);

/**
 * The ApprovalRequest body (routes.ts requestDetailSchema) as JSON text. The stored params, context
 * and execution result are JSON text already (written by JSON.stringify) and are spliced in as they
 * are: parsing them only to serialise them again was most of the cost of a GET /api/requests/:id.
 */
export function requestDetailJson(row: RequestRow, receipt: Receipt | null, approvals: QuorumProgress | null = null): string {
  const decision = storedDecision(row);
  const policyDecision = {
    decision: decision.decision,
    policyId: decision.policyId,
    approvers: decision.approvers,
    channels: decision.channels,
    requireReason: decision.requireReason,
  };
  return (
    `{"id":${JSON.stringify(row.id)},"action":${JSON.stringify(row.action)},"params":${row.params},"context":${row.context}` +
    `,"status":${JSON.stringify(row.status as RequestStatus)},"urgency":${JSON.stringify(row.urgency as Urgency)}` +
    `,"decidedBy":${JSON.stringify(row.decided_by)},"decisionReason":${JSON.stringify(row.decision_reason)}` +
    `,"createdAt":"${toIso(row.created_at)}","decidedAt":${isoOrNullJson(row.decided_at)},"expiresAt":${isoOrNullJson(row.expires_at)}` +
    `,"confirmedAt":${isoOrNullJson(row.confirmed_at)},"executionResult":${row.execution_result ?? 'null'}` +
    `,"policyDecision":${JSON.stringify(policyDecision)}` +
    `,"escalation":{"tier":${row.escalation_tier},"deadlineAt":${isoOrNullJson(row.status === 'pending' ? row.deadline_at : null)},"remindAt":${isoOrNullJson(row.remind_at)}}` +
    `,"approvals":${JSON.stringify(approvals)}` +
    `,"receipt":${JSON.stringify(receipt)}}`
  );
}

const selectRequest = new PreparedQuery((db: Kysely<GateSchema>, _dialect, id: string) => db.selectFrom('requests').selectAll().where('id', '=', id));

const selectApprovedEntry = new PreparedQuery((db: Kysely<GateSchema>, _dialect, requestId: string) =>
  db.selectFrom('audit_entries').selectAll().where('request_id', '=', requestId).where('event', '=', 'approved').orderBy('seq').limit(1),
);

/** The entry that approved a request (its receipt names the decider and takes its nonce from it). */
export async function approvedEntry(database: GateDatabase, requestId: string): Promise<AuditRow | undefined> {
  return selectApprovedEntry.first(database.db, database.dialect, requestId);
}

/** A request's row as stored, unchecked (RequestService.get checks it against its audit chain). */
export async function findRequest(database: GateDatabase, id: string, executor: Kysely<GateSchema> = database.db): Promise<RequestRow | undefined> {
  return selectRequest.first(executor, database.dialect, id);
}

/** An audit entry with its leaf in the audit log (null: it has none). */
export type LoggedAuditRow = AuditRow & { leaf_hash: Buffer | null };

/** A request's audit entries in seq order with their leaves: its trail index (request_id, seq), then one leaf per entry by item id. */
export function loggedTrailQuery(db: Kysely<GateSchema>, requestId: string) {
  return (
    db
      .selectFrom('audit_entries as e')
      .leftJoin('audit_log_leaves as l', 'l.item_id', 'e.id')
      .selectAll('e')
      .select('l.leaf_hash')
      .where('e.request_id', '=', requestId)
      // (request_id, seq) is unique: the trail index gives this order.
      .orderBy('e.seq')
  );
}

const selectLoggedTrail = new PreparedQuery((db: Kysely<GateSchema>, _dialect, requestId: string) => loggedTrailQuery(db, requestId));

/** The request's logged trail (loggedTrailQuery), read on every read and write of the request. */
export async function loggedTrail(executor: Kysely<GateSchema>, database: GateDatabase, requestId: string): Promise<LoggedAuditRow[]> {
  return selectLoggedTrail.execute(executor, database.dialect, requestId);
}

/** The logged trails of several requests (a page of the list), by request id. */
export async function loggedTrails(executor: Kysely<GateSchema>, requestIds: readonly string[]): Promise<Map<string, LoggedAuditRow[]>> {
  const trails = new Map<string, LoggedAuditRow[]>(requestIds.map((id) => [id, []]));
  if (requestIds.length === 0) return trails;
  const rows = await executor
    .selectFrom('audit_entries as e')
    .leftJoin('audit_log_leaves as l', 'l.item_id', 'e.id')
    .selectAll('e')
    .select('l.leaf_hash')
    .where('e.request_id', 'in', [...requestIds])
    .orderBy('e.request_id')
    .orderBy('e.seq')
    .execute();
  for (const row of rows) trails.get(row.request_id)?.push(row);
  return trails;
}

/** Requests by id after `after` (keyset pages of GET /api/audit/requests). */
export async function requestsAfter(database: GateDatabase, after: string | undefined, limit: number): Promise<RequestRow[]> {
  let query = database.db.selectFrom('requests').selectAll();
  if (after !== undefined) query = query.where('id', '>', after);
  return query.orderBy('id').limit(limit).execute();
}

/** A request row with the highest seq stored in its trail (null: no entry), read in one statement (VerifiedStates). */
interface RowWithTrailHead {
  row: RequestRow;
  trailHead: number | null;
}

function requestWithTrailHead(db: Kysely<GateSchema>, id: string) {
  return (
    db
      .selectFrom('requests as r')
      .selectAll('r')
      // The trail index (request_id, seq) answers it from its last key.
      .select((eb) =>
        eb
          .selectFrom('audit_entries as e')
          .select((inner) => inner.fn.max('e.seq').as('head'))
          .whereRef('e.request_id', '=', 'r.id')
          .as('trail_head'),
      )
      .where('r.id', '=', id)
  );
}

const selectRequestWithTrailHead = new PreparedQuery((db: Kysely<GateSchema>, _dialect, id: string) => requestWithTrailHead(db, id));
const selectRequestWithTrailHeadForUpdate = new PreparedQuery((db: Kysely<GateSchema>, dialect, id: string) =>
  forUpdateOf(requestWithTrailHead(db, id), dialect, 'r'),
);

/**
 * Copied column by column: an object rest (`{ trail_head, ...row }`) of a better-sqlite3 row took
 * V8's generic path, about 9 µs a row against 0.3 (every GET and decide reads one).
 */
function splitTrailHead(found: (RequestRow & { trail_head: number | null }) | undefined): RowWithTrailHead | undefined {
  if (found === undefined) return undefined;
  const row: RequestRow = {
    id: found.id,
    action: found.action,
    params: found.params,
    context: found.context,
    urgency: found.urgency,
    status: found.status,
    expires_at: found.expires_at,
    created_at: found.created_at,
    decided_at: found.decided_at,
    decided_by: found.decided_by,
    decision_reason: found.decision_reason,
    policy_decision: found.policy_decision,
    confirmed_at: found.confirmed_at,
    execution_result: found.execution_result,
    deadline_at: found.deadline_at,
    escalation_tier: found.escalation_tier,
    remind_at: found.remind_at,
    audit_head_seq: found.audit_head_seq,
    audit_head_hash: found.audit_head_hash,
  };
  return { row, trailHead: found.trail_head };
}

/** A request's row as stored, unchecked, with its trail's highest seq. */
export async function findRequestWithTrailHead(database: GateDatabase, id: string): Promise<RowWithTrailHead | undefined> {
  return splitTrailHead(await selectRequestWithTrailHead.first(database.db, database.dialect, id));
}

/**
 * Locks a request's row and reads its trail's highest seq in the same statement: a row this
 * instance vouched for (VerifiedStates) needs no other read before the write.
 */
export async function lockRequestWithTrailHead(trx: Transaction<GateSchema>, database: GateDatabase, id: string): Promise<RowWithTrailHead | undefined> {
  return splitTrailHead(await selectRequestWithTrailHeadForUpdate.first(trx, database.dialect, id));
}

/** The columns a transition changes besides the chain head (a decision, an expiry, a confirmation). */
export type RequestChanges = Partial<
  Pick<
    RequestRow,
    'status' | 'decided_at' | 'decided_by' | 'decision_reason' | 'confirmed_at' | 'execution_result' | 'deadline_at' | 'escalation_tier' | 'remind_at'
  >
>;

/**
 * Writes a linked audit entry (service.ts auditRow) and moves its request's chain head to it, with
 * the transition's `changes` in the same update, under the request's row lock (its leaf goes to the
 * audit log next: service.ts RequestWrite).
 */
export async function insertAuditEntry(trx: Transaction<GateSchema>, entry: AuditRow, changes: RequestChanges = {}): Promise<void> {
  await trx.insertInto('audit_entries').values(entry).execute();
  await trx
    .updateTable('requests')
    .set({ ...changes, audit_head_seq: entry.seq, audit_head_hash: entry.hash })
    .where('id', '=', entry.request_id)
    .execute();
}

export interface ListRequestsQuery {
  status?: string;
  action?: string;
  urgency?: string;
  /** context.agentId (index requests_agent_created, migration 0023). */
  agentId?: string;
  /** Inclusive bounds on created_at, epoch ms. */
  from?: number;
  to?: number;
  limit: number;
  offset: number;
}

/** The list's query, newest first (what the index test explains): each filter reads an index ending in the list's order. */
export function listRequestsQuery(database: GateDatabase, query: ListRequestsQuery) {
  let q = database.db.selectFrom('requests').selectAll();
  if (query.status !== undefined) q = q.where('status', '=', query.status);
  if (query.action !== undefined) q = q.where('action', '=', query.action);
  if (query.urgency !== undefined) q = q.where('urgency', '=', query.urgency);
  if (query.agentId !== undefined) q = q.where(jsonText(database.dialect, 'context', 'agentId'), '=', query.agentId);
  if (query.from !== undefined) q = q.where('created_at', '>=', query.from);
  if (query.to !== undefined) q = q.where('created_at', '<=', query.to);
  return q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(query.limit).offset(query.offset);
}

export async function listRequests(database: GateDatabase, query: ListRequestsQuery): Promise<RequestRow[]> {
  return listRequestsQuery(database, query).execute();
}

/** A request's row and trail, oldest first, and its chain's verdict against the head the request row records and the audit log's leaves (one snapshot). */
export async function verifiedAuditTrail(
  database: GateDatabase,
  requestId: string,
): Promise<{ request: RequestRow; rows: AuditRow[]; head: AuditChainHead; verdict: AuditChainVerdict; covers: ErasureCovers } | undefined> {
  return readSnapshot(database, async (db) => {
    // Counted first: an entry committed after it (with its leaf) only lengthens the trail read next.
    const logged = await countScopeLeaves(db, requestId);
    const request = await findRequest(database, requestId, db);
    if (!request) return undefined;
    const rows = await db.selectFrom('audit_entries').selectAll().where('request_id', '=', requestId).orderBy('seq').orderBy('id').execute();
    const head = { seq: request.audit_head_seq, hash: request.audit_head_hash };
    const leaves =
      rows.length === 0
        ? []
        : await db
            .selectFrom('audit_log_leaves')
            .select(['item_id', 'leaf_hash'])
            .where(
              'item_id',
              'in',
              rows.map((row) => row.id),
            )
            .execute();
    const covers = await erasureCovers(db, erasuresNamed(request, rows));
    return {
      request,
      rows,
      head,
      covers,
      verdict: verifyAuditChain(rows, head, new Map(leaves.map((leaf) => [leaf.item_id, hashHex(leaf.leaf_hash)])), logged, covers),
    };
  });
}

/** The expiry scanner's query: pending requests past their current deadline, earliest first (the index requests_current_deadline, migration 0018). */
export function dueForExpiryQuery(db: Kysely<GateSchema>, now: number, limit: number) {
  return db.selectFrom('requests').select('id').where('status', '=', 'pending').where('deadline_at', '<=', now).orderBy('deadline_at').limit(limit);
}

/** Pending requests whose deciders are due a reminder (the index requests_remind, migration 0018). */
export async function dueForReminder(database: GateDatabase, now: number, limit: number): Promise<string[]> {
  const rows = await database.db
    .selectFrom('requests')
    .select('id')
    .where('remind_at', '<=', now)
    .where('status', '=', 'pending')
    .orderBy('remind_at')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

export async function dueForExpiry(database: GateDatabase, now: number, limit: number): Promise<string[]> {
  const rows = await dueForExpiryQuery(database.db, now, limit).execute();
  return rows.map((r) => r.id);
}
