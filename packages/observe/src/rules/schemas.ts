import { isoTimestampMs } from '@vigil/platform';
import { z } from 'zod';
import { MAX_OFFSET } from '../bounds.ts';
import { identifier } from '../events/index.ts';

/** The fields every kind of rule (alert, guardrail) shares, in their bodies and in their history queries. */
export const ruleName = z.string().trim().min(1, 'name must be 1 to 200 characters').max(200, 'name must be 1 to 200 characters');

/** A rule's optional free text; null clears it. */
const MAX_RULE_DESCRIPTION_LENGTH = 1000;
export const ruleDescription = z.string().max(MAX_RULE_DESCRIPTION_LENGTH, `description must be at most ${MAX_RULE_DESCRIPTION_LENGTH} characters`).nullable();

export const ruleParams = z.object({ id: identifier });

/** The fields a rule of either kind answers first: its id, name and description. */
export const ruleOutIdentity = { id: z.string(), name: z.string(), description: z.string().nullable() };

/**
 * The page, rule filter and period (`from`, `to`: inclusive bounds on the trigger time, read from
 * the history's (triggered_at, id) index) of a rule kind's history; its own filters are added
 * beside, and the whole is refined by periodInOrder.
 */
export const ruleHistoryPage = {
  ruleId: identifier.optional(),
  from: isoTimestampMs.optional(),
  to: isoTimestampMs.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  offset: z.coerce.number().int().min(0).max(MAX_OFFSET).default(0),
};
