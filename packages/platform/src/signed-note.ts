import { sign, verify } from 'node:crypto';
import { publicKeyFromRaw, type SigningKey } from './audit-keys.ts';
import { decodeBase64, sha256 } from './crypto.ts';

/**
 * The C2SP transparency-log formats Vigil speaks besides its own JSON (docs/audit.md, "C2SP
 * formats"): signed notes (c2sp.org/signed-note), checkpoints (c2sp.org/tlog-checkpoint), Ed25519
 * cosignatures (c2sp.org/tlog-cosignature, v1) and the tile paths of c2sp.org/tlog-tiles. Pure
 * functions of node:crypto: the services, `vigil witness` and `vigil verify` share them.
 */

/** Signature type bytes (signed-note): an Ed25519 note signature, and a timestamped Ed25519 cosignature (tlog-cosignature v1). */
export const NOTE_ED25519 = 0x01;
export const NOTE_COSIGNATURE_V1 = 0x04;

/** A key that signs or verifies notes: its name, type and raw 32-byte Ed25519 public key. */
export interface NoteKey {
  name: string;
  type: typeof NOTE_ED25519 | typeof NOTE_COSIGNATURE_V1;
  publicKey: Buffer;
}

/** One signature line of a note: `— <name> base64(key hash || signature)`. */
export interface NoteSignature {
  name: string;
  /** The 4-byte key ID, big-endian, as 8 lowercase hex digits. */
  keyHash: string;
  /** The bytes after the key ID. */
  signature: Buffer;
}

export interface SignedNote {
  /** The note text, ending in a newline (what signatures cover). */
  text: string;
  signatures: NoteSignature[];
}

/** Thrown for text that is not a well-formed note, checkpoint, verifier key or tile path; the message says why. */
export class NoteFormatError extends Error {
  override name = 'NoteFormatError';
}

const EM_DASH = '\u2014';
/** At least the 16 signatures signed-note requires verifiers to accept; more is refused as malformed. */
const MAX_SIGNATURES = 100;
const ED25519_SIGNATURE_BYTES = 64;

/** A key name: non-empty, no Unicode space and no `+` (signed-note). */
export function isKeyName(name: string): boolean {
  return name.length > 0 && !/[\s+\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/u.test(name);
}

/** SHA-256(key name || 0x0A || type || public key)[:4], as 8 hex digits. */
export function noteKeyHash(key: NoteKey): string {
  return sha256(Buffer.concat([Buffer.from(`${key.name}\n`, 'utf8'), Buffer.of(key.type), key.publicKey]))
    .subarray(0, 4)
    .toString('hex');
}

/** The verifier key text of Go's note package and signed-note: `<name>+<key hash hex>+base64(type || public key)`. */
export function formatVerifierKey(key: NoteKey): string {
  return `${key.name}+${noteKeyHash(key)}+${Buffer.concat([Buffer.of(key.type), key.publicKey]).toString('base64')}`;
}

/** A verifier key (formatVerifierKey) of an Ed25519 signer or cosigner; its key hash must match its name and key. */
export function parseVerifierKey(text: string): NoteKey {
  const parts = text.trim().split('+');
  // The base64 may itself hold '+': the name and hash are the first two parts, the key the rest.
  if (parts.length < 3) throw new NoteFormatError('a verifier key is <name>+<8 hex digits>+<base64 key>');
  const [name, keyHash] = parts as [string, string];
  const material = decodeBase64(parts.slice(2).join('+'));
  if (!isKeyName(name)) throw new NoteFormatError(`"${name}" is not a key name (non-empty, no spaces, no "+")`);
  if (!/^[0-9a-f]{8}$/.test(keyHash)) throw new NoteFormatError('the key hash of a verifier key is 8 lowercase hex digits');
  if (material === null) throw new NoteFormatError('the key of a verifier key is not canonical base64');
  const type = material[0];
  if (type !== NOTE_ED25519 && type !== NOTE_COSIGNATURE_V1)
    throw new NoteFormatError(`the verifier key's type ${String(type)} is neither Ed25519 (1) nor an Ed25519 cosignature (4)`);
  if (material.length !== 33) throw new NoteFormatError('an Ed25519 verifier key carries a 32-byte public key');
  const key: NoteKey = { name, type, publicKey: material.subarray(1) };
  if (noteKeyHash(key) !== keyHash) throw new NoteFormatError(`the key hash ${keyHash} is not that of the name and key (${noteKeyHash(key)})`);
  return key;
}

/**
 * A witness's key as its cosignatures name it (type 0x04). A type-0x01 verifier key is read as the
 * same name and key cosigning, as transparency-dev's tools do: witnesses often publish that one.
 */
export function cosignerKey(key: NoteKey): NoteKey {
  return { ...key, type: NOTE_COSIGNATURE_V1 };
}

function hasForbiddenControl(text: string): boolean {
  return /[\u0000-\u0009\u000b-\u001f]/.test(text);
}

/** Parses a signed note: the text up to the last blank line, then one or more signature lines. Verifies nothing. */
export function parseNote(note: string): SignedNote {
  if (hasForbiddenControl(note)) throw new NoteFormatError('a note has no control character other than newline');
  if (!note.endsWith('\n')) throw new NoteFormatError('a note ends in a newline');
  const split = note.lastIndexOf('\n\n');
  if (split < 0) throw new NoteFormatError('a note has a blank line between its text and its signatures');
  const text = note.slice(0, split + 1);
  const lines = note.slice(split + 2, -1).split('\n');
  if (lines.length > MAX_SIGNATURES) throw new NoteFormatError(`a note carries at most ${MAX_SIGNATURES} signatures`);
  return { text, signatures: lines.map(parseSignatureLine) };
}

/** One line `— <name> <base64>` (no newline), as in a note or a witness's answer. */
export function parseSignatureLine(line: string): NoteSignature {
  const match = /^\u2014 (\S+) (\S+)$/u.exec(line);
  if (match === null) throw new NoteFormatError(`"${line.slice(0, 80)}" is not a signature line ("— <key name> <base64 signature>")`);
  const [, name, encoded] = match as unknown as [string, string, string];
  const bytes = decodeBase64(encoded);
  if (!isKeyName(name)) throw new NoteFormatError(`"${name}" is not a key name`);
  if (bytes === null || bytes.length < 5) throw new NoteFormatError(`the signature of ${name} is not base64 of a key ID and a signature`);
  return { name, keyHash: bytes.subarray(0, 4).toString('hex'), signature: bytes.subarray(4) };
}

export function formatSignatureLine(signature: NoteSignature): string {
  return `${EM_DASH} ${signature.name} ${Buffer.concat([Buffer.from(signature.keyHash, 'hex'), signature.signature]).toString('base64')}\n`;
}

export function formatNote(note: SignedNote): string {
  return `${note.text}\n${note.signatures.map(formatSignatureLine).join('')}`;
}

function checkNoteText(text: string): void {
  if (!text.endsWith('\n') || text.includes('\n\n') || hasForbiddenControl(text))
    throw new NoteFormatError('a note text ends in a newline and has no blank line');
}

/** The Ed25519 note signature (type 0x01) of `text` by `key` named `name`. */
export function signNoteText(text: string, name: string, key: SigningKey): NoteSignature {
  checkNoteText(text);
  return {
    name,
    keyHash: noteKeyHash({ name, type: NOTE_ED25519, publicKey: key.publicKey }),
    signature: sign(null, Buffer.from(text, 'utf8'), key.privateKey),
  };
}

/** Whether `signature` is `key`'s (name and key hash match) and verifies over `text`. */
export function verifyNoteSignature(text: string, signature: NoteSignature, key: NoteKey): boolean {
  if (key.type !== NOTE_ED25519 || !sameKey(signature, key) || signature.signature.length !== ED25519_SIGNATURE_BYTES) return false;
  return ed25519Verifies(Buffer.from(text, 'utf8'), signature.signature, key.publicKey);
}

/** Whether a signature line names `key`: its name and key hash (signed-note: both, for a known key). */
export function sameKey(signature: NoteSignature, key: NoteKey): boolean {
  return signature.name === key.name && signature.keyHash === noteKeyHash(key);
}

function ed25519Verifies(message: Buffer, signature: Buffer, rawPublic: Buffer): boolean {
  try {
    return verify(null, message, publicKeyFromRaw(rawPublic), signature);
  } catch {
    return false;
  }
}

/** A checkpoint's note text (tlog-checkpoint): origin, decimal tree size, base64 root hash, extension lines. */
export interface CheckpointBody {
  origin: string;
  treeSize: number;
  rootHash: Buffer;
  extensions: string[];
}

export function formatCheckpointBody(body: Omit<CheckpointBody, 'extensions'> & { extensions?: readonly string[] }): string {
  return [body.origin, String(body.treeSize), body.rootHash.toString('base64'), ...(body.extensions ?? [])].map((line) => `${line}\n`).join('');
}

export function parseCheckpointBody(text: string): CheckpointBody {
  checkNoteText(text);
  const lines = text.slice(0, -1).split('\n');
  if (lines.length < 3) throw new NoteFormatError('a checkpoint has an origin line, a tree size line and a root hash line');
  const [origin, size, root] = lines as [string, string, string];
  if (origin === '') throw new NoteFormatError('the origin line of a checkpoint is not empty');
  if (!/^(0|[1-9][0-9]*)$/.test(size) || !Number.isSafeInteger(Number(size)))
    throw new NoteFormatError('the tree size of a checkpoint is a decimal with no leading zero');
  const rootHash = decodeBase64(root);
  if (rootHash?.length !== 32) throw new NoteFormatError('the root hash of a checkpoint is base64 of 32 bytes');
  const extensions = lines.slice(3);
  if (extensions.some((line) => line === '')) throw new NoteFormatError('a checkpoint has no empty extension line');
  return { origin, treeSize: Number(size), rootHash, extensions };
}

/** What a v1 cosignature signs: `cosignature/v1\ntime <seconds>\n` and the checkpoint's note text. */
export function cosignatureMessage(timestamp: number, text: string): Buffer {
  return Buffer.from(`cosignature/v1\ntime ${timestamp}\n${text}`, 'utf8');
}

/** A v1 cosignature (type 0x04) of the checkpoint text by the witness `key` named `name`, made at `timestamp` (Unix seconds). */
export function cosign(text: string, name: string, key: SigningKey, timestamp: number): NoteSignature {
  checkNoteText(text);
  const time = Buffer.alloc(8);
  time.writeBigUInt64BE(BigInt(timestamp));
  const signature = sign(null, cosignatureMessage(timestamp, text), key.privateKey);
  return { name, keyHash: noteKeyHash({ name, type: NOTE_COSIGNATURE_V1, publicKey: key.publicKey }), signature: Buffer.concat([time, signature]) };
}

/** The timestamp of a v1 cosignature's bytes (8-byte big-endian seconds, then 64 signature bytes); undefined when they are not one. */
export function cosignatureTime(signature: NoteSignature): number | undefined {
  if (signature.signature.length !== 8 + ED25519_SIGNATURE_BYTES) return undefined;
  const time = signature.signature.readBigUInt64BE(0);
  return time > BigInt(Number.MAX_SAFE_INTEGER) ? undefined : Number(time);
}

/** The timestamp of `signature` when it is `key`'s valid v1 cosignature of the checkpoint text; undefined otherwise. */
export function verifyCosignature(text: string, signature: NoteSignature, key: NoteKey): number | undefined {
  if (key.type !== NOTE_COSIGNATURE_V1 || !sameKey(signature, key)) return undefined;
  const time = cosignatureTime(signature);
  if (time === undefined) return undefined;
  return ed25519Verifies(cosignatureMessage(time, text), signature.signature.subarray(8), key.publicKey) ? time : undefined;
}

/** The tile hashes of c2sp.org/tlog-tiles: 256 per full tile. */
export const TILE_WIDTH = 256;
/** Tree levels per tile level: a level-L tile holds nodes of Merkle level 8·L. */
export const TILE_HEIGHT = 8;

export interface TileRef {
  level: number;
  index: number;
  /** 1–256; 256 is a full tile (no `.p/` suffix). */
  width: number;
}

/** N as tlog-tiles spells it: 3-digit groups, every one but the last prefixed with `x` (1234067 → x001/x234/067). */
export function tileIndexPath(index: number): string {
  let digits = String(index);
  digits = digits.padStart(Math.ceil(digits.length / 3) * 3, '0');
  const groups = digits.match(/\d{3}/g)!;
  return groups.map((group, i) => (i < groups.length - 1 ? `x${group}` : group)).join('/');
}

export function tilePath(tile: TileRef): string {
  return `tile/${tile.level}/${tileIndexPath(tile.index)}${tile.width === TILE_WIDTH ? '' : `.p/${tile.width}`}`;
}

/**
 * The tile a path below `tile/` names (`<L>/<N>[.p/<W>]`), only in its one canonical spelling;
 * undefined for anything else (an entry bundle's `entries/…` included: Vigil serves none).
 */
export function parseTilePath(path: string): TileRef | undefined {
  const match = /^(0|[1-9][0-9]?)\/((?:x[0-9]{3}\/)*)([0-9]{3})(?:\.p\/([1-9][0-9]{0,2}))?$/.exec(path);
  if (match === null) return undefined;
  const [, level, xGroups, last, width] = match as unknown as [string, string, string, string, string | undefined];
  const groups = [
    ...xGroups
      .split('/')
      .filter((group) => group !== '')
      .map((group) => group.slice(1)),
    last,
  ];
  // A leading 000 group would be a second spelling of the same index.
  if (groups.length > 1 && groups[0] === '000') return undefined;
  const index = Number(groups.join(''));
  const tileWidth = width === undefined ? TILE_WIDTH : Number(width);
  if (Number(level) > 63 || !Number.isSafeInteger(index) || (width !== undefined && tileWidth >= TILE_WIDTH)) return undefined;
  return { level: Number(level), index, width: tileWidth };
}

/** The nodes a tile holds: `count` roots of perfect subtrees at Merkle `level` (8·L), the first at `from`. */
export function tileNodes(tile: TileRef): { level: number; from: number; count: number } {
  return { level: tile.level * TILE_HEIGHT, from: tile.index * TILE_WIDTH, count: tile.width };
}

/** Whether every hash of the tile is a complete subtree of the tree of `treeSize` leaves (tlog-tiles: floor(s / 256^L) hashes at level L). */
export function tileWithin(tile: TileRef, treeSize: number): boolean {
  const { level, from, count } = tileNodes(tile);
  return from + count <= Math.floor(treeSize / 2 ** level);
}
