// Legal holds (docs/guide/erasure.md#legal-holds): a hold on a session, an agent or a data subject
// keeps what it covers from retention and refuses its erasure until it is released; placing and
// releasing are recorded in the change log.
import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerHoldRoutes } from './routes.ts';

export { holdsMigrations } from './migrations.ts';
export { refuseHeld } from './service.ts';
export { heldTargets, holdsInForce, notHeldSession } from './store.ts';
export type { HoldsTables } from './tables.ts';

/** The resource name the log of administrative changes records holds under (context.ts composes the service's list). */
export { LEGAL_HOLD_RESOURCE as LEGAL_HOLD_CHANGES } from './store.ts';

export const holdsFeature: ObserveFeature = defineFeature('holds', ({ app, context }) => registerHoldRoutes(app, context));
