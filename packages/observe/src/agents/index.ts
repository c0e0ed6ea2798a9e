// Agent records and pause. (The reserved agent `system` is events/system-agent.ts: ingest refuses it.)
import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerAgentRoutes } from './routes.ts';

export const agentsFeature: ObserveFeature = defineFeature('agents', ({ app, context }) => registerAgentRoutes(app, context));
