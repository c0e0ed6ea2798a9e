import { createPublicKey } from 'node:crypto';
import { decodeBase64, keyIdOf, verifyCheckpoint, type Checkpoint } from '@vigil/platform/audit-verify';
import { InputError, isHex64, isRecord } from './input.ts';

/** The observe log's name inside every checkpoint and tombstone signature (docs/audit.md); spelled out here so checking a bundle never loads the observe package. */
export const OBSERVE_LOG = 'vigil-observe';

/**
 * What a log's chains link, and the names its bundle, walk and findings use for them (docs/audit.md):
 * observe chains a session's events, the gate a request's audit entries. The verifier's checks are
 * one code path; internally a scope and its items are held as `sessionId` / `eventId` (observe's
 * names, which the bundle and finding formats were first published with).
 */
export interface LogProfile {
  log: string;
  scope: string;
  scopes: string;
  item: string;
  items: string;
  /** The wire names of a scope's id and an item's id: `sessionId`/`eventId`, `requestId`/`entryId`. */
  scopeField: string;
  itemField: string;
  /** Retention tombstones (observe only). */
  tombstones: boolean;
  /** `--deep`: derived data to recompute (observe only). */
  deep: boolean;
}

export const OBSERVE_PROFILE: LogProfile = {
  log: OBSERVE_LOG,
  scope: 'session',
  scopes: 'sessions',
  item: 'event',
  items: 'events',
  scopeField: 'sessionId',
  itemField: 'eventId',
  tombstones: true,
  deep: true,
};

export const GATE_PROFILE: LogProfile = {
  log: 'vigil-gate',
  scope: 'request',
  scopes: 'requests',
  item: 'entry',
  items: 'entries',
  scopeField: 'requestId',
  itemField: 'entryId',
  tombstones: false,
  deep: false,
};

/** The profile of a log by the name it signs; `what` names where the name was read. */
export function profileOf(log: unknown, what: string): LogProfile {
  const profile = [OBSERVE_PROFILE, GATE_PROFILE].find((known) => known.log === log);
  if (profile === undefined)
    throw new InputError(`${what} is of the log "${String(log)}", which is neither "${OBSERVE_PROFILE.log}" nor "${GATE_PROFILE.log}"`);
  return profile;
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

/** A public key as --public-key takes it: base64 of the raw 32 bytes, or a PEM (SPKI). */
export function parsePublicKey(text: string, what: string): Buffer {
  const trimmed = text.trim();
  if (trimmed.startsWith('-----BEGIN')) {
    let key;
    try {
      key = createPublicKey(trimmed);
    } catch {
      throw new InputError(`${what} is not a readable PEM public key`);
    }
    if (key.asymmetricKeyType !== 'ed25519') throw new InputError(`${what} is not an Ed25519 key`);
    return Buffer.from(key.export({ format: 'jwk' }).x!, 'base64url');
  }
  return rawKeyOf(trimmed, `${what} is neither base64 of a raw 32-byte Ed25519 key nor a PEM public key`);
}

/** A raw Ed25519 public key in canonical standard base64 (decodeBase64), else an InputError saying `problem`. */
export function rawKeyOf(base64: string, problem: string): Buffer {
  const raw = decodeBase64(base64);
  if (raw?.length !== 32) throw new InputError(problem);
  return raw;
}

/** Whether a checkpoint of the log `log` is signed by `rawPublicKey` and names that key. */
export function checkpointSigned(log: string, checkpoint: Checkpoint, rawPublicKey: Buffer): boolean {
  return verifyCheckpoint(log, checkpoint, rawPublicKey);
}

export { keyIdOf, type Checkpoint };
