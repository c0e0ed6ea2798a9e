// The tables alerts/ owns (times are epoch milliseconds, JSON is stored as text); the service's schema
// (schema.ts) is composed of every feature's tables.
import type { DeliveryColumns } from '@vigil/platform';

export interface AlertRuleRow {
  id: string;
  name: string;
  description: string | null;
  /** 1 or 0. */
  enabled: number;
  condition: string;
  threshold: number;
  window_minutes: number;
  /** JSON `{agentId?, tags?}`. */
  scope: string;
  /** JSON array of URLs. */
  notify_channels: string;
  created_at: number;
  updated_at: number;
}

export interface AlertHistoryRow {
  id: string;
  rule_id: string;
  triggered_at: number;
  /** Null while the entry is open (at most one open entry per rule). */
  resolved_at: number | null;
  /** `condition_cleared` or `rule_deleted`. */
  resolved_by: string | null;
  current_value: number;
  threshold: number;
  /** 1 once every channel answered 2xx to the triggered notification. */
  notified: number;
  /** agentId of the entry's events: always the system agent (migration 0012 moved the older rows). */
  agent_id: string;
  /** JSON: the triggered notification body, a snapshot of the rule when it fired. */
  summary: string;
  /** Ids of the alert_triggered / alert_resolved events, null until appended. */
  triggered_event_id: string | null;
  resolved_event_id: string | null;
}

export interface AlertDeliveryRow extends DeliveryColumns {
  history_id: string;
  kind: 'triggered' | 'resolved';
}

/** Alert rules, their history entries and the notifications delivered for them. */
export interface AlertsTables {
  alert_rules: AlertRuleRow;
  alert_history: AlertHistoryRow;
  alert_deliveries: AlertDeliveryRow;
}
