import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerSystemRoutes } from './routes.ts';

export { registerObserveMetrics } from './metrics.ts';

export const systemFeature: ObserveFeature = defineFeature('system', ({ app, context }) => registerSystemRoutes(app, context));
