// Outgoing webhooks: the Outbox (deliveries written with the change, claimed, retried) and its routes.
import { defineFeature, type PeriodicJob } from '@vigil/platform';
import type { GateFeature } from '../context.ts';
import { registerWebhookRoutes } from './routes.ts';

export { Outbox, outboxRow, type Enqueued, type Notice, type OutboxChannel, type Transition, type WebhookEvent } from './outbox.ts';
export { verifyGateSignature, type VerifyDeliveryInput } from './signature.ts';
export type { DeliveryRow, WebhooksTables } from './tables.ts';

/** The resource name the log of administrative changes records webhooks under (context.ts composes the service's list). */
export const WEBHOOK_CHANGES = 'webhook';

/** Resolves to the delivery job. (The Outbox itself is in the context: requests write to it.) */
export const webhooksFeature: GateFeature<PeriodicJob> = defineFeature('webhooks', ({ app, context, job }) => {
  registerWebhookRoutes(app, context);
  return job({
    name: 'gate.webhooks',
    intervalMs: context.config.webhooks.scanIntervalMs,
    run: async () => {
      await context.outbox.deliverDue();
    },
  });
});
