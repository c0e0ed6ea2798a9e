import type { CreateTableBuilder } from 'kysely';
import { epochMsType, type DdlTarget } from './db.ts';
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

/**
 * Migration step body (each service's first step): the api_keys table, with the service's own
 * columns (the gate's scopes and rate limit) between the key's hash and its lifecycle times. Shipped
 * steps run it, so it never changes: a new shape is a new step.
 */
export async function createApiKeyTable(
  db: DdlTarget,
  addServiceColumns: (table: CreateTableBuilder<'api_keys', string>) => CreateTableBuilder<'api_keys', string> = (table) => table,
): Promise<void> {
  const table = db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('key_hash', 'text', (c) => c.notNull().unique());
  await addServiceColumns(table)
    .addColumn('created_at', epochMsType, (c) => c.notNull())
    .addColumn('last_used_at', epochMsType)
    .addColumn('revoked_at', epochMsType)
    .execute();
}
