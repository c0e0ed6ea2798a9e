// Evaluations: compliance rules, the LLM judge, evaluators, datasets and their runs (EvalRunWorker).
import { defineFeature, type PeriodicJob } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerEvalRoutes } from './routes.ts';
import { EVAL_RUNS_INTERVAL_MS, EvalRunWorker } from './runs.ts';

export { addCaseAnswerColumns } from './migrations.ts';
export { forgetCaseAnswers } from './store.ts';
export type { EvalsTables } from './tables.ts';

export interface EvalRuns {
  /** Works a run's cases; kicked by each new run when `kickRuns`. */
  worker: EvalRunWorker;
  /** Resumes unfinished cases (a run cut short by a restart). */
  job: PeriodicJob;
}

export function evalsFeature(options: { kickRuns: boolean }): ObserveFeature<EvalRuns> {
  return defineFeature('evals', ({ app, context, job, onClose }) => {
    const worker = new EvalRunWorker(context, app.log, options.kickRuns);
    registerEvalRoutes(app, context, worker);
    const runs = { worker, job: job({ name: 'observe.eval-runs', intervalMs: EVAL_RUNS_INTERVAL_MS, run: () => worker.runJob() }) };
    onClose(() => worker.stop());
    return runs;
  });
}
