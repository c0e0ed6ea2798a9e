// Evidence packs (docs/audit.md, "Evidence packs"): the pack's assembly, its one home, used by
// `vigil evidence` (through this package's entry) and by POST /api/audit/evidence-pack (the
// dashboard's download). Uses no feature: it reads every service through its routes.
import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerEvidenceRoutes } from './routes.ts';

export { readContainer, writeContainer, type PackFile } from './container.ts';
export { buildEvidence, EvidenceReadError, httpEvidenceService, MANIFEST_PATH, sha256Hex, SIGNATURES_PATH } from './pack.ts';
export type { CheckpointsPart } from './parts.ts';
export { GATE_AUTHORIZATION_HEADER } from './routes.ts';

export const evidencePackFeature: ObserveFeature = defineFeature('evidence-pack', ({ app, context }) => {
  registerEvidenceRoutes(app, context);
});
