import { DeliveryQueue, VIGIL_VERSION, type DeliveryRowOf } from '@vigil/platform';
import type { FastifyBaseLogger } from 'fastify';
import type { ObserveContext } from './context.ts';
import type { ObserveSchema } from './schema.ts';

/** Deadline of one notification attempt (observe has no WEBHOOK_TIMEOUT_MS of its own). */
export const NOTIFICATION_TIMEOUT_MS = 5000;
/** Attempts per notification before it is `failed`; attempt n+1 waits 2^n s after attempt n. */
export const NOTIFICATION_MAX_ATTEMPTS = 3;

/**
 * The durable queue of observe's outbound notifications (alert notifyChannels, guardrail
 * notify_webhook): 5 s per attempt, 3 attempts, headers naming the event and the delivery.
 */
export function notificationQueue<Table extends 'alert_deliveries' | 'guardrail_deliveries'>(
  ctx: ObserveContext,
  log: FastifyBaseLogger,
  table: Table,
  eventOf: (row: DeliveryRowOf<ObserveSchema, Table>) => string,
  onSettled?: (row: DeliveryRowOf<ObserveSchema, Table>, status: string) => Promise<void>,
): DeliveryQueue<ObserveSchema, Table> {
  return new DeliveryQueue<ObserveSchema, Table>({
    db: ctx.database.db,
    table,
    clock: ctx.clock,
    log,
    timeoutMs: NOTIFICATION_TIMEOUT_MS,
    maxAttempts: NOTIFICATION_MAX_ATTEMPTS,
    headers: async (row) => ({
      'user-agent': `vigil-observe/${VIGIL_VERSION}`,
      'x-vigil-event': eventOf(row),
      'x-vigil-delivery': row.id,
    }),
    ...(onSettled ? { onSettled } : {}),
  });
}
