import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { join } from 'node:path';
import { canonicalJson, decodeBase64, sha256 } from './crypto.ts';
import { readOrCreateSecretFile } from './secret-file.ts';

/**
 * The signing side of an audit log (audit-log.ts): its Ed25519 key and the bytes it signs. A
 * checkpoint's signature is Ed25519 over the UTF-8 bytes of the RFC 8785 canonical JSON of
 *   {"keyId", "log", "rootHash", "timestamp", "treeSize"}
 * (hashes lowercase hex, timestamp ISO 8601 UTC with milliseconds). `log` names the log
 * (`vigil-observe`, `vigil-gate`), so a checkpoint of one log never passes for one of the other.
 * Pure functions of node:crypto: `vigil verify` uses the same ones offline.
 */

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
  return sha256(rawPublic).subarray(0, 16).toString('hex');
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

/** A key as AUDIT_SIGNING_KEY (or AUDIT_PREVIOUS_SIGNING_KEY) gives it: PEM, or base64 PKCS#8 DER. */
export function parseSigningKey(configured: string): SigningKey {
  const text = configured.trim();
  return signingKeyOf(
    text.startsWith('-----BEGIN') ? createPrivateKey(text) : createPrivateKey({ key: Buffer.from(text, 'base64'), format: 'der', type: 'pkcs8' }),
  );
}

/** The configured key (PEM or base64 PKCS#8 DER), else the one in the data directory, created there at first start. */
export function loadSigningKey(configured: string | undefined, dataDir: string): SigningKey {
  if (configured !== undefined) return parseSigningKey(configured);
  const pem = readOrCreateSecretFile(
    join(dataDir, SIGNING_KEY_FILE),
    () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string,
  );
  return signingKeyOf(createPrivateKey(pem));
}

/** The bytes a checkpoint's signature covers. */
export function checkpointMessage(log: string, checkpoint: Omit<Checkpoint, 'signature'>): Buffer {
  const { treeSize, rootHash, timestamp, keyId } = checkpoint;
  return Buffer.from(canonicalJson({ keyId, log, rootHash, timestamp, treeSize }), 'utf8');
}

/**
 * The leaf data of a key rotation (docs/audit.md): the new key, certified by the previous one's
 * signature over these bytes, so a verifier that trusts the previous key may trust the new one.
 */
export function keyCertificateBody(log: string, key: SigningKey, previous: SigningKey, timestamp: string): string {
  return canonicalJson({
    v: 1,
    kind: 'key-rotation',
    log,
    keyId: key.keyId,
    publicKey: key.publicKey.toString('base64'),
    previousKeyId: previous.keyId,
    timestamp,
  });
}

/**
 * The bytes a service's signature of an evidence pack's manifest covers (docs/audit.md, "Evidence
 * packs"): the canonical JSON of {keyId, kind: "evidence-manifest", log, manifestSha256, timestamp}.
 */
export function evidenceManifestMessage(log: string, signed: { manifestSha256: string; timestamp: string; keyId: string }): Buffer {
  const { manifestSha256, timestamp, keyId } = signed;
  return Buffer.from(canonicalJson({ keyId, kind: 'evidence-manifest', log, manifestSha256, timestamp }), 'utf8');
}

export function signBytes(key: SigningKey, message: Buffer): string {
  return sign(null, message, key.privateKey).toString('base64');
}

/** Ed25519: 64-byte signatures, 32-byte public keys. */
const SIGNATURE_BYTES = 64;
const PUBLIC_KEY_BYTES = 32;

/**
 * Whether `signature` (canonical standard base64, decodeBase64) is the Ed25519 signature of
 * `message` by the raw public key: one spelling per signature, so a re-spelled one is not a second valid copy.
 */
export function verifyBytes(message: Buffer, signature: string, rawPublic: Buffer): boolean {
  const signatureBytes = decodeBase64(signature);
  if (signatureBytes?.length !== SIGNATURE_BYTES || rawPublic.length !== PUBLIC_KEY_BYTES) return false;
  try {
    return verify(null, message, publicKeyFromRaw(rawPublic), signatureBytes);
  } catch {
    return false;
  }
}

export function verifyCheckpoint(log: string, checkpoint: Checkpoint, rawPublic: Buffer): boolean {
  if (keyIdOf(rawPublic) !== checkpoint.keyId) return false;
  return verifyBytes(checkpointMessage(log, checkpoint), checkpoint.signature, rawPublic);
}
