// API keys and authentication: scopes and authentication modes, bearer keys and short-lived stream tokens.
import { defineFeature, registerAdminChangeRoute } from '@vigil/platform';
import type { ObserveFeature } from '../context.ts';
import { registerAuthentication } from './auth.ts';
import { registerKeyRoutes } from './routes.ts';

export { authMigrations } from './migrations.ts';
export { OBSERVE_AUTH_MODES, OBSERVE_SCOPES, observeAuthErrorStatuses } from './scopes.ts';
export { activeKeyIds, hasActiveKey } from './store.ts';
export { createStreamToken, deleteExpiredStreamTokens, STREAM_TOKEN_TTL_MS } from './stream-tokens.ts';
export type { AuthTables } from './tables.ts';

/** The resource name the log of administrative changes records API keys under (context.ts composes the service's list). */
export const API_KEY_CHANGES = 'api_key';

/** The authentication hook every route passes; registered before any route. */
export const authenticationFeature: ObserveFeature = defineFeature(
  'authentication',
  ({ app, context }) => registerAuthentication(app, context),
  // Shared: its onRequest hook must guard every route of every feature, and the request
  // decorators it sets (the caller's key) are what the other features' routes read.
  { shared: true },
);
/** Key routes, and the log of administrative changes that keys, alert rules, guardrails and settings write (platform/change-log.ts). */
export const keysFeature: ObserveFeature = defineFeature('keys', ({ app, context }) => {
  registerKeyRoutes(app, context);
  // Who changed keys, rules and settings: administrators only.
  registerAdminChangeRoute(app, context.database.db, 'admin', context.changeResources);
});
