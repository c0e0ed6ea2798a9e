import { z } from 'zod';

export const HOLD_SCOPES = ['session', 'agent', 'subject'] as const;

export const holdSchema = z
  .object({
    id: z.string(),
    scope: z.enum(HOLD_SCOPES).describe('What the hold covers: one session, every session of an agent, or every event of a data subject'),
    targetId: z.string().describe('The session or agent id; for a subject, the keyed hash of its id (the raw id is not stored)'),
    reason: z.string(),
    placedBy: z.string(),
    placedAt: z.string(),
    active: z.boolean(),
    releasedAt: z.string().nullable(),
    releasedBy: z.string().nullable(),
    releaseReason: z.string().nullable(),
  })
  .meta({ id: 'LegalHold' });

export type HoldOut = z.infer<typeof holdSchema>;

export const placeHoldBodySchema = z.strictObject({
  scope: z.enum(HOLD_SCOPES),
  targetId: z.string().trim().min(1).max(512).describe('A session id, an agent id or a data subject id (stored as its keyed hash)'),
  reason: z.string().trim().min(1).max(2000).describe('Why the data must be kept (a matter, a case number)'),
});

export const releaseHoldBodySchema = z.strictObject({
  reason: z.string().trim().min(1).max(2000).describe('Why the hold ends'),
});

export const holdParams = z.object({ id: z.string().min(1).max(200) });

export const listHoldsQuerySchema = z.object({
  active: z
    .enum(['true', 'false'])
    .optional()
    .transform((value) => (value === undefined ? undefined : value === 'true'))
    .describe('true: only holds in force; false: only released ones'),
});
