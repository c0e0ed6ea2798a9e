// Redaction before anything is written or hashed (docs/guide/redaction.md): the configured rules and
// detectors (REDACTION_*) and the admin rules (/api/redaction/rules) applied to every batch on
// every path into the event store, through its one transform (EventAppender.beforeHash).
import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerRedactionRoutes } from './routes.ts';
import { EventRedaction } from './service.ts';

export { redactionMigrations } from './migrations.ts';
export type { RedactionTables } from './tables.ts';

/** The resource name the log of administrative changes records redaction rules under (context.ts composes the service's list). */
export { REDACTION_RULE_RESOURCE as REDACTION_RULE_CHANGES } from './store.ts';

export const redactionFeature: ObserveFeature = defineFeature('redaction', ({ app, context }) => {
  const redaction = new EventRedaction(context);
  context.events.beforeHash((events) => redaction.redactBatch(events));
  registerRedactionRoutes(app, context, redaction);
});
