// What happens at a routed request's deadline: escalation tiers, reminders, failing closed with a
// recorded reason (docs/escalation.md). Pure plan logic and the migration of the request columns it
// moves; the requests feature applies the steps in its deadline scan, chat renders the tier.
export { escalationMigrations } from './migrations.ts';
export { approversAt, channelsAt, deadlinePlanSchema, DEFAULT_DEADLINE_PLAN, nextStep, planOf, reminderBefore } from './plan.ts';
export type { DeadlinePlan } from './plan.ts';
