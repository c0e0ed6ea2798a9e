// The tables approvers/ owns (times are epoch milliseconds, JSON is stored as text).

/** A named group of deciders (`group:<name>` in a rule's approvers or quorum). Governed by the change log. */
export interface ApproverGroupRow {
  id: string;
  name: string;
  /** JSON array of decider names as the gate derives them: `slack:U1`, `discord:42`, `api:<key name>`, `dashboard:<user>`, `mcp:<client>`. */
  members: string;
  description: string | null;
  created_at: number;
  updated_at: number;
}

/** A decider's authority lent to another for a time window (out of office). Governed by the change log. */
export interface DelegationRow {
  id: string;
  delegator: string;
  delegate: string;
  starts_at: number;
  ends_at: number;
  reason: string | null;
  created_at: number;
  revoked_at: number | null;
}

/** One vote on a request that needs several approvals: one per principal (unique), written with its audit entry. */
export interface RequestVoteRow {
  request_id: string;
  /** Whom the vote counts for: the decider, or the delegator they act for. */
  principal: string;
  /** Who clicked or called. */
  decider: string;
  vote: string;
  at: number;
}

export interface ApproversTables {
  approver_groups: ApproverGroupRow;
  delegations: DelegationRow;
  request_votes: RequestVoteRow;
}
