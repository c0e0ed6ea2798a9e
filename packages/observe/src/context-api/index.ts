import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerContextRoutes } from './routes.ts';

export const contextApiFeature: ObserveFeature = defineFeature('context-api', ({ app, context }) => registerContextRoutes(app, context));
