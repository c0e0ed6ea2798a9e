// Sessions: list, detail, timeline, chain verification, and the idle rule every figure measures them by.
import { defineFeature } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerSessionRoutes } from './routes.ts';

export { sessionDurationMs, sessionDurationSql, sessionOverSql } from './figures.ts';
export { chainHeadOf, type EventReader, forgetVerifiedSessions, sessionTimeline, verifySessionChain } from './service.ts';
export { findSession, findSessions, toSession } from './store.ts';

export const sessionsFeature: ObserveFeature = defineFeature('sessions', ({ app, context }) => registerSessionRoutes(app, context));
