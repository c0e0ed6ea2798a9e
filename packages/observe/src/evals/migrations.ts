// The evals feature's part of step 0041 (src/migrations.ts). A step imports no other feature's code.
import type { MigrationDb } from '@vigil/platform';

/** A case's answer and the evaluator's reasoning, for the run's view (null for cases finished before). */
export async function addCaseAnswerColumns(db: MigrationDb): Promise<void> {
  await db.schema.alterTable('eval_run_cases').addColumn('output', 'text').execute();
  await db.schema.alterTable('eval_run_cases').addColumn('reasoning', 'text').execute();
}
