// Inbound provider webhooks mapped to events.
import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerWebhookRoutes } from './routes.ts';

/** The header of a webhook's signature, a credential (never logged). */
export { SIGNATURE_HEADER as WEBHOOK_SIGNATURE_HEADER } from './routes.ts';

export const webhookIngestFeature: ObserveFeature = defineFeature('webhook-ingest', ({ app, context }) => registerWebhookRoutes(app, context));
