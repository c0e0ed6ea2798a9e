// OTLP/HTTP trace ingest (POST /v1/traces): spans of the OpenTelemetry GenAI conventions and of
// OpenInference become events through the one write path (events/), with metadata.otel for trees.
import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerOtelRoutes } from './routes.ts';

export { deleteSessionSpans } from './store.ts';
export type { OtelTables } from './tables.ts';

export const otelFeature: ObserveFeature = defineFeature('otel', ({ app, context }) => registerOtelRoutes(app, context));
