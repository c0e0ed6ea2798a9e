import { routeOptions, toIso, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { ObserveContext } from '../context.ts';
import { commaList, listEventsQuerySchema } from '../events/index.ts';
import type { StreamHub } from './hub.ts';
import { cursorText, parseCursor, REPLAY_WINDOW_MS } from './log.ts';
import { createStreamToken, STREAM_TOKEN_TTL_MS } from '../auth/index.ts';

const STREAM_DESCRIPTION = `Server-Sent Events. Messages: \`ready\` first (data \`{resumed, reset?}\`), then \`session\` (the session summary, as GET /api/sessions/:id returns it, sent before the events of a batch that changed it) and \`event\` (the stored event, as GET /api/events returns it), in commit order. Every message's \`id\` is a cursor: reconnecting with it as \`Last-Event-ID\` (or \`?lastEventId=\`; the header wins) replays every matching event committed after it, exactly once. A cursor older than ${REPLAY_WINDOW_MS / 3_600_000} hours or not from this database starts the stream at the current end, with \`reset\` set in \`ready\`. A comment line (with the cursor as \`id\`) comes every STREAM_HEARTBEAT_MS. Authenticate with a key, or with \`?token=\` from POST /api/stream/tokens.`;

const streamQuerySchema = listEventsQuerySchema.pick({ sessionId: true, agentId: true, eventType: true }).extend({
  include: commaList(['events', 'sessions'], 'include').optional().describe('Which messages to send: events, sessions or both (default)'),
  lastEventId: cursorText.optional().describe('Where to resume, for clients that cannot set the Last-Event-ID header'),
  token: z.string().min(1).max(200).optional().describe('A stream token from POST /api/stream/tokens, instead of an Authorization header'),
});

export function registerStreamRoutes(app: ZodApp, ctx: ObserveContext, hub: StreamHub): void {
  app.post(
    '/api/stream/tokens',
    routeOptions('read', {
      operationId: 'createStreamToken',
      summary: `A token that opens GET /api/stream?token= for ${STREAM_TOKEN_TTL_MS / 1000} seconds (for browsers' EventSource)`,
      description:
        'The token acts as the key that created it, only on GET /api/stream; revoking the key ends it too, and ends open streams at their next heartbeat.',
      tags: ['stream'],
      response: { 201: z.object({ token: z.string(), expiresAt: z.string() }) },
    }),
    async (request, reply) => {
      const { token, expiresAt } = await createStreamToken(ctx, request.apiKey?.id ?? null);
      return reply.status(201).send({ token, expiresAt: toIso(expiresAt) });
    },
  );

  app.get(
    '/api/stream',
    {
      // Replays from the stream log after the primary's notifications: a replica may not hold them yet.
      config: { auth: 'stream', scope: 'read', reads: 'primary' },
      schema: {
        operationId: 'streamEvents',
        summary: 'A live stream of new events and session updates',
        description: STREAM_DESCRIPTION,
        tags: ['stream'],
        querystring: streamQuerySchema,
        headers: z.object({ 'last-event-id': cursorText.optional() }),
        response: { 200: { description: 'The event stream', content: { 'text/event-stream': { schema: z.string() } } } },
      },
    },
    async (request, reply) => {
      const { sessionId, agentId, eventType, include, lastEventId } = request.query;
      const resumeFrom = request.headers['last-event-id'] ?? lastEventId;
      await hub.open(reply, {
        filters: { sessionId, agentId, eventType },
        include: { events: include?.includes('events') ?? true, sessions: include?.includes('sessions') ?? true },
        resumeFrom: resumeFrom === undefined ? undefined : parseCursor(resumeFrom),
        keyId: request.apiKey?.id ?? null,
      });
    },
  );
}
