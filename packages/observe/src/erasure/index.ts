// Erasure by data subject (docs/guide/erasure.md): ingest indexes each event's subjects (by keyed
// hash); DELETE /api/subjects/:id replaces their events' content by an erasure marker under one
// signed erasure leaf of the audit log, and answers a deletion receipt.
import { defineFeature } from '@vigil/platform';
import type { ExpressionBuilder } from 'kysely';
import type { ObserveAuditLog } from '../audit-log/index.ts';
import type { ObserveFeature } from '../context.ts';
import type { ObserveSchema } from '../schema.ts';
import { registerErasureRoutes } from './routes.ts';
import { indexSubjects, parseSubjectPaths } from './subject-index.ts';

export { erasureMigrations } from './migrations.ts';
export type { ErasureTables } from './tables.ts';
export { parseSubjectPaths, subjectIdsOf } from './subject-index.ts';

/** A filter of `sessions` rows: those with no event of a subject under a legal hold in force (retention keeps the others). */
export function noHeldSubject(eb: ExpressionBuilder<ObserveSchema, 'sessions'>) {
  return eb.not(
    eb.exists(
      eb
        .selectFrom('event_subjects')
        .innerJoin('legal_holds', 'legal_holds.target_id', 'event_subjects.subject_hash')
        .select('event_subjects.event_id')
        .whereRef('event_subjects.session_id', '=', 'sessions.id')
        .where('legal_holds.scope', '=', 'subject')
        .where('legal_holds.released_at', 'is', null),
    ),
  );
}

export const erasureFeature = (log: ObserveAuditLog): ObserveFeature =>
  defineFeature('erasure', ({ app, context }) => {
    const paths = parseSubjectPaths(context.config.subjects.paths);
    if (paths.length > 0) context.events.inTransaction((batch) => indexSubjects(batch, paths, context.subjects));
    registerErasureRoutes(app, context, log);
  });
