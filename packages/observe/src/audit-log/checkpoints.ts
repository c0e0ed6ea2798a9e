import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalJson, toIso } from '@vigil/platform';
import type { Kysely } from 'kysely';
import type { AuditCheckpointRow, ObserveSchema } from '../schema.ts';
import { logSize, rootAt } from './store.ts';

/**
 * Signed checkpoints (tree heads) of the audit log. A checkpoint's signature is Ed25519 over the
 * UTF-8 bytes of the RFC 8785 canonical JSON of
 *   {"keyId", "log": "vigil-observe", "rootHash", "timestamp", "treeSize"}
 * (hashes lowercase hex, timestamp ISO 8601 UTC with milliseconds). `log` names the log, so a
 * checkpoint of another log (the gate's, later) can never pass for one of this log.
 */
export const LOG_NAME = 'vigil-observe';

/** The file in DATA_DIR holding the key created at first start (PKCS#8 PEM, mode 0600). */
export const SIGNING_KEY_FILE = 'audit-signing-key.pem';

export interface Checkpoint {
  treeSize: number;
  rootHash: string;
  timestamp: string;
  keyId: string;
  signature: string;
}

export interface SigningKey {
  privateKey: KeyObject;
  /** The raw 32-byte Ed25519 public key. */
  publicKey: Buffer;
  /** Hex of the first 16 bytes of SHA-256(raw public key). */
  keyId: string;
}

export function rawPublicKey(key: KeyObject): Buffer {
  const jwk = createPublicKey(key).export({ format: 'jwk' });
  return Buffer.from(jwk.x!, 'base64url');
}

export function keyIdOf(rawPublic: Buffer): string {
  return createHash('sha256').update(rawPublic).digest().subarray(0, 16).toString('hex');
}

/** A raw Ed25519 public key as a KeyObject (for verify). */
export function publicKeyFromRaw(rawPublic: Buffer): KeyObject {
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: rawPublic.toString('base64url') }, format: 'jwk' });
}

function signingKeyOf(privateKey: KeyObject): SigningKey {
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new Error('AUDIT_SIGNING_KEY must be an Ed25519 private key');
  const publicKey = rawPublicKey(privateKey);
  return { privateKey, publicKey, keyId: keyIdOf(publicKey) };
}

/** The configured key (PEM or base64 PKCS#8 DER), else the one in the data directory, created there at first start. */
export function loadSigningKey(configured: string | undefined, dataDir: string): SigningKey {
  if (configured !== undefined) {
    const text = configured.trim();
    const key = text.startsWith('-----BEGIN')
      ? createPrivateKey(text)
      : createPrivateKey({ key: Buffer.from(text, 'base64'), format: 'der', type: 'pkcs8' });
    return signingKeyOf(key);
  }
  const file = join(dataDir, SIGNING_KEY_FILE);
  try {
    return signingKeyOf(createPrivateKey(readFileSync(file, 'utf8')));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  mkdirSync(dataDir, { recursive: true });
  const pem = generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
  try {
    // 'wx': an instance starting at the same moment on the same directory keeps the file it wrote first.
    writeFileSync(file, pem, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return signingKeyOf(createPrivateKey(readFileSync(file, 'utf8')));
}

/** The bytes a checkpoint's signature covers. */
export function checkpointMessage(checkpoint: Omit<Checkpoint, 'signature'>): Buffer {
  const { treeSize, rootHash, timestamp, keyId } = checkpoint;
  return Buffer.from(canonicalJson({ keyId, log: LOG_NAME, rootHash, timestamp, treeSize }), 'utf8');
}

export function verifyCheckpoint(checkpoint: Checkpoint, rawPublic: Buffer): boolean {
  if (keyIdOf(rawPublic) !== checkpoint.keyId) return false;
  return verify(null, checkpointMessage(checkpoint), publicKeyFromRaw(rawPublic), Buffer.from(checkpoint.signature, 'base64'));
}

export function checkpointOfRow(row: AuditCheckpointRow): Checkpoint {
  return { treeSize: Number(row.tree_size), rootHash: row.root_hash, timestamp: toIso(Number(row.created_at)), keyId: row.key_id, signature: row.signature };
}

/** Records the key's public half, so checkpoints it signed stay verifiable after a rotation. */
export async function registerSigningKey(db: Kysely<ObserveSchema>, key: SigningKey, now: number): Promise<void> {
  await db
    .insertInto('audit_keys')
    .values({ key_id: key.keyId, public_key: key.publicKey.toString('base64'), created_at: now })
    .onConflict((oc) => oc.column('key_id').doNothing())
    .execute();
}

/**
 * Signs a checkpoint at the log's current size, unless one exists at that size (then that one is
 * answered: two instances checkpointing together store one).
 */
export async function makeCheckpoint(db: Kysely<ObserveSchema>, key: SigningKey, now: number): Promise<Checkpoint> {
  const treeSize = await logSize(db);
  const existing = await db.selectFrom('audit_checkpoints').selectAll().where('tree_size', '=', treeSize).executeTakeFirst();
  if (existing !== undefined) return checkpointOfRow(existing);
  const unsigned = { treeSize, rootHash: (await rootAt(db, treeSize)).toString('hex'), timestamp: toIso(now), keyId: key.keyId };
  const signature = sign(null, checkpointMessage(unsigned), key.privateKey).toString('base64');
  await db
    .insertInto('audit_checkpoints')
    .values({ tree_size: treeSize, root_hash: unsigned.rootHash, created_at: now, key_id: key.keyId, signature })
    .onConflict((oc) => oc.column('tree_size').doNothing())
    .execute();
  const stored = await db.selectFrom('audit_checkpoints').selectAll().where('tree_size', '=', treeSize).executeTakeFirstOrThrow();
  return checkpointOfRow(stored);
}

/** The latest checkpoint, or the one at `treeSize`. */
export async function findCheckpoint(db: Kysely<ObserveSchema>, treeSize?: number): Promise<Checkpoint | undefined> {
  let query = db.selectFrom('audit_checkpoints').selectAll();
  query = treeSize === undefined ? query.orderBy('tree_size', 'desc').limit(1) : query.where('tree_size', '=', treeSize);
  const row = await query.executeTakeFirst();
  return row === undefined ? undefined : checkpointOfRow(row);
}
