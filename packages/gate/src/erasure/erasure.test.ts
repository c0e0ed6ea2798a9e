import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { leafHash, verifyBytes } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { assertGateError, everyTableText, startTestGate, type TestGate } from '../testing.ts';

const ALICE = 'alice.liddell@example.com';
const PARAMS_SECRET = 'Alice Liddell, 12 Wonderland Row';
const REASON_SECRET = 'refund for Alice Liddell approved';
const RESULT_SECRET = 'ticket opened for Alice Liddell';
const OTHER = 'bob.other@example.com';
const OTHER_SECRET = 'Bob Other, 7 Elsewhere Street';

interface Receipt {
  erasureId: string;
  subject: string;
  reason: string;
  requestedBy: string;
  requestCount: number;
  requestIds: string[];
  leaf: { index: number; body: string; signature: string; keyId: string; publicKey: string };
}

interface Verdict {
  valid: boolean;
  reason: string | null;
  erasures: { erasureId: string; entryIds: string[] }[];
}

await describeEachDatabase('gate erasure by data subject', (backend) => {
  let gate: TestGate;
  before(async () => {
    gate = await startTestGate(backend);
  });
  after(() => gate.close());

  async function create(subjectId: string, secret: string): Promise<string> {
    const response = await gate.call({
      method: 'POST',
      url: '/api/requests',
      payload: { action: 'payments.refund', params: { customer: secret, amount: 40 }, context: { subjectId, note: `for ${secret}` } },
    });
    assert.equal(response.statusCode, 201, response.body);
    return (response.json() as { id: string }).id;
  }

  async function decide(id: string, decision: 'approved' | 'denied', reason: string): Promise<void> {
    const response = await gate.call({ method: 'POST', url: `/api/requests/${id}/decide`, payload: { decision, reason } });
    assert.equal(response.statusCode, 200, response.body);
  }

  const erase = (subject: string, reason = 'GDPR Art. 17 request 2026-0142') =>
    gate.call({ method: 'DELETE', url: `/api/subjects/${encodeURIComponent(subject)}`, payload: { reason } });

  const verify = async (id: string): Promise<Verdict> => (await gate.call({ method: 'GET', url: `/api/requests/${id}/audit/verify` })).json() as Verdict;

  test('erasing a subject replaces the content of its decided and confirmed requests, keeps their chains valid under one signed leaf, and leaves no residue', async () => {
    // A webhook, so the outbox holds copies of the requests too (unreachable: they stay pending).
    const hook = await gate.call({
      method: 'POST',
      url: '/api/webhooks',
      payload: { url: 'http://127.0.0.1:9/hook', events: ['request.created', 'request.decided'] },
    });
    assert.equal(hook.statusCode, 201, hook.body);
    const confirmed = await create(ALICE, PARAMS_SECRET);
    await decide(confirmed, 'approved', REASON_SECRET);
    const confirm = await gate.call({ method: 'POST', url: `/api/requests/${confirmed}/confirm`, payload: { result: { note: RESULT_SECRET } } });
    assert.equal(confirm.statusCode, 200, confirm.body);
    const denied = await create(ALICE, PARAMS_SECRET);
    await decide(denied, 'denied', REASON_SECRET);
    const kept = await create(OTHER, OTHER_SECRET);
    await decide(kept, 'approved', 'fine');
    const before = await everyTableText(gate);
    for (const secret of [ALICE, PARAMS_SECRET, REASON_SECRET, RESULT_SECRET]) assert.ok(before.includes(secret), `${secret} stored before`);
    const { db } = gate.service.context.database;
    const deliveries = async (id: string) => (await db.selectFrom('deliveries').select('id').where('body', 'like', `%${id}%`).execute()).length;
    assert.ok((await deliveries(confirmed)) > 0, 'the outbox holds copies of the request');
    const trailBefore = (await gate.call({ method: 'GET', url: `/api/requests/${confirmed}/audit` })).json() as { id: string; seq: number; hash: string }[];

    const response = await erase(ALICE);
    assert.equal(response.statusCode, 200, response.body);
    const receipt = response.json() as Receipt;
    assert.equal(receipt.requestCount, 2);
    assert.deepEqual(receipt.requestIds, [confirmed, denied].sort());
    assert.equal(receipt.reason, 'GDPR Art. 17 request 2026-0142');
    // The requester is the admin key that asked (the first key: GATE_ADMIN_KEY), never anonymous.
    assert.match(receipt.requestedBy, /^api:/);
    assert.notEqual(receipt.subject, ALICE);
    assert.match(receipt.subject, /^[0-9a-f]{64}$/);
    // The receipt's leaf: signed by the audit key, and the log's leaf at its index.
    const body = Buffer.from(receipt.leaf.body, 'utf8');
    assert.ok(verifyBytes(body, receipt.leaf.signature, Buffer.from(receipt.leaf.publicKey, 'base64')));
    const leaf = await gate.service.context.database.db
      .selectFrom('audit_log_leaves')
      .select('leaf_hash')
      .where('idx', '=', receipt.leaf.index)
      .executeTakeFirstOrThrow();
    assert.ok(leafHash(body).equals(leaf.leaf_hash));
    const parsed = JSON.parse(receipt.leaf.body) as { kind: string; log: string; requests: { id: string }[]; events: { id: string; hash: string }[] };
    assert.equal(parsed.kind, 'erasure');
    assert.equal(parsed.log, 'vigil-gate');
    assert.deepEqual(
      parsed.requests.map((r) => r.id),
      [confirmed, denied].sort(),
    );
    // approved + confirmed of one, denied of the other: the entries whose details carried content.
    assert.equal(parsed.events.length, 3);

    const after = await everyTableText(gate);
    for (const secret of [ALICE, PARAMS_SECRET, REASON_SECRET, RESULT_SECRET]) assert.ok(!after.includes(secret), `${secret} is gone from every table`);
    assert.ok(after.includes(OTHER_SECRET), "another subject's request keeps its content");
    assert.equal(await deliveries(confirmed), 0, 'its deliveries are deleted');
    assert.ok((await deliveries(kept)) > 0, "another subject's deliveries are kept");

    // Reads pass the row check; ids, seqs and hashes are kept; the verdict names the erasure.
    const read = await gate.call({ method: 'GET', url: `/api/requests/${confirmed}` });
    assert.equal(read.statusCode, 200, read.body);
    const row = read.json() as { status: string; params: unknown; decisionReason: string; executionResult: unknown };
    assert.equal(row.status, 'approved');
    assert.deepEqual(row.params, { erased: true, erasureId: receipt.erasureId });
    assert.equal(row.decisionReason, `[erased by ${receipt.erasureId}]`);
    const trailAfter = (await gate.call({ method: 'GET', url: `/api/requests/${confirmed}/audit` })).json() as { id: string; seq: number; hash: string }[];
    assert.deepEqual(
      trailAfter.map((e) => [e.id, e.seq, e.hash]),
      trailBefore.map((e) => [e.id, e.seq, e.hash]),
    );
    for (const id of [confirmed, denied]) {
      const verdict = await verify(id);
      assert.equal(verdict.valid, true, verdict.reason ?? '');
      assert.deepEqual(
        verdict.erasures.map((e) => e.erasureId),
        [receipt.erasureId],
      );
    }
    // The list an agent polls and a late decision (under the row lock) check the erased rows the same way.
    const list = await gate.call({ method: 'GET', url: '/api/requests?limit=50' });
    assert.equal(list.statusCode, 200, list.body);
    assertGateError(
      await gate.call({ method: 'POST', url: `/api/requests/${denied}/decide`, payload: { decision: 'approved', reason: 'late' } }),
      409,
      'conflict',
      'deciding an erased request',
    );
    assert.equal((await verify(kept)).valid, true);
    assert.deepEqual((await verify(kept)).erasures, []);

    // The receipt again, and the leaves `vigil verify` reads.
    const again = await gate.call({ method: 'GET', url: `/api/erasures/${receipt.erasureId}` });
    assert.equal(again.statusCode, 200, again.body);
    assert.deepEqual(again.json(), receipt);
    const leaves = (await gate.call({ method: 'GET', url: '/api/audit/erasures' })).json() as { erasures: { erasureId: string; leafIndex: number }[] };
    assert.deepEqual(
      leaves.erasures.map((e) => [e.erasureId, e.leafIndex]),
      [[receipt.erasureId, receipt.leaf.index]],
    );
    // Erased already: no request names the subject any more.
    assertGateError(await erase(ALICE), 404, 'not_found', 'second erasure');
  });

  test('an erasure marker written in the database without a signed leaf is tampering', async () => {
    const id = await create('mallory@example.com', 'Mallory M.');
    await decide(id, 'denied', 'no');
    const forged = '{"erased":true,"erasureId":"forged-erasure"}';
    const { db } = gate.service.context.database;
    await db.updateTable('requests').set({ params: forged, context: forged }).where('id', '=', id).execute();
    const read = await gate.call({ method: 'GET', url: `/api/requests/${id}` });
    assert.match(
      assertGateError(read, 500, 'internal_error', 'read of a forged erasure'),
      /erasure marker \(erasure forged-erasure\) that no signed erasure leaf covers/,
    );
    const verdict = await verify(id);
    assert.equal(verdict.valid, false);
    assert.match(verdict.reason ?? '', /no signed erasure leaf covers/);

    // A marker in an entry's details naming a real erasure whose leaf does not list it is tampering too.
    const other = await create('trent@example.com', 'Trent T.');
    await decide(other, 'denied', 'no');
    const real = (await erase('trent@example.com')).json() as Receipt;
    const victim = await create('victor@example.com', 'Victor V.');
    await decide(victim, 'denied', 'no');
    await db
      .updateTable('audit_entries')
      .set({ details: `{"erased":true,"erasureId":"${real.erasureId}"}` })
      .where('request_id', '=', victim)
      .where('event', '=', 'denied')
      .execute();
    const broken = await verify(victim);
    assert.equal(broken.valid, false);
    assert.match(broken.reason ?? '', new RegExp(`erasure ${real.erasureId}\\) that no signed erasure leaf covers`));
  });

  test('404 for a subject no request names; 409 while a request of the subject is pending, erasing nothing', async () => {
    assertGateError(await erase('nobody@example.com'), 404, 'not_found', 'unknown subject');
    const decided = await create('carol@example.com', 'Carol C.');
    await decide(decided, 'approved', 'ok');
    const pending = await create('carol@example.com', 'Carol C.');
    const message = assertGateError(await erase('carol@example.com'), 409, 'conflict', 'pending request');
    assert.match(message, /pending/);
    const details = ((await erase('carol@example.com')).json() as { error: { details: { message: string }[] } }).error.details;
    assert.deepEqual(
      details.map((d) => d.message),
      [`request ${pending} is pending`],
    );
    assert.ok((await everyTableText(gate)).includes('Carol C.'), 'nothing erased');
    await decide(pending, 'denied', 'no');
    assert.equal((await erase('carol@example.com')).statusCode, 200);
  });

  test('a subject at a configured path of the params is indexed too; a body without a reason is 400', async () => {
    const other = await startTestGate(backend, { env: { GATE_SUBJECT_PATHS: 'params.customerId, context.subjectId' } });
    try {
      const response = await other.call({ method: 'POST', url: '/api/requests', payload: { action: 'crm.export', params: { customerId: 4711 }, context: {} } });
      const id = (response.json() as { id: string }).id;
      await other.call({ method: 'POST', url: `/api/requests/${id}/decide`, payload: { decision: 'denied' } });
      assertGateError(await other.call({ method: 'DELETE', url: '/api/subjects/4711', payload: {} }), 400, 'bad_request', 'no reason');
      const erased = await other.call({ method: 'DELETE', url: '/api/subjects/4711', payload: { reason: 'request 7' } });
      assert.equal(erased.statusCode, 200, erased.body);
      assert.deepEqual((erased.json() as Receipt).requestIds, [id]);
    } finally {
      await other.close();
    }
  });
});
