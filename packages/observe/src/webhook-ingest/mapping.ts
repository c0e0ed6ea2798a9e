import { isoTimestampMs } from '@vigil/platform';
import { z } from 'zod';
import { identifier, INGEST_EVENT_TYPES, type IngestEventType } from '../events/index.ts';
import type { Settings } from '../settings/index.ts';

/** Sources of POST /api/events/ingest. The first two sign their bodies; `generic` needs an API key. */
export const WEBHOOK_SOURCES = ['approval_gate', 'form_service', 'generic'] as const;
export type WebhookSource = (typeof WEBHOOK_SOURCES)[number];
export type SignedSource = Exclude<WebhookSource, 'generic'>;

/** Webhook event name → event type, per signed source (docs/api.md, Webhook ingestion). */
export const SIGNED_MAPPINGS: Record<SignedSource, Readonly<Record<string, IngestEventType>>> = {
  approval_gate: {
    'request.created': 'approval_requested',
    'request.approved': 'approval_granted',
    'request.denied': 'approval_denied',
    'request.expired': 'approval_expired',
    // A receipt redeemed (the action is about to run): a custom event {type: 'approval_redeemed', data}.
    'request.redeemed': 'custom',
  },
  form_service: {
    'submission.created': 'form_submitted',
    'submission.completed': 'form_completed',
    'submission.expired': 'form_expired',
  },
};

/** Where each signed source's shared secret lives in the settings (stored value, else environment). */
export const SECRET_SETTING: Record<SignedSource, keyof Pick<Settings, 'approvalGateWebhookSecret' | 'formServiceWebhookSecret'>> = {
  approval_gate: 'approvalGateWebhookSecret',
  form_service: 'formServiceWebhookSecret',
};

/** The one field read before the signature is checked: it names the secret (or the need for a key). */
export const sourceSchema = z.object({
  source: z.enum(WEBHOOK_SOURCES, { error: (issue) => (issue.input === undefined ? 'is required' : `must be one of: ${WEBHOOK_SOURCES.join(', ')}`) }),
});

const optionalId = identifier.nullish().transform((value) => value ?? undefined);

/** The whole envelope, read once the caller is authenticated. Unknown top-level fields are ignored. */
export const webhookBodySchema = z
  .object({
    source: z.enum(WEBHOOK_SOURCES),
    event: z
      .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
      .min(1)
      .max(200),
    data: z.record(z.string(), z.unknown(), { error: (issue) => (issue.input === undefined ? 'is required' : 'must be an object') }),
    timestamp: isoTimestampMs.optional(),
    context: z
      .looseObject({
        service_session_id: optionalId.describe('Session the event joins (created if missing)'),
        service_agent_id: optionalId.describe('Agent of the event; default the session agent, else `external`'),
      })
      .optional(),
  })
  .meta({ id: 'WebhookIngestBody' });

export type WebhookBody = z.infer<typeof webhookBodySchema>;

export const webhookResponseSchema = z.object({
  ok: z.literal(true),
  eventId: z.string(),
  eventType: z.string(),
  sessionId: z.string(),
});

/** The source of a batch: only signed sources batch (the signature covers the whole body). */
export const signedSourceSchema = z.object({
  source: z.enum(['approval_gate', 'form_service'] as const satisfies readonly SignedSource[], {
    error: (issue) => (issue.input === undefined ? 'is required' : 'must be approval_gate or form_service (batches are signed)'),
  }),
});

/** Elements per batch: what one sender's backlog round needs, far below the body limit at the gate's request sizes. */
export const MAX_BATCH_EVENTS = 500;

/** The batch's elements, each checked on its own afterwards (one bad element does not refuse the others). */
export const batchItemsSchema = z.object({
  events: z
    .array(z.unknown(), { error: (issue) => (issue.input === undefined ? 'is required' : 'must be an array') })
    .min(1)
    .max(MAX_BATCH_EVENTS),
});

export const webhookBatchBodySchema = z
  .object({
    source: signedSourceSchema.shape.source,
    events: z.array(webhookBodySchema).min(1).max(MAX_BATCH_EVENTS),
  })
  .meta({ id: 'WebhookIngestBatchBody' });

const batchResultSchema = z.union([
  webhookResponseSchema,
  z.object({ ok: z.literal(false), error: z.string().describe('Why this element was refused (as the single route would answer it)') }),
]);
export type WebhookBatchResult = z.infer<typeof batchResultSchema>;

export const webhookBatchResponseSchema = z.object({
  results: z.array(batchResultSchema).describe('One per element of `events`, in order'),
});

/** Event types `generic` may name in `data.eventType`: every type POST /api/events accepts. */
export const GENERIC_EVENT_TYPES: readonly IngestEventType[] = INGEST_EVENT_TYPES;

/** Agent of webhook events that name none, in a session that has none yet. */
export const EXTERNAL_AGENT = 'external';

/**
 * Session of an event whose webhook gave no `context.service_session_id`: one per correlated object
 * (`approval:<requestId>`, `form:<submissionId>`), so a request's lifecycle lands in one session; any
 * other generic event goes to `generic:<event>`.
 */
export function correlationSessionId(eventType: IngestEventType, payload: Record<string, unknown>, event: string): { id: string; path: string } {
  if (eventType.startsWith('approval_') || (eventType === 'custom' && payload.type === 'approval_redeemed'))
    return { id: `approval:${String(payload.requestId)}`, path: 'data.requestId' };
  if (eventType.startsWith('form_')) return { id: `form:${String(payload.submissionId)}`, path: 'data.submissionId' };
  return { id: `generic:${event}`, path: 'event' };
}
