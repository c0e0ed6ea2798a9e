// `vigil verify` (a real process) over the gate's log after an erasure by data subject
// (docs/guide/erasure.md, "The gate's side"): online and offline against a checkpoint saved before
// the erasure it reports valid and names the erasure; the deletion receipt checks offline; a marker
// written in the database without a signed leaf is tampering.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startTestGate, TEST_ADMIN_KEY, type TestGate } from '@vigil/gate/testing';
import type { Checkpoint } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { runVerify, verifyText } from './verify-testkit.ts';

const SUBJECT = 'dana.subject@example.com';
const SECRET = 'Dana private matter 8812';

await describeEachDatabase('vigil verify and erased gate requests', (backend) => {
  let gate: TestGate;
  let url = '';
  let saved = '';
  let savedCheckpoint: Checkpoint;
  let publicKey = '';
  const ids: Record<'confirmed' | 'denied' | 'kept', string> = { confirmed: '', denied: '', kept: '' };
  const dir = mkdtempSync(join(tmpdir(), 'vigil-verify-gate-erasure-'));
  const file = (name: string, content: unknown): string => {
    const path = join(dir, name);
    writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
    return path;
  };
  const ok = async <T>(method: 'GET' | 'POST' | 'DELETE', path: string, payload?: Record<string, unknown>, status = 200): Promise<T> => {
    const response = await gate.call({ method, url: path, ...(payload === undefined ? {} : { payload }) });
    assert.equal(response.statusCode, status, `${method} ${path}: ${response.body}`);
    return response.json<T>();
  };
  const create = async (subjectId: string, note: string) =>
    (await ok<{ id: string }>('POST', '/api/requests', { action: 'crm.update', params: { note }, context: { subjectId } }, 201)).id;

  before(async () => {
    gate = await startTestGate(backend);
    await gate.service.app.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(gate.service.app.server.address() as AddressInfo).port}`;
    ids.confirmed = await create(SUBJECT, SECRET);
    await ok('POST', `/api/requests/${ids.confirmed}/decide`, { decision: 'approved', reason: `ok for ${SECRET}` });
    await ok('POST', `/api/requests/${ids.confirmed}/confirm`, { result: { note: SECRET } });
    ids.denied = await create(SUBJECT, `${SECRET} again`);
    await ok('POST', `/api/requests/${ids.denied}/decide`, { decision: 'denied', reason: 'no' });
    ids.kept = await create('someone-else', 'untouched');
    await ok('POST', `/api/requests/${ids.kept}/decide`, { decision: 'denied', reason: 'no' });
    // A checkpoint saved before the erasure: offline and online verification hold the log to it.
    savedCheckpoint = await ok<Checkpoint>('POST', '/api/audit/checkpoint', undefined, 201);
    saved = file('saved.json', savedCheckpoint);
    publicKey = (await ok<{ publicKey: string }>('GET', '/api/audit/public-key')).publicKey;
    const erased = await gate.call({ method: 'DELETE', url: `/api/subjects/${SUBJECT}`, payload: { reason: 'Art. 17' } });
    assert.equal(erased.statusCode, 200, erased.body);
    file('receipt.json', erased.body);
  });
  after(async () => {
    await gate.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('online: the whole log verifies with the erasure named', async () => {
    const online = await runVerify(['--url', url, '--checkpoint', saved, '--public-key', publicKey], TEST_ADMIN_KEY);
    assert.equal(online.status, 0, JSON.stringify(online.report) + online.stderr);
    assert.ok(
      online.report.notes.some((note) => /3 entries were erased .* under signed erasure leaves/.test(note)),
      online.report.notes.join('\n'),
    );
  });

  test('offline: the bundles of the erased requests verify against the checkpoint saved before the erasure', async () => {
    for (const id of [ids.confirmed, ids.denied]) {
      const response = await gate.call({ method: 'GET', url: `/api/audit/export?requestId=${id}&since=${savedCheckpoint.treeSize}` });
      assert.equal(response.statusCode, 200, response.body);
      const bundle = response.json<Record<string, unknown>>();
      assert.equal((bundle.erasures as unknown[]).length, 1);
      assert.equal(JSON.stringify(bundle).includes(SECRET), false);
      const result = await verifyText([file(`${id}.json`, bundle), '--checkpoint', saved]);
      assert.equal(result.status, 0, result.stdout + result.stderr);
      assert.match(result.stderr + result.stdout, /erased under signed erasure leaves/);
    }
  });

  test("the deletion receipt verifies offline with the gate's audit key (exit 0); altered, it is invalid (exit 1)", async () => {
    const receipt = join(dir, 'receipt.json');
    const valid = await verifyText(['erasure-receipt', receipt, '--public-key', publicKey]);
    assert.equal(valid.status, 0, valid.stdout + valid.stderr);
    assert.match(valid.stdout, /^VALID: erasure \S+ of subject [0-9a-f]{64}: 2 requests \(3 audit entries\), reason "Art. 17"/);
    const answer = JSON.parse(readFileSync(receipt, 'utf8')) as { requestCount: number };
    answer.requestCount = 1;
    const altered = await verifyText(['erasure-receipt', file('altered.json', answer), '--public-key', publicKey]);
    assert.equal(altered.status, 1, altered.stdout + altered.stderr);
    assert.match(altered.stdout, /^INVALID: it counts 1 requests, its leaf lists 2/);
  });

  test('an erasure forged in the database (a marker with no signed leaf listing it) is tampering, online and offline', async () => {
    const { db } = gate.service.context.database;
    const realErasure = (await db.selectFrom('audit_erasures').select('erasure_id').executeTakeFirstOrThrow()).erasure_id;
    const marker = `{"erased":true,"erasureId":"${realErasure}"}`;
    await db.updateTable('audit_entries').set({ details: marker }).where('request_id', '=', ids.kept).where('event', '=', 'denied').execute();
    const online = await runVerify(['--url', url, '--checkpoint', saved, '--public-key', publicKey], TEST_ADMIN_KEY);
    assert.equal(online.status, 1, JSON.stringify(online.report));
    assert.ok(
      online.report.findings.some((f) => f.check === 'erasure' && /no signed erasure leaf covers/.test(f.message)),
      JSON.stringify(online.report.findings),
    );
    const bundle = (await gate.call({ method: 'GET', url: `/api/audit/export?requestId=${ids.kept}&since=${savedCheckpoint.treeSize}` })).json<unknown>();
    const offline = await verifyText([file('kept.json', bundle), '--checkpoint', saved]);
    assert.equal(offline.status, 1, offline.stdout + offline.stderr);
    assert.match(offline.stdout, /erasure marker .* no signed erasure leaf covers/);
  });
});
