// Alert rules and their periodic evaluation (ALERT_EVAL_INTERVAL_MS).
import { defineFeature, type PeriodicJob } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { runAlertTick } from './evaluator.ts';
import { registerAlertRoutes } from './routes.ts';

export { ALERT_SESSION_PREFIX, alertSessionId, COUNTED_EVENT_TYPES } from './evaluator.ts';
export type { AlertsTables } from './tables.ts';

/** The resource name the log of administrative changes records alert rules under (context.ts composes the service's list). */
export const ALERT_RULE_CHANGES = 'alert_rule';

/** Resolves to the evaluation job. */
export const alertsFeature: ObserveFeature<PeriodicJob> = defineFeature('alerts', ({ app, context, job }) => {
  registerAlertRoutes(app, context);
  return job({ name: 'observe.alerts', intervalMs: context.config.alertEvalIntervalMs, run: (now) => runAlertTick(context, now, app.log) });
});
