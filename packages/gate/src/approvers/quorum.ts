import { sharedJsonValue } from '@vigil/platform';
import { z } from 'zod';

/**
 * Requests that need several approvals (docs/guide/approvers.md). Pure: the rule's quorum travels in
 * the request's stored policy decision; the votes are rows of request_votes, each with its audit entry.
 */
export const quorumSchema = z
  .object({
    /** Approvals from distinct deciders that approve the request (2–50). */
    approvals: z.number().int().min(2).max(50),
    /** Denials that deny it (default 1: any deny denies). */
    denials: z.number().int().min(1).max(50).default(1),
    /** When given, only members of these approver groups (or their delegates) may vote. */
    groups: z.array(z.string().min(1).max(100)).max(20).default([]),
  })
  .strict();

export type Quorum = z.infer<typeof quorumSchema>;

export interface Vote {
  principal: string;
  decider: string;
  vote: 'approved' | 'denied';
  at: number;
}

/** The request's progress as the API shows it. */
export interface QuorumProgress {
  required: number;
  denialsRequired: number;
  groups: string[];
  approvedBy: string[];
  deniedBy: string[];
}

export function progressOf(quorum: Quorum, votes: readonly Vote[]): QuorumProgress {
  return {
    required: quorum.approvals,
    denialsRequired: quorum.denials,
    groups: quorum.groups,
    approvedBy: votes.filter((v) => v.vote === 'approved').map((v) => v.principal),
    deniedBy: votes.filter((v) => v.vote === 'denied').map((v) => v.principal),
  };
}

/** What one more vote does: settle the request, or only count. */
export function outcomeAfter(quorum: Quorum, votes: readonly Vote[]): 'approved' | 'denied' | null {
  const progress = progressOf(quorum, votes);
  if (progress.deniedBy.length >= quorum.denials) return 'denied';
  if (progress.approvedBy.length >= quorum.approvals) return 'approved';
  return null;
}

/** The quorum of a request's stored policy decision, or null when one decision settles it. */
export function quorumOf(policyDecision: string): Readonly<Quorum> | null {
  return (sharedJsonValue(policyDecision) as { quorum?: Quorum }).quorum ?? null;
}

/** What the requests feature asks of the votes of a request that needs several approvals (approvers/ keeps them). */
export interface VoteKeeper<Trx> {
  /** The votes cast so far, oldest first. */
  votesOf(executor: Trx | null, requestId: string): Promise<Vote[]>;
  /**
   * Who a decider's vote counts for on this request (themselves, or a delegator whose authority
   * they hold now), or null when the quorum's groups admit neither.
   */
  principalOf(trx: Trx, decider: string, quorum: Quorum, now: number): Promise<string | null>;
  /** Records a vote (the caller holds the request's row lock and writes its audit entry). */
  record(trx: Trx, requestId: string, vote: Vote): Promise<void>;
}
