// The web dashboard's static files and the gate forwarder (/gate/api/*).
import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerDashboardRoutes, type DashboardRouteOptions } from './routes.ts';

export type { DashboardRouteOptions } from './routes.ts';

export function dashboardFeature(options: DashboardRouteOptions | undefined): ObserveFeature {
  return defineFeature('dashboard', ({ app, context }) => registerDashboardRoutes(app, context, options));
}
