import { sharedJsonValue } from '@vigil/platform';
import { z } from 'zod';

/**
 * What happens at a routed request's deadline (docs/escalation.md). Pure: the plan travels in the
 * request's stored policy decision (covered by its created entry's requestHash), the tier it has
 * reached in its row, so each step is a function of the row and the time.
 */

const MAX_TIERS = 10;
const MAX_SECONDS = 30 * 24 * 3600;

export const escalationTierSchema = z
  .object({
    /** Who decides from this tier on (added to the rule's approvers); empty: the same deciders. */
    approvers: z.array(z.string().min(1).max(200)).max(100).default([]),
    /** Where the request is posted again when it reaches this tier; empty: the rule's channels. */
    channels: z.array(z.string().min(1).max(200)).max(100).default([]),
    /** How long this tier has to decide, from the moment the request reaches it. */
    timeoutSeconds: z.number().int().min(1).max(MAX_SECONDS),
  })
  .strict();

export const deadlinePlanSchema = z
  .object({
    /** The tiers the request climbs, one per deadline passed; after the last one it fails closed. Empty: fail closed at the first deadline. */
    escalate: z.array(escalationTierSchema).max(MAX_TIERS).default([]),
    /** The reason recorded when it fails closed (default: one naming the tiers tried). */
    reason: z.string().min(1).max(500).optional(),
    /** A reminder goes to the request's chat channels this long before each deadline (0: none). */
    remindBeforeSeconds: z.number().int().min(0).max(MAX_SECONDS).default(0),
  })
  .strict();

export type DeadlinePlan = z.infer<typeof deadlinePlanSchema>;

/**
 * The plan of a rule that routes to a human and names none: fail closed at the request's
 * `expiresAt` with a recorded reason naming the rule. The gate specification expires a pending
 * request when `expiresAt` is reached; escalating past the time the requester set is a choice a
 * policy makes explicitly (docs/guide/escalation.md).
 */
export const DEFAULT_DEADLINE_PLAN: DeadlinePlan = { escalate: [], remindBeforeSeconds: 0 };

/** What the plan reads of a request's stored policy decision (policies/engine.ts PolicyDecision). */
export interface PlannedDecision {
  decision: string;
  policyId: string | null;
  policyName: string | null;
  ruleIndex: number | null;
  approvers: string[];
  channels: string[];
  onDeadline?: DeadlinePlan;
}

/** What the plan reads of a request's row (requests/tables.ts RequestRow). */
export interface PlannedRow {
  policy_decision: string;
  escalation_tier: number;
}

export type DeadlineStep =
  | { kind: 'escalate'; tier: number; deadlineAt: number; remindAt: number | null; details: Record<string, unknown> }
  | { kind: 'fail'; reason: string | null; details: Record<string, unknown> };

export function plannedDecision(row: Pick<PlannedRow, 'policy_decision'>): PlannedDecision {
  return sharedJsonValue(row.policy_decision) as PlannedDecision;
}

/**
 * The plan the request follows, or null for one no rule routed (it expires at its deadline as the
 * gate specification has it) and for one a rule decided at once.
 */
export function planOf(decision: PlannedDecision): DeadlinePlan | null {
  if (decision.policyId === null || (decision.decision !== 'route_to_human' && decision.decision !== 'route_to_agent')) return null;
  return decision.onDeadline ?? null;
}

/** When to remind the deciders before `deadline` (null: no reminder, or it would be now or earlier). */
export function reminderBefore(plan: DeadlinePlan | null, deadline: number | null, now: number): number | null {
  if (plan === null || deadline === null || plan.remindBeforeSeconds === 0) return null;
  const at = deadline - plan.remindBeforeSeconds * 1000;
  return at > now ? at : null;
}

/** The tier's approvers: the rule's own plus every tier's reached so far (a higher tier adds deciders, never removes any). */
export function approversAt(decision: PlannedDecision, tier: number): string[] {
  const tiers = (decision.onDeadline?.escalate ?? []).slice(0, tier);
  return [...new Set([...decision.approvers, ...tiers.flatMap((t) => t.approvers)])];
}

/** Where the request is posted at `tier`: the tier's channels, else the rule's. */
export function channelsAt(decision: PlannedDecision, tier: number): string[] {
  const reached = tier === 0 ? undefined : decision.onDeadline?.escalate[tier - 1];
  return reached !== undefined && reached.channels.length > 0 ? reached.channels : decision.channels;
}

/** What the request's deadline does: the next tier, or failing closed with the plan's reason. */
export function nextStep(row: PlannedRow, now: number): DeadlineStep {
  const decision = plannedDecision(row);
  const plan = planOf(decision);
  if (plan === null) return { kind: 'fail', reason: null, details: {} };
  const tier = row.escalation_tier + 1;
  const next = plan.escalate[tier - 1];
  if (next !== undefined) {
    const deadlineAt = now + next.timeoutSeconds * 1000;
    return {
      kind: 'escalate',
      tier,
      deadlineAt,
      remindAt: reminderBefore(plan, deadlineAt, now),
      details: {
        tier,
        of: plan.escalate.length,
        approvers: approversAt(decision, tier),
        channels: channelsAt(decision, tier),
        deadlineAt: new Date(deadlineAt).toISOString(),
      },
    };
  }
  const rule = `policy "${decision.policyName}" (${decision.policyId}), rule ${decision.ruleIndex}`;
  const reason =
    plan.reason ??
    (plan.escalate.length === 0
      ? `No decision by the deadline: failed closed (${rule})`
      : `No decision after escalation to tier ${plan.escalate.length}: failed closed (${rule})`);
  return { kind: 'fail', reason, details: { reason, tier: row.escalation_tier } };
}
