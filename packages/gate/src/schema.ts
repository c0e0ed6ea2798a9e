import type { AdminChangeRow, AuditLogTables, Database, DeliveryColumns } from '@vigil/platform';
import type { GateChangeResource } from './context.ts';

/** A request's statuses (the requests list and the audit list filter on them). */
export const STATUSES = ['pending', 'approved', 'denied', 'expired'] as const;
export type RequestStatus = (typeof STATUSES)[number];

/** Row types of the gate database (times are epoch milliseconds, JSON is stored as text). */
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
  /** The head of the request's audit chain (audit/chain.ts): its last seq (-1 before any entry) and hash. */
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
  /** The entry's link in its request's audit chain (audit/chain.ts): 0, 1, 2, … per request. */
  seq: number;
  prev_hash: string | null;
  hash: string;
}

export interface PolicyRow {
  id: string;
  name: string;
  priority: number;
  enabled: number;
  rules: string;
  created_at: number;
  updated_at: number;
}

export interface ApiKeyRow {
  id: string;
  name: string;
  prefix: string;
  key_hash: string;
  scopes: string;
  rate_limit: number | null;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

/** A dashboard or MCP sign-in: a short-lived token bound to an API key and a name. */
export interface DashboardSessionRow {
  id: string;
  token_hash: string;
  prefix: string;
  key_id: string;
  /** `dashboard` or `mcp`: the namespace of the actor (`dashboard:<name>`, `mcp:<name>`). */
  kind: 'dashboard' | 'mcp';
  name: string;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
}

export interface WebhookRow {
  id: string;
  url: string;
  events: string;
  secret: string | null;
  enabled: number;
  created_at: number;
  updated_at: number;
}

/** The outbox: one row per (event, destination), delivered at least once. */
export interface DeliveryRow extends DeliveryColumns {
  webhook_id: string | null;
  /** `webhook` (signed X-Gate-Signature), `observe` (signed X-Webhook-Signature), or a chat platform (`slack`, `discord`: chat/). */
  kind: string;
  event: string;
}

/** A request's message on a chat platform (chat/): posted once, then edited as the request changes. */
export interface ChatMessageRow {
  id: string;
  request_id: string;
  /** `slack` or `discord`. */
  platform: string;
  channel: string;
  /** The platform's id of the message (Slack's ts, Discord's message id); null until it is posted. */
  message_id: string | null;
  created_at: number;
}

export interface CounterRow {
  name: string;
  value: number;
}

export interface LeaseRow {
  name: string;
  holder: string;
  expires_at: number;
}

/** With the audit log's tables (platform audit-log.ts): every audit entry is a leaf. */
export interface GateSchema extends AuditLogTables {
  requests: RequestRow;
  audit_entries: AuditRow;
  policies: PolicyRow;
  api_keys: ApiKeyRow;
  dashboard_sessions: DashboardSessionRow;
  webhooks: WebhookRow;
  deliveries: DeliveryRow;
  chat_messages: ChatMessageRow;
  counters: CounterRow;
  leases: LeaseRow;
  admin_changes: AdminChangeRow<GateChangeResource>;
}

export type GateDatabase = Database<GateSchema>;
