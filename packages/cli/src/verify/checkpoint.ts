import { createHash, createPublicKey, verify } from 'node:crypto';
import { canonicalJson } from '@vigil/platform';
import { InputError, isHex64, isRecord } from './input.ts';

/** The observe log's name inside every checkpoint signature (docs/audit.md). */
export const OBSERVE_LOG = 'vigil-observe';

export interface Checkpoint {
  treeSize: number;
  rootHash: string;
  timestamp: string;
  keyId: string;
  signature: string;
}

/** A checkpoint as GET /api/audit/checkpoint answers it; `what` names it in the error. */
export function parseCheckpoint(value: unknown, what: string): Checkpoint {
  if (!isRecord(value)) throw new InputError(`${what} is not a checkpoint object`);
  const { treeSize, rootHash, timestamp, keyId, signature } = value;
  if (!Number.isSafeInteger(treeSize) || (treeSize as number) < 0) throw new InputError(`${what}: treeSize must be a non-negative integer`);
  if (!isHex64(rootHash)) throw new InputError(`${what}: rootHash must be 64 lowercase hex digits`);
  if (typeof timestamp !== 'string' || typeof keyId !== 'string' || typeof signature !== 'string') {
    throw new InputError(`${what}: timestamp, keyId and signature must be strings`);
  }
  return { treeSize: treeSize as number, rootHash, timestamp, keyId, signature };
}

/** Hex of the first 16 bytes of SHA-256 of the raw 32-byte public key. */
export function keyIdOf(rawPublicKey: Buffer): string {
  return createHash('sha256').update(rawPublicKey).digest().subarray(0, 16).toString('hex');
}

/** A public key as --public-key takes it: base64 of the raw 32 bytes, or a PEM (SPKI). */
export function parsePublicKey(text: string, what: string): Buffer {
  const trimmed = text.trim();
  if (trimmed.startsWith('-----BEGIN')) {
    try {
      const key = createPublicKey(trimmed);
      if (key.asymmetricKeyType !== 'ed25519') throw new InputError(`${what} is not an Ed25519 key`);
      return Buffer.from(key.export({ format: 'jwk' }).x!, 'base64url');
    } catch (error) {
      if (error instanceof InputError) throw error;
      throw new InputError(`${what} is not a readable PEM public key`);
    }
  }
  const raw = /^[A-Za-z0-9+/]+={0,2}$/.test(trimmed) ? Buffer.from(trimmed, 'base64') : Buffer.alloc(0);
  if (raw.length !== 32) throw new InputError(`${what} is neither base64 of a raw 32-byte Ed25519 key nor a PEM public key`);
  return raw;
}

/** Whether the checkpoint's signature is valid by `rawPublicKey` and names that key. */
export function checkpointSigned(checkpoint: Checkpoint, rawPublicKey: Buffer): boolean {
  if (keyIdOf(rawPublicKey) !== checkpoint.keyId) return false;
  const { keyId, rootHash, timestamp, treeSize } = checkpoint;
  const message = Buffer.from(canonicalJson({ keyId, log: OBSERVE_LOG, rootHash, timestamp, treeSize }), 'utf8');
  return signedBy(message, checkpoint.signature, rawPublicKey);
}

/** Ed25519 over `message`, the signature in base64; false for anything malformed. */
export function signedBy(message: Buffer, signature: string, rawPublicKey: Buffer): boolean {
  try {
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: rawPublicKey.toString('base64url') }, format: 'jwk' });
    return verify(null, message, key, Buffer.from(signature, 'base64'));
  } catch {
    return false;
  }
}
