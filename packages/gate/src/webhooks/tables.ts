// The tables webhooks/ owns (times are epoch milliseconds, JSON is stored as text); the service's schema
// (schema.ts) is composed of every feature's tables.
import type { DeliveryColumns } from '@vigil/platform';

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

/** Outbound webhooks and the outbox of deliveries (webhooks, observe, chat platforms). */
export interface WebhooksTables {
  webhooks: WebhookRow;
  deliveries: DeliveryRow;
}
