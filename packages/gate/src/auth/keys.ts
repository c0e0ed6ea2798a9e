import { generateSecret, newId, PreparedQuery, sha256Hex, toIso } from '@vigil/platform';
import type { Kysely } from 'kysely';
import type { ApiKeyRow, GateDatabase, GateSchema } from '../schema.ts';
import type { Scope } from './scopes.ts';

export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  scopes: Scope[];
  rateLimit: number | null;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export function toApiKey(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    scopes: JSON.parse(row.scopes) as Scope[],
    rateLimit: row.rate_limit,
    createdAt: toIso(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : toIso(row.last_used_at),
    revokedAt: row.revoked_at === null ? null : toIso(row.revoked_at),
  };
}

export function newKeyRow(name: string, scopes: Scope[], rateLimit: number | null, now: number, raw?: string): { row: ApiKeyRow; raw: string } {
  const secret = raw === undefined ? generateSecret('gk') : { raw, hash: sha256Hex(raw), prefix: raw.slice(0, 11) };
  return {
    raw: secret.raw,
    row: {
      id: newId(),
      name,
      prefix: secret.prefix,
      key_hash: secret.hash,
      scopes: JSON.stringify(scopes),
      rate_limit: rateLimit,
      created_at: now,
      last_used_at: null,
      revoked_at: null,
    },
  };
}

const selectActiveKey = new PreparedQuery((db: Kysely<GateSchema>, _dialect, keyHash: string) =>
  db.selectFrom('api_keys').selectAll().where('key_hash', '=', keyHash).where('revoked_at', 'is', null),
);

export async function findActiveKeyByHash(database: GateDatabase, keyHash: string): Promise<ApiKeyRow | undefined> {
  return selectActiveKey.first(database.db, database.dialect, keyHash);
}

/**
 * First start: `GATE_ADMIN_KEY` is installed as an admin key (once); with no key at all and no
 * GATE_ADMIN_KEY, an admin key is generated and returned so the caller can print it once.
 */
export async function bootstrapAdminKey(database: GateDatabase, adminKey: string | undefined, now: number): Promise<string | null> {
  return database.db.transaction().execute(async (trx) => {
    if (adminKey !== undefined) {
      const exists = await trx.selectFrom('api_keys').select('id').where('key_hash', '=', sha256Hex(adminKey)).executeTakeFirst();
      if (!exists) await trx.insertInto('api_keys').values(newKeyRow('admin (GATE_ADMIN_KEY)', ['admin'], null, now, adminKey).row).execute();
      return null;
    }
    const any = await trx.selectFrom('api_keys').select('id').limit(1).executeTakeFirst();
    if (any) return null;
    const { row, raw } = newKeyRow('admin', ['admin'], null, now);
    await trx.insertInto('api_keys').values(row).execute();
    return raw;
  });
}

const MAX_CACHED_KEYS = 10_000;

/**
 * Active keys by hash, so authentication does not read the database on every request. A key
 * changed or revoked through this instance is dropped at once; a change made through another
 * instance sharing the database is seen within `refreshMs` (0 reads the key on every request).
 * Unknown hashes are never cached, so a key created anywhere works at once.
 */
export class KeyCache {
  private readonly entries = new Map<string, { row: ApiKeyRow; checkedAt: number }>();
  private generation = 0;

  constructor(
    private readonly database: GateDatabase,
    private readonly clock: { now(): number },
    private readonly refreshMs: number,
  ) {}

  async find(keyHash: string): Promise<ApiKeyRow | undefined> {
    const now = this.clock.now();
    const cached = this.entries.get(keyHash);
    if (cached && now - cached.checkedAt < this.refreshMs) return cached.row;
    const generation = this.generation;
    const row = await findActiveKeyByHash(this.database, keyHash);
    this.entries.delete(keyHash);
    if (row && generation === this.generation && this.refreshMs > 0) {
      if (this.entries.size >= MAX_CACHED_KEYS) this.entries.delete(this.entries.keys().next().value as string);
      this.entries.set(keyHash, { row, checkedAt: now });
    }
    return row;
  }

  /** After a key change committed through this instance. */
  invalidate(): void {
    this.generation += 1;
    this.entries.clear();
  }
}
