/**
 * Issue 36, the verification doors: an attacker with write access to observe's database, after the
 * auditor saved a checkpoint (tamper-observe-testkit.ts's world).
 * - Deleted leaf rows: the proof routes answer the catalogued 409 naming the leaf (not a 500), and
 *   `vigil verify` reports a finding naming it (exit 1, not 2).
 * - A tail cut under a rewritten head: the server's own verify holds the chain to the log's leaves.
 * - A key inserted into the audit keys table signs a tombstone and a checkpoint: verify trusts only
 *   pinned keys (--public-key, the saved checkpoint's) and keys a trusted key certified in the log
 *   (AUDIT_PREVIOUS_SIGNING_KEY), and without a pinned key says UNVERIFIED (exit 3).
 * - The verdict says how far back the earliest checkpoint it was given reaches.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { AuditLog, appendLeaves, canonicalJson, keyIdOf, rawPublicKey, signBytes, type Checkpoint } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import type { ObserveSchema } from '@vigil/observe';
import { ago, custom, ingestEvents, started, startTestObserve } from '@vigil/observe/testing';
import { serverVerdict, world, type World } from './tamper-observe-testkit.ts';
import { runVerify, type Report } from './verify-testkit.ts';

interface VerdictReport extends Report {
  verdict: 'valid' | 'tampered' | 'unverified';
  summary: string;
  coverage: { treeSize: number; timestamp: string; source: string };
}

const db = (w: World) => w.observe.service.context.database.db;
const savedCheckpoint = (w: World): Checkpoint => JSON.parse(readFileSync(w.saved, 'utf8')) as Checkpoint;

async function withWorld(backend: Parameters<typeof world>[0], run: (w: World) => Promise<void>): Promise<void> {
  const w = await world(backend);
  try {
    await run(w);
  } finally {
    await w.observe.close();
    rmSync(w.dir, { recursive: true, force: true });
  }
}

const pem = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;

/**
 * The forger's retention: session t-b deleted, a tombstone for it signed by a key the attacker made
 * and inserted into audit_keys (with a certificate claiming the genuine key as its previous one,
 * signed by itself, in a leaf of its own), and a checkpoint over it signed by that key — everything
 * the server itself would have written, but with another key.
 */
async function launderDeletion(w: World, genuineKeyId: string): Promise<string> {
  const { database, clock } = w.observe.service.context;
  const privateKey = generateKeyPairSync('ed25519').privateKey;
  const publicKey = rawPublicKey(privateKey);
  const forger = new AuditLog<ObserveSchema>({
    name: 'vigil-observe',
    db: database.db,
    dialect: database.dialect,
    key: { privateKey, publicKey, keyId: keyIdOf(publicKey) },
    clock,
    witnesses: { urls: [], timeoutMs: 1000 },
    checkpointEvents: Number.MAX_SAFE_INTEGER,
    log: { warn: () => undefined, error: () => undefined },
  });
  await forger.registerKey();
  const certificate = canonicalJson({
    v: 1,
    kind: 'key-rotation',
    log: 'vigil-observe',
    keyId: forger.key.keyId,
    publicKey: publicKey.toString('base64'),
    previousKeyId: genuineKeyId,
    timestamp: ago(1),
  });
  await database.db.transaction().execute(async (trx) => {
    const leaf = await appendLeaves<ObserveSchema>(trx, database.dialect, [
      { itemId: 'forged-certificate', scopeId: null, kind: 'key-rotation', data: Buffer.from(certificate) },
    ]);
    await trx
      .updateTable('audit_keys')
      .set({ certificate, certificate_signature: signBytes(forger.key, Buffer.from(certificate)), certificate_leaf: leaf })
      .where('key_id', '=', forger.key.keyId)
      .execute();
  });
  const last = w.acks.b[5]!;
  await database.db.transaction().execute(async (trx) => {
    await forger.appendTombstones(trx, [{ scopeId: 't-b', body: { sessionId: 't-b', headSeq: 5, headHash: last.hash, eventCount: 6, reason: 'retention' } }]);
    await trx.deleteFrom('events').where('session_id', '=', 't-b').execute();
    await trx.deleteFrom('sessions').where('id', '=', 't-b').execute();
  });
  await forger.checkpoint();
  return forger.key.keyId;
}

await describeEachDatabase('tamper doors: what verification trusts and reports (issue 36)', (backend) => {
  test('a deleted leaf row: consistency and export answer 409 audit_log_incomplete naming it; vigil verify exits 1 naming the leaf', async () => {
    await withWorld(backend, async (w) => {
      await ingestEvents(w.observe, [custom('t-c', 'agent-t', ago(60)), custom('t-c', 'agent-t', ago(59.9))]);
      const latest = await w.observe.call({ method: 'POST', url: '/api/audit/checkpoint' });
      assert.equal(latest.statusCode, 201, latest.body);
      const from = savedCheckpoint(w).treeSize;
      const to = latest.json<Checkpoint>().treeSize;
      assert.ok(to > from);
      const leaf = await db(w).selectFrom('audit_log_leaves').select('idx').where('item_id', '=', w.acks.c[5]!.id).executeTakeFirstOrThrow();
      const index = Number(leaf.idx);
      await db(w).deleteFrom('audit_log_leaves').where('idx', '=', index).execute();

      for (const url of [`/api/audit/consistency?from=${from}&to=${to}`, '/api/audit/export?sessionId=t-c']) {
        const response = await w.observe.call({ method: 'GET', url });
        assert.equal(response.statusCode, 409, `${url}: ${response.body}`);
        const body = response.json<{ code: string; error: string }>();
        assert.equal(body.code, 'audit_log_incomplete');
        assert.match(body.error, new RegExp(`missing leaf ${index}\\b`));
      }

      const result = await runVerify(['--url', w.url, '--checkpoint', w.saved], w.observe.key);
      assert.equal(result.status, 1, `exit 1 (tampered): ${result.stderr}\n${JSON.stringify(result.report)}`);
      const consistency = result.report.findings.find((finding) => finding.check === 'consistency');
      assert.equal(consistency?.leafIndex, index, JSON.stringify(result.report.findings));
      assert.match(consistency.message, new RegExp(`cannot prove tree size ${from} a prefix of tree size ${to}: The audit log is missing leaf ${index}`));
      assert.ok(
        result.report.findings.some((finding) => finding.check === 'leaf-order' && finding.leafIndex === index),
        JSON.stringify(result.report.findings),
      );
    });
  });

  test("a tail cut under a rewritten head: the server's own verify holds the chain to the log and reports the cut", async () => {
    await withWorld(backend, async (w) => {
      await db(w).deleteFrom('events').where('id', 'in', [w.acks.a[4]!.id, w.acks.a[5]!.id]).execute();
      await db(w).updateTable('sessions').set({ last_seq: 3, last_hash: w.acks.a[3]!.hash }).where('id', '=', 't-a').execute();
      const verdict = await serverVerdict(w.observe, 't-a');
      assert.notEqual(verdict, 404);
      const { valid, brokenAt } = verdict as Exclude<typeof verdict, 404>;
      assert.equal(valid, false);
      assert.equal(brokenAt?.seq, 4);
      assert.match(brokenAt.reason, /the audit log holds 6 events of this session but its chain ends at seq 3/);
      // An untouched session stays valid: the count is of its own leaves.
      const untouched = await serverVerdict(w.observe, 't-b');
      assert.notEqual(untouched, 404);
      assert.deepEqual([(untouched as Exclude<typeof untouched, 404>).valid, (untouched as Exclude<typeof untouched, 404>).brokenAt], [true, null]);
    });
  });

  test('a key inserted into the audit keys signs a tombstone and a checkpoint: never trusted; without a pinned key the verdict is UNVERIFIED (exit 3)', async () => {
    await withWorld(backend, async (w) => {
      const genuine = (await w.observe.call({ method: 'GET', url: '/api/audit/public-key' })).json<{ publicKey: string; keyId: string }>();
      const forgedKeyId = await launderDeletion(w, genuine.keyId);

      // With the saved checkpoint (its key pinned by its keyId) or the genuine key given: tampered.
      for (const pin of [
        ['--checkpoint', w.saved],
        ['--public-key', genuine.publicKey],
      ]) {
        const result = await runVerify<VerdictReport>(['--url', w.url, ...pin], w.observe.key);
        assert.equal(result.status, 1, `${pin[0]}: exit 1: ${result.stderr}\n${JSON.stringify(result.report)}`);
        const findings = result.report.findings;
        assert.ok(
          findings.some((f) => f.check === 'untrusted-key' && f.message.includes(forgedKeyId)),
          `the forged checkpoint's key is named: ${JSON.stringify(findings)}`,
        );
        assert.ok(
          findings.some((f) => f.check === 'tombstone' && f.sessionId === 't-b' && f.message.includes(forgedKeyId)),
          JSON.stringify(findings),
        );
        assert.ok(
          findings.some((f) => f.check === 'session-deleted' && f.sessionId === 't-b'),
          `the deletion is not retention: ${JSON.stringify(findings)}`,
        );
      }

      // No pinned key: every check passes against the server's keys, but that is all it can say.
      const unpinned = await runVerify<VerdictReport>(['--url', w.url], w.observe.key);
      assert.equal(unpinned.status, 3, `exit 3 (unverified): ${unpinned.stderr}\n${JSON.stringify(unpinned.report)}`);
      assert.equal(unpinned.report.valid, false);
      assert.equal(unpinned.report.verdict, 'unverified');
      assert.match(unpinned.report.summary, /^UNVERIFIED \(no trusted key/);
      assert.ok(
        unpinned.report.notes.some((note) => /NOT checked against a trusted key/.test(note) && note.includes(forgedKeyId) && note.includes(genuine.keyId)),
        JSON.stringify(unpinned.report.notes),
      );
    });
  });

  test('a rotation certified by the previous key in the log: the new key is trusted from a checkpoint saved under the old one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vigil-certified-'));
    const oldKey = pem();
    const before = await startTestObserve(backend, { env: { AUDIT_SIGNING_KEY: oldKey } });
    let after: Awaited<ReturnType<typeof startTestObserve>> | undefined;
    try {
      await ingestEvents(before, [started('cr-a', 'agent', ago(30)), custom('cr-a', 'agent', ago(29))]);
      const savedResponse = await before.call({ method: 'POST', url: '/api/audit/checkpoint' });
      const saved = join(dir, 'saved.json');
      writeFileSync(saved, savedResponse.body);
      await before.close();

      const rotated = await startTestObserve(backend, {
        env: { AUDIT_SIGNING_KEY: pem(), AUDIT_PREVIOUS_SIGNING_KEY: oldKey },
        database: before.config.database,
        createKey: false,
      });
      after = rotated;
      const call = (request: Parameters<typeof rotated.call>[0]) =>
        rotated.service.app.inject({ ...request, headers: { authorization: `Bearer ${before.key}` } });
      const listing = (await call({ method: 'GET', url: '/api/audit/public-key' })).json<{
        keyId: string;
        keys: { keyId: string; certificate: { leafIndex: number; body: string } | null }[];
      }>();
      const newKey = listing.keys.find((key) => key.keyId === listing.keyId)!;
      assert.equal(newKey.certificate?.leafIndex, savedResponse.json<Checkpoint>().treeSize, 'the certificate is the next leaf of the log');
      assert.match(newKey.certificate.body, new RegExp(`"kind":"key-rotation".*"previousKeyId":"${savedResponse.json<Checkpoint>().keyId}"`));
      assert.equal(listing.keys.find((key) => key.keyId !== listing.keyId)?.certificate, null);
      await call({ method: 'POST', url: '/api/events', payload: { events: [custom('cr-a', 'agent', ago(20))] } });
      assert.equal((await call({ method: 'POST', url: '/api/audit/checkpoint' })).json<Checkpoint>().keyId, listing.keyId);

      await rotated.service.app.listen({ host: '127.0.0.1', port: 0 });
      const url = `http://127.0.0.1:${(rotated.service.app.server.address() as AddressInfo).port}`;
      const result = await runVerify<VerdictReport>(['--url', url, '--checkpoint', saved], before.key);
      assert.equal(result.status, 0, `${result.stderr}\n${JSON.stringify(result.report)}`);
      assert.ok(
        result.report.notes.some(
          (note) => note.includes(`key ${listing.keyId} is trusted: certified by key`) && note.includes(`(leaf ${newKey.certificate!.leafIndex})`),
        ),
        JSON.stringify(result.report.notes),
      );
      // The certificate's leaf is not an event: the walk accounts for it, and its row changed is a finding.
      await rotated.service.context.database.db.updateTable('audit_keys').set({ certificate_leaf: 1 }).where('key_id', '=', listing.keyId).execute();
      const moved = await runVerify<VerdictReport>(['--url', url, '--checkpoint', saved], before.key);
      assert.equal(moved.status, 1, `${moved.stderr}\n${JSON.stringify(moved.report)}`);
      assert.ok(
        moved.report.findings.some((f) => f.check === 'key-certificate' && f.leafIndex === 1),
        JSON.stringify(moved.report.findings),
      );
    } finally {
      await after?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the verdict says how far back the earliest checkpoint it was given reaches (tree size and time)', async () => {
    await withWorld(backend, async (w) => {
      const saved = savedCheckpoint(w);
      await ingestEvents(w.observe, [custom('t-a', 'agent-t', ago(50))]);
      assert.equal((await w.observe.call({ method: 'POST', url: '/api/audit/checkpoint' })).statusCode, 201);
      const result = await runVerify<VerdictReport>(['--url', w.url, '--checkpoint', w.saved], w.observe.key);
      assert.equal(result.status, 0, `${result.stderr}\n${JSON.stringify(result.report)}`);
      assert.equal(result.report.verdict, 'valid');
      assert.deepEqual(result.report.coverage, { treeSize: saved.treeSize, timestamp: saved.timestamp, source: 'saved' });
      assert.ok(
        result.report.summary.includes(`evidence from the saved checkpoint at tree size ${saved.treeSize} (${saved.timestamp}) on`),
        result.report.summary,
      );

      const genuine = (await w.observe.call({ method: 'GET', url: '/api/audit/public-key' })).json<{ publicKey: string }>();
      const latestOnly = await runVerify<VerdictReport>(['--url', w.url, '--public-key', genuine.publicKey], w.observe.key);
      assert.equal(latestOnly.status, 0, `${latestOnly.stderr}\n${JSON.stringify(latestOnly.report)}`);
      assert.equal(latestOnly.report.coverage.source, 'latest');
      assert.equal(latestOnly.report.coverage.treeSize, saved.treeSize + 3, 'the event, its writer leaf and the heads leaf');
      assert.match(latestOnly.report.summary, /no saved checkpoint: the evidence is the server's own signature/);
    });
  });
});
