import type { RouteEntry } from '@vigil/platform';

/**
 * Observe key scopes. `ingest`: what an agent process needs at run time (send events, read an agent
 * record for pausedAt / modelOverride / approvalPolicyId; keys are not bound to one agent). `read`: every query. `admin`:
 * everything, so it implies the other two. A key stored without scopes (created before scopes
 * existed) has full access, as `admin`.
 */
export const OBSERVE_SCOPES = ['ingest', 'read', 'admin'] as const;
export type ObserveScope = (typeof OBSERVE_SCOPES)[number];

declare module '@vigil/platform' {
  /** What an observe route's `config.scope` holds: one scope, or several of which a key needs any. */
  interface RouteScopes {
    observe: ObserveScope | readonly ObserveScope[];
  }
  /**
   * Observe's authentication modes beyond the kit's (OBSERVE_AUTH_MODES): `bootstrap`, an API key,
   * or none while no active key exists (first key creation); `signature`, an API key, or a signed
   * request the route verifies itself; `service`, only the shared service-to-service bearer
   * token, never an API key; `stream`, an API key, or a short-lived stream token in `?token=`
   * (browsers' EventSource cannot send headers).
   */
  interface RouteAuthModes {
    bootstrap: true;
    signature: true;
    service: true;
    stream: true;
  }
}

/** Whether each of observe's own authentication modes takes an API key (then its routes declare a scope). */
export const OBSERVE_AUTH_MODES = {
  bootstrap: { takesKey: true },
  signature: { takesKey: true },
  service: { takesKey: false },
  stream: { takesKey: true },
};

/** Full access: the first key's scopes, and those of a key stored without any. */
export const FULL_ACCESS: readonly ObserveScope[] = ['admin'];

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

/** Which scope each route that takes an API key needs, keyed `METHOD /url`: derived from what the routes declare (what tests and docs walk). */
export function routeScopes(routeTable: readonly RouteEntry[]): Record<string, ObserveScope | readonly ObserveScope[]> {
  return Object.fromEntries(
    routeTable.filter((route) => route.takesKey).map((route) => [`${route.method} ${route.url}`, route.scope as ObserveScope | readonly ObserveScope[]]),
  );
}
