// Budgets enforced at the gate (docs/guide/budgets.md): a scope's spend in a window, read from
// observe by a job, with a soft threshold (route to a person) and a hard one (deny, pause the agent).
import { defineFeature, type PeriodicJob } from '@vigil/platform';
import type { GateFeature } from '../context.ts';
import type { RequestService } from '../requests/index.ts';
import { registerBudgetRoutes } from './routes.ts';
import { BudgetService } from './service.ts';

export { budgetsMigrations } from './migrations.ts';
export { BUDGET_CHANGES, windowStart } from './store.ts';
export type { BudgetsTables } from './tables.ts';

/** How often the spend is read from observe: breaches act within this (plus a read) of the ingest that caused them. */
export const BUDGET_POLL_MS = 250;
const UNLINKED_POLL_MS = 60_000;

export const budgetsFeature = (requests: RequestService): GateFeature<PeriodicJob> =>
  defineFeature('budgets', ({ app, context, job }) => {
    const budgets = new BudgetService(context, app.log);
    registerBudgetRoutes(app, context, budgets, requests);
    requests.guardWithBudgets(budgets);
    // Without the observe link there is nothing to read: the job stays (its ticks do nothing) but rarely takes its lease.
    const linked = context.config.observe?.serviceToken !== undefined;
    return job({ name: 'gate.budgets', intervalMs: linked ? BUDGET_POLL_MS : UNLINKED_POLL_MS, run: () => budgets.poll() });
  });
