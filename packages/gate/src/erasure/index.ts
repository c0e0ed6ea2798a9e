// Erasure by data subject, the gate's side (docs/guide/erasure.md): creation indexes each request's
// subjects (by keyed hash); DELETE /api/subjects/:id replaces their requests' content by an erasure
// marker under one signed erasure leaf of the audit log, and answers a deletion receipt.
import { defineFeature } from '@vigil/platform';
import type { GateFeature } from '../context.ts';
import type { RequestService } from '../requests/index.ts';
import { registerErasureRoutes } from './routes.ts';
import { parseSubjectPaths, subjectIndexer } from './subject-index.ts';

export { erasureMigrations } from './migrations.ts';
export type { ErasureTables } from './tables.ts';

export const erasureFeature = (requests: RequestService): GateFeature =>
  defineFeature('erasure', ({ app, context }) => {
    const paths = parseSubjectPaths(context.config.subjects.paths);
    if (paths.length > 0) requests.indexSubjectsWith(subjectIndexer(paths, context.subjects));
    registerErasureRoutes(app, context);
  });
