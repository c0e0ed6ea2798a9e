import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerReflectRoutes } from './routes.ts';

export { ANALYSES } from './service.ts';

export const reflectFeature: ObserveFeature = defineFeature('reflect', ({ app, context }) => registerReflectRoutes(app, context));
