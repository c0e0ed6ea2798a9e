import { toIso, toIsoOrNull } from './time.ts';

/** The columns every service's api_keys table has; each adds its own scopes (and limits). */
export interface ApiKeyLifecycleRow {
  id: string;
  name: string;
  prefix: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

/** What every service shows of a key besides its scopes: never its hash. */
export interface ApiKeyLifecycle {
  id: string;
  name: string;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export function toApiKeyLifecycle(row: ApiKeyLifecycleRow): ApiKeyLifecycle {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    createdAt: toIso(row.created_at),
    lastUsedAt: toIsoOrNull(row.last_used_at),
    revokedAt: toIsoOrNull(row.revoked_at),
  };
}
