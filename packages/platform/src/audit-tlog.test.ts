// The log's C2SP views (audit-log.ts): the checkpoint note, hash tiles equal to the tree's nodes
// recomputed from the leaves, and cosignatures accepted only from configured witnesses.
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { afterEach, beforeEach, test } from 'node:test';
import { addCheckpointNotes, AuditLog, CosignatureRefused, type AuditLogTables } from './audit-log.ts';
import { parseSigningKey, type SigningKey } from './audit-keys.ts';
import { migrateToLatest, openDatabase, type Database } from './db.ts';
import { leafHash, rootOf } from './merkle.ts';
import {
  cosign,
  formatNote,
  formatSignatureLine,
  NOTE_COSIGNATURE_V1,
  parseCheckpointBody,
  parseNote,
  parseVerifierKey,
  verifyCosignature,
  verifyNoteSignature,
  type NoteKey,
} from './signed-note.ts';
import { AUDIT_LOG_TEST_STEPS, describeEachDatabase, testAuditLog } from './testing.ts';

function newKey(): SigningKey {
  return parseSigningKey(generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string);
}

// 3 full level-0 tiles and 70 leaves more: level-0 tiles 0–2 full and 3 partial (70), a level-1 tile of width 3.
const LEAVES = 3 * 256 + 70;

await describeEachDatabase('audit log: C2SP checkpoint notes, hash tiles and cosignatures', (backend) => {
  let database: Database<AuditLogTables>;
  let log: AuditLog<AuditLogTables>;
  const leaves: Buffer[] = [];
  const witnessA = newKey();
  const witnessB = newKey();
  const keyA: NoteKey = { name: 'witness.example/a', type: NOTE_COSIGNATURE_V1, publicKey: witnessA.publicKey };
  const keyB: NoteKey = { name: 'witness.example/b', type: NOTE_COSIGNATURE_V1, publicKey: witnessB.publicKey };

  beforeEach(async () => {
    const config = backend.freshDatabase();
    database = await openDatabase<AuditLogTables>(config);
    await migrateToLatest(database, { ...AUDIT_LOG_TEST_STEPS, '0004_checkpoint_notes': addCheckpointNotes });
    // Only witness A is configured: B's cosignatures are refused.
    log = testAuditLog(database, config.dataDir, { tlog: { cosigners: [{ key: keyA }] } });
    leaves.length = 0;
    const batch = Array.from({ length: LEAVES }, (_, n) => ({ itemId: `item-${n}`, scopeId: 's', kind: 'item', data: Buffer.from(`item ${n}`) }));
    await database.db.transaction().execute((trx) => log.append(trx, batch));
    leaves.push(...batch.map((leaf) => leafHash(leaf.data)));
  });
  afterEach(async () => {
    await log.stop();
    await database.close();
  });

  test('the checkpoint note carries the JSON checkpoint’s size and root, signed by the log’s note key under its origin', async () => {
    assert.equal(await log.checkpointNote(), undefined);
    const checkpoint = await log.checkpoint();
    const { treeSize, note } = (await log.checkpointNote())!;
    assert.equal(treeSize, LEAVES);
    const parsed = parseNote(note);
    const body = parseCheckpointBody(parsed.text);
    assert.equal(body.origin, `vigil-test/${log.key.keyId}`);
    assert.equal(body.treeSize, checkpoint.treeSize);
    assert.equal(body.rootHash.toString('hex'), checkpoint.rootHash);
    assert.equal(body.rootHash.toString('hex'), rootOf(leaves).toString('hex'));
    assert.equal(parsed.signatures.length, 1);
    assert.equal(verifyNoteSignature(parsed.text, parsed.signatures[0]!, parseVerifierKey(log.noteVerifierKey)), true);
  });

  test('every tile equals the nodes recomputed from the leaves, partial tiles included; none beyond the checkpoint', async () => {
    assert.equal(await log.tile({ level: 0, index: 0, width: 256 }), undefined, 'no checkpoint yet: no tile');
    await log.checkpoint();
    for (let index = 0; index < 3; index += 1) {
      const tile = (await log.tile({ level: 0, index, width: 256 }))!;
      assert.deepEqual(tile, Buffer.concat(leaves.slice(index * 256, (index + 1) * 256)), `level 0 tile ${index}`);
    }
    for (const width of [1, 69, 70]) {
      assert.deepEqual(await log.tile({ level: 0, index: 3, width }), Buffer.concat(leaves.slice(768, 768 + width)), `level 0 tile 3.p/${width}`);
    }
    assert.equal(await log.tile({ level: 0, index: 3, width: 71 }), undefined);
    assert.equal(await log.tile({ level: 0, index: 3, width: 256 }), undefined);
    const level1 = [0, 1, 2].map((i) => rootOf(leaves.slice(i * 256, (i + 1) * 256)));
    assert.deepEqual(await log.tile({ level: 1, index: 0, width: 3 }), Buffer.concat(level1));
    assert.deepEqual(await log.tile({ level: 1, index: 0, width: 2 }), Buffer.concat(level1.slice(0, 2)));
    assert.equal(await log.tile({ level: 1, index: 0, width: 4 }), undefined);
    assert.equal(await log.tile({ level: 2, index: 0, width: 1 }), undefined);
  });

  test('a configured witness’s cosignature is stored and served after the note; a forged or unknown one is refused, nothing stored', async () => {
    await log.checkpoint();
    const { note } = (await log.checkpointNote())!;
    const { text } = parseNote(note);
    const good = cosign(text, keyA.name, witnessA, 1_800_000_000);
    assert.equal(verifyCosignature(text, good, keyA), 1_800_000_000);

    const forged = { ...good, signature: Buffer.from(good.signature) };
    forged.signature[20]! ^= 1;
    await assert.rejects(
      log.addCosignatures(note + formatSignatureLine(forged)),
      (error: unknown) => error instanceof CosignatureRefused && /does not verify/.test(error.message),
    );
    const unknown = cosign(text, keyB.name, witnessB, 1_800_000_000);
    await assert.rejects(log.addCosignatures(note + formatSignatureLine(unknown)), /not a witness of this log/);
    // A good line beside a bad one: the whole note is refused.
    await assert.rejects(log.addCosignatures(note + formatSignatureLine(good) + formatSignatureLine(unknown)), CosignatureRefused);
    const otherText = text.replace(/\n\d+\n/, `\n${LEAVES - 1}\n`);
    await assert.rejects(
      log.addCosignatures(formatNote({ text: otherText, signatures: [cosign(otherText, keyA.name, witnessA, 1)] })),
      /signed no checkpoint note/,
    );
    await assert.rejects(log.addCosignatures('not a note'), /not a signed checkpoint note/);
    assert.equal((await log.checkpointNote())!.note, note, 'nothing was stored');

    assert.deepEqual(await log.addCosignatures(note + formatSignatureLine(good)), { treeSize: LEAVES, added: 1 });
    assert.deepEqual(await log.addCosignatures(note + formatSignatureLine(good)), { treeSize: LEAVES, added: 0 }, 'stored once');
    const served = parseNote((await log.checkpointNote())!.note);
    assert.equal(served.signatures.length, 2);
    assert.equal(verifyCosignature(served.text, served.signatures[1]!, keyA), 1_800_000_000);
  });
});
