import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { canonicalJson, hashBytes, sha256Hex, type Checkpoint } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { verifyText as verify } from './verify-testkit.ts';
import { ago, clockOf, custom, ingestEvents, started, startTestObserve, type TestObserve } from '@vigil/observe/testing';

interface BundleFile {
  sessionId: string;
  events: string[];
  leaves: ({ index: number; proof: string[] } | null)[];
  checkpoint: Checkpoint;
  publicKey: string;
  head: { seq: number; hash: string | null };
}

await describeEachDatabase('vigil verify', (backend) => {
  let observe: TestObserve;
  let url = '';
  let saved = '';
  let savedCheckpoint: Checkpoint;
  const dir = mkdtempSync(join(tmpdir(), 'vigil-verify-'));
  const env = (): Record<string, string> => ({ VIGIL_API_KEY: observe.key });
  const db = () => observe.service.context.database.db;

  const file = (name: string, content: unknown): string => {
    const path = join(dir, name);
    writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
    return path;
  };

  async function exportBundle(sessionId: string, since?: number): Promise<BundleFile> {
    const response = await observe.call({ method: 'GET', url: `/api/audit/export?sessionId=${sessionId}${since === undefined ? '' : `&since=${since}`}` });
    assert.equal(response.statusCode, 200, response.body);
    return response.json<BundleFile>();
  }

  function session(id: string, count: number, minutesAgo = 30): unknown[] {
    return [started(id, 'agent-v', ago(minutesAgo)), ...Array.from({ length: count - 1 }, (_, i) => custom(id, 'agent-v', ago(minutesAgo - (i + 1) / 100)))];
  }

  before(async () => {
    observe = await startTestObserve(backend);
    await observe.service.app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(observe.service.app.server.address() as AddressInfo).port}`;
    await ingestEvents(observe, [...session('v-a', 12), ...session('v-b', 5)]);
    await ingestEvents(observe, session('v-old', 4, 3 * 24 * 60));
    const response = await observe.call({ method: 'POST', url: '/api/audit/checkpoint' });
    assert.equal(response.statusCode, 201, response.body);
    savedCheckpoint = response.json<Checkpoint>();
    saved = file('saved.json', savedCheckpoint);
    await ingestEvents(observe, [...session('v-a', 3, 20).slice(1), ...session('v-c', 3, 10)]);
  });
  after(async () => {
    await observe.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a genuine bundle verifies (exit 0) against the trusted key or a saved checkpoint; with neither it is unverified (exit 3)', async () => {
    const bundle = await exportBundle('v-a');
    assert.equal(bundle.events.length, 14);
    assert.ok(bundle.leaves.every((leaf) => leaf !== null));
    const path = file('a.json', bundle);

    // No key given: the bundle names its own, which proves nothing (issue 36).
    const plain = await verify([path]);
    assert.equal(plain.status, 3, plain.stdout + plain.stderr);
    assert.match(plain.stdout, /^UNVERIFIED \(no trusted key[^)]*\): session v-a, 14 events/m);
    assert.match(plain.stderr, /taken from the bundle: the signatures were NOT checked against a trusted key/);

    const publicKey = (await observe.call({ method: 'GET', url: '/api/audit/public-key' })).json<{ publicKey: string; publicKeyPem: string }>();
    for (const key of [publicKey.publicKey, file('key.pem', publicKey.publicKeyPem)]) {
      const trusted = await verify([path, '--public-key', key]);
      assert.equal(trusted.status, 0, trusted.stdout + trusted.stderr);
      assert.doesNotMatch(trusted.stderr, /taken from the bundle/);
    }

    // The saved checkpoint is older: its consistency proof from the bundle (?since=) or fetched with --url.
    const since = file('a-since.json', await exportBundle('v-a', savedCheckpoint.treeSize));
    const offline = await verify([since, '--checkpoint', saved]);
    assert.equal(offline.status, 0, offline.stdout + offline.stderr);
    assert.match(offline.stdout, /consistent with the saved checkpoint/);
    const online = await verify([path, '--checkpoint', saved, '--url', url], env());
    assert.equal(online.status, 0, online.stdout + online.stderr);
    // A checkpoint as a witness received it (webhook body, witness file line) serves as well.
    const publicKeyB64 = (await observe.call({ method: 'GET', url: '/api/audit/public-key' })).json<{ publicKey: string }>().publicKey;
    const witnessed = file('witnessed.json', { type: 'audit.checkpoint', log: 'vigil-observe', checkpoint: savedCheckpoint, publicKey: publicKeyB64 });
    const fromWitness = await verify([since, '--checkpoint', witnessed]);
    assert.equal(fromWitness.status, 0, fromWitness.stdout + fromWitness.stderr);
    const gateWitness = await verify([
      since,
      '--checkpoint',
      file('gate-witness.json', { type: 'audit.checkpoint', log: 'vigil-gate', checkpoint: savedCheckpoint }),
    ]);
    assert.equal(gateWitness.status, 2);
    assert.match(gateWitness.stderr, /checkpoint of the log "vigil-gate"/);
    const missingProof = await verify([path, '--checkpoint', saved]);
    assert.equal(missingProof.status, 2, 'no proof and no --url: not a verdict');
    assert.match(missingProof.stderr, /export the bundle with \?since=/);

    const json = await verify([path, '--json', '--checkpoint', saved, '--url', url], env());
    assert.equal(json.status, 0);
    const report = JSON.parse(json.stdout) as Record<string, unknown>;
    assert.deepEqual(report, {
      valid: true,
      verdict: 'valid',
      mode: 'bundle',
      summary: report.summary,
      findings: [],
      notes: [],
      coverage: { treeSize: savedCheckpoint.treeSize, timestamp: savedCheckpoint.timestamp, source: 'saved' },
    });
    const unpinnedJson = JSON.parse((await verify([path, '--json'])).stdout) as Record<string, unknown>;
    assert.deepEqual([unpinnedJson.valid, unpinnedJson.verdict], [false, 'unverified']);
  });

  test('an edited event, swapped events, a missing leaf, a bad signature, a wrong key: exit 1 naming where', async () => {
    const bundle = await exportBundle('v-a');
    const leafOf = (seq: number) => bundle.leaves[seq]!.index;

    const edited = structuredClone(bundle);
    edited.events[3] = edited.events[3]!.replace('"eventType":"custom"', '"eventType":"customised"');
    const editedResult = await verify([file('edited.json', edited)]);
    assert.equal(editedResult.status, 1);
    assert.match(editedResult.stdout, new RegExp(`^inclusion \\[session v-a, seq 3, event [^,]+, leaf ${leafOf(3)}\\]`, 'm'));
    assert.match(editedResult.stdout, /^TAMPERED: session v-a/m);

    const swapped = structuredClone(bundle);
    [swapped.events[4], swapped.events[5]] = [swapped.events[5]!, swapped.events[4]!];
    const swappedResult = await verify([file('swapped.json', swapped)]);
    assert.equal(swappedResult.status, 1);
    assert.match(swappedResult.stdout, new RegExp(`^inclusion \\[session v-a, seq 5, event [^,]+, leaf ${leafOf(4)}\\]`, 'm'));

    const unlogged = structuredClone(bundle);
    unlogged.leaves[6] = null;
    const unloggedResult = await verify([file('unlogged.json', unlogged)]);
    assert.equal(unloggedResult.status, 1);
    assert.match(unloggedResult.stdout, /^not-logged \[session v-a, seq 6, event [^\]]+\]: .* has no leaf/m);

    const badSignature = structuredClone(bundle);
    badSignature.checkpoint.signature = Buffer.alloc(64, 7).toString('base64');
    const badResult = await verify([file('bad-signature.json', badSignature)]);
    assert.equal(badResult.status, 1);
    assert.match(badResult.stdout, /^checkpoint-signature: the checkpoint at tree size \d+ is not signed/m);

    const otherKey = Buffer.from(generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64');
    const wrongKey = await verify([file('a.json', bundle), '--public-key', otherKey]);
    assert.equal(wrongKey.status, 1);
    assert.match(wrongKey.stdout, /^public-key: the bundle's public key \(\w+\) is not the given key/m);
  });

  test('a saved checkpoint the log is not consistent with: exit 1', async () => {
    const bundle = file('a2.json', await exportBundle('v-a'));
    // Another root at the saved size: the log the bundle comes from does not extend it.
    const other = { ...savedCheckpoint, rootHash: sha256Hex('another log') };
    const result = await verify([bundle, '--checkpoint', file('other.json', other), '--url', url], env());
    assert.equal(result.status, 1);
    assert.match(result.stdout, /^consistency: the checkpoint at tree size \d+ is not a prefix of the one at tree size \d+/m);
  });

  test('the online audit of an intact log is valid; a retention run is reported as retention, not tampering', async () => {
    await observe.call({ method: 'POST', url: '/api/audit/checkpoint' });
    const intact = await verify(['--url', url, '--checkpoint', saved], env());
    assert.equal(intact.status, 0, intact.stdout + intact.stderr);
    assert.match(intact.stdout, /^VALID: \d+ leaves \(\d+ events in 4 sessions\) match the checkpoint at tree size \d+, consistent with the saved checkpoint/m);
    const deep = await verify(['--url', url, '--checkpoint', saved, '--deep'], env());
    assert.equal(deep.status, 0, deep.stdout + deep.stderr);

    assert.equal((await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 1 } })).statusCode, 200);
    await observe.service.jobs.retention.tick();
    assert.equal((await db().selectFrom('sessions').select('id').where('id', '=', 'v-old').execute()).length, 0, 'retention deleted v-old');
    assert.equal((await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 0 } })).statusCode, 200);
    const retained = await verify(['--url', url, '--checkpoint', saved, '--json'], env());
    assert.equal(retained.status, 0, retained.stdout + retained.stderr);
    const report = JSON.parse(retained.stdout) as { valid: boolean; findings: unknown[]; notes: string[]; summary: string };
    assert.deepEqual(report.findings, []);
    assert.match(report.summary, /4 removed by retention/);
    assert.ok(
      report.notes.some((note) => /4 logged events were deleted by retention \(1 signed tombstone account for them\): session v-old/.test(note)),
      report.notes.join('\n'),
    );
  });

  test('tampering in the database: an edited event in its bundle, a deleted session and a forged event in the online audit', async () => {
    // An edited payload: the export still answers, the verifier names the event.
    const target = await db().selectFrom('events').select(['id', 'payload']).where('session_id', '=', 'v-b').where('seq', '=', 2).executeTakeFirstOrThrow();
    await db()
      .updateTable('events')
      .set({ payload: target.payload.replace('{', '{"forged":true,') })
      .where('id', '=', target.id)
      .execute();
    const editedBundle = await verify([file('b.json', await exportBundle('v-b'))]);
    assert.equal(editedBundle.status, 1);
    assert.match(editedBundle.stdout, new RegExp(`^inclusion \\[session v-b, seq 2, event ${target.id}, leaf \\d+\\]`, 'm'));

    // A derived column edited: only --deep sees it.
    await db().updateTable('events').set({ cost_usd: 12.5 }).where('session_id', '=', 'v-b').where('seq', '=', 1).execute();

    // A whole session removed, rows and all.
    await db().deleteFrom('events').where('session_id', '=', 'v-c').execute();
    await db().deleteFrom('sessions').where('id', '=', 'v-c').execute();

    // An event forged after v-a's head with a correct hash, the head moved to it.
    const head = await db().selectFrom('sessions').select(['last_seq', 'last_hash']).where('id', '=', 'v-a').executeTakeFirstOrThrow();
    const last = await db().selectFrom('events').selectAll().where('session_id', '=', 'v-a').where('seq', '=', head.last_seq).executeTakeFirstOrThrow();
    // The attacker knows the published recipe (docs/audit.md).
    const forged = { ...last, id: 'forged-event-0001', seq: head.last_seq + 1, prev_hash: head.last_hash, ts: last.ts + 1 };
    const forgedHash = sha256Hex(
      canonicalJson({
        v: 1,
        id: forged.id,
        seq: forged.seq,
        timestamp: new Date(forged.ts).toISOString(),
        sessionId: 'v-a',
        agentId: forged.agent_id,
        eventType: forged.event_type,
        severity: forged.severity,
        payload: JSON.parse(forged.payload),
        metadata: JSON.parse(forged.metadata),
        prevHash: forged.prev_hash,
      }),
    );
    await db()
      .insertInto('events')
      .values({ ...forged, prev_hash: hashBytes(forged.prev_hash!), hash: hashBytes(forgedHash) })
      .execute();
    await db().updateTable('sessions').set({ last_seq: forged.seq, last_hash: forgedHash }).where('id', '=', 'v-a').execute();
    clockOf(observe).advance(1000);

    const audit = await verify(['--url', url, '--checkpoint', saved], env());
    assert.equal(audit.status, 1, audit.stdout + audit.stderr);
    assert.match(audit.stdout, new RegExp(`^leaf \\[session v-b, seq 2, event ${target.id}, leaf \\d+\\]`, 'm'));
    assert.match(audit.stdout, /^session-deleted \[session v-c, leaf \d+\]: session v-c was deleted: its 3 logged events are gone/m);
    assert.match(audit.stdout, /^unlogged \[session v-a, seq 14, event forged-event-0001\]: .*no leaf in the audit log/m);
    assert.match(audit.stdout, /^TAMPERED: \d+ findings/m);
    assert.doesNotMatch(audit.stdout, /v-old/, 'the retention run stays retention');
    assert.doesNotMatch(audit.stdout, /^derived/m);
    const deep = await verify(['--url', url, '--checkpoint', saved, '--deep'], env());
    assert.equal(deep.status, 1);
    assert.match(deep.stdout, /^derived \[session v-b, seq 1, event [^\]]+\]: .*cost_usd is stored as 12\.5/m);
  });
});
