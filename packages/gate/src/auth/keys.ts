import {
  forUpdate,
  generateSecret,
  governedState,
  newId,
  PreparedQuery,
  recordChange,
  sha256Hex,
  SYSTEM_CHANGE_ACTOR,
  toApiKeyLifecycle,
  recordUpdate,
  type ApiKeyLifecycle,
  type ChangeActor,
  type LoggedStates,
  type Snapshot,
} from '@vigil/platform';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { GateDatabase, GateSchema } from '../schema.ts';
import type { ApiKeyRow, DashboardSessionRow } from './tables.ts';
import type { Scope } from './scopes.ts';

export interface ApiKey extends ApiKeyLifecycle {
  scopes: Scope[];
  rateLimit: number | null;
}

export function toApiKey(row: ApiKeyRow): ApiKey {
  return { ...toApiKeyLifecycle(row), scopes: JSON.parse(row.scopes) as Scope[], rateLimit: row.rate_limit };
}

/** A key's columns its logged changes govern (all but the use time, which authentication touches). */
const KEY_STATE_COLUMNS = ['id', 'name', 'prefix', 'key_hash', 'scopes', 'rate_limit', 'created_at', 'revoked_at'] as const;

/** What a key's change records of it, and what its row is compared with before it authenticates. */
export function keyState(row: ApiKeyRow): Snapshot {
  return governedState(row, KEY_STATE_COLUMNS);
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

/** Every key, revoked ones too, newest first. */
export async function listKeys(database: GateDatabase): Promise<ApiKeyRow[]> {
  return database.db.selectFrom('api_keys').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
}

const selectActiveKey = new PreparedQuery((db: Kysely<GateSchema>, _dialect, keyHash: string) =>
  db.selectFrom('api_keys').selectAll().where('key_hash', '=', keyHash).where('revoked_at', 'is', null),
);

export async function findActiveKeyByHash(database: GateDatabase, keyHash: string): Promise<ApiKeyRow | undefined> {
  return selectActiveKey.first(database.db, database.dialect, keyHash);
}

/** A dashboard session that has not been signed out, with its key while that key is active. */
export interface ActiveSession {
  session: DashboardSessionRow;
  key: ApiKeyRow;
}

const selectSession = new PreparedQuery((db: Kysely<GateSchema>, _dialect, tokenHash: string) =>
  db.selectFrom('dashboard_sessions').selectAll().where('token_hash', '=', tokenHash).where('revoked_at', 'is', null),
);
const selectActiveKeyById = new PreparedQuery((db: Kysely<GateSchema>, _dialect, id: string) =>
  db.selectFrom('api_keys').selectAll().where('id', '=', id).where('revoked_at', 'is', null),
);

/** Expiry is not checked here: the caller compares `expires_at` with its clock on every request. */
export async function findActiveSessionByHash(database: GateDatabase, tokenHash: string): Promise<ActiveSession | undefined> {
  const session = await selectSession.first(database.db, database.dialect, tokenHash);
  if (!session) return undefined;
  const key = await selectActiveKeyById.first(database.db, database.dialect, session.key_id);
  return key ? { session, key } : undefined;
}

/** The key and its admin-change row (the snapshot is the public shape: no hash). */
async function insertKey(trx: Transaction<GateSchema>, row: ApiKeyRow, actor: ChangeActor, now: number): Promise<void> {
  await trx.insertInto('api_keys').values(row).execute();
  await recordChange(trx, { resource: 'api_key', resourceId: row.id, action: 'created', actor, before: null, after: toApiKey(row), state: keyState(row) }, now);
}

/** A new key; the raw secret is returned once and never stored. */
export async function createApiKey(
  database: GateDatabase,
  input: { name: string; scopes: Scope[]; rateLimit: number | null },
  actor: ChangeActor,
  now: number,
): Promise<{ row: ApiKeyRow; raw: string }> {
  const created = newKeyRow(input.name, input.scopes, input.rateLimit, now);
  await database.db.transaction().execute((trx) => insertKey(trx, created.row, actor, now));
  return created;
}

/** Applies the given fields; undefined when no such key exists. */
export async function updateApiKey(
  database: GateDatabase,
  id: string,
  patch: { name?: string; scopes?: Scope[]; rateLimit?: number | null },
  actor: ChangeActor,
  now: number,
): Promise<ApiKeyRow | undefined> {
  return database.db.transaction().execute(async (trx) => {
    const before = await forUpdate(trx.selectFrom('api_keys').selectAll().where('id', '=', id), database.dialect).executeTakeFirst();
    if (!before) return undefined;
    const changes = {
      ...(patch.name !== undefined && { name: patch.name }),
      ...(patch.scopes !== undefined && { scopes: JSON.stringify(patch.scopes) }),
      ...(patch.rateLimit !== undefined && { rate_limit: patch.rateLimit }),
    };
    const after: ApiKeyRow = { ...before, ...changes };
    const action = await recordUpdate(trx, { resource: 'api_key', resourceId: id, actor, before, after, show: toApiKey, state: keyState }, now);
    if (action === null) return before;
    await trx.updateTable('api_keys').set(changes).where('id', '=', id).execute();
    return after;
  });
}

/** Revokes the key (once: revoking a revoked key changes and records nothing); false when no such key exists. */
export async function revokeApiKey(database: GateDatabase, id: string, actor: ChangeActor, now: number): Promise<boolean> {
  return database.db.transaction().execute(async (trx) => {
    const before = await forUpdate(trx.selectFrom('api_keys').selectAll().where('id', '=', id), database.dialect).executeTakeFirst();
    if (!before) return false;
    if (before.revoked_at !== null) return true;
    await trx.updateTable('api_keys').set({ revoked_at: now }).where('id', '=', id).execute();
    const after: ApiKeyRow = { ...before, revoked_at: now };
    await recordChange(
      trx,
      { resource: 'api_key', resourceId: id, action: 'revoked', actor, before: toApiKey(before), after: toApiKey(after), state: keyState(after) },
      now,
    );
    return true;
  });
}

/**
 * First start: `GATE_ADMIN_KEY` is installed as an admin key (once); with no key at all and no
 * GATE_ADMIN_KEY, an admin key is generated and returned so the caller can print it once.
 */
export async function bootstrapAdminKey(database: GateDatabase, adminKey: string | undefined, now: number): Promise<string | null> {
  return database.db.transaction().execute(async (trx) => {
    // Instances starting together take turns, so the key is installed (or generated) exactly once.
    if (database.dialect === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(${`gate-bootstrap:${database.schema}`}))`.execute(trx);
    if (adminKey !== undefined) {
      const exists = await trx.selectFrom('api_keys').select('id').where('key_hash', '=', sha256Hex(adminKey)).executeTakeFirst();
      if (!exists) await insertKey(trx, newKeyRow('admin (GATE_ADMIN_KEY)', ['admin'], null, now, adminKey).row, SYSTEM_CHANGE_ACTOR, now);
      return null;
    }
    const any = await trx.selectFrom('api_keys').select('id').limit(1).executeTakeFirst();
    if (any) return null;
    const { row, raw } = newKeyRow('admin', ['admin'], null, now);
    await insertKey(trx, row, SYSTEM_CHANGE_ACTOR, now);
    return raw;
  });
}

const MAX_CACHED_KEYS = 10_000;

/**
 * Active keys by hash, so authentication does not read the database on every request. A key
 * changed or revoked through this instance is dropped at once; a change made through another
 * instance sharing the database is seen within `refreshMs` (0 reads the key on every request).
 * Unknown hashes are never cached, so a key created anywhere works at once. A key row read from
 * the database authenticates only as its last logged change left it (`logged`): one inserted or
 * edited in the database is refused, and the refusal logged.
 */
export class KeyCache {
  private readonly entries = new Map<string, { row: ApiKeyRow; checkedAt: number }>();
  private readonly sessions = new Map<string, { found: ActiveSession; checkedAt: number }>();
  private generation = 0;

  constructor(
    private readonly database: GateDatabase,
    private readonly clock: { now(): number },
    private readonly refreshMs: number,
    private readonly logged: LoggedStates<GateSchema>,
    private readonly log: { warn(object: object, message: string): void },
  ) {}

  /** The row when its last logged change left it so; undefined (and a warning) otherwise. */
  private async ifLogged(row: ApiKeyRow | undefined): Promise<ApiKeyRow | undefined> {
    if (row === undefined) return undefined;
    const verdict = await this.logged.check('api_key', row.id, keyState(row));
    if (verdict.logged) return row;
    this.log.warn({ keyId: row.id, reason: verdict.reason }, `API key ${row.id} refused: ${verdict.reason}`);
    return undefined;
  }

  async find(keyHash: string): Promise<ApiKeyRow | undefined> {
    const now = this.clock.now();
    const cached = this.entries.get(keyHash);
    if (cached && now - cached.checkedAt < this.refreshMs) return cached.row;
    const generation = this.generation;
    const row = await this.ifLogged(await findActiveKeyByHash(this.database, keyHash));
    this.entries.delete(keyHash);
    if (row && generation === this.generation && this.refreshMs > 0) {
      if (this.entries.size >= MAX_CACHED_KEYS) this.entries.delete(this.entries.keys().next().value as string);
      this.entries.set(keyHash, { row, checkedAt: now });
    }
    return row;
  }

  /** A dashboard session token's session and key, cached like keys (a sign-out or key change here drops it at once). */
  async findSession(tokenHash: string): Promise<ActiveSession | undefined> {
    const now = this.clock.now();
    const cached = this.sessions.get(tokenHash);
    if (cached && now - cached.checkedAt < this.refreshMs) return cached.found;
    const generation = this.generation;
    const session = await findActiveSessionByHash(this.database, tokenHash);
    const found = session !== undefined && (await this.ifLogged(session.key)) !== undefined ? session : undefined;
    this.sessions.delete(tokenHash);
    if (found && generation === this.generation && this.refreshMs > 0) {
      if (this.sessions.size >= MAX_CACHED_KEYS) this.sessions.delete(this.sessions.keys().next().value as string);
      this.sessions.set(tokenHash, { found, checkedAt: now });
    }
    return found;
  }

  /** After a key or dashboard-session change committed through this instance. */
  invalidate(): void {
    this.generation += 1;
    this.entries.clear();
    this.sessions.clear();
    this.logged.forget();
  }
}
