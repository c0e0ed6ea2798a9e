import { deletedAnswer, deletedResponse, offsetPage, routeOptions, toIso, toIsoOrNull, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import { MAX_OFFSET } from '../bounds.ts';
import type { GateContext } from '../context.ts';
import { gateError } from '../errors.ts';
import { auditActor } from '../auth/index.ts';
import type { DeliveryRow } from './tables.ts';
import { WEBHOOK_EVENTS } from './outbox.ts';
import { createWebhook, deleteWebhook, findWebhook, listDeliveries, listWebhooks, toWebhook, updateWebhook } from './store.ts';

const events = z
  .array(z.enum(WEBHOOK_EVENTS))
  .min(1)
  .transform((e) => [...new Set(e)]);
const url = z.url({ protocol: /^https?$/ }).max(2000);
const secret = z.string().min(16).max(512);

const webhookSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z.array(z.enum(WEBHOOK_EVENTS)),
    enabled: z.boolean(),
    hasSecret: z.boolean(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Webhook' });

const deliverySchema = z.object({
  id: z.string(),
  event: z.string(),
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.number().int(),
  responseStatus: z.number().int().nullable(),
  lastError: z.string().nullable(),
  nextAttemptAt: z.string().nullable(),
  createdAt: z.string(),
  deliveredAt: z.string().nullable(),
});

function toDelivery(row: DeliveryRow): z.infer<typeof deliverySchema> {
  return {
    id: row.id,
    event: row.event,
    status: row.status as 'pending' | 'delivered' | 'failed',
    attempts: row.attempts,
    responseStatus: row.response_status,
    lastError: row.last_error,
    nextAttemptAt: row.status === 'pending' ? toIso(row.next_attempt_at) : null,
    createdAt: toIso(row.created_at),
    deliveredAt: toIsoOrNull(row.delivered_at),
  };
}

const idParams = z.object({ id: z.string().min(1).max(100) });

export function registerWebhookRoutes(app: ZodApp, ctx: GateContext): void {
  const { database } = ctx;

  app.get(
    '/api/webhooks',
    routeOptions('webhook:manage', {
      operationId: 'listWebhooks',
      summary: 'List webhooks',
      tags: ['webhooks'],
      response: { 200: z.object({ webhooks: z.array(webhookSchema) }) },
    }),
    async () => ({ webhooks: (await listWebhooks(database)).map(toWebhook) }),
  );

  app.post(
    '/api/webhooks',
    routeOptions('webhook:manage', {
      operationId: 'createWebhook',
      summary: 'Register a webhook; with a secret, deliveries are signed (X-Gate-Signature)',
      tags: ['webhooks'],
      body: z.object({ url, events, secret: secret.optional() }).strict(),
      response: { 201: webhookSchema },
    }),
    async (request, reply) => {
      const { url: hookUrl, events: hookEvents, secret: hookSecret } = request.body;
      const row = await createWebhook(ctx.database, { url: hookUrl, events: hookEvents, secret: hookSecret ?? null }, auditActor(request), ctx.clock.now());
      return reply.status(201).send(toWebhook(row));
    },
  );

  app.patch(
    '/api/webhooks/:id',
    routeOptions('webhook:manage', {
      operationId: 'updateWebhook',
      summary: 'Change a webhook’s events, enabled flag, URL or secret',
      tags: ['webhooks'],
      params: idParams,
      body: z.object({ events, enabled: z.boolean(), url, secret: secret.nullable() }).partial().strict(),
      response: { 200: webhookSchema },
    }),
    async (request) => {
      const row = await updateWebhook(ctx.database, request.params.id, request.body, auditActor(request), ctx.clock.now());
      if (!row) throw gateError('webhookNotFound');
      return toWebhook(row);
    },
  );

  app.delete(
    '/api/webhooks/:id',
    routeOptions('webhook:manage', {
      operationId: 'deleteWebhook',
      summary: 'Delete a webhook (its pending deliveries are dropped)',
      description: 'Its pending deliveries are marked failed, never sent.',
      tags: ['webhooks'],
      params: idParams,
      response: { 200: deletedResponse },
    }),
    async (request) => {
      if (!(await deleteWebhook(ctx.database, request.params.id, auditActor(request), ctx.clock.now()))) throw gateError('webhookNotFound');
      return deletedAnswer(request.params.id);
    },
  );

  app.get(
    '/api/webhooks/:id/deliveries',
    routeOptions('webhook:manage', {
      operationId: 'listWebhookDeliveries',
      summary: 'Deliveries of a webhook, newest first, with their status and last error',
      tags: ['webhooks'],
      params: idParams,
      querystring: z.object({
        limit: z.coerce.number().int().min(1).max(500).default(50),
        offset: z.coerce.number().int().min(0).max(MAX_OFFSET).default(0),
      }),
      response: { 200: z.object({ deliveries: z.array(deliverySchema), total: z.number().int(), hasMore: z.boolean() }) },
    }),
    async (request) => {
      if (!(await findWebhook(database, request.params.id))) throw gateError('webhookNotFound');
      return offsetPage('deliveries', await listDeliveries(database, request.params.id, request.query), request.query.offset, toDelivery);
    },
  );
}
