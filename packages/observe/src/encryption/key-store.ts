// The data key store of crypto-shredding (docs/guide/erasure.md#the-key-store): the wrapped data
// keys live apart from the events' database, so a copy of that database taken before an erasure
// holds none of them. The interface is what a KMS-backed store implements; the default keeps them in
// a SQLite file of their own (or a PostgreSQL database apart from the events', by URL).
import { dirname, join } from 'node:path';
import { ConfigError, migrateToLatest, newId, openDatabase, schemaName, type Database, type DatabaseConfig, type MigrationStep } from '@vigil/platform';

/** A data key as stored: wrapped (AES-256-GCM) by the master key, never in the clear. */
export interface StoredDataKey {
  id: string;
  /** `subjects:` and the sorted keyed hashes, comma-separated, or `session:` and the session id. */
  owner: string;
  /** base64 of IV (12 bytes), GCM tag (16 bytes) and the encrypted 32-byte key. */
  wrapped: string;
  createdAt: number;
}

/**
 * Where data keys live. Batch-friendly: every call takes many keys. An owner has at most one key in
 * use; a retired key seals nothing new but still opens what it sealed until it is destroyed.
 */
export interface DataKeyStore {
  /** What the store is, for messages (a file, a database without its credentials). */
  readonly location: string;
  /** A random id the store got when it was created: the events' database records it, so a start against another store (or a new, empty one) is refused. */
  identity(): Promise<string>;
  /** The keys in use of these owners. */
  inUse(owners: readonly string[]): Promise<StoredDataKey[]>;
  /** The keys with these ids, in use or retired. */
  get(ids: readonly string[]): Promise<StoredDataKey[]>;
  /** Every key, in use or retired, whose owner names this subject (keyed hash). */
  ofSubject(subjectHash: string): Promise<StoredDataKey[]>;
  /** Any one key (the start checks the master key against it). */
  any(): Promise<StoredDataKey | undefined>;
  /**
   * Stores new keys in use, durably before it resolves; a key whose id is stored already, or whose
   * owner has a key in use meanwhile (another instance's), is left out (read `inUse` after).
   */
  put(keys: readonly StoredDataKey[]): Promise<void>;
  /** Takes keys out of use: no new event is sealed under them. */
  retire(ids: readonly string[]): Promise<void>;
  /** Destroys keys: resolves once no copy of them is left in the store's storage. */
  destroy(ids: readonly string[]): Promise<void>;
  close(): Promise<void>;
}

interface KeyStoreTables {
  data_keys: {
    id: string;
    owner: string;
    /** The owner while the key is in use, null once retired (unique: one key in use per owner). */
    owner_in_use: string | null;
    wrapped: string;
    created_at: number;
  };
  key_store_identity: { id: string };
}

const keyStoreMigrations: Record<string, MigrationStep> = {
  async '0001_data_keys'(db) {
    await db.schema
      .createTable('data_keys')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('owner', 'text', (c) => c.notNull())
      .addColumn('owner_in_use', 'text', (c) => c.unique())
      .addColumn('wrapped', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await db.schema
      .createTable('key_store_identity')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .execute();
    await db.insertInto('key_store_identity').values({ id: newId() }).execute();
  },
};

/** Keys read or written per statement. */
const CHUNK = 500;

function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) out.push(items.slice(i, i + CHUNK));
  return out;
}

const toKey = (row: KeyStoreTables['data_keys']): StoredDataKey => ({ id: row.id, owner: row.owner, wrapped: row.wrapped, createdAt: Number(row.created_at) });

/**
 * The default store: a SQLite file of its own (WAL, synchronous FULL, secure_delete on, the WAL
 * checkpointed and truncated after each destruction), or a PostgreSQL database given by URL,
 * which must not be the events' database.
 */
export class SqlDataKeyStore implements DataKeyStore {
  private constructor(
    private readonly database: Database<KeyStoreTables>,
    readonly location: string,
  ) {}

  static async open(config: DatabaseConfig, location: string): Promise<SqlDataKeyStore> {
    const database = await openDatabase<KeyStoreTables>(config);
    try {
      await migrateToLatest(database, keyStoreMigrations);
    } catch (error) {
      await database.close();
      throw error;
    }
    return new SqlDataKeyStore(database, location);
  }

  async identity(): Promise<string> {
    return (await this.database.db.selectFrom('key_store_identity').select('id').executeTakeFirstOrThrow()).id;
  }

  async inUse(owners: readonly string[]): Promise<StoredDataKey[]> {
    const out: StoredDataKey[] = [];
    for (const chunk of chunks(owners))
      out.push(...(await this.database.db.selectFrom('data_keys').selectAll().where('owner_in_use', 'in', chunk).execute()).map(toKey));
    return out;
  }

  async get(ids: readonly string[]): Promise<StoredDataKey[]> {
    const out: StoredDataKey[] = [];
    for (const chunk of chunks(ids)) out.push(...(await this.database.db.selectFrom('data_keys').selectAll().where('id', 'in', chunk).execute()).map(toKey));
    return out;
  }

  async ofSubject(subjectHash: string): Promise<StoredDataKey[]> {
    // Keyed hashes are hex of one length: one is never part of another.
    const rows = await this.database.db.selectFrom('data_keys').selectAll().where('owner', 'like', `subjects:%${subjectHash}%`).execute();
    return rows.map(toKey);
  }

  async any(): Promise<StoredDataKey | undefined> {
    const row = await this.database.db.selectFrom('data_keys').selectAll().limit(1).executeTakeFirst();
    return row && toKey(row);
  }

  async put(keys: readonly StoredDataKey[]): Promise<void> {
    // One transaction, committed with synchronous FULL (SQLite) or PostgreSQL's commit: durable once it resolves.
    await this.database.db.transaction().execute(async (trx) => {
      for (const chunk of chunks(keys)) {
        await trx
          .insertInto('data_keys')
          .values(chunk.map((key) => ({ id: key.id, owner: key.owner, owner_in_use: key.owner, wrapped: key.wrapped, created_at: key.createdAt })))
          .onConflict((oc) => oc.doNothing())
          .execute();
      }
    });
  }

  async retire(ids: readonly string[]): Promise<void> {
    for (const chunk of chunks(ids)) await this.database.db.updateTable('data_keys').set({ owner_in_use: null }).where('id', 'in', chunk).execute();
  }

  async destroy(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    for (const chunk of chunks(ids)) await this.database.db.deleteFrom('data_keys').where('id', 'in', chunk).execute();
    // SQLite: secure_delete zeroed the rows where they lay; this copies the WAL into the file and
    // truncates it, so no frame holding a destroyed key is left. PostgreSQL: see the guide (VACUUM).
    await this.database.reclaimFreeSpace();
  }

  close(): Promise<void> {
    return this.database.close();
  }
}

/** The PostgreSQL schema a key store given by URL keeps its tables in. */
const KEY_STORE_SCHEMA = schemaName.parse('vigil_data_keys');

/**
 * The store DATA_KEY_STORE names: a `postgres://` URL (its own database, never the events'), else a
 * SQLite file; unset, `data-keys.db` beside the master key file.
 */
export async function openDataKeyStore(setting: string | undefined, keyFile: string, eventsDatabase: DatabaseConfig): Promise<DataKeyStore> {
  if (setting !== undefined && /^postgres(ql)?:\/\//.test(setting)) {
    const url = new URL(setting);
    const location = `${url.host}${url.pathname}`;
    if (eventsDatabase.kind === 'postgres' && sameDatabase(new URL(eventsDatabase.url), url)) {
      throw keyStoreConfigError(`${location} is the events' database: the key store must live apart from it (another database)`);
    }
    return SqlDataKeyStore.open({ kind: 'postgres', url: setting, schema: KEY_STORE_SCHEMA }, location);
  }
  const file = setting ?? join(dirname(keyFile), 'data-keys.db');
  if (eventsDatabase.kind === 'sqlite' && eventsDatabase.file === file) throw keyStoreConfigError(`${file} is the events' database file`);
  return SqlDataKeyStore.open({ kind: 'sqlite', file, synchronous: 'FULL' }, file);
}

function sameDatabase(a: URL, b: URL): boolean {
  return a.hostname === b.hostname && (a.port || '5432') === (b.port || '5432') && a.pathname === b.pathname;
}

function keyStoreConfigError(message: string): ConfigError {
  return new ConfigError(`Invalid configuration:\n  DATA_KEY_STORE: ${message}`);
}
