// Crypto-shredding (docs/guide/erasure.md#crypto-shredding): with ENCRYPTION_KEY_FILE set, events'
// payload and metadata are stored sealed (AES-256-GCM) under a data key per set of data subjects
// (per session for events naming none), each data key wrapped by the master key in `data_keys`.
// The chain hash stays over the plaintext canonical JSON; readers open rows here, in one place.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError, newId } from '@vigil/platform';
import type { Kysely, Transaction } from 'kysely';
import type { ObserveDatabase, ObserveSchema } from '../schema.ts';

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

/**
 * Seals and opens events' content. Disabled (no ENCRYPTION_KEY_FILE), it seals nothing and opens
 * rows as they are; a database holding data keys then refuses to start rather than answer sealed text.
 */
export class EventSealer {
  /** Unwrapped data keys by id. */
  private readonly keys = new Map<string, Buffer>();

  private constructor(
    private readonly master: Buffer | null,
    private readonly ownerOf: KeyOwnerOf,
  ) {}

  /**
   * The sealer of this configuration, checked against the stored data keys: a wrong key file, or
   * none where events are stored sealed, is a configuration error at start.
   */
  static async start(keyFile: string | undefined, database: ObserveDatabase, ownerOf: KeyOwnerOf): Promise<EventSealer> {
    const master = keyFile === undefined ? null : readMasterKey(keyFile);
    const stored = await database.db.selectFrom('data_keys').select(['id', 'wrapped']).limit(1).executeTakeFirst();
    if (stored !== undefined) {
      if (master === null)
        throw new ConfigError('Invalid configuration:\n  events are stored encrypted (table data_keys): set ENCRYPTION_KEY_FILE to the master key');
      try {
        decrypt(master, Buffer.from(stored.wrapped, 'base64'), wrapAad(stored.id));
      } catch {
        throw new ConfigError(`Invalid configuration:\n  ENCRYPTION_KEY_FILE: ${keyFile} is not the master key the stored data keys were wrapped with`);
      }
    }
    return new EventSealer(master, ownerOf);
  }

  get enabled(): boolean {
    return this.master !== null;
  }

  private remember(id: string, key: Buffer): void {
    if (this.keys.size >= MAX_CACHED_KEYS) this.keys.delete(this.keys.keys().next().value as string);
    this.keys.set(id, key);
  }

  /**
   * Sealed copies of the batch's rows (the rows themselves stay in the clear for the writers in the
   * transaction). The owners' keys are read in the transaction, so a key an erasure destroyed is
   * never used again; missing ones are created.
   */
  async seal<Row extends SealedColumns & { session_id: string }>(
    trx: Transaction<ObserveSchema>,
    events: readonly { row: Row; payload: Record<string, unknown> }[],
    now: number,
  ): Promise<Row[]> {
    const master = this.master!;
    const owners = events.map(({ row, payload }) => this.ownerOf({ sessionId: row.session_id, payload, metadata: row.metadata }));
    const byOwner = new Map<string, { id: string; key: Buffer }>();
    const wanted = [...new Set(owners)];
    for (let i = 0; i < wanted.length; i += 500) {
      const rows = await trx
        .selectFrom('data_keys')
        .select(['id', 'owner', 'wrapped'])
        .where('owner', 'in', wanted.slice(i, i + 500))
        .execute();
      for (const row of rows) byOwner.set(row.owner, { id: row.id, key: this.unwrap(master, row.id, row.wrapped) });
    }
    const created = wanted
      .filter((owner) => !byOwner.has(owner))
      .map((owner) => {
        const id = newId();
        const key = randomBytes(KEY_BYTES);
        return { row: { id, owner, wrapped: encrypt(master, key, wrapAad(id)).toString('base64'), created_at: now }, key };
      });
    for (let i = 0; i < created.length; i += 200) {
      const chunk = created.slice(i, i + 200);
      const inserted = await trx
        .insertInto('data_keys')
        .values(chunk.map((c) => c.row))
        .onConflict((oc) => oc.column('owner').doNothing())
        .returning('id')
        .execute();
      const stored = new Set(inserted.map((row) => row.id));
      const raced: string[] = [];
      for (const { row, key } of chunk) {
        if (!stored.has(row.id)) raced.push(row.owner);
        else {
          this.remember(row.id, key);
          byOwner.set(row.owner, { id: row.id, key });
        }
      }
      // Created meanwhile by another instance's transaction: its key is the owner's.
      if (raced.length === 0) continue;
      const rows = await trx.selectFrom('data_keys').select(['id', 'owner', 'wrapped']).where('owner', 'in', raced).execute();
      for (const row of rows) byOwner.set(row.owner, { id: row.id, key: this.unwrap(master, row.id, row.wrapped) });
    }
    return events.map(({ row }, index) => {
      const { id, key } = byOwner.get(owners[index]!)!;
      return { ...row, payload: sealText(id, key, row.payload, 'payload'), metadata: sealText(id, key, row.metadata, 'metadata') };
    });
  }

  private unwrap(master: Buffer, id: string, wrapped: string): Buffer {
    let key = this.keys.get(id);
    if (key === undefined) {
      key = decrypt(master, Buffer.from(wrapped, 'base64'), wrapAad(id));
      this.remember(id, key);
    }
    return key;
  }

  /**
   * The rows with their sealed payload and metadata opened (other rows as they are; new objects,
   * the rows read stay as stored).
   */
  async open<Row extends { payload?: string | null; metadata?: string | null }>(db: Kysely<ObserveSchema>, rows: readonly Row[]): Promise<Row[]> {
    if (this.master === null) return rows as Row[];
    const missing = new Set<string>();
    for (const row of rows) {
      for (const text of [row.payload, row.metadata]) {
        const id = typeof text === 'string' ? sealedKeyId(text) : undefined;
        if (id !== undefined && !this.keys.has(id)) missing.add(id);
      }
    }
    const ids = [...missing];
    for (let i = 0; i < ids.length; i += 500) {
      const stored = await db
        .selectFrom('data_keys')
        .select(['id', 'wrapped'])
        .where('id', 'in', ids.slice(i, i + 500))
        .execute();
      for (const row of stored) this.unwrap(this.master, row.id, row.wrapped);
    }
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
   * Destroys the data keys of every set of subjects that includes this one (keyed hash), in the
   * erasure's transaction; the in-memory copies are forgotten once it committed (forget).
   */
  async destroySubjectKeys(trx: Transaction<ObserveSchema>, subjectHash: string): Promise<string[]> {
    const destroyed = await trx.deleteFrom('data_keys').where('owner', 'like', `subjects:%${subjectHash}%`).returning('id').execute();
    return destroyed.map((row) => row.id);
  }

  forget(keyIds: readonly string[]): void {
    for (const id of keyIds) this.keys.delete(id);
  }
}

function sealText(keyId: string, key: Buffer, text: string, column: keyof SealedColumns): string {
  // Empty metadata says nothing: kept as it is, it costs no encryption (most events have none).
  if (column === 'metadata' && text === '{}') return text;
  return `${SEALED_PREFIX}${keyId}.${encrypt(key, Buffer.from(text, 'utf8'), COLUMN_AAD[column]).toString('base64')}"}`;
}
