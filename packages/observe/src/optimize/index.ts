import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerOptimizeRoutes } from './routes.ts';

export const optimizeFeature: ObserveFeature = defineFeature('optimize', ({ app, context }) => registerOptimizeRoutes(app, context));
