// Policies: the pure engine (compile, index, evaluate), PolicyCache and the policy routes.
import { defineFeature } from '@vigil/platform';
import type { GateFeature } from '../context.ts';
import { registerPolicyRoutes } from './routes.ts';

export { policiesMigrations } from './migrations.ts';
export { PolicyCache } from './cache.ts';
export { DECISIONS, type PolicyDecision, storedDecisionText, URGENCIES, type Urgency } from './engine.ts';
export { policyNames } from './store.ts';
export type { PoliciesTables } from './tables.ts';

/** The resource name the log of administrative changes records policies under (context.ts composes the service's list). */
export const POLICY_CHANGES = 'policy';

export const policiesFeature: GateFeature = defineFeature('policies', ({ app, context }) => registerPolicyRoutes(app, context));
