import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerMemoryRoutes } from './routes.ts';

export const memoryFeature: ObserveFeature = defineFeature('memory', ({ app, context }) => registerMemoryRoutes(app, context));
