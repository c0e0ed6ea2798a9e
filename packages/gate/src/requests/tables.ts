// The tables requests/ owns (times are epoch milliseconds, JSON is stored as text); the service's schema
// (schema.ts) is composed of every feature's tables.

/** A request's statuses (the requests list and the audit list filter on them). */
export const STATUSES = ['pending', 'approved', 'denied', 'expired'] as const;
export type RequestStatus = (typeof STATUSES)[number];

export interface RequestRow {
  id: string;
  action: string;
  params: string;
  context: string;
  urgency: string;
  status: string;
  expires_at: number | null;
  created_at: number;
  decided_at: number | null;
  decided_by: string | null;
  decision_reason: string | null;
  /** The policy decision taken at creation: JSON `{decision, policyId, ruleIndex, approvers, channels, requireReason}`. */
  policy_decision: string;
  confirmed_at: number | null;
  execution_result: string | null;
  /** The head of the request's audit chain (audit-trail/chain.ts): its last seq (-1 before any entry) and hash. */
  audit_head_seq: number;
  audit_head_hash: string | null;
}

export interface AuditRow {
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
  /** The entry's link in its request's audit chain (audit-trail/chain.ts): 0, 1, 2, … per request. */
  seq: number;
  prev_hash: string | null;
  hash: string;
}

/** Requests and their audit entries, written together in the request's transaction (the audit-trail feature reads and verifies the entries). */
export interface RequestsTables {
  requests: RequestRow;
  audit_entries: AuditRow;
}
