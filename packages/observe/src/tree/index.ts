// Trace trees: a session's spans (OTLP ingest) and SDK call pairs as nested, timed nodes.
import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerTreeRoutes } from './routes.ts';

export const treeFeature: ObserveFeature = defineFeature('tree', ({ app, context }) => registerTreeRoutes(app, context));
