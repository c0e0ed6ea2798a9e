import {
  forUpdate,
  governedState,
  PreparedQuery,
  recordChange,
  toApiKeyLifecycle,
  type ApiKeyLifecycle,
  type ChangeActor,
  type Snapshot,
} from '@vigil/platform';
import type { Transaction } from 'kysely';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import type { ApiKeyRow } from './tables.ts';
import { keyScopes, type ObserveScope } from './scopes.ts';

export interface ApiKey extends ApiKeyLifecycle {
  scopes: ObserveScope[];
}

/** The public shape of a key (responses, admin-change snapshots): never its hash. */
export function toApiKey(row: ApiKeyRow): ApiKey {
  return { ...toApiKeyLifecycle(row), scopes: [...keyScopes(row.scopes)] };
}

/** A key's columns its logged changes govern (all but the use time, which authentication touches). */
const KEY_STATE_COLUMNS = ['id', 'name', 'prefix', 'key_hash', 'scopes', 'created_at', 'revoked_at'] as const;

/** What a key's change records of it, and what its row is compared with before it authenticates. */
export function keyState(row: ApiKeyRow): Snapshot {
  return governedState(row, KEY_STATE_COLUMNS);
}

async function insertRecorded(trx: Transaction<ObserveSchema>, row: ApiKeyRow, actor: ChangeActor): Promise<void> {
  await trx.insertInto('api_keys').values(row).execute();
  await recordChange(
    trx,
    { resource: 'api_key', resourceId: row.id, action: 'created', actor, before: null, after: toApiKey(row), state: keyState(row) },
    row.created_at,
  );
}

export async function insertKey(database: ObserveDatabase, row: ApiKeyRow, actor: ChangeActor): Promise<void> {
  await database.db.transaction().execute((trx) => insertRecorded(trx, row, actor));
}

/**
 * First start-up: inserts the key only if no active key exists, atomically. Concurrent attempts
 * serialise on a lock row (PostgreSQL) or the write lock (SQLite), so exactly one wins.
 */
export async function insertFirstKey(database: ObserveDatabase, row: ApiKeyRow, actor: ChangeActor): Promise<boolean> {
  return database.db.transaction().execute(async (trx) => {
    await lockKeySet(trx, database);
    const active = await trx.selectFrom('api_keys').select('id').where('revoked_at', 'is', null).limit(1).executeTakeFirst();
    if (active) return false;
    await insertRecorded(trx, row, actor);
    return true;
  });
}

/**
 * Serialises the changes that open or close the first-key bootstrap (the first key's creation, a
 * revocation) on a lock row (PostgreSQL) or the write lock (SQLite), so two revocations at once
 * cannot each leave the other as the last key.
 */
async function lockKeySet(trx: Transaction<ObserveSchema>, database: ObserveDatabase): Promise<void> {
  await trx
    .insertInto('leases')
    .values({ name: 'keys.bootstrap', holder: '', expires_at: 0 })
    .onConflict((oc) => oc.column('name').doNothing())
    .execute();
  await forUpdate(trx.selectFrom('leases').select('name').where('name', '=', 'keys.bootstrap'), database.dialect).execute();
}

/** Compiled once: every authenticated request runs it (building the statement anew cost more than running it). */
const activeKeyByHashQuery = new PreparedQuery<ObserveSchema, [string], ApiKeyRow>((db, _dialect, keyHash: string) =>
  db.selectFrom('api_keys').selectAll().where('key_hash', '=', keyHash).where('revoked_at', 'is', null),
);

export async function findActiveKeyByHash(database: ObserveDatabase, keyHash: string): Promise<ApiKeyRow | undefined> {
  return activeKeyByHashQuery.first(database.db, database.dialect, keyHash);
}

export async function hasActiveKey(database: ObserveDatabase): Promise<boolean> {
  const row = await database.db.selectFrom('api_keys').select('id').where('revoked_at', 'is', null).limit(1).executeTakeFirst();
  return row !== undefined;
}

export async function listKeys(database: ObserveDatabase): Promise<ApiKeyRow[]> {
  return database.db.selectFrom('api_keys').selectAll().orderBy('created_at', 'desc').orderBy('id', 'desc').execute();
}

/**
 * What a revocation did: `revoked` (with `lastKey` when no active key is left, which reopens the
 * first-key bootstrap), `unchanged` (the key was revoked already), `refused` (it is the last active
 * key and `allowLast` is false) or `notFound`.
 */
export type RevokeOutcome =
  { result: 'revoked'; row: ApiKeyRow; lastKey: boolean } | { result: 'unchanged'; row: ApiKeyRow } | { result: 'refused' } | { result: 'notFound' };

/** Marks the key revoked, once (revoking a revoked key changes and records nothing). */
export async function revokeKey(
  database: ObserveDatabase,
  id: string,
  actor: ChangeActor,
  at: number,
  { allowLast }: { allowLast: boolean },
): Promise<RevokeOutcome> {
  return database.db.transaction().execute(async (trx): Promise<RevokeOutcome> => {
    await lockKeySet(trx, database);
    const before = await trx.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
    if (!before) return { result: 'notFound' };
    if (before.revoked_at !== null) return { result: 'unchanged', row: before };
    const other = await trx.selectFrom('api_keys').select('id').where('revoked_at', 'is', null).where('id', '!=', id).limit(1).executeTakeFirst();
    const lastKey = other === undefined;
    if (lastKey && !allowLast) return { result: 'refused' };
    const after: ApiKeyRow = { ...before, revoked_at: at };
    await trx.updateTable('api_keys').set({ revoked_at: at }).where('id', '=', id).execute();
    await recordChange(
      trx,
      { resource: 'api_key', resourceId: id, action: 'revoked', actor, before: toApiKey(before), after: toApiKey(after), state: keyState(after) },
      at,
    );
    return { result: 'revoked', row: after, lastKey };
  });
}

export async function touchKey(database: ObserveDatabase, id: string, at: number): Promise<void> {
  await database.db.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', id).execute();
}

/** Which of these key ids belong to keys that exist and are not revoked. */
export async function activeKeyIds(database: ObserveDatabase, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await database.db.selectFrom('api_keys').select('id').where('id', 'in', ids).where('revoked_at', 'is', null).execute();
  return new Set(rows.map((row) => row.id));
}
