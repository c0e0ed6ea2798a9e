/**
 * Approval receipts, checked offline (docs/guide/receipts.md): Ed25519 over the RFC 8785 canonical
 * JSON of every field but `signature`, by the gate's audit (checkpoint) signing key. Web APIs
 * (Web Crypto, TextEncoder, atob), so it runs in Node 20+, Bun, Deno, edge workers and browsers;
 * where the runtime lends its node:crypto (process.getBuiltinModule), verification and digests use
 * it instead: synchronous, about a third of Web Crypto's cost per receipt (bench/framework-approvals.ts).
 */
import type { GateResult } from './types.ts';

export type ApprovalReceipt = GateResult<'/api/requests/{id}/receipt', 'get'>;

/** A gate public key: base64 of the raw 32-byte Ed25519 key (as GET /api/audit/public-key answers it), an SPKI PEM, or the raw bytes. */
export type ReceiptPublicKey = string | Uint8Array;

/** What the SDK uses of Web Crypto's subtle (typed here: Node's types have no global `Crypto`). */
interface Subtle {
  importKey(format: 'raw', key: Uint8Array, algorithm: { name: 'Ed25519' }, extractable: false, usages: ['verify']): Promise<unknown>;
  verify(algorithm: { name: 'Ed25519' }, key: unknown, signature: Uint8Array, data: Uint8Array): Promise<boolean>;
  digest(algorithm: 'SHA-256', data: Uint8Array): Promise<ArrayBuffer>;
}

/** What the SDK uses of node:crypto, when the runtime has it (typed here: the core builds without Node's types). */
interface NodeCrypto {
  createPublicKey(key: { key: Uint8Array; format: 'der'; type: 'spki' }): unknown;
  verify(algorithm: null, data: Uint8Array, key: unknown, signature: Uint8Array): boolean;
  createHash(algorithm: 'sha256'): { update(data: string, encoding: 'utf8'): { digest(encoding: 'hex'): string } };
}

/** What the SDK uses of sodium-native (libsodium's Ed25519), when the application installed it. */
interface Sodium {
  crypto_sign_verify_detached(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean;
}

/** A runtime's built-in module without an import (the core must load where there is none): Node ≥ 20.16, Bun, Deno. */
function builtinModule<Module>(id: string): Module | undefined {
  try {
    return (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule?.(id) as Module | undefined;
  } catch {
    return undefined;
  }
}

const nodeCrypto = builtinModule<NodeCrypto>('node:crypto');

/**
 * sodium-native, an optional peer dependency, loaded at the first key import: libsodium verifies an
 * Ed25519 signature in about half the time OpenSSL (node:crypto) takes, 50 against 104 µs on the
 * bench machine (docs/guide/receipts.md). Absent, or where there is no require: null.
 */
let sodium: Sodium | null | undefined;
function sodiumNative(): Sodium | null {
  if (sodium === undefined) {
    try {
      const modules = builtinModule<{ createRequire(url: string): (id: string) => unknown }>('node:module');
      sodium = modules ? (modules.createRequire(import.meta.url)('sodium-native') as Sodium) : null;
    } catch {
      sodium = null;
    }
  }
  return sodium;
}

/** How this runtime verifies receipts' Ed25519 signatures, fastest first. */
export type Ed25519Verifier = 'libsodium' | 'node:crypto' | 'web-crypto';

/** The verifiers this runtime has, fastest first; receipts use the first. */
export function ed25519Verifiers(): Ed25519Verifier[] {
  return [...(sodiumNative() ? (['libsodium'] as const) : []), ...(nodeCrypto ? (['node:crypto'] as const) : []), 'web-crypto'];
}

function subtle(): Subtle {
  const found = (globalThis as { crypto?: { subtle?: Subtle } }).crypto?.subtle;
  if (!found) throw new Error('verifying a receipt needs Web Crypto (crypto.subtle): Node 20+, a browser in a secure context, Bun, Deno or an edge worker');
  return found;
}

/** RFC 8785 canonical JSON: members sorted by UTF-16 code units, strings and finite numbers as JSON.stringify writes them. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('canonical JSON has no representation of NaN or infinities');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((item) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      // Default string order compares UTF-16 code units, as RFC 8785 sorts.
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, item]) => `${JSON.stringify(key)}:${canonicalJson(item)}`).join(',')}}`;
  }
  throw new TypeError(`canonical JSON has no representation of a ${typeof value}`);
}

const encoder = new TextEncoder();

function hex(bytes: Uint8Array): string {
  let out = '';
  for (const byte of bytes) out += byte.toString(16).padStart(2, '0');
  return out;
}

/** Lowercase hex SHA-256 of the canonical JSON of `params`: a receipt's `argsDigest`. */
export async function receiptArgsDigest(params: unknown): Promise<string> {
  if (nodeCrypto) return nodeCrypto.createHash('sha256').update(canonicalJson(params), 'utf8').digest('hex');
  return hex(new Uint8Array(await subtle().digest('SHA-256', encoder.encode(canonicalJson(params)))));
}

function base64Bytes(text: string): Uint8Array | null {
  try {
    return Uint8Array.from(atob(text), (char) => char.charCodeAt(0));
  } catch {
    return null;
  }
}

function base64Of(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes));
}

/** Node's Buffer where the runtime has one: its base64url codec is native (atob and btoa are not). */
const NodeBuffer = (globalThis as { Buffer?: { from(text: string, encoding: 'base64url'): Uint8Array & { toString(encoding: 'base64url'): string } } }).Buffer;

/** base64url without padding, in its one spelling (so an altered spelling of a signature is not a second valid copy). */
function base64UrlBytes(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return null;
  if (NodeBuffer) {
    const bytes = NodeBuffer.from(text, 'base64url');
    return bytes.toString('base64url') === text ? bytes : null;
  }
  const bytes = base64Bytes(text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4));
  if (!bytes) return null;
  return base64Of(bytes).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '') === text ? bytes : null;
}

/** The DER prefix of an Ed25519 SubjectPublicKeyInfo: SEQUENCE { SEQUENCE { OID 1.3.101.112 }, BIT STRING (32 bytes) }. */
const SPKI_PREFIX = [0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00];

/** The raw 32 bytes of a key given as base64, PEM or bytes; null when it is no Ed25519 public key. */
export function rawReceiptKey(key: ReceiptPublicKey): Uint8Array | null {
  let bytes: Uint8Array | null;
  if (typeof key !== 'string') bytes = key;
  else if (key.includes('-----BEGIN')) {
    const body = /-----BEGIN PUBLIC KEY-----([\s\S]*?)-----END PUBLIC KEY-----/.exec(key)?.[1];
    bytes = body === undefined ? null : base64Bytes(body.replace(/\s+/g, ''));
    if (bytes?.length === 44 && SPKI_PREFIX.every((byte, i) => bytes![i] === byte)) bytes = bytes.subarray(12);
  } else bytes = base64Bytes(key.trim());
  return bytes?.length === 32 ? bytes : null;
}

/** A key's id as the gate names it: hex of the first 16 bytes of SHA-256 of the raw public key. */
export async function receiptKeyId(key: ReceiptPublicKey): Promise<string> {
  const raw = rawReceiptKey(key);
  if (!raw) throw new TypeError('not an Ed25519 public key (base64 of the raw 32 bytes, or an SPKI PEM)');
  return hex(new Uint8Array(await subtle().digest('SHA-256', raw)).subarray(0, 16));
}

/** A key imported for verification: node:crypto's KeyObject where the runtime has it, else Web Crypto's CryptoKey. */
export interface ImportedKey {
  keyId: string;
  verify(signature: Uint8Array, message: Uint8Array): Promise<boolean>;
}

/** Imported keys by their raw base64: importing costs more than a verification. */
const imported = new Map<string, ImportedKey>();

/** A key imported for `verifier` (by default the fastest this runtime has). */
export async function importKey(raw: Uint8Array, verifier: Ed25519Verifier = ed25519Verifiers()[0]!): Promise<ImportedKey> {
  const keyId = await receiptKeyId(raw);
  const libsodium = verifier === 'libsodium' ? sodiumNative() : null;
  if (libsodium) {
    const publicKey = Uint8Array.from(raw);
    return { keyId, verify: async (signature, message) => signature.length === 64 && libsodium.crypto_sign_verify_detached(signature, message, publicKey) };
  }
  if (nodeCrypto && verifier !== 'web-crypto') {
    const crypto = nodeCrypto;
    const key = crypto.createPublicKey({ key: Uint8Array.from([...SPKI_PREFIX, ...raw]), format: 'der', type: 'spki' });
    return { keyId, verify: async (signature, message) => crypto.verify(null, message, key, signature) };
  }
  const crypto = subtle();
  const key = await crypto.importKey('raw', raw, { name: 'Ed25519' }, false, ['verify']);
  return { keyId, verify: (signature, message) => crypto.verify({ name: 'Ed25519' }, key, signature, message) };
}

async function importedKey(raw: Uint8Array): Promise<ImportedKey> {
  const cacheKey = base64Of(raw);
  let found = imported.get(cacheKey);
  if (!found) {
    found = await importKey(raw);
    if (imported.size > 64) imported.clear();
    imported.set(cacheKey, found);
  }
  return found;
}

/** Keys given as text, imported (or null: not a key), by that text: a verification need not decode it again. */
const importedByText = new Map<string, ImportedKey | null>();

async function importedKeyOf(key: ReceiptPublicKey): Promise<ImportedKey | null> {
  if (typeof key !== 'string') {
    const raw = rawReceiptKey(key);
    return raw ? importedKey(raw) : null;
  }
  let found = importedByText.get(key);
  if (found === undefined) {
    const raw = rawReceiptKey(key);
    found = raw ? await importedKey(raw) : null;
    if (importedByText.size > 64) importedByText.clear();
    importedByText.set(key, found);
  }
  return found;
}

const FIELDS = ['v', 'requestId', 'action', 'argsDigest', 'decision', 'decidedBy', 'policyId', 'issuedAt', 'expiresAt', 'nonce', 'keyId', 'signature'];

/** Whether `value` has exactly a receipt's fields, of their types (the signature is checked by verifyReceipt). */
export function isReceiptShaped(value: unknown): value is ApprovalReceipt {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const r = value as Record<string, unknown>;
  const keys = Object.keys(r);
  if (keys.length !== FIELDS.length || !FIELDS.every((field) => keys.includes(field))) return false;
  const strings = ['requestId', 'action', 'argsDigest', 'issuedAt', 'expiresAt', 'nonce', 'keyId', 'signature'].every((field) => typeof r[field] === 'string');
  const decider = r.decidedBy as Record<string, unknown> | null;
  const deciderOk =
    typeof decider === 'object' &&
    decider !== null &&
    (typeof decider.user === 'string' || (typeof decider.keyId === 'string' && typeof decider.name === 'string'));
  return strings && r.v === 1 && r.decision === 'approved' && deciderOk && (r.policyId === null || typeof r.policyId === 'string');
}

/**
 * Whether `receipt` is an approval receipt signed by `publicKey` (or, given several, by the one
 * whose id is the receipt's `keyId`): Ed25519 over the RFC 8785 canonical JSON of every field but
 * `signature`. Pure: it checks the signature only, not `expiresAt` nor whether it was redeemed
 * (the gate's POST /api/receipts/redeem does both). False for anything else, never a throw for a bad receipt.
 */
export async function verifyReceipt(receipt: unknown, publicKey: ReceiptPublicKey | readonly ReceiptPublicKey[]): Promise<boolean> {
  if (!isReceiptShaped(receipt)) return false;
  const signature = base64UrlBytes(receipt.signature);
  if (signature?.length !== 64) return false;
  const candidates: readonly ReceiptPublicKey[] = Array.isArray(publicKey) ? publicKey : [publicKey as ReceiptPublicKey];
  const { signature: _, ...unsigned } = receipt;
  for (const candidate of candidates) {
    const key = await importedKeyOf(candidate);
    if (key === null || key.keyId !== receipt.keyId) continue;
    return key.verify(signature, encoder.encode(canonicalJson(unsigned)));
  }
  return false;
}

/** The keys GET /api/audit/public-key lists, as the gate answers them. */
export interface GatePublicKeys {
  keyId: string;
  publicKey: string;
  keys: { keyId: string; publicKey: string; certificate: { body: string; signature: string } | null }[];
}

/**
 * The keys to verify the gate's receipts with. Pinned keys (VIGIL_GATE_PUBLIC_KEY, the client's
 * `receiptPublicKey`) are trusted, and so is each key a trusted key certified by a rotation (its
 * certificate, signed by the previous key, names both: docs/audit.md "Key rotation"). Without a
 * pinned key, the gate's current key is trusted as first fetched, and the key its certificate names
 * as the one it replaced, so a receipt issued just before a rotation still verifies.
 */
export async function trustedReceiptKeys(answer: GatePublicKeys, pinned: readonly ReceiptPublicKey[]): Promise<Uint8Array[]> {
  const trusted = new Map<string, Uint8Array>();
  const trust = async (key: ReceiptPublicKey) => {
    const raw = rawReceiptKey(key);
    if (raw) trusted.set(await receiptKeyId(raw), raw);
  };
  for (const key of pinned) await trust(key);
  if (pinned.length === 0) await trust(answer.publicKey);
  // Each rotation: `listed` certified by the key it replaced. Followed link by link until nothing new is trusted.
  const rotations = answer.keys.flatMap((listed) => {
    if (!listed.certificate) return [];
    const body = JSON.parse(listed.certificate.body) as { keyId?: unknown; previousKeyId?: unknown; publicKey?: unknown };
    const previous = answer.keys.find((key) => key.keyId === body.previousKeyId);
    if (body.keyId !== listed.keyId || body.publicKey !== listed.publicKey || !previous) return [];
    return [{ listed, previous, certificate: listed.certificate }];
  });
  const certified = async (rotation: (typeof rotations)[number]): Promise<boolean> => {
    const signer = rawReceiptKey(rotation.previous.publicKey);
    const signature = base64Bytes(rotation.certificate.signature);
    if (!signer || !signature) return false;
    const key = await importedKey(signer);
    return key.keyId === rotation.previous.keyId && key.verify(signature, encoder.encode(rotation.certificate.body));
  };
  for (let grew = true; grew;) {
    grew = false;
    for (const rotation of rotations) {
      const forward = trusted.has(rotation.previous.keyId) && !trusted.has(rotation.listed.keyId);
      // Unpinned, the current key is trusted as fetched: the key it replaced is trusted through its certificate too.
      const backward = pinned.length === 0 && trusted.has(rotation.listed.keyId) && !trusted.has(rotation.previous.keyId);
      if ((forward || backward) && (await certified(rotation))) {
        await trust(forward ? rotation.listed.publicKey : rotation.previous.publicKey);
        grew = true;
      }
    }
  }
  return [...trusted.values()];
}
