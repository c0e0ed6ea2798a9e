// The tables guardrails/ owns (times are epoch milliseconds, JSON is stored as text); the service's schema
// (schema.ts) is composed of every feature's tables.
import type { DeliveryColumns } from '@vigil/platform';

export interface GuardrailRuleRow {
  id: string;
  name: string;
  description: string | null;
  /** null: the rule applies to every agent. */
  agent_id: string | null;
  condition_type: string;
  /** JSON, defaults applied. */
  condition_config: string;
  action_type: string;
  action_config: string;
  cooldown_minutes: number;
  enabled: number;
  dry_run: number;
  trigger_count: number;
  last_triggered_at: number | null;
  created_at: number;
  updated_at: number;
}

export interface GuardrailTriggerRow {
  id: string;
  rule_id: string;
  rule_name: string;
  agent_id: string;
  triggered_at: number;
  condition_type: string;
  current_value: number;
  threshold: number;
  action_type: string;
  dry_run: number;
  /** JSON `{status, detail}`. */
  action_result: string;
}

export interface GuardrailDeliveryRow extends DeliveryColumns {
  trigger_id: string;
}

/** Guardrail rules, their triggers and the notifications delivered for them. */
export interface GuardrailsTables {
  guardrail_rules: GuardrailRuleRow;
  guardrail_triggers: GuardrailTriggerRow;
  guardrail_deliveries: GuardrailDeliveryRow;
}
