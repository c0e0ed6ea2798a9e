import type { Clock } from '@vigil/platform';
import type { Transaction } from 'kysely';
import type { GateDatabase, GateSchema } from '../schema.ts';
import { progressOf, quorumOf, type Quorum, type QuorumProgress, type Vote, type VoteKeeper } from './quorum.ts';
import { delegatorsOf, insertVote, membersOf, votesOf } from './store.ts';

const GROUP_PREFIX = 'group:';

/**
 * Who may decide: approver groups (`group:<name>` in a rule's approvers or a quorum's groups) and
 * delegations (a decider's authority lent to another for a window). Keeps the votes of requests
 * that need several approvals for the requests feature (VoteKeeper).
 */
export class ApproverDirectory implements VoteKeeper<Transaction<GateSchema>> {
  constructor(
    private readonly database: GateDatabase,
    private readonly clock: Clock,
  ) {}

  votesOf(executor: Transaction<GateSchema> | null, requestId: string): Promise<Vote[]> {
    return votesOf(executor ?? this.database.db, requestId);
  }

  async principalOf(trx: Transaction<GateSchema>, decider: string, quorum: Quorum, now: number): Promise<string | null> {
    if (quorum.groups.length === 0) return decider;
    const members = await membersOf(trx, quorum.groups);
    if (members.has(decider)) return decider;
    const delegators = await delegatorsOf(trx, decider, now);
    return delegators.find((delegator) => members.has(delegator)) ?? null;
  }

  record(trx: Transaction<GateSchema>, requestId: string, vote: Vote): Promise<void> {
    return insertVote(trx, requestId, vote);
  }

  /** A rule's approvers with each `group:<name>` replaced by its members (chat's deciders). */
  async expand(approvers: readonly string[]): Promise<string[]> {
    const groups = approvers.filter((a) => a.startsWith(GROUP_PREFIX)).map((a) => a.slice(GROUP_PREFIX.length));
    if (groups.length === 0) return [...approvers];
    const members = await membersOf(this.database.db, groups);
    return [...new Set([...approvers.filter((a) => !a.startsWith(GROUP_PREFIX)), ...members])];
  }

  /** A request's approval progress (approvalProgress). */
  progress(row: { id: string; policy_decision: string }): Promise<QuorumProgress | null> {
    return approvalProgress(this.database, row);
  }

  /** The deciders whose authority `decider` holds now: themselves and whoever delegated to them. */
  async actingFor(decider: string): Promise<string[]> {
    return [decider, ...(await delegatorsOf(this.database.db, decider, this.clock.now()))];
  }
}

/** A request's approval progress when its rule needs several approvals, else null (chat renders it). */
export async function approvalProgress(database: GateDatabase, row: { id: string; policy_decision: string }): Promise<QuorumProgress | null> {
  const quorum = quorumOf(row.policy_decision);
  return quorum === null ? null : progressOf(quorum, await votesOf(database.db, row.id));
}
