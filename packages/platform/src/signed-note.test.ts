// The C2SP formats (signed-note.ts) against the examples of the specifications, Go's note package
// and transparency-dev/formats (vectors/c2sp-notes, sources in vectors/README.md), and round trips
// of what Vigil signs.
import assert from 'node:assert/strict';
import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { parseSigningKey, rawPublicKey, type SigningKey } from './audit-keys.ts';
import {
  cosign,
  cosignatureMessage,
  cosignatureTime,
  formatCheckpointBody,
  formatNote,
  formatVerifierKey,
  NOTE_COSIGNATURE_V1,
  NOTE_ED25519,
  noteKeyHash,
  NoteFormatError,
  parseCheckpointBody,
  parseNote,
  parseSignatureLine,
  parseTilePath,
  parseVerifierKey,
  signNoteText,
  tileIndexPath,
  tilePath,
  tileWithin,
  verifyCosignature,
  verifyNoteSignature,
} from './signed-note.ts';

const vectors = JSON.parse(readFileSync(join(import.meta.dirname, 'vectors', 'c2sp-notes', 'vectors.json'), 'utf8')) as {
  goNote: {
    text: string;
    peter: { vkey: string; skey: string; signatureLine: string };
    enoch: { vkey: string; signatureLine: string };
    badVkeys: { vkey: string; why: string }[];
    malformedNotes: { note: string; why: string }[];
  };
  cosignatureV1: {
    vkeys: { vkey: string; valid: boolean; type?: number; why?: string }[];
    timestamps: { signature: string; time: number | null }[];
  };
  c2sp: {
    cosignedCheckpoint: { note: string; signedMessage: string; origin: string; treeSize: number; cosignatureTime: number };
    addCheckpointRequest: { body: string; oldSize: number; proofLength: number };
    addCheckpointResponse: { body: string };
    signedNote: { note: string; text: string };
    tileIndex: { index: number; path: string };
    treeTiles: { treeSize: number; fullTiles: Record<string, number>; partialTiles: { level: number; index: number; width: number }[] };
    treeTiles256: { treeSize: number; fullTiles: Record<string, number>; partialTiles: { level: number; index: number; width: number }[] };
  };
};

/** Go's `PRIVATE+KEY+<name>+<hash>+base64(0x01 || seed)` as a signing key (PKCS#8 of the Ed25519 seed). */
function goSigningKey(skey: string): SigningKey {
  const material = Buffer.from(skey.split('+').slice(4).join('+'), 'base64');
  assert.equal(material[0], NOTE_ED25519);
  const pkcs8 = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), material.subarray(1)]);
  return parseSigningKey(pkcs8.toString('base64'));
}

function newKey(): SigningKey {
  const { privateKey } = generateKeyPairSync('ed25519');
  return parseSigningKey(privateKey.export({ format: 'pem', type: 'pkcs8' }) as string);
}

describe("Go's note package (golang.org/x/mod/sumdb/note) test data", () => {
  const { goNote } = vectors;

  test('its verifier keys parse, and the key hash is SHA-256(name || 0x0A || 0x01 || key)[:4]', () => {
    const peter = parseVerifierKey(goNote.peter.vkey);
    assert.equal(peter.name, 'PeterNeumann');
    assert.equal(peter.type, NOTE_ED25519);
    assert.equal(noteKeyHash(peter), 'c74f20a3');
    assert.equal(formatVerifierKey(peter), goNote.peter.vkey);
    assert.equal(formatVerifierKey(parseVerifierKey(goNote.enoch.vkey)), goNote.enoch.vkey);
  });

  test('its bad verifier keys and every one-byte change of a good one are refused', () => {
    for (const { vkey, why } of goNote.badVkeys) assert.throws(() => parseVerifierKey(vkey), NoteFormatError, why);
    const good = goNote.peter.vkey;
    for (let i = 0; i < good.length; i += 1) {
      const changed = good.slice(0, i) + String.fromCharCode(good.charCodeAt(i) + 1) + good.slice(i + 1);
      assert.throws(() => parseVerifierKey(changed), NoteFormatError, changed);
    }
  });

  test('its signed note verifies with its key, and ours signs it byte for byte as Go does', () => {
    const peter = parseVerifierKey(goNote.peter.vkey);
    const note = parseNote(`${goNote.text}\n${goNote.peter.signatureLine}${goNote.enoch.signatureLine}`);
    assert.equal(note.text, goNote.text);
    assert.equal(note.signatures.length, 2);
    assert.equal(verifyNoteSignature(note.text, note.signatures[0]!, peter), true);
    // Enoch's line is not Peter's key: ignored (not verified by it), as the spec requires.
    assert.equal(verifyNoteSignature(note.text, note.signatures[1]!, peter), false);
    assert.equal(verifyNoteSignature(note.text, note.signatures[1]!, parseVerifierKey(goNote.enoch.vkey)), true);

    const key = goSigningKey(goNote.peter.skey);
    assert.deepEqual(key.publicKey, peter.publicKey);
    const ours = signNoteText(goNote.text, 'PeterNeumann', key);
    assert.equal(formatNote({ text: goNote.text, signatures: [ours] }), `${goNote.text}\n${goNote.peter.signatureLine}`);
  });

  test('a changed text or signature does not verify', () => {
    const peter = parseVerifierKey(goNote.peter.vkey);
    const signature = parseSignatureLine(goNote.peter.signatureLine.slice(0, -1));
    assert.equal(verifyNoteSignature(goNote.text.replace('answer', 'answers'), signature, peter), false);
    const forged = { ...signature, signature: Buffer.from(signature.signature) };
    forged.signature[0]! ^= 1;
    assert.equal(verifyNoteSignature(goNote.text, forged, peter), false);
  });

  test('its malformed notes are refused', () => {
    for (const { note, why } of goNote.malformedNotes) assert.throws(() => parseNote(note), NoteFormatError, why);
  });
});

describe('transparency-dev/formats cosignature v1 test data', () => {
  test('its verifier keys parse (or are refused) as it expects, a "+" inside the base64 included', () => {
    for (const { vkey, valid, type } of vectors.cosignatureV1.vkeys) {
      if (valid) assert.equal(parseVerifierKey(vkey).type, type, vkey);
      else assert.throws(() => parseVerifierKey(vkey), NoteFormatError, vkey);
    }
  });

  test('its cosignature timestamps read as it expects; a plain note signature has none', () => {
    for (const { signature, time } of vectors.cosignatureV1.timestamps) {
      const bytes = Buffer.from(signature, 'base64');
      assert.equal(cosignatureTime({ name: 'w', keyHash: bytes.subarray(0, 4).toString('hex'), signature: bytes.subarray(4) }), time ?? undefined);
    }
  });
});

describe('the C2SP specifications’ examples', () => {
  const { c2sp } = vectors;

  test('tlog-cosignature: the cosigned checkpoint parses; its cosignature time is the one the signed message shows', () => {
    const note = parseNote(c2sp.cosignedCheckpoint.note);
    const body = parseCheckpointBody(note.text);
    assert.equal(body.origin, c2sp.cosignedCheckpoint.origin);
    assert.equal(body.treeSize, c2sp.cosignedCheckpoint.treeSize);
    assert.equal(formatCheckpointBody(body), note.text);
    const time = cosignatureTime(note.signatures[1]!);
    assert.equal(time, c2sp.cosignedCheckpoint.cosignatureTime);
    assert.equal(cosignatureMessage(time!, note.text).toString('utf8'), c2sp.cosignedCheckpoint.signedMessage);
  });

  test('tlog-witness: the add-checkpoint request and response parse', () => {
    const { body } = c2sp.addCheckpointRequest;
    const blank = body.indexOf('\n\n');
    const head = body.slice(0, blank).split('\n');
    assert.equal(head[0], `old ${c2sp.addCheckpointRequest.oldSize}`);
    assert.equal(head.length - 1, c2sp.addCheckpointRequest.proofLength);
    for (const line of head.slice(1)) assert.equal(Buffer.from(line, 'base64').length, 32);
    const note = parseNote(body.slice(blank + 2));
    assert.equal(parseCheckpointBody(note.text).treeSize, 20852163);
    const lines = c2sp.addCheckpointResponse.body.slice(0, -1).split('\n').map(parseSignatureLine);
    assert.deepEqual(
      lines.map((line) => line.name),
      ['witness.example/w1', 'witness.example/w1', 'witness.example/w2'],
    );
  });

  test('signed-note: a note text may hold a blank line; the last one separates the signatures', () => {
    const note = parseNote(c2sp.signedNote.note);
    assert.equal(note.text, c2sp.signedNote.text);
    assert.equal(note.signatures[0]!.name, 'quasimodo.example/salvatore');
  });

  test('tlog-tiles: the tile index encoding and the tiles of a tree of 70,000 and of 256 leaves', () => {
    assert.equal(tileIndexPath(c2sp.tileIndex.index), c2sp.tileIndex.path);
    assert.deepEqual(parseTilePath(`0/${c2sp.tileIndex.path}`), { level: 0, index: c2sp.tileIndex.index, width: 256 });
    for (const example of [c2sp.treeTiles, c2sp.treeTiles256]) {
      for (const [level, full] of Object.entries(example.fullTiles)) {
        if (full > 0) assert.equal(tileWithin({ level: Number(level), index: full - 1, width: 256 }, example.treeSize), true);
        assert.equal(tileWithin({ level: Number(level), index: full, width: 256 }, example.treeSize), false);
      }
      for (const tile of example.partialTiles) {
        assert.equal(tileWithin(tile, example.treeSize), true, tilePath(tile));
        assert.equal(tileWithin({ ...tile, width: tile.width + 1 }, example.treeSize), false, tilePath(tile));
      }
    }
  });
});

describe('signed notes Vigil makes', () => {
  test('a checkpoint note round-trips and verifies by its verifier key; another name or key does not', () => {
    const key = newKey();
    const text = formatCheckpointBody({ origin: 'vigil-observe/abc', treeSize: 42, rootHash: Buffer.alloc(32, 7) });
    assert.equal(text, `vigil-observe/abc\n42\n${Buffer.alloc(32, 7).toString('base64')}\n`);
    const note = formatNote({ text, signatures: [signNoteText(text, 'vigil-observe/abc', key)] });
    const parsed = parseNote(note);
    const verifier = parseVerifierKey(formatVerifierKey({ name: 'vigil-observe/abc', type: NOTE_ED25519, publicKey: key.publicKey }));
    assert.equal(verifyNoteSignature(parsed.text, parsed.signatures[0]!, verifier), true);
    assert.equal(verifyNoteSignature(parsed.text, parsed.signatures[0]!, { ...verifier, name: 'other' }), false);
    assert.equal(verifyNoteSignature(parsed.text, parsed.signatures[0]!, { ...verifier, publicKey: newKey().publicKey }), false);
    assert.deepEqual(parseCheckpointBody(parsed.text), { origin: 'vigil-observe/abc', treeSize: 42, rootHash: Buffer.alloc(32, 7), extensions: [] });
  });

  test('a cosignature verifies only with the cosignature key type, over the same text, within its 72 bytes', () => {
    const witness = newKey();
    const text = formatCheckpointBody({ origin: 'o', treeSize: 1, rootHash: Buffer.alloc(32) });
    const signature = cosign(text, 'witness.example/a', witness, 1_700_000_000);
    assert.equal(signature.signature.length, 72);
    const key = { name: 'witness.example/a', type: NOTE_COSIGNATURE_V1, publicKey: witness.publicKey } as const;
    assert.equal(verifyCosignature(text, signature, key), 1_700_000_000);
    assert.equal(verifyCosignature(text, signature, { ...key, type: NOTE_ED25519 }), undefined);
    assert.equal(verifyCosignature(text.replace('\n1\n', '\n2\n'), signature, key), undefined);
    const shifted = { ...signature, signature: Buffer.from(signature.signature) };
    shifted.signature.writeBigUInt64BE(1_700_000_001n);
    assert.equal(verifyCosignature(text, shifted, key), undefined);
    // A v1 cosignature is not a note signature of the same key.
    assert.equal(verifyNoteSignature(text, signature, { ...key, type: NOTE_ED25519 }), false);
  });

  test('checkpoint bodies and tile paths refuse every other spelling', () => {
    const root = Buffer.alloc(32).toString('base64');
    for (const bad of ['o\n01\n' + root + '\n', 'o\n1\n' + root, '\n1\n' + root + '\n', 'o\n1\nAAAA\n', 'o\n-1\n' + root + '\n', 'o\n1\n' + root + '\n\n'])
      assert.throws(() => parseCheckpointBody(bad), NoteFormatError, JSON.stringify(bad));
    for (const bad of ['0/x000/001', '00/000', '0/1', '0/000.p/256', '0/000.p/0', '0/000.p/01', '64/000', 'entries/000', '0/x001', '0/001/002'])
      assert.equal(parseTilePath(bad), undefined, bad);
    for (const tile of [
      { level: 0, index: 0, width: 256 },
      { level: 2, index: 999, width: 7 },
      { level: 1, index: 1000, width: 256 },
    ])
      assert.deepEqual(parseTilePath(tilePath(tile).slice('tile/'.length)), tile);
  });

  test('a key rotation keeps names apart: the same key under two names has two key hashes', () => {
    const raw = rawPublicKey(createPrivateKey(generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' })));
    assert.notEqual(noteKeyHash({ name: 'a', type: NOTE_ED25519, publicKey: raw }), noteKeyHash({ name: 'b', type: NOTE_ED25519, publicKey: raw }));
    assert.notEqual(noteKeyHash({ name: 'a', type: NOTE_ED25519, publicKey: raw }), noteKeyHash({ name: 'a', type: NOTE_COSIGNATURE_V1, publicKey: raw }));
  });
});
