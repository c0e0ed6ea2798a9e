import { auditedGroupsInFlight, BulkInserter, canonicalJson, GroupCommitter, newId, toIso, type ZodApp } from '@vigil/platform';
import { auditEntryLeaf } from '../audit-log/index.ts';
import type { Transaction } from 'kysely';
import { argsDigest, RECEIPT_TTL_MS, receiptNonce, signReceipt, writtenEntryHash, type Receipt } from '../stored-formats/index.ts';
import { systemActor, type AuditActor } from '../auth/index.ts';
import type { GateContext } from '../context.ts';
import { gateError } from '../errors.ts';
import { redactRequestInput } from '../redaction/index.ts';
import { storedDecisionText, type PolicyDecision } from '../policies/index.ts';
import type { GateSchema } from '../schema.ts';
import type { AuditRow, RequestRow } from './tables.ts';
import type { Enqueued, Notice, Transition, WebhookEvent } from '../webhooks/index.ts';
import { outcomeAfter, progressOf, type QuorumProgress, type VoteKeeper } from '../approvers/index.ts';
import { nextStep, planOf, reminderBefore } from '../escalation/index.ts';
import { reportPolicyDeny } from './breach.ts';
import { EXPIRED_REASON, requestInputHash } from './evidence.ts';
import { assertLockedRowEvidence, assertRowsEvidence, RequestTamperedError } from './row-check.ts';
import {
  approvedEntry,
  dueForExpiry,
  dueForReminder,
  findRequest,
  findRequestWithTrailHead,
  insertAuditEntry,
  lockRequestWithTrailHead,
  loggedTrail,
  storedDecision,
  type RequestChanges,
} from './store.ts';
import { VerifiedStates } from './verified-states.ts';

export const EXPIRY_ACTOR = 'system:expiry';
const expiryActor = systemActor(EXPIRY_ACTOR);

export interface NewRequest {
  action: string;
  params: Record<string, unknown>;
  context: Record<string, unknown>;
  urgency: string;
  expiresAt: number | null;
  /** When a policy approves it at once, redeem its receipt for the requester in the same transaction (issuedRedemption). */
  redeemOnIssue?: boolean;
}

/** A receipt redeemed in the transaction that approved its request (POST /api/requests with `redeem: true`). */
export interface IssuedRedemption {
  requestId: string;
  action: string;
  /** The receipt's nonce and signing key. */
  nonce: string;
  keyId: string;
  at: number;
  by: AuditActor;
}

/** Writes the subject index's rows of a group of new requests (one statement at most: the keyed hashes are computed in memory). */
export type SubjectIndexer = (trx: Transaction<GateSchema>, rows: readonly RequestRow[]) => Promise<void>;

/** Writes the redemption rows of receipts redeemed at issue (the receipts feature owns them), in the creations' transaction. */
export type IssuedRedemptionWriter = (trx: Transaction<GateSchema>, redemptions: readonly IssuedRedemption[]) => Promise<void>;

type Log = ZodApp['log'];

/** Standing grants that approve requests a policy routes for a decision (the grants feature: approveWithGrants). */
export interface GrantApprover {
  /**
   * The id of a grant that covers this request at `now` (none of `passedOver`), if any; undefined
   * at once, without a promise, when it is known without a read that none does (every POST asks).
   */
  match(request: { action: string; context: Record<string, unknown> }, now: number, passedOver: ReadonlySet<string>): Promise<string | undefined> | undefined;
  /**
   * Takes one use of the grant for the request, in its creation's transaction: the notices it makes
   * (its last use), or null when none is left (used up, expired or revoked).
   */
  claim(trx: Transaction<GateSchema>, grantId: string, request: RequestRow, now: number): Promise<Notice[] | null>;
}

/** What the budgets covering a new request say (the budgets feature: guardWithBudgets). */
export interface BudgetAssessment {
  /** By budget name, what policies read as `budgets.<name>.…`: spendUsd, softUsd, hardUsd, level. */
  figures: Record<string, { spendUsd: number; softUsd: number | null; hardUsd: number | null; level: 'ok' | 'soft' | 'hard' }>;
  /** The worst threshold crossed: hard denies the request, soft routes it to a person. */
  breach: { level: 'soft' | 'hard'; budgetId: string; reason: string } | null;
}

/** Budgets enforced at creation (the budgets feature). */
export interface BudgetGuard {
  /** What the budgets say of a new request; undefined at once, without a promise, when it is known without a read that none is enabled. */
  assess(request: { context: Record<string, unknown> }, now: number): Promise<BudgetAssessment | undefined> | undefined;
}

/** Who decides a request at its creation, when it is not left pending: a policy, a grant or a budget. */
interface CreationDecider {
  status: 'approved' | 'denied';
  actor: string;
  reason: string;
  details: Record<string, unknown>;
  grantId?: string;
}

/** Who decides a new request at once: a budget over its hard threshold, a policy's auto decision, a grant; undefined: pending. */
function deciderOf(decision: PolicyDecision, grantId: string | undefined, breach: BudgetAssessment['breach']): CreationDecider | undefined {
  if (breach?.level === 'hard')
    return { status: 'denied', actor: `budget:${breach.budgetId}`, reason: breach.reason, details: { budgetId: breach.budgetId, level: 'hard' } };
  const rule = { policyId: decision.policyId, ruleIndex: decision.ruleIndex };
  if (decision.decision === 'auto_approve' || decision.decision === 'auto_deny') {
    const status = decision.decision === 'auto_approve' ? 'approved' : 'denied';
    const reason = `${status === 'approved' ? 'Approved' : 'Denied'} by policy "${decision.policyName}" (${decision.policyId}), rule ${decision.ruleIndex}`;
    return { status, actor: `policy:${decision.policyId}`, reason, details: rule };
  }
  if (grantId !== undefined)
    return { status: 'approved', actor: `grant:${grantId}`, reason: `Approved by grant ${grantId}`, details: { grantId, ...rule }, grantId };
  return undefined;
}

/** A creation's grant had no use left when its transaction took one: create() passes it over. */
class GrantUsedUpError extends Error {
  constructor(readonly grantId: string) {
    super(`grant ${grantId} has no use left`);
  }
}

/** One request creation, ready to write: its row (already in its final state), audit entries and transitions. */
interface Creation {
  row: RequestRow;
  audits: AuditRow[];
  transitions: Transition[];
  /** Its receipt, redeemed at issue. */
  redemption?: IssuedRedemption;
  /** The grant that approves it: one of its uses is taken in the creation's transaction. */
  grantId?: string;
}

const REQUEST_COLUMNS = {
  id: 'text',
  action: 'text',
  params: 'text',
  context: 'text',
  urgency: 'text',
  status: 'text',
  expires_at: 'bigint',
  created_at: 'bigint',
  decided_at: 'bigint',
  decided_by: 'text',
  decision_reason: 'text',
  policy_decision: 'text',
  confirmed_at: 'bigint',
  execution_result: 'text',
  deadline_at: 'bigint',
  escalation_tier: 'integer',
  remind_at: 'bigint',
  audit_head_seq: 'integer',
  audit_head_hash: 'text',
} as const;
const AUDIT_COLUMNS = {
  id: 'text',
  request_id: 'text',
  action: 'text',
  ts: 'bigint',
  event: 'text',
  actor: 'text',
  actor_key_id: 'text',
  actor_key_name: 'text',
  details: 'text',
  seq: 'integer',
  prev_hash: 'text',
  hash: 'text',
} as const;
const requestInserter = new BulkInserter<GateSchema, 'requests'>('requests', REQUEST_COLUMNS);
const auditInserter = new BulkInserter<GateSchema, 'audit_entries'>('audit_entries', AUDIT_COLUMNS);

/** Requests created concurrently share one transaction; far more than this many are split. */
const MAX_CREATIONS_PER_GROUP = 256;
/** Decisions made concurrently share one transaction, up to this many. */
const MAX_DECISIONS_PER_GROUP = 64;

/** One decision, as decide() was called (`now`: when). */
interface Decision {
  id: string;
  decision: 'approved' | 'denied';
  reason: string | undefined;
  by: AuditActor;
  details: Record<string, unknown>;
  now: number;
}

type DecisionOutcome =
  { kind: 'missing' | 'expired' | 'decided' | 'reason' | 'voted-already' | 'not-an-approver' } | { kind: 'decided-now' | 'voted'; row: RequestRow };

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
    // Canonical, so that the hash takes the stored text as it is (writtenEntryHash).
    details: details === undefined ? null : canonicalJson(details),
    seq: request.audit_head_seq + 1,
  };
  const prevHash = request.audit_head_hash;
  const hash = writtenEntryHash(entry, prevHash);
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
  /** Audit entries written, whose leaves the log gets as the transaction's last write (flush). */
  private readonly entries: AuditRow[] = [];
  /** Rows checked or written, by id (in their final state once the work is done): vouched for after the commit. */
  private readonly rows = new Map<string, RequestRow>();

  constructor(
    readonly trx: Transaction<GateSchema>,
    private readonly ctx: GateContext,
    private readonly verified: VerifiedStates,
  ) {}

  /** A row checked against its trail or written by this transaction, remembered as it stands at the commit. */
  vouchAtCommit(rows: readonly RequestRow[]): void {
    for (const row of rows) this.rows.set(row.id, row);
  }

  /** The row of `id` as this transaction holds it locked and has written it, if it has (a group of decisions naming one request twice). */
  held(id: string): RequestRow | undefined {
    return this.rows.get(id);
  }

  /** Transitions whose outbox rows are written with the transaction's last writes (flush). */
  private readonly transitions: Transition[] = [];

  /** Announces transitions: their outbox rows are written once for the whole transaction (flush). */
  enqueue(transitions: readonly Transition[]): void {
    this.transitions.push(...transitions);
  }

  /** Notices (a grant's last use) whose outbox rows are written with the transaction's last writes (flush). */
  private readonly notices: Notice[] = [];

  notify(notices: readonly Notice[]): void {
    this.notices.push(...notices);
  }

  /** Audit entries written: their leaves go to the log together, as the transaction's last write (flush). */
  logEntries(entries: readonly AuditRow[]): void {
    this.entries.push(...entries);
  }

  /**
   * The transaction's last writes: the outbox rows of its transitions, then its entries' leaves in the
   * audit log, last as appending takes the log head's lock, held to the commit.
   */
  async flush(): Promise<void> {
    if (this.transitions.length > 0) {
      const enqueued = await this.ctx.outbox.enqueue(this.trx, this.ctx.database.dialect, this.transitions);
      this.enqueued.each.push(...enqueued.each);
      this.enqueued.observe.push(...enqueued.observe);
    }
    if (this.notices.length > 0) this.enqueued.each.push(...(await this.ctx.outbox.announce(this.trx, this.notices)).each);
    if (this.entries.length > 0) await this.ctx.auditLog.append(this.trx, this.entries.map(auditEntryLeaf));
  }

  announce(): void {
    for (const row of this.rows.values()) this.verified.remember(row);
    this.ctx.outbox.dispatch(this.enqueued);
    if (this.entries.length > 0) this.ctx.auditLog.committed(this.entries.length);
  }
}

/** Runs `work` in one transaction and, after its commit, announces what it wrote (RequestWrite). */
async function runWrite<T>(ctx: GateContext, verified: VerifiedStates, work: (write: RequestWrite) => Promise<T>): Promise<T> {
  const { write, result } = await ctx.database.db.transaction().execute(async (trx) => {
    const write = new RequestWrite(trx, ctx, verified);
    const result = await work(write);
    await write.flush();
    return { write, result };
  });
  write.announce();
  return result;
}

/** The request lifecycle. Every transition writes its audit entry and its outbox rows in the same transaction (runWrite). */
export class RequestService {
  private readonly creations: GroupCommitter<Creation, void>;
  /** The approving entry of a row this service just approved, so its receipt costs no read (receipt). */
  private readonly approvals = new WeakMap<RequestRow, AuditRow>();
  private readonly decisions: GroupCommitter<Decision, DecisionOutcome>;
  /** The rows this instance last saw vouched for (VerifiedStates): their reads and writes skip the trail read. */
  private readonly verified = new VerifiedStates();
  /** The redemption of a row created with its receipt redeemed at issue (issuedRedemption). */
  private readonly issued = new WeakMap<RequestRow, IssuedRedemption>();
  /** Set by the approvers feature (countVotesWith); until then a rule's quorum is not applied. */
  private votes: VoteKeeper<Transaction<GateSchema>> | undefined;
  /** Set by the receipts feature (redeemAtIssueWith); until then no receipt is redeemed at issue. */
  private writeIssuedRedemptions: IssuedRedemptionWriter | undefined;
  /** Set by the grants feature (approveWithGrants); until then no grant approves a request. */
  private grants: GrantApprover | undefined;
  /** Set by the budgets feature (guardWithBudgets); until then no budget is enforced. */
  private budgets: BudgetGuard | undefined;
  /** Set by the erasure feature (indexSubjectsWith); until then no request's subject is indexed. */
  private indexSubjects: SubjectIndexer | undefined;

  constructor(
    private readonly ctx: GateContext,
    private readonly log: Log,
  ) {
    const { database } = ctx;
    this.creations = new GroupCommitter(
      async (group) => {
        await runWrite(ctx, this.verified, async (write) => {
          write.vouchAtCommit(group.map((c) => c.row));
          // Uses first, in grant order (concurrent groups on PostgreSQL lock grant rows in one order).
          const claims = group.filter((c) => c.grantId !== undefined).sort((a, b) => (a.grantId! < b.grantId! ? -1 : a.grantId! > b.grantId! ? 1 : 0));
          for (const c of claims) {
            const notices = await this.grants!.claim(write.trx, c.grantId!, c.row, c.row.created_at);
            if (notices === null) throw new GrantUsedUpError(c.grantId!);
            write.notify(notices);
          }
          await requestInserter.insert(
            write.trx,
            database.dialect,
            group.map((c) => c.row),
          );
          const audits = group.flatMap((c) => c.audits);
          await auditInserter.insert(write.trx, database.dialect, audits);
          if (this.indexSubjects)
            await this.indexSubjects(
              write.trx,
              group.map((c) => c.row),
            );
          const redemptions = group.flatMap((c) => (c.redemption ? [c.redemption] : []));
          if (redemptions.length > 0) await this.writeIssuedRedemptions!(write.trx, redemptions);
          write.enqueue(group.flatMap((c) => c.transitions));
          write.logEntries(audits);
        });
        return group.map(() => undefined);
      },
      { maxInFlight: auditedGroupsInFlight(database.dialect), maxGroupSize: MAX_CREATIONS_PER_GROUP },
    );
    // On SQLite decisions arriving together share a transaction too (one writer: the COMMIT is the
    // cost). A group that fails (a tampered row among them) is retried one decision at a time by the
    // committer, so only that decision is refused.
    this.decisions = new GroupCommitter(
      (group) =>
        runWrite(ctx, this.verified, async (write) => {
          const outcomes: DecisionOutcome[] = [];
          for (const item of group) outcomes.push(await this.decideLocked(write, item));
          return outcomes;
        }),
      { maxInFlight: 1, maxGroupSize: MAX_DECISIONS_PER_GROUP },
    );
  }

  /**
   * The request's next audit entry (its leaf goes to the log with the transaction's last writes:
   * RequestWrite.flush). `changes` (already applied to `request`) are written with its new head.
   */
  private async audit(
    write: RequestWrite,
    request: RequestRow,
    event: string,
    by: AuditActor,
    at: number,
    details?: object,
    changes?: RequestChanges,
  ): Promise<AuditRow> {
    const entry = auditRow(request, event, by, at, details);
    await insertAuditEntry(write.trx, entry, changes);
    write.logEntries([entry]);
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
      nonce: receiptNonce(entry.hash),
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
    return runWrite(this.ctx, this.verified, async (write) => {
      const row = await this.lockChecked(write, id);
      if (!row) return undefined;
      if (row.status !== 'approved' || !(await claim(write.trx, row, now))) return { row, first: false };
      this.transition(write, row, 'request.redeemed');
      await this.audit(write, row, 'redeemed', by, now, details);
      return { row, first: true };
    });
  }

  /** Where the votes of requests that need several approvals are kept: the approvers feature says. */
  countVotesWith(keeper: VoteKeeper<Transaction<GateSchema>>): void {
    this.votes = keeper;
  }

  /** A request's approval progress when its rule needs several approvals, else null. */
  async approvalsOf(row: RequestRow): Promise<QuorumProgress | null> {
    const quorum = storedDecision(row).quorum ?? null;
    if (quorum === null || !this.votes) return null;
    return progressOf(quorum, row.status === 'pending' && row.audit_head_seq === 0 ? [] : await this.votes.votesOf(null, row.id));
  }

  /** How receipts redeemed at issue are stored: the receipts feature, which owns their rows, says. */
  redeemAtIssueWith(writer: IssuedRedemptionWriter): void {
    this.writeIssuedRedemptions = writer;
  }

  /** The redemption of a row create() answered, when its receipt was redeemed at issue. */
  issuedRedemption(row: RequestRow): IssuedRedemption | undefined {
    return this.issued.get(row);
  }

  private transition(write: RequestWrite, row: RequestRow, event: WebhookEvent): void {
    write.enqueue([{ event, request: { ...row } }]);
  }

  /** How routed requests are approved by standing grants: the grants feature says (approveWithGrants). */
  approveWithGrants(grants: GrantApprover): void {
    this.grants = grants;
  }

  /** How new requests' data subjects are indexed, in their creation's transaction: the erasure feature says. */
  indexSubjectsWith(indexer: SubjectIndexer): void {
    this.indexSubjects = indexer;
  }

  /** How budgets are enforced at creation: the budgets feature says (guardWithBudgets). */
  guardWithBudgets(budgets: BudgetGuard): void {
    this.budgets = budgets;
  }

  /**
   * Creates a request; the policy engine may decide it at once (auto_approve / auto_deny), a budget
   * over its hard threshold deny it (over its soft one, route it to a person), or a standing grant
   * approve one the policies route for a decision (grants/). The row is written in its final state,
   * with the `created` and decision audit entries and webhooks.
   */
  async create(raw: NewRequest, by: AuditActor): Promise<RequestRow> {
    const input = redactRequestInput(this.ctx.redactor, raw);
    const now = this.ctx.clock.now();
    const assessing = this.budgets?.assess(input, now);
    const assessment = assessing === undefined ? undefined : await assessing;
    const evaluating = this.ctx.policies.evaluate({
      action: input.action,
      status: 'pending',
      urgency: input.urgency,
      params: input.params,
      context: input.context,
      budget: assessment?.figures,
    });
    const evaluated = evaluating instanceof Promise ? await evaluating : evaluating;
    const breach = assessment?.breach ?? null;
    // Over a soft threshold nothing approves it at once: a person decides.
    const decision: PolicyDecision = breach?.level === 'soft' && evaluated.decision !== 'auto_deny' ? { ...evaluated, decision: 'route_to_human' } : evaluated;
    const routed = breach === null && (decision.decision === 'route_to_human' || decision.decision === 'route_to_agent');
    // A grant used up (or revoked) between its match and its use is passed over: the next one, else the policy's route.
    const passedOver = new Set<string>();
    for (;;) {
      const matching = routed ? this.grants?.match(input, now, passedOver) : undefined;
      const grantId = matching === undefined ? undefined : await matching;
      const creation = this.creation(input, decision, by, now, deciderOf(decision, grantId, breach), breach);
      try {
        await this.creations.submit(creation);
      } catch (error) {
        if (!(error instanceof GrantUsedUpError) || grantId === undefined) throw error;
        passedOver.add(grantId);
        continue;
      }
      if (creation.row.status === 'denied' && decision.decision === 'auto_deny') reportPolicyDeny(this.ctx.config, this.log, creation.row, decision);
      return creation.row;
    }
  }

  /** A creation ready to write: decided at once by `decider`, or pending. */
  private creation(
    input: NewRequest,
    decision: PolicyDecision,
    by: AuditActor,
    now: number,
    decider: CreationDecider | undefined,
    breach: BudgetAssessment['breach'],
  ): Creation {
    // Stored as canonical JSON, so that a read hashes them as stored against the created entry's requestHash (evidence.ts).
    const params = canonicalJson(input.params);
    const context = canonicalJson(input.context);
    const policyDecision = storedDecisionText(decision);
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
      deadline_at: input.expiresAt,
      escalation_tier: 0,
      remind_at: decider ? null : reminderBefore(planOf(decision), input.expiresAt, now),
      audit_head_seq: -1,
      audit_head_hash: null,
    };
    const creation: Creation = {
      row: pending,
      audits: [
        auditRow(pending, 'created', by, now, {
          urgency: pending.urgency,
          policyDecision: decision.decision,
          requestHash,
          ...(breach !== null && { budget: breach }),
        }),
      ],
      transitions: [{ event: 'request.created', request: pending }],
    };
    if (decider) {
      const { status, actor, reason, details } = decider;
      creation.row = { ...pending, status, decided_at: now, decided_by: actor, decision_reason: reason };
      const entry = auditRow(creation.row, status, systemActor(actor), now, { reason, ...details });
      creation.audits.push(entry);
      creation.transitions.push({ event: 'request.decided', request: creation.row });
      if (decider.grantId !== undefined) creation.grantId = decider.grantId;
      if (status === 'approved') {
        this.approvals.set(creation.row, entry);
        if (input.redeemOnIssue === true && this.writeIssuedRedemptions) creation.redemption = this.redeemAtIssue(creation, entry, by, now);
      }
    }
    return creation;
  }

  /**
   * The redemption of a creation's receipt by its requester, as its chain's next entry: the same
   * `redeemed` entry and `request.redeemed` transition as POST /api/receipts/redeem writes, in the
   * creation's transaction, so the one POST answers a receipt already spent.
   */
  private redeemAtIssue(creation: Creation, approving: AuditRow, by: AuditActor, at: number): IssuedRedemption {
    const redemption = {
      requestId: creation.row.id,
      action: creation.row.action,
      nonce: receiptNonce(approving.hash),
      keyId: this.ctx.auditLog.key.keyId,
      at,
      by,
    };
    creation.audits.push(auditRow(creation.row, 'redeemed', by, at, { nonce: redemption.nonce, receiptKeyId: redemption.keyId, atIssue: true }));
    creation.transitions.push({ event: 'request.redeemed', request: creation.row });
    this.issued.set(creation.row, redemption);
    return redemption;
  }

  /**
   * A pending request's deadline has passed (inside the caller's write): its rule's plan
   * (escalation/) moves it to the next tier, with a new deadline and an `escalated` entry, or it
   * fails closed: `expired`, with the plan's reason recorded on the request and in the entry.
   */
  private async deadlineLocked(write: RequestWrite, row: RequestRow, now: number): Promise<void> {
    const step = nextStep(row, now);
    if (step.kind === 'escalate') {
      row.escalation_tier = step.tier;
      row.deadline_at = step.deadlineAt;
      row.remind_at = step.remindAt;
      this.transition(write, row, 'request.escalated');
      await this.audit(write, row, 'escalated', expiryActor, now, step.details, {
        escalation_tier: step.tier,
        deadline_at: step.deadlineAt,
        remind_at: step.remindAt,
      });
      return;
    }
    row.status = 'expired';
    row.decided_at = now;
    row.decided_by = EXPIRY_ACTOR;
    row.decision_reason = step.reason ?? EXPIRED_REASON;
    row.remind_at = null;
    this.transition(write, row, 'request.expired');
    await this.audit(
      write,
      row,
      'expired',
      expiryActor,
      now,
      { expiresAt: row.expires_at, ...step.details },
      {
        status: row.status,
        decided_at: now,
        decided_by: row.decided_by,
        decision_reason: row.decision_reason,
        remind_at: null,
      },
    );
  }

  private isDue(row: RequestRow, now: number): boolean {
    return row.status === 'pending' && row.deadline_at !== null && row.deadline_at <= now;
  }

  /**
   * Reads a request, expiring it first if its deadline has passed, and checks the row against its
   * logged audit trail: a row changed outside the gate is refused (requestTampered), never answered.
   */
  async get(id: string): Promise<RequestRow | undefined> {
    const found = await findRequestWithTrailHead(this.ctx.database, id);
    if (found === undefined) return undefined;
    const { row, trailHead } = found;
    if (this.isDue(row, this.ctx.clock.now())) return (await this.expire(id)) ?? row;
    if (!this.verified.vouches(row, trailHead)) await this.checkRows([row]);
    return row;
  }

  /** Checks rows read for an answer (a list page) against their logged audit trails (requestTampered). */
  async checkRows(rows: readonly RequestRow[]): Promise<void> {
    for (const row of await assertRowsEvidence(this.ctx.database, rows)) this.verified.remember(row);
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
    const held = write.held(id);
    if (held) return held;
    const locked = await lockRequestWithTrailHead(write.trx, this.ctx.database, id);
    if (!locked) return undefined;
    // A lock that waited for another write answers the row as that write left it, but PostgreSQL reads
    // the trail head as its statement saw it before the wait: the trail, read under the lock, decides then.
    if (!this.verified.vouches(locked.row, locked.trailHead))
      await assertLockedRowEvidence(write.trx, locked.row, await loggedTrail(write.trx, this.ctx.database, id));
    write.vouchAtCommit([locked.row]);
    return locked.row;
  }

  /** Applies a pending request's passed deadline (escalates or expires it: deadlineLocked); returns its current row. A tampered row is refused (requestTampered). */
  async expire(id: string): Promise<RequestRow | undefined> {
    const now = this.ctx.clock.now();
    return runWrite(this.ctx, this.verified, async (write) => {
      const locked = await this.lockChecked(write, id);
      if (locked && this.isDue(locked, now)) await this.deadlineLocked(write, locked, now);
      return locked;
    });
  }

  /** Reminds the deciders of a pending request whose reminder is due: a `reminded` entry and a `request.reminder` transition (chat posts it again). */
  private async remind(id: string): Promise<boolean> {
    const now = this.ctx.clock.now();
    return runWrite(this.ctx, this.verified, async (write) => {
      const row = await this.lockChecked(write, id);
      if (!row || row.status !== 'pending' || row.remind_at === null || row.remind_at > now) return false;
      row.remind_at = null;
      this.transition(write, row, 'request.reminder');
      await this.audit(
        write,
        row,
        'reminded',
        expiryActor,
        now,
        { tier: row.escalation_tier, deadlineAt: row.deadline_at === null ? null : toIso(row.deadline_at) },
        { remind_at: null },
      );
      return true;
    });
  }

  /** Scanner tick (with expireDue): sends every reminder due; a tampered request is logged and skipped. */
  async remindDue(): Promise<number> {
    let reminded = 0;
    const tampered = new Set<string>();
    for (;;) {
      const ids = (await dueForReminder(this.ctx.database, this.ctx.clock.now(), 200 + tampered.size)).filter((id) => !tampered.has(id));
      for (const id of ids) {
        try {
          if (await this.remind(id)) reminded += 1;
        } catch (error) {
          if (!(error instanceof RequestTamperedError)) throw error;
          tampered.add(id);
          this.log.error({ requestId: id, err: error }, 'no reminder sent: the request does not match its audit trail');
        }
      }
      if (ids.length < 200) return reminded;
    }
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
    const item: Decision = { id, decision, reason, by, details, now: this.ctx.clock.now() };
    // On PostgreSQL a decision's statements wait on its row read, so a group would run its decisions'
    // round trips one after another on one connection; separate transactions run them side by side.
    const outcome =
      this.ctx.database.dialect === 'sqlite'
        ? await this.decisions.submit(item)
        : await runWrite(this.ctx, this.verified, (write) => this.decideLocked(write, item));
    switch (outcome.kind) {
      case 'missing':
        throw gateError('requestNotFound');
      case 'expired':
        throw gateError('alreadyDecided', 'Request expired before a decision');
      case 'decided':
        throw gateError('alreadyDecided');
      case 'reason':
        throw gateError('reasonRequired');
      case 'voted-already':
        throw gateError('alreadyVoted');
      case 'not-an-approver':
        throw gateError('notAnApprover');
      case 'decided-now':
      case 'voted':
        return outcome.row;
    }
  }

  /** One decision inside a group's transaction (the row locked and checked first). */
  private async decideLocked(write: RequestWrite, item: Decision): Promise<DecisionOutcome> {
    const { id, reason, by, now } = item;
    let { decision, details } = item;
    const row = await this.lockChecked(write, id);
    if (!row) return { kind: 'missing' };
    if (this.isDue(row, now)) {
      await this.deadlineLocked(write, row, now);
      // An escalated request is still pending: its new tier's deadline is ahead.
      if (row.status === 'expired') return { kind: 'expired' };
    }
    if (row.status !== 'pending') return { kind: 'decided' };
    const { requireReason, quorum = null } = storedDecision(row);
    if (requireReason && !reason?.trim()) return { kind: 'reason' };
    if (quorum !== null && this.votes) {
      // Several approvals: each vote is its own entry; the one that reaches the quorum (or the denials) decides.
      const principal = await this.votes.principalOf(write.trx, by.actor, quorum, now);
      if (principal === null) return { kind: 'not-an-approver' };
      const cast = await this.votes.votesOf(write.trx, id);
      if (cast.some((vote) => vote.principal === principal)) return { kind: 'voted-already' };
      const vote = { principal, decider: by.actor, vote: decision, at: now };
      await this.votes.record(write.trx, id, vote);
      const votes = [...cast, vote];
      const { approvedBy, deniedBy } = progressOf(quorum, votes);
      const tally = { vote: decision, ...(principal !== by.actor && { onBehalfOf: principal }), approvedBy, deniedBy, required: quorum.approvals };
      const outcome = outcomeAfter(quorum, votes);
      if (outcome === null) {
        this.transition(write, row, 'request.voted');
        await this.audit(write, row, 'voted', by, now, { ...details, ...tally, ...(reason !== undefined && { reason }) });
        return { kind: 'voted', row: { ...row } };
      }
      decision = outcome;
      details = { ...details, ...tally };
    }
    row.status = decision;
    row.decided_at = now;
    row.decided_by = by.actor;
    row.decision_reason = reason ?? null;
    this.transition(write, row, 'request.decided');
    const entryDetails = { ...details, ...(reason !== undefined && { reason }) };
    const entry = await this.audit(write, row, decision, by, now, Object.keys(entryDetails).length === 0 ? undefined : entryDetails, {
      status: decision,
      decided_at: now,
      decided_by: by.actor,
      decision_reason: row.decision_reason,
    });
    const decided = { ...row };
    if (decision === 'approved') this.approvals.set(decided, entry);
    return { kind: 'decided-now', row: decided };
  }

  /**
   * Records in a request's audit trail that someone without the right tried to decide it (a chat
   * click from a user the deciders do not include); the request is unchanged. Undefined when absent.
   */
  async refuseDecision(id: string, by: AuditActor, details: Record<string, unknown>): Promise<RequestRow | undefined> {
    const now = this.ctx.clock.now();
    return runWrite(this.ctx, this.verified, async (write) => {
      const locked = await this.lockChecked(write, id);
      if (locked) await this.audit(write, locked, 'decision_refused', by, now, details);
      return locked;
    });
  }

  async confirm(id: string, result: Record<string, unknown>, by: AuditActor): Promise<RequestRow> {
    const now = this.ctx.clock.now();
    const outcome = await runWrite(this.ctx, this.verified, async (write) => {
      const row = await this.lockChecked(write, id);
      if (!row) return { kind: 'missing' as const };
      if (row.status !== 'approved' || row.confirmed_at !== null) return { kind: 'conflict' as const };
      row.confirmed_at = now;
      // Canonical, as the row is compared with the result its confirmed entry holds (evidence.ts).
      row.execution_result = canonicalJson(result);
      this.transition(write, row, 'request.confirmed');
      await this.audit(write, row, 'confirmed', by, now, { result }, { confirmed_at: now, execution_result: row.execution_result });
      return { kind: 'confirmed' as const, row };
    });
    if (outcome.kind === 'missing') throw gateError('requestNotFound');
    if (outcome.kind === 'conflict') throw gateError('notConfirmable');
    return outcome.row;
  }
}
