import type { RouteEntry } from '@vigil/platform';
/**
 * Observe key scopes. `ingest`: what an agent process needs at run time (send events, read an agent
 * record for pausedAt / modelOverride / approvalPolicyId; keys are not bound to one agent). `read`: every query. `admin`:
 * everything, so it implies the other two. A key stored without scopes (created before scopes
 * existed) has full access, as `admin`.
 */
export const OBSERVE_SCOPES = ['ingest', 'read', 'admin'] as const;
export type ObserveScope = (typeof OBSERVE_SCOPES)[number];

/** Full access: the first key's scopes, and those of a key stored without any. */
export const FULL_ACCESS: readonly ObserveScope[] = ['admin'];

/** The memory forwarder and the removed lessons/community paths: reads are `read`, writes `admin`. */
function forwardedRoutes(base: string): Record<string, ObserveScope> {
  const routes: Record<string, ObserveScope> = {};
  for (const url of [base, `${base}/*`]) {
    routes[`GET ${url}`] = 'read';
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) routes[`${method} ${url}`] = 'admin';
  }
  return routes;
}

/**
 * The one table of which scope each route that takes an API key needs, keyed by "METHOD /url" as
 * in `app.routeTable` (HEAD is its GET). Public, service-token and dashboard
 * routes take no API key and are not listed. A route missing here needs `admin` (auth.ts), and a
 * test walks this table against the app's routes.
 */
export const ROUTE_SCOPES: Record<string, ObserveScope | readonly ObserveScope[]> = {
  // Admin only: a leaked agent key must not mint keys that outlive its revocation.
  'POST /api/keys': 'admin',
  'GET /api/keys': 'admin',
  'DELETE /api/keys/:id': 'admin',

  'POST /api/events': 'ingest',
  // Only a request that presents a key (source generic) is checked; signed webhooks carry none.
  'POST /api/events/ingest': 'ingest',
  // The gate's forwarding in batches: signed by its source; a key, if one is presented, must ingest.
  'POST /api/events/ingest/batch': 'ingest',
  // OTLP/HTTP trace export: the exporter's `headers` carry the key.
  'POST /v1/traces': 'ingest',
  // An agent reads its state (pause, model override, approval policy) here while it runs; a reader sees it too.
  'GET /api/agents/:id': ['ingest', 'read'],

  'GET /api/stats': 'read',
  'GET /api/events': 'read',
  'GET /api/events/:id': 'read',
  'GET /api/sessions': 'read',
  'GET /api/sessions/:id': 'read',
  'GET /api/sessions/:id/timeline': 'read',
  'GET /api/sessions/:id/tree': 'read',
  'GET /api/sessions/:id/replay': 'read',
  'GET /api/audit/verify': 'read',
  // Who changed keys, rules and settings: administrators only.
  'GET /api/audit/changes': 'admin',
  'GET /api/audit/public-key': 'read',
  'GET /api/audit/checkpoint': 'read',
  'POST /api/audit/checkpoint': 'admin',
  'GET /api/audit/consistency': 'read',
  'GET /api/audit/inclusion': 'read',
  'GET /api/audit/export': 'read',
  'GET /api/audit/leaves': 'read',
  'GET /api/audit/unlogged': 'read',
  'GET /api/audit/heads': 'read',
  'GET /api/audit/derived/events': 'read',
  'GET /api/audit/derived/sessions': 'read',
  'GET /api/audit/derived/rollups': 'read',
  'GET /api/audit/derived/latency-sketches': 'read',
  'GET /api/agents': 'read',
  'POST /api/agents/:id/pause': 'admin',
  'POST /api/agents/:id/resume': 'admin',
  'GET /api/agents/:id/health': 'read',
  'GET /api/health/overview': 'read',
  'GET /api/health/history': 'read',

  'POST /api/alerts/rules': 'admin',
  'GET /api/alerts/rules': 'read',
  'GET /api/alerts/rules/:id': 'read',
  'PUT /api/alerts/rules/:id': 'admin',
  'DELETE /api/alerts/rules/:id': 'admin',
  'GET /api/alerts/history': 'read',

  'POST /api/benchmarks': 'admin',
  'GET /api/benchmarks': 'read',
  'GET /api/benchmarks/:id': 'read',
  'PUT /api/benchmarks/:id/status': 'admin',
  'GET /api/benchmarks/:id/results': 'read',
  'DELETE /api/benchmarks/:id': 'admin',

  'POST /api/eval/sessions/:sessionId/compliance': 'admin',
  'POST /api/eval/sessions/:sessionId/score': 'admin',
  'POST /api/evaluators': 'admin',
  'GET /api/evaluators': 'read',
  'GET /api/evaluators/:id': 'read',
  'DELETE /api/evaluators/:id': 'admin',
  'POST /api/datasets': 'admin',
  'GET /api/datasets': 'read',
  'GET /api/datasets/:id': 'read',
  'POST /api/datasets/:id/runs': 'admin',
  'GET /api/datasets/:id/runs': 'read',
  'GET /api/runs/:id': 'read',

  'POST /api/guardrails': 'admin',
  'GET /api/guardrails': 'read',
  'GET /api/guardrails/history': 'read',
  'GET /api/guardrails/:id': 'read',
  'PUT /api/guardrails/:id': 'admin',
  'DELETE /api/guardrails/:id': 'admin',
  'GET /api/guardrails/:id/status': 'read',

  'GET /api/config': 'read',
  'PUT /api/config': 'admin',
  'GET /api/config/features': 'read',
  'GET /api/config/health-weights': 'read',
  'PUT /api/config/health-weights': 'admin',

  ...forwardedRoutes('/api/memory'),
  ...forwardedRoutes('/api/lessons'),
  ...forwardedRoutes('/api/community'),

  'GET /api/analytics': 'read',
  'GET /api/analytics/llm': 'read',
  'GET /api/analytics/costs': 'read',
  'GET /api/analytics/agents': 'read',
  'GET /api/analytics/tools': 'read',
  'GET /api/optimize/recommendations': 'read',
  'GET /api/reflect': 'read',
  'GET /api/recall': 'read',
  'GET /api/recall/status': 'read',
  'GET /api/context': 'read',
  'GET /api/stream': 'read',
  'POST /api/stream/tokens': 'read',
};

/** The scopes a stored key holds: its list, or full access for a key stored without one. */
export function keyScopes(stored: string | null): readonly ObserveScope[] {
  return stored === null ? FULL_ACCESS : (JSON.parse(stored) as ObserveScope[]);
}

/** Whether a key with these scopes may call a route that needs `required` (any one of a list). */
export function grants(scopes: readonly ObserveScope[], required: ObserveScope | readonly ObserveScope[]): boolean {
  return scopes.includes('admin') || [required].flat().some((scope) => scopes.includes(scope));
}

/** How a route's scope reads in a 403: `read`, or `ingest or read`. */
export function scopeText(required: ObserveScope | readonly ObserveScope[]): string {
  return [required].flat().join(' or ');
}

/** The authentication failures a route documents: none when public, 401 for the service token, else 401 and 403 (scope). */
export function observeAuthErrorStatuses(route: Pick<RouteEntry, 'auth'>): number[] {
  if (route.auth === 'public') return [];
  return route.auth === 'service' ? [401] : [401, 403];
}
