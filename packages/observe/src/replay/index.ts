import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerReplayRoutes } from './routes.ts';

export { forgetReplays } from './cache.ts';

export const replayFeature: ObserveFeature = defineFeature('replay', ({ app, context }) => registerReplayRoutes(app, context));
