// Crypto-shredding (docs/guide/erasure.md#crypto-shredding): with ENCRYPTION_KEY_FILE set, events'
// payload and metadata are stored sealed (AES-256-GCM) under a data key per set of data subjects
// (per session for events naming none), each data key wrapped by the master key and kept in the
// data key store (key-store.ts), apart from the events' database. The chain hash stays over the
// plaintext canonical JSON; readers open rows here, in one place.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError, newId } from '@vigil/platform';
import { sql, type Kysely, type Transaction } from 'kysely';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';
import type { DataKeyStore, StoredDataKey } from './key-store.ts';

const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
/** A sealed column's text: still JSON (SQL JSON functions and the PostgreSQL full-text index read the column), and never canonical JSON of an event. */
const SEALED_PREFIX = '{"$sealed":"v1.';
/** Unwrapped data keys kept in memory at most (the oldest is dropped first). */
const MAX_CACHED_KEYS = 10_000;

/** The columns sealed: what an event says, as opposed to where it sits in the chain. */
export interface SealedColumns {
  payload: string;
  metadata: string;
}

/** Who an event's data key belongs to: the keyed hashes of the subjects it names, else its session. */
export type KeyOwnerOf = (event: { sessionId: string; payload: Record<string, unknown>; metadata: string }) => string;

/** The owner string of a set of subjects (keyed hashes) or of a session (DataKeyRow.owner). */
export function keyOwner(subjectHashes: readonly string[], sessionId: string): string {
  return subjectHashes.length > 0 ? `subjects:${[...subjectHashes].sort().join(',')}` : `session:${sessionId}`;
}

/**
 * The master key from ENCRYPTION_KEY_FILE: 32 bytes written as base64 (or base64url) or hex, e.g.
 * `openssl rand -base64 32`. An unreadable file or another length stops the start.
 */
export function readMasterKey(file: string): Buffer {
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (error) {
    throw new ConfigError(
      `Invalid configuration:\n  ENCRYPTION_KEY_FILE: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    );
  }
  const key = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, 'hex') : /^[A-Za-z0-9+/_-]{43}=?$/.test(text) ? Buffer.from(text, 'base64') : null;
  if (key === null || key.length !== KEY_BYTES) {
    throw new ConfigError(`Invalid configuration:\n  ENCRYPTION_KEY_FILE: ${file} must hold a 32-byte key as base64 or hex (openssl rand -base64 32)`);
  }
  return key;
}

/**
 * GCM nonces: a random 8-byte prefix and a 4-byte counter (NIST SP 800-38D 8.2.1), a new prefix when
 * the counter wraps. Never repeated under a key short of a prefix collision (2^-64 per pair of
 * processes), and without a call for random bytes per value: that call was most of sealing's cost.
 */
const nonce = { prefix: randomBytes(IV_BYTES), counter: 0 };

function nextIv(): Buffer {
  if (nonce.counter === 0xffff_ffff) {
    nonce.prefix = randomBytes(IV_BYTES);
    nonce.counter = 0;
  }
  const iv = Buffer.from(nonce.prefix);
  iv.writeUInt32BE(nonce.counter++, IV_BYTES - 4);
  return iv;
}

const COLUMN_AAD = { payload: Buffer.from('payload'), metadata: Buffer.from('metadata') };

function encrypt(key: Buffer, plaintext: Buffer, aad: Buffer): Buffer {
  const iv = nextIv();
  const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(aad);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

/** Throws when the key, the AAD or the bytes are not the ones sealed. */
function decrypt(key: Buffer, sealed: Buffer, aad: Buffer): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, IV_BYTES)).setAAD(aad);
  decipher.setAuthTag(sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
}

const wrapAad = (keyId: string) => Buffer.from(`vigil-data-key:${keyId}`, 'utf8');

/** The key id a sealed column names, undefined for a column stored in the clear. */
function sealedKeyId(text: string): string | undefined {
  if (!text.startsWith(SEALED_PREFIX)) return undefined;
  const end = text.indexOf('.', SEALED_PREFIX.length);
  return end < 0 ? undefined : text.slice(SEALED_PREFIX.length, end);
}

/** What the events' database records of the encryption: the key store's identity and a check value of the master key. */
const STATE_ID = 'encryption';
const MASTER_CHECK_AAD = Buffer.from('vigil-master-key-check', 'utf8');

/** Pending destructions finished per round of the job. */
const DESTRUCTIONS_PER_ROUND = 500;

function configError(message: string): ConfigError {
  return new ConfigError(`Invalid configuration:\n  ${message}`);
}

/**
 * Seals and opens events' content. Disabled (no ENCRYPTION_KEY_FILE), it seals nothing and opens
 * rows as they are; a database whose events are sealed then refuses to start rather than answer sealed text.
 */
export class EventSealer {
  /** Unwrapped data keys by id (bounded: the oldest is dropped first). */
  private readonly keys = new Map<string, Buffer>();

  private constructor(
    private readonly master: Buffer | null,
    private readonly store: DataKeyStore | null,
    private readonly ownerOf: KeyOwnerOf,
  ) {}

  /**
   * The sealer of this configuration, checked against the events' database: no key file where
   * events are sealed, another master key, or another key store than the one the database was
   * sealed with is a configuration error at start. Data keys still in the database (before
   * migration 0043 could drop `data_keys`) are moved into the store first.
   */
  static async start(
    keyFile: string | undefined,
    database: ObserveDatabase,
    openStore: (keyFile: string) => Promise<DataKeyStore>,
    ownerOf: KeyOwnerOf,
  ): Promise<EventSealer> {
    const master = keyFile === undefined ? null : readMasterKey(keyFile);
    const state = await database.db.selectFrom('encryption_state').selectAll().where('id', '=', STATE_ID).executeTakeFirst();
    const legacy = await legacyDataKeys(database);
    if (master === null) {
      if (state !== undefined || legacy.length > 0) throw configError('events are stored encrypted: set ENCRYPTION_KEY_FILE to the master key');
      return new EventSealer(null, null, ownerOf);
    }
    const checkMaster = (wrapped: string, aad: Buffer) => {
      try {
        decrypt(master, Buffer.from(wrapped, 'base64'), aad);
      } catch {
        throw configError(`ENCRYPTION_KEY_FILE: ${keyFile} is not the master key the stored data keys were wrapped with`);
      }
    };
    if (state !== undefined) checkMaster(state.master_check, MASTER_CHECK_AAD);
    if (legacy[0] !== undefined) checkMaster(legacy[0].wrapped, wrapAad(legacy[0].id));
    const store = await openStore(keyFile!);
    try {
      const identity = await store.identity();
      if (state !== undefined && state.key_store_id !== identity) {
        throw configError(`DATA_KEY_STORE: ${store.location} is not the key store this database's events were sealed with (key store ${state.key_store_id})`);
      }
      const stored = await store.any();
      if (stored !== undefined) checkMaster(stored.wrapped, wrapAad(stored.id));
      if (legacy.length > 0) {
        // Durable in the store before the table goes.
        await store.put(legacy.map((row) => ({ id: row.id, owner: row.owner, wrapped: row.wrapped, createdAt: Number(row.created_at) })));
        await sql`drop table data_keys`.execute(database.db);
      }
      if (state === undefined) {
        await database.db
          .insertInto('encryption_state')
          .values({ id: STATE_ID, key_store_id: identity, master_check: encrypt(master, Buffer.alloc(KEY_BYTES), MASTER_CHECK_AAD).toString('base64') })
          .onConflict((oc) => oc.column('id').doNothing())
          .execute();
      }
    } catch (error) {
      await store.close();
      throw error;
    }
    return new EventSealer(master, store, ownerOf);
  }

  get enabled(): boolean {
    return this.master !== null;
  }

  close(): Promise<void> {
    return this.store?.close() ?? Promise.resolve();
  }

  private remember(id: string, key: Buffer): void {
    if (this.keys.size >= MAX_CACHED_KEYS) this.keys.delete(this.keys.keys().next().value as string);
    this.keys.set(id, key);
  }

  private unwrap(key: StoredDataKey): Buffer {
    let plain = this.keys.get(key.id);
    if (plain === undefined) {
      plain = decrypt(this.master!, Buffer.from(key.wrapped, 'base64'), wrapAad(key.id));
      this.remember(key.id, plain);
    }
    return plain;
  }

  /**
   * Sealed copies of the batch's rows (the rows themselves stay in the clear for the writers in the
   * transaction). The owners' keys in use are read from the store for every batch, so a key an
   * erasure retired seals nothing more, on any instance; missing ones are created, and stored
   * durably before this resolves, so no event is acknowledged under a key the store could lose.
   */
  async seal<Row extends SealedColumns & { session_id: string }>(
    events: readonly { row: Row; payload: Record<string, unknown> }[],
    now: number,
  ): Promise<Row[]> {
    const master = this.master!;
    const store = this.store!;
    const owners = events.map(({ row, payload }) => this.ownerOf({ sessionId: row.session_id, payload, metadata: row.metadata }));
    const wanted = [...new Set(owners)];
    const byOwner = new Map<string, { id: string; key: Buffer }>();
    for (const stored of await store.inUse(wanted)) byOwner.set(stored.owner, { id: stored.id, key: this.unwrap(stored) });
    const missing = wanted.filter((owner) => !byOwner.has(owner));
    if (missing.length > 0) {
      const created = new Map<string, Buffer>();
      await store.put(
        missing.map((owner) => {
          const id = newId();
          const key = randomBytes(KEY_BYTES);
          created.set(id, key);
          return { id, owner, wrapped: encrypt(master, key, wrapAad(id)).toString('base64'), createdAt: now };
        }),
      );
      // Read back: where another instance stored a key for the owner meanwhile, that one is the owner's.
      for (const stored of await store.inUse(missing)) {
        const key = created.get(stored.id);
        if (key !== undefined) this.remember(stored.id, key);
        byOwner.set(stored.owner, { id: stored.id, key: key ?? this.unwrap(stored) });
      }
    }
    return events.map(({ row }, index) => {
      const { id, key } = byOwner.get(owners[index]!)!;
      return { ...row, payload: sealText(id, key, row.payload, 'payload'), metadata: sealText(id, key, row.metadata, 'metadata') };
    });
  }

  /**
   * The rows with their sealed payload and metadata opened (other rows as they are; new objects,
   * the rows read stay as stored).
   */
  async open<Row extends { payload?: string | null; metadata?: string | null }>(rows: readonly Row[]): Promise<Row[]> {
    if (this.master === null) return rows as Row[];
    const missing = new Set<string>();
    for (const row of rows) {
      for (const text of [row.payload, row.metadata]) {
        const id = typeof text === 'string' ? sealedKeyId(text) : undefined;
        if (id !== undefined && !this.keys.has(id)) missing.add(id);
      }
    }
    if (missing.size > 0) for (const stored of await this.store!.get([...missing])) this.unwrap(stored);
    return rows.map((row) => {
      const payload = typeof row.payload === 'string' ? this.openText(row.payload, 'payload') : row.payload;
      const metadata = typeof row.metadata === 'string' ? this.openText(row.metadata, 'metadata') : row.metadata;
      return payload === row.payload && metadata === row.metadata ? row : { ...row, payload, metadata };
    });
  }

  /** The column opened; as stored when its key is gone or it does not authenticate (edited in the database): its chain hash then fails. */
  private openText(text: string, column: keyof SealedColumns): string {
    const id = sealedKeyId(text);
    const key = id === undefined ? undefined : this.keys.get(id);
    if (key === undefined) return text;
    try {
      return decrypt(key, Buffer.from(text.slice(SEALED_PREFIX.length + id!.length + 1, -2), 'base64'), COLUMN_AAD[column]).toString('utf8');
    } catch {
      return text;
    }
  }

  /**
   * In the erasure's transaction: records the destruction of the data keys of every set of subjects
   * that includes this one (keyed hash) in the events' database, and retires them in the store, so
   * no event sealed from now on uses them. The keys are destroyed once the transaction committed
   * (destroy); if the process dies before, the destruction job finishes it. Resolves to their ids.
   */
  async retireSubjectKeys(trx: Transaction<ObserveSchema>, subjectHash: string, erasureId: string, now: number): Promise<string[]> {
    const ids = (await this.store!.ofSubject(subjectHash)).map((key) => key.id);
    for (let i = 0; i < ids.length; i += DESTRUCTIONS_PER_ROUND) {
      await trx
        .insertInto('data_key_destructions')
        .values(ids.slice(i, i + DESTRUCTIONS_PER_ROUND).map((id) => ({ key_id: id, erasure_id: erasureId, created_at: now })))
        .onConflict((oc) => oc.column('key_id').doNothing())
        .execute();
    }
    await this.store!.retire(ids);
    return ids;
  }

  /** Destroys the keys of recorded destructions and then the records: the erasure after its commit, the job for any left. */
  async destroy(db: Kysely<ObserveSchema>, ids: readonly string[]): Promise<void> {
    await this.store!.destroy(ids);
    for (const id of ids) this.keys.delete(id);
    for (let i = 0; i < ids.length; i += DESTRUCTIONS_PER_ROUND) {
      await db
        .deleteFrom('data_key_destructions')
        .where('key_id', 'in', ids.slice(i, i + DESTRUCTIONS_PER_ROUND))
        .execute();
    }
  }

  /**
   * Finishes the destructions recorded and not done (a process that died between an erasure's
   * commit and the destruction of its keys), those of one erasure or all; resolves to the keys destroyed.
   */
  async finishDestructions(db: Kysely<ObserveSchema>, erasureId?: string): Promise<number> {
    if (this.store === null) return 0;
    let destroyed = 0;
    for (;;) {
      let query = db.selectFrom('data_key_destructions').select('key_id').orderBy('key_id').limit(DESTRUCTIONS_PER_ROUND);
      if (erasureId !== undefined) query = query.where('erasure_id', '=', erasureId);
      const ids = (await query.execute()).map((row) => row.key_id);
      if (ids.length === 0) return destroyed;
      await this.destroy(db, ids);
      destroyed += ids.length;
    }
  }
}

/** Data keys left in the events' database by a version before the key store (migration 0043 drops the table when empty). */
async function legacyDataKeys(database: ObserveDatabase): Promise<{ id: string; owner: string; wrapped: string; created_at: number }[]> {
  const exists =
    database.dialect === 'sqlite'
      ? await sql<{ found: number }>`select count(*) as found from sqlite_master where type = 'table' and name = 'data_keys'`.execute(database.db)
      : await sql<{ found: number }>`select count(*)::int as found from pg_tables where schemaname = current_schema() and tablename = 'data_keys'`.execute(
          database.db,
        );
  if (Number(exists.rows[0]?.found ?? 0) === 0) return [];
  return (
    await sql<{ id: string; owner: string; wrapped: string; created_at: number }>`select id, owner, wrapped, created_at from data_keys`.execute(database.db)
  ).rows;
}

function sealText(keyId: string, key: Buffer, text: string, column: keyof SealedColumns): string {
  // Empty metadata says nothing: kept as it is, it costs no encryption (most events have none).
  if (column === 'metadata' && text === '{}') return text;
  return `${SEALED_PREFIX}${keyId}.${encrypt(key, Buffer.from(text, 'utf8'), COLUMN_AAD[column]).toString('base64')}"}`;
}
