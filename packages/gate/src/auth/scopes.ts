import type { RouteEntry } from '@vigil/platform';

export const SCOPES = ['admin', 'request:create', 'request:read', 'request:decide', 'webhook:manage'] as const;
export type Scope = (typeof SCOPES)[number];

declare module '@vigil/platform' {
  /** What a gate route's `config.scope` holds: a scope (`admin` grants every one), or `any` valid key. */
  interface RouteScopes {
    gate: Scope | 'any';
  }
}

/**
 * Which scope each route needs, keyed `METHOD /url`, derived from what the routes declare: `public`
 * for a route that takes no key. What the MCP authorization answers from (mcp.ts).
 */
export function routeScopes(routeTable: readonly RouteEntry[]): Record<string, Scope | 'public' | 'any'> {
  return Object.fromEntries(routeTable.map((route) => [`${route.method} ${route.url}`, route.takesKey ? (route.scope as Scope | 'any') : 'public']));
}

export function grants(scopes: readonly string[], required: Scope | 'any'): boolean {
  return required === 'any' || scopes.includes('admin') || scopes.includes(required);
}
