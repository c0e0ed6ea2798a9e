/**
 * Approval receipts in the SDK against a real gate (linked to a real observe): verifyReceipt with
 * the gate's key in every spelling, and runApproved refusing — without running the function — every
 * receipt that does not hold: missing, tampered, signed by another key, expired, for other
 * arguments, or replayed. A redemption is in the session once, by the agent or by the gate.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { eventually, startLiveServices, type LiveServices } from '@vigil/cli/testing';
import {
  ApprovalDeniedError,
  ApprovalReceiptError,
  canonicalJson,
  GateClient,
  ObserveClient,
  receiptArgsDigest,
  receiptKeyId,
  runApproved,
  verifyReceipt,
  withApproval,
  type ApprovalOutcome,
  type ApprovalReceipt,
} from './node.ts';

let live: LiveServices;
let observe: ObserveClient;
let admin: GateClient;
let agent: GateClient;
let agentKey: string;
let gateKey: { publicKey: string; publicKeyPem: string; keyId: string };

before(async () => {
  live = await startLiveServices({ linked: true });
  observe = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey, flushIntervalMs: 50 });
  admin = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
  agentKey = await live.gateKey('receipts-agent', ['request:create', 'request:read']);
  agent = new GateClient({ baseUrl: live.gateUrl, apiKey: agentKey });
  await admin.createPolicy({
    name: 'receipts-test',
    priority: 10,
    rules: [
      { match: { action: 'refund' }, decision: 'auto_approve' },
      { match: { action: 'wire' }, decision: 'route_to_human' },
    ],
  });
  gateKey = (await admin.call('get', '/api/audit/public-key', {})) as typeof gateKey;
});

after(async () => {
  await observe?.close();
  await live?.close();
});

const PARAMS = { orderId: '1042', amount: 20, lines: [{ sku: 'a', qty: 1 }] };

async function approved(action = 'refund', params: Record<string, unknown> = PARAMS): Promise<ApprovalOutcome> {
  const outcome = await agent.requestApproval({ action, params });
  assert.equal(outcome.approved, true);
  assert.ok(outcome.receipt, 'an approved outcome carries its receipt');
  return outcome;
}

/** Runs runApproved and answers the error it threw, asserting fn never ran. */
async function refused(gate: GateClient, outcome: ApprovalOutcome, params: Record<string, unknown> = PARAMS, action = 'refund'): Promise<ApprovalReceiptError> {
  let ran = false;
  const error = await runApproved(gate, outcome, action, params, () => {
    ran = true;
  }).then(
    () => assert.fail('runApproved ran a call it should have refused'),
    (thrown: unknown) => thrown,
  );
  assert.equal(ran, false, 'fn never runs');
  assert.ok(error instanceof ApprovalReceiptError, String(error));
  assert.equal(error.requestId, outcome.id);
  assert.match(error.message, /the action did not run/);
  return error;
}

/** A receipt signed by a key of our own, for a client that pins that key. */
function selfSigned(privateKey: KeyObject, receipt: ApprovalReceipt, keyId: string): ApprovalReceipt {
  const { signature: _, ...fields } = receipt;
  const unsigned = { ...fields, keyId };
  return { ...unsigned, signature: sign(null, Buffer.from(canonicalJson(unsigned)), privateKey).toString('base64url') };
}

describe('verifyReceipt', () => {
  test("verifies the gate's receipt with its key as base64, PEM, bytes or in a set; anything altered or another key is false", async () => {
    const { receipt } = await approved();
    assert.ok(receipt);
    assert.equal(await receiptKeyId(gateKey.publicKey), receipt.keyId);
    assert.equal(receipt.argsDigest, await receiptArgsDigest(PARAMS), 'the SDK digests params as the gate does');
    const other = generateKeyPairSync('ed25519').publicKey.export({ format: 'pem', type: 'spki' }) as string;
    assert.equal(await verifyReceipt(receipt, gateKey.publicKey), true);
    assert.equal(await verifyReceipt(receipt, gateKey.publicKeyPem), true);
    assert.equal(await verifyReceipt(receipt, Buffer.from(gateKey.publicKey, 'base64')), true);
    assert.equal(await verifyReceipt(receipt, [other, gateKey.publicKey]), true);
    assert.equal(await verifyReceipt(receipt, other), false);
    assert.equal(await verifyReceipt(receipt, 'not a key'), false);
    const altered: Record<string, unknown>[] = [
      { ...receipt, action: 'refund_all' },
      { ...receipt, argsDigest: await receiptArgsDigest({ ...PARAMS, amount: 2000 }) },
      { ...receipt, expiresAt: '2099-01-01T00:00:00.000Z' },
      { ...receipt, decidedBy: { user: 'someone' } },
      { ...receipt, signature: receipt.signature.slice(0, -2) + (receipt.signature.endsWith('AA') ? 'BA' : 'AA') },
      { ...receipt, extra: true },
    ];
    for (const [i, bad] of altered.entries()) assert.equal(await verifyReceipt(bad, gateKey.publicKey), false, `alteration ${i}`);
    assert.equal(await verifyReceipt(null, gateKey.publicKey), false);
  });
});

describe('runApproved', () => {
  test('runs fn once for a receipt that verifies and redeems, and records the redemption in the gate audit chain', async () => {
    const outcome = await approved();
    let runs = 0;
    const result = await runApproved(agent, outcome, 'refund', { lines: [{ qty: 1, sku: 'a' }], amount: 20, orderId: '1042' }, () => ++runs);
    assert.equal(result, 1);
    await agent.flush(); // runApproved confirms off the call path
    const trail = await admin.getAudit(outcome.id);
    assert.deepEqual(
      trail.map((entry) => entry.event),
      ['created', 'approved', 'redeemed', 'confirmed'],
    );
    assert.equal(trail[2]!.actor, 'api:receipts-agent');
  });

  test('a replayed outcome (its receipt already redeemed) never runs fn again: replayed', async () => {
    const outcome = await approved();
    await runApproved(agent, outcome, 'refund', PARAMS, () => 'once', { confirm: false });
    const error = await refused(agent, outcome);
    assert.equal(error.reason, 'replayed');
  });

  test('arguments changed after the approval, another action, or another request: mismatch', async () => {
    const outcome = await approved();
    assert.equal((await refused(agent, outcome, { ...PARAMS, amount: 20000 })).reason, 'mismatch');
    assert.equal((await refused(agent, outcome, PARAMS, 'refund_all')).reason, 'mismatch');
    const second = await approved();
    assert.equal((await refused(agent, { ...outcome, id: second.id })).reason, 'mismatch');
    // None of these spent the receipt.
    assert.equal(await runApproved(agent, outcome, 'refund', PARAMS, () => 'ran', { confirm: false }), 'ran');
  });

  test('a tampered receipt, a missing one, or one signed by a key the client does not trust: refused before the gate is asked', async () => {
    const outcome = await approved();
    const receipt = outcome.receipt!;
    const tampered = { ...outcome, receipt: { ...receipt, expiresAt: '2099-01-01T00:00:00.000Z' } };
    assert.equal((await refused(agent, tampered)).reason, 'signature');
    assert.equal((await refused(agent, { ...outcome, receipt: null })).reason, 'missing');
    assert.equal((await refused(agent, { ...outcome, receipt: { ...receipt, v: 2 } as unknown as ApprovalReceipt })).reason, 'malformed');

    // Pinned wins: a client pinning another key trusts only that key (and what it certified).
    const pinnedElsewhere = new GateClient({
      baseUrl: live.gateUrl,
      apiKey: agentKey,
      receiptPublicKey: generateKeyPairSync('ed25519').publicKey.export({ format: 'pem', type: 'spki' }) as string,
    });
    assert.equal((await refused(pinnedElsewhere, outcome)).reason, 'signature');
    // Pinning the gate's own key works.
    const pinned = new GateClient({ baseUrl: live.gateUrl, apiKey: agentKey, receiptPublicKey: gateKey.publicKey });
    assert.equal(await runApproved(pinned, outcome, 'refund', PARAMS, () => 'ran', { confirm: false }), 'ran');
  });

  test('an expired receipt never runs fn (checked by the client; the gate answers 410 too)', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const raw = publicKey.export({ format: 'jwk' }).x!;
    const pem = publicKey.export({ format: 'pem', type: 'spki' }) as string;
    const outcome = await approved();
    const receipt = outcome.receipt!;
    const past = (ms: number) => new Date(Date.now() - ms).toISOString();
    const expired = selfSigned(
      privateKey,
      { ...receipt, issuedAt: past(20 * 60_000), expiresAt: past(5 * 60_000) },
      await receiptKeyId(Buffer.from(raw, 'base64url')),
    );
    const client = new GateClient({ baseUrl: live.gateUrl, apiKey: agentKey, receiptPublicKey: pem });
    assert.equal((await refused(client, { ...outcome, receipt: expired })).reason, 'expired');
  });

  test('a denial is ApprovalDeniedError, as before', async () => {
    const outcome = { ...(await approved()), approved: false, status: 'denied' as const };
    await assert.rejects(() => runApproved(agent, outcome, 'refund', PARAMS, () => assert.fail('ran')), ApprovalDeniedError);
  });

  test('withApproval in a session: the redemption is in the session once, recorded by the agent (the gate forwards no copy)', async () => {
    let sessionId = '';
    await observe.withSession({ agentId: 'receipts-agent' }, async (session) => {
      sessionId = session.id;
      await withApproval(agent, 'refund', PARAMS, () => 'done');
    });
    await observe.flush();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const events = (await observe.listEvents({ sessionId, order: 'asc', limit: 100 })).events;
    assert.deepEqual(
      events.map((e) => e.eventType),
      ['session_started', 'approval_requested', 'approval_granted', 'custom', 'tool_call', 'tool_response', 'session_ended'],
    );
    assert.equal(events[3]!.payload.type, 'approval_redeemed');
  });

  test('a redemption over plain HTTP, for a request naming a session, is forwarded by the gate into that session once', async () => {
    const sessionId = `plain-redeem-${Date.now()}`;
    await observe.withSession({ agentId: 'curl-agent', sessionId }, async () => undefined);
    const created = await agent.createRequest({ action: 'refund', params: PARAMS, context: { sessionId, agentId: 'curl-agent' } });
    assert.ok(created.receipt);
    const redeemed = await fetch(`${live.gateUrl}/api/receipts/redeem`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${agentKey}` },
      body: JSON.stringify({ receipt: created.receipt, action: 'refund', params: PARAMS }),
    });
    assert.equal(redeemed.status, 200, await redeemed.text());
    const events = await eventually(
      async () => (await observe.listEvents({ sessionId, order: 'asc', limit: 100 })).events,
      (list) => list.some((e) => e.eventType === 'custom'),
      10_000,
      'the forwarded redemption',
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const again = (await observe.listEvents({ sessionId, order: 'asc', limit: 100 })).events;
    assert.equal(again.filter((e) => e.eventType === 'custom').length, 1);
    const custom = events.find((e) => e.eventType === 'custom')!;
    assert.deepEqual(custom.payload, { type: 'approval_redeemed', requestId: created.id, data: { requestId: created.id, action: 'refund' } });
  });
});
