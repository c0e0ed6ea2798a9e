import { Transform, pipeline, type Readable } from 'node:stream';
import { constantTimeEqual, hmacSha256Hex, ServiceError, type ErrorDetail, type ZodApp } from '@vigil/platform';
import type { FastifyRequest, preParsingHookHandler } from 'fastify';
import type { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { observeError } from '../errors.ts';
import { identifier, incomingEventSchema, keyWriter, payloadSchemas, type EventWriter, type IncomingEvent, type IngestEventType } from '../events/index.ts';
import { findSession } from '../sessions/index.ts';
import { readSettings } from '../settings/index.ts';
import {
  correlationSessionId,
  EXTERNAL_AGENT,
  GENERIC_EVENT_TYPES,
  SECRET_SETTING,
  SIGNED_MAPPINGS,
  batchItemsSchema,
  signedSourceSchema,
  sourceSchema,
  webhookBatchBodySchema,
  webhookBatchResponseSchema,
  webhookBodySchema,
  webhookResponseSchema,
  type SignedSource,
  type WebhookBatchResult,
  type WebhookBody,
} from './mapping.ts';

export const SIGNATURE_HEADER = 'x-webhook-signature';
const HEX_SHA256 = /^[0-9a-f]{64}$/;

/** The bytes each request's body arrived as, captured on the way to the platform's JSON parser. */
const rawBodies = new WeakMap<FastifyRequest, Buffer[]>();

/**
 * preParsing: passes the body through unchanged to the platform's JSON parser (which keeps its
 * rules: prototype-poisoning keys and U+0000 refused, body limit) while keeping a copy of the exact
 * bytes received, so the signature is checked over them and not over a re-serialisation.
 */
function captureRawBody(request: FastifyRequest, payload: Readable): Readable {
  const chunks: Buffer[] = [];
  rawBodies.set(request, chunks);
  const tee = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      chunks.push(chunk);
      callback(null, chunk);
    },
  });
  // An aborted or failed upload destroys the tee with the error, which the parser reports.
  pipeline(payload, tee, () => {});
  return tee;
}

function validationError(details: ErrorDetail[]): Error {
  const summary = details.map((d) => (d.path ? `${d.path}: ${d.message}` : d.message)).join('; ');
  return observeError('validation', `Validation failed in body: ${summary}`, details);
}

function zodDetails(error: z.ZodError, prefix: (path: PropertyKey[]) => string): ErrorDetail[] {
  return error.issues.map((issue) => ({ path: prefix(issue.path), message: issue.message }));
}

const joinPath = (path: PropertyKey[]): string => path.map(String).join('.');

function verifySignature(request: FastifyRequest, secret: string): void {
  const header = request.headers[SIGNATURE_HEADER];
  if (header === undefined) throw observeError('invalidSignature', 'Missing X-Webhook-Signature header');
  const chunks = rawBodies.get(request) ?? [];
  const expected = hmacSha256Hex(secret, Buffer.concat(chunks));
  const given = typeof header === 'string' ? header.trim().toLowerCase() : '';
  // Constant-time over hex strings of the same length; anything that is not 64 hex digits fails the same way.
  const matches = constantTimeEqual(HEX_SHA256.test(given) ? given : '0'.repeat(64), expected);
  if (!matches || !HEX_SHA256.test(given)) throw observeError('invalidSignature');
}

/** The event type and payload a webhook becomes, validated like POST /api/events validates them. */
function mapEvent(body: WebhookBody): { eventType: IngestEventType; payload: Record<string, unknown> } {
  let eventType: IngestEventType;
  let payload: Record<string, unknown>;
  if (body.source === 'generic') {
    const { eventType: named, ...rest } = body.data;
    if (named === undefined) throw validationError([{ path: 'data.eventType', message: 'is required' }]);
    if (typeof named !== 'string' || !(GENERIC_EVENT_TYPES as readonly string[]).includes(named)) {
      throw validationError([{ path: 'data.eventType', message: `must be one of: ${GENERIC_EVENT_TYPES.join(', ')}` }]);
    }
    eventType = named as IngestEventType;
    payload = rest;
  } else {
    const mappings = SIGNED_MAPPINGS[body.source];
    const mapped = Object.hasOwn(mappings, body.event) ? mappings[body.event] : undefined;
    if (mapped === undefined) {
      throw validationError([{ path: 'event', message: `unknown event for source ${body.source}; must be one of: ${Object.keys(mappings).join(', ')}` }]);
    }
    eventType = mapped;
    payload = body.data;
  }
  const parsed = payloadSchemas[eventType].safeParse(payload);
  if (!parsed.success) throw validationError(zodDetails(parsed.error, (path) => joinPath(['data', ...path])));
  return { eventType, payload };
}

/** Checks the signature of a signed source's body against its secret (stored setting, else environment). */
async function verifySource(ctx: ObserveContext, request: FastifyRequest, source: SignedSource): Promise<void> {
  const secret = (await readSettings(ctx))[SECRET_SETTING[source]];
  if (secret === null || secret.length === 0) {
    throw observeError('webhookSecretMissing', `Webhook secret not configured for source ${source}`);
  }
  verifySignature(request, secret);
}

/** The event one authenticated webhook body becomes, checked by the same envelope rules as POST /api/events. */
async function webhookEvent(ctx: ObserveContext, body: WebhookBody): Promise<IncomingEvent> {
  const { eventType, payload } = mapEvent(body);
  const contextSession = body.context?.service_session_id;
  const correlated = contextSession === undefined ? correlationSessionId(eventType, payload, body.event) : undefined;
  const sessionId = contextSession ?? correlated!.id;
  if (!identifier.safeParse(sessionId).success) {
    throw validationError([{ path: correlated!.path, message: `too long to name the session ${sessionId.slice(0, 40)}…` }]);
  }
  const agentId = body.context?.service_agent_id ?? (await findSession(ctx.database, sessionId))?.agent_id ?? EXTERNAL_AGENT;

  const candidate: Record<string, unknown> = {
    sessionId,
    agentId,
    eventType,
    payload,
    metadata: { webhook: { source: body.source, event: body.event } },
  };
  // The same envelope rules as POST /api/events (timestamp is already decoded, so it joins after).
  const checked = incomingEventSchema.safeParse(candidate);
  if (!checked.success) {
    throw validationError(zodDetails(checked.error, (path) => (path[0] === 'payload' ? joinPath(['data', ...path.slice(1)]) : joinPath(path))));
  }
  return { ...checked.data, ...(body.timestamp !== undefined && { timestamp: body.timestamp }) };
}

/**
 * Options of the signed routes: the raw bytes are kept for the signature, and the handler
 * validates the body itself, in order: source, credentials, then the rest (an unsigned caller
 * learns nothing about the payload rules). The route's schema documents the body.
 */
const signedRawBody = {
  validatorCompiler: () => (value: unknown) => ({ value }),
  config: { auth: 'signature' as const, scope: 'ingest' as const },
  preParsing: ((request, _reply, payload, done) => done(null, captureRawBody(request, payload))) satisfies preParsingHookHandler,
};

function jsonObject(body: unknown): object {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw validationError([{ path: '', message: 'body must be a JSON object' }]);
  return body;
}

export function registerWebhookRoutes(app: ZodApp, ctx: ObserveContext): void {
  app.post(
    '/api/events/ingest',
    {
      schema: {
        operationId: 'ingestWebhook',
        summary: 'Webhook ingestion: maps an approval_gate, form_service or generic webhook to one event',
        description:
          'approval_gate and form_service bodies are signed: X-Webhook-Signature = hex HMAC-SHA256 of the raw body with the ' +
          "source's secret (no API key needed). generic needs an API key; data holds eventType plus the payload fields.",
        tags: ['events'],
        body: webhookBodySchema,
        response: { 201: webhookResponseSchema },
      },
      ...signedRawBody,
    },
    async (request, reply) => {
      const raw = jsonObject(request.body);
      const source = sourceSchema.safeParse(raw);
      if (!source.success) throw validationError(zodDetails(source.error, joinPath));

      // Credentials for the source: its signature, or an API key for generic.
      let writtenBy: EventWriter;
      if (source.data.source === 'generic') {
        if (!ctx.config.authDisabled && request.apiKey === null) {
          throw observeError('unauthorized', 'Source generic needs an API key (Authorization: Bearer <key>)');
        }
        writtenBy = keyWriter(request.apiKey);
      } else {
        await verifySource(ctx, request, source.data.source);
        writtenBy = `webhook:${source.data.source}`;
      }

      const envelope = webhookBodySchema.safeParse(raw);
      if (!envelope.success) throw validationError(zodDetails(envelope.error, joinPath));
      const event = await webhookEvent(ctx, envelope.data);
      const [appended] = await ctx.events.append([event], ctx.clock.now(), { writtenBy });
      return reply.status(201).send({ ok: true as const, eventId: appended!.id, eventType: event.eventType, sessionId: event.sessionId });
    },
  );

  app.post(
    '/api/events/ingest/batch',
    {
      schema: {
        operationId: 'ingestWebhookBatch',
        summary: 'Webhook ingestion in batches: many signed approval_gate or form_service webhooks in one request, one transaction',
        description:
          "The body is signed as a whole (X-Webhook-Signature = hex HMAC-SHA256 of the raw body with the source's secret). Each " +
          'element of `events` is a body POST /api/events/ingest accepts, of the same source. The valid ones are appended together; ' +
          '`results` answers each element in order, so one bad element does not hold the others back.',
        tags: ['events'],
        body: webhookBatchBodySchema,
        response: { 201: webhookBatchResponseSchema },
      },
      ...signedRawBody,
    },
    async (request, reply) => {
      const raw = jsonObject(request.body);
      const source = signedSourceSchema.safeParse(raw);
      if (!source.success) throw validationError(zodDetails(source.error, joinPath));
      await verifySource(ctx, request, source.data.source);
      const items = batchItemsSchema.safeParse(raw);
      if (!items.success) throw validationError(zodDetails(items.error, joinPath));

      const results: WebhookBatchResult[] = [];
      const events: IncomingEvent[] = [];
      const positions: number[] = [];
      for (const [index, item] of items.data.events.entries()) {
        try {
          const envelope = webhookBodySchema.safeParse(item);
          if (!envelope.success) throw validationError(zodDetails(envelope.error, (path) => joinPath(['events', index, ...path])));
          if (envelope.data.source !== source.data.source) {
            throw validationError([{ path: `events.${index}.source`, message: `must be ${source.data.source}, the source the batch is signed for` }]);
          }
          events.push(await webhookEvent(ctx, envelope.data));
          positions.push(index);
        } catch (error) {
          if (!(error instanceof ServiceError)) throw error;
          results[index] = { ok: false as const, error: error.message };
        }
      }
      // One append: one transaction for every valid element (it fails, and is retried, as a whole).
      const writtenBy: EventWriter = `webhook:${source.data.source}`;
      const appended = events.length === 0 ? [] : await ctx.events.append(events, ctx.clock.now(), { writtenBy });
      appended.forEach((row, i) => {
        const { eventType, sessionId } = events[i]!;
        results[positions[i]!] = { ok: true as const, eventId: row.id, eventType, sessionId };
      });
      return reply.status(201).send({ results });
    },
  );
}
