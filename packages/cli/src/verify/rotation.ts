/**
 * Key rotations (docs/audit.md, "Key rotation"): a new audit key is trusted when the key it replaced,
 * already trusted, signed its certificate. `vigil verify` and `vigil verify evidence` follow them alike.
 */
import { decodeBase64, leafHash, verifyBytes } from '@vigil/platform/audit-verify';
import { keyIdOf } from './checkpoint.ts';
import { isRecord } from './input.ts';

/** A key's certificate by the key it replaced, as GET /api/audit/public-key lists it. */
export interface KeyCertificate {
  leafIndex: number;
  body: string;
  signature: string;
}

export interface ListedKeys {
  log: unknown;
  keys: Map<string, Buffer>;
  certificates: Map<string, KeyCertificate>;
}

/**
 * The keys a listing (GET /api/audit/public-key, or an evidence pack's copy of it) names, keyId →
 * raw key, their certificates by the keys they replaced, and the log's name (which says whose log
 * it is). Each keyId is computed here from its key, never read from the listing.
 */
export function listedKeys(value: unknown): ListedKeys {
  const answer = (isRecord(value) ? value : {}) as { log?: unknown; keys?: { publicKey: string; certificate?: unknown }[] };
  const keys = new Map<string, Buffer>();
  const certificates = new Map<string, KeyCertificate>();
  for (const key of answer.keys ?? []) {
    const raw = decodeBase64(key.publicKey);
    // A key not in canonical base64 of 32 bytes is left out: what it signed then counts as signed by an unknown key.
    if (raw?.length !== 32) continue;
    keys.set(keyIdOf(raw), raw);
    const { certificate } = key;
    if (
      isRecord(certificate) &&
      Number.isSafeInteger(certificate.leafIndex) &&
      typeof certificate.body === 'string' &&
      typeof certificate.signature === 'string'
    )
      certificates.set(keyIdOf(raw), { leafIndex: certificate.leafIndex as number, body: certificate.body, signature: certificate.signature });
  }
  return { log: answer.log, keys, certificates };
}

/**
 * Extends `trusted` with every listed key a trusted key certified (a chain of rotations, each
 * certificate the key-rotation leaf docs/audit.md describes, signed by the key it names as previous).
 * Answers the certificates' leaves, index → leaf hash, that the walk must find in the log.
 */
export function certifiedKeys(
  log: string,
  trusted: Map<string, Buffer>,
  keys: ReadonlyMap<string, Buffer>,
  certificates: ReadonlyMap<string, KeyCertificate>,
  notes: string[],
): Map<number, { keyId: string; leafHash: string }> {
  const leaves = new Map<number, { keyId: string; leafHash: string }>();
  for (const [keyId, certificate] of certificates)
    leaves.set(certificate.leafIndex, { keyId, leafHash: leafHash(Buffer.from(certificate.body, 'utf8')).toString('hex') });
  for (let grown = trusted.size > 0; grown;) {
    grown = false;
    for (const [keyId, certificate] of certificates) {
      if (trusted.has(keyId)) continue;
      let body: unknown;
      try {
        body = JSON.parse(certificate.body);
      } catch {
        continue;
      }
      if (!isRecord(body) || body.v !== 1 || body.kind !== 'key-rotation' || body.log !== log || body.keyId !== keyId) continue;
      const raw = keys.get(keyId)!;
      const previous = typeof body.previousKeyId === 'string' ? trusted.get(body.previousKeyId) : undefined;
      if (
        previous === undefined ||
        body.publicKey !== raw.toString('base64') ||
        !verifyBytes(Buffer.from(certificate.body, 'utf8'), certificate.signature, previous)
      )
        continue;
      trusted.set(keyId, raw);
      notes.push(`key ${keyId} is trusted: certified by key ${String(body.previousKeyId)} in the log (leaf ${certificate.leafIndex})`);
      grown = true;
    }
  }
  return leaves;
}
