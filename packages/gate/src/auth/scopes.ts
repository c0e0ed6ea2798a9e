export const SCOPES = ['admin', 'request:create', 'request:read', 'request:decide', 'webhook:manage'] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * The one table of which scope each route needs (`admin` grants every scope). `public` routes
 * need no key; `any` needs a valid key of any scope. A route missing here is refused (see auth.ts),
 * and a test walks this table against the app's routes.
 */
export const ROUTE_SCOPES: Record<string, Scope | 'public' | 'any'> = {
  'GET /health': 'public',
  // No API key: the Prometheus scrape admits itself (a client address of METRICS_ALLOW_IPS, or METRICS_TOKEN; platform/metrics.ts).
  'GET /metrics': 'public',
  // Public, like the schemas it describes: clients generate their types from it before holding a key.
  'GET /api/openapi.json': 'public',
  'POST /api/requests': 'request:create',
  'GET /api/requests': 'request:read',
  'GET /api/requests/:id': 'request:read',
  'POST /api/requests/:id/decide': 'request:decide',
  'POST /api/requests/:id/confirm': 'request:create',
  'GET /api/requests/:id/audit': 'request:read',
  'GET /api/requests/:id/audit/verify': 'request:read',
  // The audit across requests shows what the per-request trails show, so the same scope reads it.
  'GET /api/audit': 'request:read',
  'GET /api/audit/actors': 'request:read',
  // Who changed policies, keys and webhooks: administrators only.
  'GET /api/audit/changes': 'admin',
  // The audit log (audit-log/): its proofs and checkpoints are read like the entries; signing one on demand is for administrators.
  'GET /api/audit/public-key': 'request:read',
  'GET /api/audit/checkpoint': 'request:read',
  'POST /api/audit/checkpoint': 'admin',
  'GET /api/audit/consistency': 'request:read',
  'GET /api/audit/inclusion': 'request:read',
  'GET /api/audit/export': 'request:read',
  'GET /api/audit/leaves': 'request:read',
  'GET /api/audit/unlogged': 'request:read',
  'GET /api/audit/heads': 'request:read',
  'GET /api/policies': 'admin',
  'POST /api/policies': 'admin',
  'PUT /api/policies/:id': 'admin',
  'DELETE /api/policies/:id': 'admin',
  'POST /api/api-keys': 'admin',
  'GET /api/api-keys': 'admin',
  'PATCH /api/api-keys/:id': 'admin',
  'DELETE /api/api-keys/:id': 'admin',
  'GET /api/webhooks': 'webhook:manage',
  'POST /api/webhooks': 'webhook:manage',
  'PATCH /api/webhooks/:id': 'webhook:manage',
  'DELETE /api/webhooks/:id': 'webhook:manage',
  'GET /api/webhooks/:id/deliveries': 'webhook:manage',
  'POST /api/policies/simulate': 'admin',
  // Dashboard sign-in (auth/sessions.ts): any valid key; the session then has that key's scopes.
  'POST /api/dashboard/sessions': 'any',
  'POST /api/mcp/sessions': 'any',
  // AgentGate's MCP server asks before each tool; the answer depends on the key's scopes (auth/mcp.ts).
  'POST /api/mcp/authorize': 'any',
  'GET /api/dashboard/sessions/current': 'any',
  // Chat platforms call these without a key: each request carries the platform's signature instead (chat/routes.ts).
  'POST /api/chat/slack/interactions': 'public',
  'POST /api/chat/discord/interactions': 'public',
  'DELETE /api/dashboard/sessions/current': 'any',
};

export function grants(scopes: readonly string[], required: Scope | 'any'): boolean {
  return required === 'any' || scopes.includes('admin') || scopes.includes(required);
}
