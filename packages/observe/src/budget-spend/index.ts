// The spend the gate's budgets enforce (docs/guide/budgets.md): an internal route answering, per
// scope and window, the same figures as GET /api/analytics/costs, read by the gate's budget job.
import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerBudgetSpendRoutes } from './routes.ts';

export const budgetSpendFeature: ObserveFeature = defineFeature('budget-spend', ({ app, context }) => registerBudgetSpendRoutes(app, context));
