import { isoTimestampMs, registerAdminChangeRoute, routeOptions, timeCursorSchema, toIso, type ZodApp } from '@vigil/platform';
import { z } from 'zod';
import type { GateContext } from '../context.ts';
import { MAX_OFFSET } from '../bounds.ts';
import { STATUSES } from '../stored-formats/index.ts';
import type { AuditRow } from '../requests/index.ts';
import { auditActors, listAudit } from './store.ts';

/** The events an audit entry records (service.ts writes them). */
const AUDIT_EVENTS = ['created', 'approved', 'denied', 'expired', 'confirmed', 'decision_refused', 'redeemed'] as const;

const auditEntryFields = {
  timestamp: z.string(),
  event: z.string(),
  actor: z.string(),
  /** The API key behind the credential that acted (null for policy and expiry), and its name at that time. */
  actorKeyId: z.string().nullable(),
  actorKeyName: z.string().nullable(),
  details: z.record(z.string(), z.unknown()).optional(),
  /** The entry's link in its request's audit chain (audit/chain.ts; docs/audit.md "Gate audit chain"). */
  seq: z.number().int(),
  prevHash: z.string().nullable(),
  hash: z.string(),
};

/** An entry of a request's audit trail (GET /api/requests/:id/audit). */
export const auditEntrySchema = z
  .object({
    id: z.string(),
    ...auditEntryFields,
    /** This entry and every one before it verify (the whole verdict, a cut tail included: GET /api/requests/:id/audit/verify). */
    chainValid: z.boolean(),
  })
  .meta({ id: 'AuditEntry' });

/** A request's audit chain verdict (GET /api/requests/:id/audit/verify). */
export const auditChainVerdictSchema = z
  .object({
    requestId: z.string(),
    valid: z.boolean(),
    entryCount: z.number().int(),
    /** The head the request row records: its last seq (-1 before any entry) and hash. */
    headSeq: z.number().int(),
    headHash: z.string().nullable(),
    /** The first seq that does not verify (a missing entry's seq when one is cut); null when valid, or when the chain verifies but the request row differs from it (reason says how). */
    brokenAt: z.number().int().nullable(),
    reason: z.string().nullable(),
    erasures: z
      .array(z.object({ erasureId: z.string(), entryIds: z.array(z.string()) }))
      .describe("The erasures whose signed leaves account for the request's erased entries (details replaced by the erasure marker); empty when none"),
  })
  .meta({ id: 'AuditChainVerdict' });

const auditListEntrySchema = z
  .object({
    id: z.string(),
    requestId: z.string(),
    action: z.string(),
    ...auditEntryFields,
    /** `event` and `timestamp` again under the names AgentGate's clients read. */
    eventType: z.string(),
    createdAt: z.string(),
  })
  .meta({ id: 'AuditListEntry' });

const auditPageSchema = z.object({
  entries: z.array(auditListEntrySchema),
  nextCursor: z.string().nullable(),
  hasMore: z.boolean(),
  /** AgentGate's page figures: entries the filters match, this page's limit, how many come before it, whether more follow. */
  pagination: z.object({ total: z.number().int(), limit: z.number().int(), offset: z.number().int(), hasMore: z.boolean() }),
});

export type AuditEntry = z.infer<typeof auditEntrySchema>;
export type AuditPage = z.infer<typeof auditPageSchema>;

/** An entry's stored fields in the API's names (the trail adds `chainValid`). */
export function toAuditEntry(row: AuditRow): Omit<AuditEntry, 'id' | 'chainValid'> {
  return {
    timestamp: toIso(row.ts),
    event: row.event,
    actor: row.actor,
    actorKeyId: row.actor_key_id,
    actorKeyName: row.actor_key_name,
    ...(row.details !== null && { details: JSON.parse(row.details) as Record<string, unknown> }),
    seq: row.seq,
    prevHash: row.prev_hash,
    hash: row.hash,
  };
}

const listQuerySchema = z
  .strictObject({
    action: z.string().min(1).max(200).optional(),
    event: z.enum(AUDIT_EVENTS).optional(),
    /** AgentGate's name for `event`. */
    eventType: z.enum(AUDIT_EVENTS).optional(),
    /** The current status of the entry's request (AgentGate's filter). */
    status: z.enum(STATUSES).optional(),
    actor: z.string().min(1).max(300).optional(),
    keyId: z.string().min(1).max(100).optional(),
    requestId: z.string().min(1).max(100).optional(),
    from: isoTimestampMs.optional(),
    to: isoTimestampMs.optional(),
    cursor: timeCursorSchema.optional(),
    /** AgentGate's paging: skip this many entries (the cursor pages without a cost that grows with the offset). */
    offset: z.coerce.number().int().min(0).max(MAX_OFFSET).optional(),
    limit: z.coerce.number().int().min(1).max(500).default(50),
  })
  .refine((q) => q.from === undefined || q.to === undefined || q.from <= q.to, { message: 'from must not be after to', path: ['from'] })
  .refine((q) => q.event === undefined || q.eventType === undefined || q.event === q.eventType, {
    message: 'event and eventType name the same filter: give one',
    path: ['eventType'],
  })
  .refine((q) => q.cursor === undefined || q.offset === undefined, { message: 'page by cursor or by offset, not both', path: ['offset'] });

export function registerAuditRoutes(app: ZodApp, ctx: GateContext): void {
  app.get(
    '/api/audit',
    // The audit across requests shows what the per-request trails show, so the same scope reads it.
    routeOptions('request:read', {
      operationId: 'listAuditEntries',
      summary: 'Audit entries of all requests, newest first, with the API key behind each actor',
      description:
        'Filters (all optional, combined with AND): `action` (the request’s action), `event` (or `eventType`), `status` ' +
        '(the request’s current status), `actor` (exact), `keyId` (the API key behind the actor), `requestId`, `from` and ' +
        '`to` (ISO 8601, inclusive). Pages by cursor: pass `nextCursor` of one answer as `cursor` of the next, with the ' +
        'same filters; it is null on the last page. `offset` pages the AgentGate way instead (not with `cursor`); ' +
        '`pagination` gives the total either way (`pagination.offset`: the entries before this page, by cursor too). ' +
        'Unknown query parameters are a 400, so a misspelt filter never widens the answer. ' +
        'Each entry’s `eventType` and `createdAt` repeat `event` and `timestamp` for AgentGate’s clients.',
      tags: ['audit'],
      querystring: listQuerySchema,
      response: {
        200: auditPageSchema,
      },
    }),
    async (request) => {
      const { cursor, limit, offset = 0, event, eventType, ...filters } = request.query;
      const page = await listAudit(ctx.database, { ...filters, event: event ?? eventType, after: cursor }, { limit, offset });
      return {
        entries: page.rows.map((row) => {
          const entry = toAuditEntry(row);
          return { id: row.id, requestId: row.request_id, action: row.action, ...entry, eventType: entry.event, createdAt: entry.timestamp };
        }),
        nextCursor: page.nextCursor,
        hasMore: page.hasMore,
        pagination: { total: page.total, limit, offset: page.offset, hasMore: page.hasMore },
      };
    },
  );

  app.get(
    '/api/audit/actors',
    routeOptions('request:read', {
      operationId: 'listAuditActors',
      summary: 'Every actor that appears in the audit, sorted (for a filter list)',
      tags: ['audit'],
      response: { 200: z.object({ actors: z.array(z.string()) }) },
    }),
    async () => ({ actors: await auditActors(ctx.database) }),
  );

  // Who changed policies, keys and webhooks: administrators only.
  registerAdminChangeRoute(app, ctx.database.db, 'admin', ctx.changeResources);
}
