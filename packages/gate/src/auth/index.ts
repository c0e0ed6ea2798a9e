// Authentication: scopes, API keys (KeyCache), dashboard sessions and MCP authorization.
import { defineFeature } from '@vigil/platform';
import type { GateFeature } from '../context.ts';
import { registerAuthentication } from './auth.ts';
import { bootstrapAdminKey } from './keys.ts';
import { registerMcpAuthorizeRoute } from './mcp.ts';
import { registerKeyRoutes } from './routes.ts';
import { registerDashboardSessionRoutes } from './sessions.ts';

export { authMigrations } from './migrations.ts';
export { auditActor, type AuditActor, RATE_LIMIT_HEADERS, systemActor } from './auth.ts';
export { KeyCache } from './keys.ts';
export { type Scope, SCOPES } from './scopes.ts';
export type { AuthTables } from './tables.ts';

/** The resource name the log of administrative changes records API keys under (context.ts composes the service's list). */
export const API_KEY_CHANGES = 'api_key';

/** The authentication hook every route passes; registered before any route. */
export const authenticationFeature: GateFeature = defineFeature(
  'authentication',
  ({ app, context }) => registerAuthentication(app, context),
  // Shared: its onRequest hook must guard every route of every feature, and the request
  // decorators it sets (the caller's key) are what the other features' routes read.
  { shared: true },
);

/** Key, dashboard session and MCP routes; resolves to the admin key generated at first start (no key yet, GATE_ADMIN_KEY unset), to print once. */
export const keysFeature: GateFeature<string | null> = defineFeature('keys', async ({ app, context }) => {
  registerKeyRoutes(app, context);
  registerDashboardSessionRoutes(app, context);
  registerMcpAuthorizeRoute(app);
  return bootstrapAdminKey(context.database, context.config.adminKey, context.clock.now());
});
