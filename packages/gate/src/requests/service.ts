import { BulkInserter, canonicalJson, GroupCommitter, newId, toIso, type ZodApp } from '@vigil/platform';
import { auditEntryLeaf } from '../audit-log/index.ts';
import type { Transaction } from 'kysely';
import { argsDigest, auditEntryHash, chainEntryOf, RECEIPT_TTL_MS, signReceipt, type Receipt } from '../stored-formats/index.ts';
import { systemActor, type AuditActor } from '../auth/index.ts';
import type { GateContext } from '../context.ts';
import { gateError } from '../errors.ts';
import type { PolicyDecision } from '../policies/index.ts';
import type { GateSchema } from '../schema.ts';
import type { AuditRow, RequestRow } from './tables.ts';
import type { Enqueued, Transition, WebhookEvent } from '../webhooks/index.ts';
import { reportPolicyDeny } from './breach.ts';
import { EXPIRED_REASON, requestInputHash } from './evidence.ts';
import { assertLockedRowEvidence, assertRowsEvidence, RequestTamperedError, rowEvidenceProblem } from './row-check.ts';
import { approvedEntry, dueForExpiry, findRequest, insertAuditEntry, lockRequestWithTrail, loggedTrail, storedDecision } from './store.ts';

export const EXPIRY_ACTOR = 'system:expiry';
const expiryActor = systemActor(EXPIRY_ACTOR);

export interface NewRequest {
  action: string;
  params: Record<string, unknown>;
  context: Record<string, unknown>;
  urgency: string;
  expiresAt: number | null;
}

type Log = ZodApp['log'];

/** One request creation, ready to write: its row (already in its final state), audit entries and transitions. */
interface Creation {
  row: RequestRow;
  audits: AuditRow[];
  transitions: Transition[];
}

const REQUEST_COLUMNS: (keyof RequestRow)[] = [
  'id',
  'action',
  'params',
  'context',
  'urgency',
  'status',
  'expires_at',
  'created_at',
  'decided_at',
  'decided_by',
  'decision_reason',
  'policy_decision',
  'confirmed_at',
  'execution_result',
  'audit_head_seq',
  'audit_head_hash',
];
const AUDIT_COLUMNS: (keyof AuditRow)[] = [
  'id',
  'request_id',
  'action',
  'ts',
  'event',
  'actor',
  'actor_key_id',
  'actor_key_name',
  'details',
  'seq',
  'prev_hash',
  'hash',
];
const requestInserter = new BulkInserter<GateSchema, 'requests'>('requests', REQUEST_COLUMNS);
const auditInserter = new BulkInserter<GateSchema, 'audit_entries'>('audit_entries', AUDIT_COLUMNS);

/** Requests created concurrently share one transaction; far more than this many are split. */
const MAX_CREATIONS_PER_GROUP = 256;

/**
 * The next entry of a request's audit chain (audit/chain.ts), linked after the head `request` holds;
 * moves that head. The caller holds the request's row lock, or writes the row with the entry.
 */
function auditRow(request: RequestRow, event: string, by: AuditActor, at: number, details?: object): AuditRow {
  const entry = {
    id: newId(),
    request_id: request.id,
    action: request.action,
    ts: at,
    event,
    actor: by.actor,
    actor_key_id: by.keyId,
    actor_key_name: by.keyName,
    details: details === undefined ? null : JSON.stringify(details),
    seq: request.audit_head_seq + 1,
  };
  const prevHash = request.audit_head_hash;
  const hash = auditEntryHash(chainEntryOf(entry), prevHash);
  request.audit_head_seq = entry.seq;
  request.audit_head_hash = hash;
  return { ...entry, prev_hash: prevHash, hash };
}

/**
 * One write of the request lifecycle: its transaction, and what its commit must announce. Writes
 * reach the outbox and the audit log only through it, and `runWrite` announces once the
 * transaction has committed (never after a rollback), so no write can forget an announcement.
 */
class RequestWrite {
  /** Outbox rows written: attempted at once after the commit, in the background. */
  private readonly enqueued: Enqueued = { each: [], observe: [] };
  /** Audit-log leaves appended: counted towards the next checkpoint after the commit. */
  private leaves = 0;

  constructor(
    readonly trx: Transaction<GateSchema>,
    private readonly ctx: GateContext,
  ) {}

  /** Writes the outbox rows of the transitions. */
  async enqueue(transitions: readonly Transition[]): Promise<void> {
    const enqueued = await this.ctx.outbox.enqueue(this.trx, this.ctx.database.dialect, transitions);
    this.enqueued.each.push(...enqueued.each);
    this.enqueued.observe.push(...enqueued.observe);
  }

  /** Appends the entries' leaves to the audit log: the last write, as it takes the log head's lock, held to the commit. */
  async appendLeaves(entries: readonly AuditRow[]): Promise<void> {
    await this.ctx.auditLog.append(this.trx, entries.map(auditEntryLeaf));
    this.leaves += entries.length;
  }

  announce(): void {
    this.ctx.outbox.dispatch(this.enqueued);
    if (this.leaves > 0) this.ctx.auditLog.committed(this.leaves);
  }
}

/** Runs `work` in one transaction and, after its commit, announces what it wrote (RequestWrite). */
async function runWrite<T>(ctx: GateContext, work: (write: RequestWrite) => Promise<T>): Promise<T> {
  const { write, result } = await ctx.database.db.transaction().execute(async (trx) => {
    const write = new RequestWrite(trx, ctx);
    return { write, result: await work(write) };
  });
  write.announce();
  return result;
}

/** The request lifecycle. Every transition writes its audit entry and its outbox rows in the same transaction (runWrite). */
export class RequestService {
  private readonly creations: GroupCommitter<Creation, void>;
  /** The approving entry of a row this service just approved, so its receipt costs no read (receipt). */
  private readonly approvals = new WeakMap<RequestRow, AuditRow>();

  constructor(
    private readonly ctx: GateContext,
    private readonly log: Log,
  ) {
    const { database } = ctx;
    this.creations = new GroupCommitter(
      async (group) => {
        await runWrite(ctx, async (write) => {
          await requestInserter.insert(
            write.trx,
            database.dialect,
            group.map((c) => c.row),
          );
          const audits = group.flatMap((c) => c.audits);
          await auditInserter.insert(write.trx, database.dialect, audits);
          await write.enqueue(group.flatMap((c) => c.transitions));
          await write.appendLeaves(audits);
        });
        return group.map(() => undefined);
      },
      { maxInFlight: database.dialect === 'sqlite' ? 1 : 4, maxGroupSize: MAX_CREATIONS_PER_GROUP },
    );
  }

  /** The request's next audit entry and its leaf: the last write of its transaction (RequestWrite.appendLeaves). */
  private async audit(write: RequestWrite, request: RequestRow, event: string, by: AuditActor, at: number, details?: object): Promise<AuditRow> {
    const entry = auditRow(request, event, by, at, details);
    await insertAuditEntry(write.trx, entry);
    await write.appendLeaves([entry]);
    return entry;
  }

  /**
   * The approval receipt of a row (stored-formats/receipt.ts), signed with the audit log's key;
   * null unless approved. A pure function of the row, its approving entry and the key (Ed25519
   * signatures are deterministic), so every read answers the same receipt until the key rotates.
   */
  async receipt(row: RequestRow): Promise<Receipt | null> {
    if (row.status !== 'approved' || row.decided_at === null) return null;
    const entry = this.approvals.get(row) ?? (await approvedEntry(this.ctx.database, row.id));
    if (!entry) return null;
    return signReceipt(this.ctx.auditLog.key, {
      v: 1,
      requestId: row.id,
      action: row.action,
      argsDigest: argsDigest(JSON.parse(row.params)),
      decision: 'approved',
      decidedBy: entry.actor_key_id === null ? { user: entry.actor } : { keyId: entry.actor_key_id, name: entry.actor_key_name ?? entry.actor },
      policyId: storedDecision(row).policyId,
      issuedAt: toIso(row.decided_at),
      expiresAt: toIso(row.decided_at + RECEIPT_TTL_MS),
      // The approving entry's chain hash: unique per decision, and fixed by the audit chain.
      nonce: entry.hash.slice(0, 32),
    });
  }

  /**
   * Records in an approved request's audit chain that its receipt was redeemed, once: `claim` runs
   * under the request's row lock and answers whether this redemption is the first (its unique row,
   * receipts/); only then is the `redeemed` entry written. Undefined when the request is absent.
   */
  async recordRedemption(
    id: string,
    by: AuditActor,
    details: Record<string, unknown>,
    claim: (trx: Transaction<GateSchema>, row: RequestRow, at: number) => Promise<boolean>,
  ): Promise<{ row: RequestRow; first: boolean } | undefined> {
    const now = this.ctx.clock.now();
    return runWrite(this.ctx, async (write) => {
      const row = await this.lockChecked(write, id);
      if (!row) return undefined;
      if (row.status !== 'approved' || !(await claim(write.trx, row, now))) return { row, first: false };
      await this.transition(write, row, 'request.redeemed');
      await this.audit(write, row, 'redeemed', by, now, details);
      return { row, first: true };
    });
  }

  private async transition(write: RequestWrite, row: RequestRow, event: WebhookEvent): Promise<void> {
    await write.enqueue([{ event, request: { ...row } }]);
  }

  /**
   * Creates a request; the policy engine may decide it at once (auto_approve / auto_deny). The row
   * is written in its final state, with the `created` and decision audit entries and webhooks.
   */
  async create(input: NewRequest, by: AuditActor): Promise<RequestRow> {
    const now = this.ctx.clock.now();
    const decision = await this.ctx.policies.evaluate({ ...input, status: 'pending' });
    const auto = decision.decision === 'auto_approve' ? 'approved' : decision.decision === 'auto_deny' ? 'denied' : null;
    // Stored as canonical JSON, so that a read hashes them as stored against the created entry's requestHash (evidence.ts).
    const params = canonicalJson(input.params);
    const context = canonicalJson(input.context);
    const policyDecision = canonicalJson(decision);
    const requestHash = requestInputHash({
      action: input.action,
      params,
      context,
      urgency: input.urgency,
      expiresAt: input.expiresAt === null ? null : toIso(input.expiresAt),
      policyDecision,
    });
    const pending: RequestRow = {
      id: newId(),
      action: input.action,
      params,
      context,
      urgency: input.urgency,
      status: 'pending',
      expires_at: input.expiresAt,
      created_at: now,
      decided_at: null,
      decided_by: null,
      decision_reason: null,
      policy_decision: policyDecision,
      confirmed_at: null,
      execution_result: null,
      audit_head_seq: -1,
      audit_head_hash: null,
    };
    const creation: Creation = {
      row: pending,
      audits: [auditRow(pending, 'created', by, now, { urgency: pending.urgency, policyDecision: decision.decision, requestHash })],
      transitions: [{ event: 'request.created', request: pending }],
    };
    if (auto) {
      const policyActor = `policy:${decision.policyId}`;
      const reason = `${auto === 'approved' ? 'Approved' : 'Denied'} by policy "${decision.policyName}" (${decision.policyId}), rule ${decision.ruleIndex}`;
      creation.row = { ...pending, status: auto, decided_at: now, decided_by: policyActor, decision_reason: reason };
      const entry = auditRow(creation.row, auto, systemActor(policyActor), now, { reason, policyId: decision.policyId, ruleIndex: decision.ruleIndex });
      creation.audits.push(entry);
      if (auto === 'approved') this.approvals.set(creation.row, entry);
      creation.transitions.push({ event: 'request.decided', request: creation.row });
    }
    await this.creations.submit(creation);
    if (auto === 'denied') reportPolicyDeny(this.ctx.config, this.log, creation.row, decision);
    return creation.row;
  }

  /** Marks a pending request past its deadline `expired` (inside the caller's write). */
  private async expireLocked(write: RequestWrite, row: RequestRow, now: number): Promise<void> {
    row.status = 'expired';
    row.decided_at = now;
    row.decided_by = EXPIRY_ACTOR;
    row.decision_reason = EXPIRED_REASON;
    await write.trx
      .updateTable('requests')
      .set({ status: row.status, decided_at: now, decided_by: row.decided_by, decision_reason: row.decision_reason })
      .where('id', '=', row.id)
      .execute();
    // The audit entry last: its leaf takes the log head's lock (RequestWrite.appendLeaves).
    await this.transition(write, row, 'request.expired');
    await this.audit(write, row, 'expired', expiryActor, now, { expiresAt: row.expires_at });
  }

  private isDue(row: RequestRow, now: number): boolean {
    return row.status === 'pending' && row.expires_at !== null && row.expires_at <= now;
  }

  /**
   * Reads a request, expiring it first if its deadline has passed, and checks the row against its
   * logged audit trail: a row changed outside the gate is refused (requestTampered), never answered.
   */
  async get(id: string): Promise<RequestRow | undefined> {
    const row = await findRequest(this.ctx.database, id);
    if (row && this.isDue(row, this.ctx.clock.now())) return (await this.expire(id)) ?? row;
    if (row) await assertRowsEvidence(this.ctx.database, [row]);
    return row;
  }

  /** Checks rows read for an answer (a list page) against their logged audit trails (requestTampered). */
  async checkRows(rows: readonly RequestRow[]): Promise<void> {
    await assertRowsEvidence(this.ctx.database, rows);
  }

  /**
   * Reads a request as stored, expiring it first if due, without judging the row: for the routes
   * that show its audit trail and the chain's verdict, tampered or not. Undefined when absent.
   */
  async getForAudit(id: string): Promise<RequestRow | undefined> {
    const row = await findRequest(this.ctx.database, id);
    if (!row || !this.isDue(row, this.ctx.clock.now())) return row;
    try {
      return (await this.expire(id)) ?? row;
    } catch (error) {
      if (error instanceof RequestTamperedError) return row;
      throw error;
    }
  }

  /** Locks a request for a write and checks it against its logged audit trail first (requestTampered). */
  private async lockChecked(write: RequestWrite, id: string): Promise<RequestRow | undefined> {
    const locked = await lockRequestWithTrail(write.trx, this.ctx.database, id);
    if (!locked) return undefined;
    // A lock that waited for another write answers the row as that write left it, but PostgreSQL joins
    // the entries its statement saw before the wait: read the trail again, under the lock, before refusing.
    if (rowEvidenceProblem(locked.row, locked.trail) !== null) assertLockedRowEvidence(locked.row, await loggedTrail(write.trx, this.ctx.database, id));
    return locked.row;
  }

  /** Expires one request if it is still pending and due; returns its current row. A tampered row is refused (requestTampered). */
  async expire(id: string): Promise<RequestRow | undefined> {
    const now = this.ctx.clock.now();
    return runWrite(this.ctx, async (write) => {
      const locked = await this.lockChecked(write, id);
      if (locked && this.isDue(locked, now)) await this.expireLocked(write, locked, now);
      return locked;
    });
  }

  /** Scanner tick: expires every pending request past its deadline; a tampered one is logged and left as it is. */
  async expireDue(): Promise<number> {
    let expired = 0;
    const tampered = new Set<string>();
    for (;;) {
      const ids = (await dueForExpiry(this.ctx.database, this.ctx.clock.now(), 200 + tampered.size)).filter((id) => !tampered.has(id));
      for (const id of ids) {
        try {
          if ((await this.expire(id))?.status === 'expired') expired += 1;
        } catch (error) {
          if (!(error instanceof RequestTamperedError)) throw error;
          tampered.add(id);
          this.log.error({ requestId: id, err: error }, 'request not expired: it does not match its audit trail');
        }
      }
      if (ids.length < 200) return expired;
    }
  }

  /**
   * Decides a pending request: exactly one decision wins, whichever path it comes from (API,
   * dashboard, MCP, chat). `details` joins the audit entry (chat: the platform's user name).
   */
  async decide(
    id: string,
    decision: 'approved' | 'denied',
    reason: string | undefined,
    by: AuditActor,
    details: Record<string, unknown> = {},
  ): Promise<RequestRow> {
    const now = this.ctx.clock.now();
    const outcome = await runWrite(this.ctx, async (write) => {
      const row = await this.lockChecked(write, id);
      if (!row) return { kind: 'missing' as const };
      if (this.isDue(row, now)) {
        await this.expireLocked(write, row, now);
        return { kind: 'expired' as const };
      }
      if (row.status !== 'pending') return { kind: 'decided' as const };
      if ((JSON.parse(row.policy_decision) as PolicyDecision).requireReason && !reason?.trim()) return { kind: 'reason' as const };
      row.status = decision;
      row.decided_at = now;
      row.decided_by = by.actor;
      row.decision_reason = reason ?? null;
      await write.trx
        .updateTable('requests')
        .set({ status: decision, decided_at: now, decided_by: by.actor, decision_reason: row.decision_reason })
        .where('id', '=', id)
        .execute();
      await this.transition(write, row, 'request.decided');
      const entryDetails = { ...details, ...(reason !== undefined && { reason }) };
      const entry = await this.audit(write, row, decision, by, now, Object.keys(entryDetails).length === 0 ? undefined : entryDetails);
      if (decision === 'approved') this.approvals.set(row, entry);
      return { kind: 'decided-now' as const, row };
    });
    switch (outcome.kind) {
      case 'missing':
        throw gateError('requestNotFound');
      case 'expired':
        throw gateError('alreadyDecided', 'Request expired before a decision');
      case 'decided':
        throw gateError('alreadyDecided');
      case 'reason':
        throw gateError('reasonRequired');
      case 'decided-now':
        return outcome.row;
    }
  }

  /**
   * Records in a request's audit trail that someone without the right tried to decide it (a chat
   * click from a user the deciders do not include); the request is unchanged. Undefined when absent.
   */
  async refuseDecision(id: string, by: AuditActor, details: Record<string, unknown>): Promise<RequestRow | undefined> {
    const now = this.ctx.clock.now();
    return runWrite(this.ctx, async (write) => {
      const locked = await this.lockChecked(write, id);
      if (locked) await this.audit(write, locked, 'decision_refused', by, now, details);
      return locked;
    });
  }

  async confirm(id: string, result: Record<string, unknown>, by: AuditActor): Promise<RequestRow> {
    const now = this.ctx.clock.now();
    const outcome = await runWrite(this.ctx, async (write) => {
      const row = await this.lockChecked(write, id);
      if (!row) return { kind: 'missing' as const };
      if (row.status !== 'approved' || row.confirmed_at !== null) return { kind: 'conflict' as const };
      row.confirmed_at = now;
      // Canonical, as the row is compared with the result its confirmed entry holds (evidence.ts).
      row.execution_result = canonicalJson(result);
      await write.trx.updateTable('requests').set({ confirmed_at: now, execution_result: row.execution_result }).where('id', '=', id).execute();
      await this.transition(write, row, 'request.confirmed');
      await this.audit(write, row, 'confirmed', by, now, { result });
      return { kind: 'confirmed' as const, row };
    });
    if (outcome.kind === 'missing') throw gateError('requestNotFound');
    if (outcome.kind === 'conflict') throw gateError('notConfirmable');
    return outcome.row;
  }
}
