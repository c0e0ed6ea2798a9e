import { defineFeature } from '@vigil/platform';
import type { GateFeature } from '../context.ts';
import { registerHealthRoutes } from './routes.ts';

export const systemFeature: GateFeature = defineFeature('system', ({ app, context }) => registerHealthRoutes(app, context));
