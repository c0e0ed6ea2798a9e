// Erasure by data subject (docs/guide/erasure.md): ingest indexes each event's subjects (by keyed
// hash); DELETE /api/subjects/:id replaces their events' content by an erasure marker under one
// signed erasure leaf of the audit log, and answers a deletion receipt.
import { defineFeature, type PeriodicJob } from '@vigil/platform';
import type { ExpressionBuilder } from 'kysely';
import type { ObserveAuditLog } from '../audit-log/index.ts';
import type { ObserveFeature } from '../context.ts';
import type { ObserveSchema } from '../schema.ts';
import { backfillSubjectPage } from './backfill.ts';
import { registerErasureRoutes } from './routes.ts';
import { indexSubjects, parseSubjectPaths } from './subject-index.ts';

export { erasureMigrations } from './migrations.ts';
export type { ErasureTables } from './tables.ts';
export { parseSubjectPaths, subjectIdsOf } from './subject-index.ts';

/** A filter of `sessions` rows: those with no event of these subjects (keyed hashes: the ones under a legal hold in force; retention keeps the others). */
export function noHeldSubject(subjects: readonly string[]) {
  return (eb: ExpressionBuilder<ObserveSchema, 'sessions'>) =>
    subjects.length === 0
      ? eb.and([])
      : eb.not(
          eb.exists(
            eb
              .selectFrom('event_subjects')
              .select('event_subjects.event_id')
              .whereRef('event_subjects.session_id', '=', 'sessions.id')
              .where('event_subjects.subject_hash', 'in', subjects),
          ),
        );
}

/** How often the subject index's backfill runs, and the pages (of 500 events) one run indexes at most. */
const BACKFILL_INTERVAL_MS = 10_000;
const BACKFILL_PAGES_PER_RUN = 20;

/** Resolves to the subject index's backfill job (events stored before the index existed). */
export const erasureFeature = (log: ObserveAuditLog): ObserveFeature<PeriodicJob> =>
  defineFeature('erasure', ({ app, context, job }) => {
    const paths = parseSubjectPaths(context.config.subjects.paths);
    if (paths.length > 0) context.events.inTransaction((batch) => indexSubjects(batch, paths, context.subjects));
    registerErasureRoutes(app, context, log);
    return job({
      name: 'observe.subject-index-backfill',
      intervalMs: BACKFILL_INTERVAL_MS,
      run: async () => {
        for (let page = 0; paths.length > 0 && page < BACKFILL_PAGES_PER_RUN && (await backfillSubjectPage(context, paths)); page++);
      },
    });
  });
