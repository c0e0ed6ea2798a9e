// The tables requests/ owns (times are epoch milliseconds, JSON is stored as text); the service's schema
// (schema.ts) is composed of every feature's tables.
import type { StoredAuditEntry } from '../stored-formats/index.ts';

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
  /** When the pending request's current deadline passes (escalation/): its expiresAt, then each tier's; null: none. */
  deadline_at: number | null;
  /** The escalation tier it has reached (0: the deciders its rule named); each step is an `escalated` entry of its trail. */
  escalation_tier: number;
  /** When its deciders are reminded of it next (null: no reminder due). */
  remind_at: number | null;
  /** The head of the request's audit chain (stored-formats/audit-chain.ts): its last seq (-1 before any entry) and hash. */
  audit_head_seq: number;
  audit_head_hash: string | null;
}

/** An audit entry row is its chain link as stored (stored-formats/audit-chain.ts). */
export type AuditRow = StoredAuditEntry;

/** Requests and their audit entries, written together in the request's transaction (the audit-trail feature reads and verifies the entries). */
export interface RequestsTables {
  requests: RequestRow;
  audit_entries: AuditRow;
}
