// Guardrails: rules evaluated after each ingest commit and by a sweep; actions under the rule's row lock.
import { defineFeature, type PeriodicJob } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { GUARDRAIL_SWEEP_INTERVAL_MS, GUARDRAIL_SWEEP_JOB, GuardrailEngine } from './engine.ts';
import { registerGuardrailRoutes } from './routes.ts';

export type { GuardrailEngine } from './engine.ts';
export type { GuardrailsTables } from './tables.ts';

/** The resource name the log of administrative changes records guardrail rules under (context.ts composes the service's list). */
export const GUARDRAIL_CHANGES = 'guardrail';

export interface Guardrails {
  /** Evaluation after ingest commits (tests await `engine.idle()`). */
  engine: GuardrailEngine;
  sweep: PeriodicJob;
}

export function guardrailsFeature(options: { evaluateAfterCommit: boolean }): ObserveFeature<Guardrails> {
  return defineFeature('guardrails', ({ app, context, job, onClose }) => {
    registerGuardrailRoutes(app, context);
    const engine = new GuardrailEngine(context, app.log, options.evaluateAfterCommit);
    context.events.afterCommit((_appended, committed) => engine.eventsCommitted(committed));
    const sweep = job({
      name: GUARDRAIL_SWEEP_JOB,
      intervalMs: GUARDRAIL_SWEEP_INTERVAL_MS,
      run: async (now) => {
        await engine.sweep(now);
      },
    });
    onClose(() => engine.stop());
    return { engine, sweep };
  });
}
