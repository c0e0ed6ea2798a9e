import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { afterEach, beforeEach, test } from 'node:test';
import { canonicalJson, ManualClock, sha256Hex } from '@vigil/platform';
import { describeEachDatabase, type TestBackend } from '@vigil/platform/testing';
import type { AuditEntry } from '../audit-trail/index.ts';
import { receiptSignatureValid, RECEIPT_TTL_MS, type Receipt } from '../stored-formats/index.ts';
import { assertGateError, startTestGate, type TestGate } from '../testing.ts';

const pem = () => generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
const PARAMS = { amount: 2500, to: 'acct-42', memo: { b: 1, a: [1, 2] } };

interface PublicKeys {
  keyId: string;
  publicKey: string;
  keys: { keyId: string; publicKey: string }[];
}

async function publicKeys(gate: TestGate): Promise<PublicKeys> {
  return (await gate.call({ method: 'GET', url: '/api/audit/public-key' })).json<PublicKeys>();
}

async function pendingRequest(gate: TestGate, action = 'pay', params: object = PARAMS): Promise<string> {
  const response = await gate.call({ method: 'POST', url: '/api/requests', payload: { action, params } });
  assert.equal(response.statusCode, 201, response.body);
  return response.json<{ id: string }>().id;
}

async function approve(gate: TestGate, id: string, key?: string): Promise<Receipt> {
  const response = await gate.call({ method: 'POST', url: `/api/requests/${id}/decide`, payload: { decision: 'approved' } }, key);
  assert.equal(response.statusCode, 200, response.body);
  const { receipt } = response.json<{ receipt: Receipt | null }>();
  assert.ok(receipt, 'an approving decision answers its receipt');
  return receipt;
}

const redeem = (gate: TestGate, receipt: unknown, action: string, params: object, key?: string) =>
  gate.call({ method: 'POST', url: '/api/receipts/redeem', payload: { receipt, action, params } }, key);

async function approvedReceipt(gate: TestGate): Promise<Receipt> {
  return approve(gate, await pendingRequest(gate));
}

await describeEachDatabase('approval receipts', (backend) => {
  let gate: TestGate;
  beforeEach(async () => {
    gate = await startTestGate(backend);
  });
  afterEach(() => gate.close());

  test('a human approval yields a receipt signed with the audit key over the canonical JSON of its fields; GET answers the same one', async () => {
    const id = await pendingRequest(gate);
    const pending = await gate.call({ method: 'GET', url: `/api/requests/${id}` });
    assert.equal(pending.json<{ receipt: unknown }>().receipt, null);
    assertGateError(await gate.call({ method: 'GET', url: `/api/requests/${id}/receipt` }), 404, 'not_found', 'pending');

    const key = await gate.createKey(['request:decide', 'request:read'], null, 'cfo-bot');
    const receipt = await approve(gate, id, key);
    const keys = await publicKeys(gate);
    assert.deepEqual(Object.keys(receipt).sort(), [
      'action',
      'argsDigest',
      'decidedBy',
      'decision',
      'expiresAt',
      'issuedAt',
      'keyId',
      'nonce',
      'policyId',
      'requestId',
      'signature',
      'v',
    ]);
    assert.equal(receipt.v, 1);
    assert.equal(receipt.requestId, id);
    assert.equal(receipt.action, 'pay');
    assert.equal(receipt.decision, 'approved');
    assert.equal(receipt.argsDigest, sha256Hex(canonicalJson(PARAMS)));
    assert.deepEqual(receipt.decidedBy, { keyId: await gate.keyIdOf(key), name: 'cfo-bot' });
    assert.equal(receipt.policyId, null);
    assert.equal(receipt.keyId, keys.keyId, 'signed with the audit (checkpoint) key');
    assert.equal(Date.parse(receipt.expiresAt) - Date.parse(receipt.issuedAt), RECEIPT_TTL_MS);
    assert.ok(receiptSignatureValid(receipt, Buffer.from(keys.publicKey, 'base64')));

    const fetched = await gate.call({ method: 'GET', url: `/api/requests/${id}/receipt` });
    assert.equal(fetched.statusCode, 200, fetched.body);
    assert.deepEqual(fetched.json(), receipt, 'the receipt is the same on every read');
    assert.deepEqual((await gate.call({ method: 'GET', url: `/api/requests/${id}` })).json<{ receipt: unknown }>().receipt, receipt);

    for (const field of ['action', 'argsDigest', 'expiresAt', 'requestId'] as const) {
      const altered = { ...receipt, [field]: field === 'expiresAt' ? '2099-01-01T00:00:00.000Z' : field === 'argsDigest' ? '0'.repeat(64) : 'other' };
      assert.equal(receiptSignatureValid(altered, Buffer.from(keys.publicKey, 'base64')), false, `${field} altered`);
    }
  });

  test('a policy auto-approve answers its receipt at creation, naming the policy; a deny has none', async () => {
    const policy = await gate.call({
      method: 'POST',
      url: '/api/policies',
      payload: {
        name: 'reads',
        rules: [
          { match: { action: 'read_file' }, decision: 'auto_approve' },
          { match: { action: 'rm' }, decision: 'auto_deny' },
        ],
      },
    });
    const policyId = policy.json<{ id: string }>().id;
    const created = await gate.call({ method: 'POST', url: '/api/requests', payload: { action: 'read_file', params: { path: '/etc/hosts' } } });
    const body = created.json<{ id: string; receipt: Receipt }>();
    assert.equal(body.receipt.policyId, policyId);
    assert.deepEqual(body.receipt.decidedBy, { user: `policy:${policyId}` });
    assert.deepEqual((await gate.call({ method: 'GET', url: `/api/requests/${body.id}/receipt` })).json(), body.receipt);

    const denied = (await gate.call({ method: 'POST', url: '/api/requests', payload: { action: 'rm', params: {} } })).json<{ id: string; receipt: unknown }>();
    assert.equal(denied.receipt, null);
    assertGateError(await gate.call({ method: 'GET', url: `/api/requests/${denied.id}/receipt` }), 404, 'not_found', 'denied');
  });

  test('redeem: 200 once, recorded in the audit chain naming the redeeming key; a replay is 409', async () => {
    const receipt = await approvedReceipt(gate);
    const agent = await gate.createKey(['request:create', 'request:read'], null, 'agent-7');
    const first = await redeem(gate, receipt, 'pay', { memo: { a: [1, 2], b: 1 }, to: 'acct-42', amount: 2500 }, agent);
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.json<{ redeemedBy: string }>().redeemedBy, 'api:agent-7');
    assertGateError(await redeem(gate, receipt, 'pay', PARAMS, agent), 409, 'conflict', 'replay');

    const trail = (await gate.call({ method: 'GET', url: `/api/requests/${receipt.requestId}/audit` })).json<AuditEntry[]>();
    assert.deepEqual(
      trail.map((entry) => entry.event),
      ['created', 'approved', 'redeemed'],
    );
    const redeemed = trail[2]!;
    assert.equal(redeemed.actor, 'api:agent-7');
    assert.equal(redeemed.actorKeyId, await gate.keyIdOf(agent));
    assert.deepEqual(redeemed.details, { nonce: receipt.nonce, receiptKeyId: receipt.keyId });
    const verdict = (await gate.call({ method: 'GET', url: `/api/requests/${receipt.requestId}/audit/verify` })).json<{ valid: boolean }>();
    assert.equal(verdict.valid, true);
    // The request still reads (its row matches its chain) and can be confirmed after the redemption.
    assert.equal((await gate.call({ method: 'GET', url: `/api/requests/${receipt.requestId}` })).statusCode, 200);
    assert.equal((await gate.call({ method: 'POST', url: `/api/requests/${receipt.requestId}/confirm`, payload: { result: { ok: true } } })).statusCode, 200);
  });

  test('redeem at creation: a policy-approved request is redeemed in its creating transaction (one redeemed entry; a later redeem is 409); a pending one is not', async () => {
    await gate.call({
      method: 'POST',
      url: '/api/policies',
      payload: { name: 'reads', rules: [{ match: { action: 'read_file' }, decision: 'auto_approve' }] },
    });
    const agent = await gate.createKey(['request:create', 'request:read'], null, 'gateway-1');
    const params = { path: '/etc/hosts' };
    const created = await gate.call({ method: 'POST', url: '/api/requests', payload: { action: 'read_file', params, redeem: true } }, agent);
    assert.equal(created.statusCode, 201, created.body);
    const { id, status, receipt } = created.json<{ id: string; status: string; receipt: Receipt }>();
    assert.equal(status, 'approved');
    assertGateError(await redeem(gate, receipt, 'read_file', params, agent), 409, 'conflict', 'replay');

    const trail = (await gate.call({ method: 'GET', url: `/api/requests/${id}/audit` })).json<AuditEntry[]>();
    assert.deepEqual(
      trail.map((entry) => entry.event),
      ['created', 'approved', 'redeemed'],
    );
    assert.equal(trail[2]!.actor, 'api:gateway-1');
    assert.equal(trail[2]!.actorKeyId, await gate.keyIdOf(agent));
    assert.deepEqual(trail[2]!.details, { nonce: receipt.nonce, receiptKeyId: receipt.keyId });
    const verdict = (await gate.call({ method: 'GET', url: `/api/requests/${id}/audit/verify` })).json<{ valid: boolean }>();
    assert.equal(verdict.valid, true);
    assert.equal((await gate.call({ method: 'GET', url: `/api/requests/${id}` })).statusCode, 200);

    // Left pending (no policy): nothing redeemed; the receipt of the later approval redeems once as usual.
    const pending = await gate.call({ method: 'POST', url: '/api/requests', payload: { action: 'pay', params: PARAMS, redeem: true } }, agent);
    const pendingId = pending.json<{ id: string }>().id;
    const later = await approve(gate, pendingId);
    assert.equal((await redeem(gate, later, 'pay', PARAMS, agent)).statusCode, 200);
    assertGateError(
      await gate.call({ method: 'POST', url: '/api/requests', payload: { action: 'pay', params: PARAMS, redeem: 'yes' } }, agent),
      400,
      'bad_request',
      'redeem',
    );
  });

  test('changed params or another action: 422, and the receipt stays unredeemed', async () => {
    const receipt = await approvedReceipt(gate);
    assertGateError(await redeem(gate, receipt, 'pay', { ...PARAMS, amount: 250000 }, undefined), 422, 'receipt_mismatch', 'params');
    assertGateError(await redeem(gate, receipt, 'pay_twice', PARAMS), 422, 'receipt_mismatch', 'action');
    assert.equal((await redeem(gate, receipt, 'pay', PARAMS)).statusCode, 200);
  });

  test('expired: 410 past expiresAt', async () => {
    const receipt = await approvedReceipt(gate);
    gate.clock.advance(RECEIPT_TTL_MS);
    assertGateError(await redeem(gate, receipt, 'pay', PARAMS), 410, 'receipt_expired', 'expired');
  });

  test('forged or malformed: 401 for a signature that does not verify, 400 for a malformed receipt', async () => {
    const receipt = await approvedReceipt(gate);
    const other = await startTestGate(backend);
    try {
      // Signed by another gate's key: valid in itself, not this gate's.
      const foreign = await approvedReceipt(other);
      assertGateError(await redeem(gate, foreign, 'pay', PARAMS), 401, 'unauthorized', 'foreign key');
    } finally {
      await other.close();
    }
    const later = new Date(Date.parse(receipt.expiresAt) + 3_600_000).toISOString();
    assertGateError(await redeem(gate, { ...receipt, expiresAt: later }, 'pay', PARAMS), 401, 'unauthorized', 'extended expiry');
    const digest = sha256Hex(canonicalJson({ ...PARAMS, amount: 1 }));
    assertGateError(await redeem(gate, { ...receipt, argsDigest: digest }, 'pay', { ...PARAMS, amount: 1 }), 401, 'unauthorized', 'rebound args');
    const flipped = receipt.signature.slice(0, 10) + (receipt.signature[10] === 'A' ? 'B' : 'A') + receipt.signature.slice(11);
    assertGateError(await redeem(gate, { ...receipt, signature: flipped }, 'pay', PARAMS), 401, 'unauthorized', 'flipped signature');

    const { signature: _, ...unsigned } = receipt;
    assertGateError(await redeem(gate, unsigned, 'pay', PARAMS), 400, 'bad_request', 'no signature');
    assertGateError(await redeem(gate, { ...receipt, v: 2 }, 'pay', PARAMS), 400, 'bad_request', 'version');
    assertGateError(await redeem(gate, { ...receipt, extra: 1 }, 'pay', PARAMS), 400, 'bad_request', 'extra field');
    assertGateError(await redeem(gate, 'receipt', 'pay', PARAMS), 400, 'bad_request', 'not an object');
    // None of them redeemed it.
    assert.equal((await redeem(gate, receipt, 'pay', PARAMS)).statusCode, 200);
  });

  test('redeeming takes the request:create scope', async () => {
    const receipt = await approvedReceipt(gate);
    const reader = await gate.createKey(['request:read']);
    assertGateError(await redeem(gate, receipt, 'pay', PARAMS, reader), 403, 'forbidden', 'read-only key');
  });
});

await describeEachDatabase('approval receipts across instances and key rotations', (backend: TestBackend) => {
  test('concurrent redeems of one receipt on two gate instances: exactly one succeeds, one redeemed entry', async () => {
    const clock = new ManualClock(Date.parse('2026-11-22T10:00:00.000Z'));
    const signingKey = pem();
    const first = await startTestGate(backend, { clock, env: { AUDIT_SIGNING_KEY: signingKey } });
    const second = await startTestGate(backend, { clock, env: { AUDIT_SIGNING_KEY: signingKey }, database: first.config.database });
    try {
      const receipts = await Promise.all([1, 2, 3].map(() => approvedReceipt(first)));
      for (const receipt of receipts) {
        const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => redeem(i % 2 === 0 ? first : second, receipt, 'pay', PARAMS)));
        const statuses = answers.map((answer) => answer.statusCode).sort();
        assert.deepEqual(statuses, [200, ...Array<number>(11).fill(409)], answers.map((answer) => answer.body).join('\n'));
        const trail = (await second.call({ method: 'GET', url: `/api/requests/${receipt.requestId}/audit` })).json<AuditEntry[]>();
        assert.equal(trail.filter((entry) => entry.event === 'redeemed').length, 1);
      }
    } finally {
      await second.close();
      await first.close();
    }
  });

  test('a receipt issued before a certified rotation is still redeemed, and verifies with the key the rotation certified it from', async () => {
    const clock = new ManualClock(Date.parse('2026-11-22T10:00:00.000Z'));
    const oldKey = pem();
    const before = await startTestGate(backend, { clock, env: { AUDIT_SIGNING_KEY: oldKey } });
    const receipt = await approvedReceipt(before);
    const oldKeys = await publicKeys(before);
    await before.close();

    const after = await startTestGate(backend, {
      clock,
      env: { AUDIT_SIGNING_KEY: pem(), AUDIT_PREVIOUS_SIGNING_KEY: oldKey },
      database: before.config.database,
    });
    try {
      const keys = await publicKeys(after);
      assert.notEqual(keys.keyId, receipt.keyId, 'a new key signs now');
      const listed = keys.keys.find((key) => key.keyId === receipt.keyId);
      assert.ok(listed, 'the old key stays listed');
      assert.equal(listed.publicKey, oldKeys.publicKey);
      assert.ok(receiptSignatureValid(receipt, Buffer.from(listed.publicKey, 'base64')));
      // New receipts carry the new key.
      const fresh = await approvedReceipt(after);
      assert.equal(fresh.keyId, keys.keyId);
      assert.equal((await redeem(after, receipt, 'pay', PARAMS)).statusCode, 200, 'the old receipt redeems after the rotation');
      assert.equal((await redeem(after, fresh, 'pay', PARAMS)).statusCode, 200);
    } finally {
      await after.close();
    }
  });

  test('after a rotation that certified nothing, a receipt of the replaced key is refused (401)', async () => {
    const before = await startTestGate(backend, { env: { AUDIT_SIGNING_KEY: pem() } });
    const receipt = await approvedReceipt(before);
    await before.close();
    const after = await startTestGate(backend, { clock: before.clock, env: { AUDIT_SIGNING_KEY: pem() }, database: before.config.database });
    try {
      assertGateError(await redeem(after, receipt, 'pay', PARAMS), 401, 'unauthorized', 'uncertified');
    } finally {
      await after.close();
    }
  });
});
