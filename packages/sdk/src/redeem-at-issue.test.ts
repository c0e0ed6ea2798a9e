/**
 * Receipts redeemed at issue (askApproval's redeemOnIssue, POST /api/requests `redeem: true`)
 * against a real gate and observe, linked, on SQLite and PostgreSQL: an auto-approved withApproval
 * costs one round trip before fn runs (the POST), with the same guarantees as a separate redeem —
 * the redemption is in the audit chain and the session once, a replay of the receipt (by this
 * client or another key) never runs fn, changed arguments never run, a tampered receipt never
 * runs — and the execution's confirmation is delivered off the call path, its failure to onError.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dropSchemas, eventually, newSchemaName, POSTGRES_URL, servicesSkipReason, startLiveServices, type LiveServices } from '@vigil/cli/testing';
import { ApprovalReceiptError, askApproval, GateClient, ObserveClient, runApproved, withApproval, type ApprovalOutcome } from './node.ts';

const PARAMS = { orderId: '1042', amount: 20 };

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`receipts redeemed at issue, on ${backend}`, () => {
    const schemas = [newSchemaName('rai_observe'), newSchemaName('rai_gate')];
    let live: LiveServices;
    let observe: ObserveClient;
    let admin: GateClient;
    let agentKey: string;
    /** The agent's client, counting the gate routes it calls. */
    let agent: GateClient;
    const calls: string[] = [];

    before(async () => {
      if (backend === 'postgres') {
        const skip = await servicesSkipReason(false);
        if (skip) throw new Error(skip);
      }
      live = await startLiveServices({
        linked: true,
        ...(backend === 'postgres' && {
          observeEnv: { DATABASE_URL: POSTGRES_URL, OBSERVE_DB_SCHEMA: schemas[0]! },
          gateEnv: { DATABASE_URL: POSTGRES_URL, GATE_DB_SCHEMA: schemas[1]! },
        }),
      });
      observe = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey, flushIntervalMs: 50 });
      admin = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
      agentKey = await live.gateKey('issue-agent', ['request:create', 'request:read']);
      const counting: typeof fetch = async (input, init) => {
        calls.push(`${init?.method ?? 'GET'} ${new URL(String(input)).pathname.replace(/\/[0-9a-f-]{36}(?=\/|$)/g, '/:id')}`);
        return fetch(input, init);
      };
      agent = new GateClient({ baseUrl: live.gateUrl, apiKey: agentKey, fetch: counting });
      await admin.createPolicy({ name: 'issue-test', priority: 10, rules: [{ match: { action: 'refund' }, decision: 'auto_approve' }] });
      await agent.receiptKeys();
    });

    after(async () => {
      await observe?.close();
      await live?.close();
      if (backend === 'postgres') await dropSchemas(...schemas);
    });

    /** An auto-approved outcome whose receipt this client's POST redeemed at issue. */
    async function redeemedAtIssue(params: Record<string, unknown> = PARAMS): Promise<ApprovalOutcome> {
      const outcome = await askApproval(agent, 'refund', params, { redeemOnIssue: true });
      assert.equal(outcome.approved, true);
      return outcome;
    }

    async function refusal(gate: GateClient, outcome: ApprovalOutcome, params: Record<string, unknown> = PARAMS): Promise<ApprovalReceiptError> {
      let ran = false;
      const error = await runApproved(gate, outcome, 'refund', params, () => (ran = true)).then(
        () => assert.fail('runApproved should have refused'),
        (caught: unknown) => caught,
      );
      assert.equal(ran, false, 'fn must not run');
      assert.ok(error instanceof ApprovalReceiptError, String(error));
      return error;
    }

    test('withApproval, auto-approved: one POST before fn runs (no separate redeem), the redemption once in the chain and the session, the confirm delivered after', async () => {
      let sessionId = '';
      let requestId = '';
      calls.length = 0;
      await observe.withSession({ agentId: 'issue-agent' }, async (session) => {
        sessionId = session.id;
        await withApproval(agent, 'refund', PARAMS, (outcome) => {
          requestId = outcome.id;
          assert.deepEqual(calls, ['POST /api/requests'], 'fn runs after the one POST');
          return 'done';
        });
      });
      await agent.flush();
      assert.deepEqual(calls, ['POST /api/requests', 'POST /api/requests/:id/confirm']);

      const trail = await admin.getAudit(requestId);
      assert.deepEqual(
        trail.map((entry) => [entry.event, entry.actor]),
        [
          ['created', 'api:issue-agent'],
          ['approved', trail[1]!.actor],
          ['redeemed', 'api:issue-agent'],
          ['confirmed', 'api:issue-agent'],
        ],
      );
      assert.equal((trail[2]!.details as { atIssue?: boolean }).atIssue, true);
      assert.equal((await admin.verifyAudit(requestId)).valid, true);
      assert.notEqual((await admin.getRequest(requestId)).confirmedAt, null);

      await observe.flush();
      // The gate forwards nothing of a request the agent records (linked services): wait past its dispatch.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const events = (await observe.listEvents({ sessionId, order: 'asc', limit: 100 })).events;
      assert.deepEqual(
        events.map((e) => (e.eventType === 'custom' ? String(e.payload.type) : e.eventType)),
        ['session_started', 'approval_requested', 'approval_granted', 'approval_redeemed', 'tool_call', 'tool_response', 'session_ended'],
      );
    });

    test('a receipt redeemed at issue runs once: the same outcome again, or from another key, is refused (409) and fn does not run', async () => {
      const outcome = await redeemedAtIssue();
      let runs = 0;
      assert.equal(await runApproved(agent, outcome, 'refund', PARAMS, () => ++runs), 1);
      assert.equal((await refusal(agent, outcome)).reason, 'replayed');
      assert.equal((await refusal(agent, structuredClone(outcome))).reason, 'replayed', 'a copy of the outcome');

      const fresh = await redeemedAtIssue();
      const other = new GateClient({ baseUrl: live.gateUrl, apiKey: await live.gateKey('other-agent', ['request:create', 'request:read']) });
      assert.equal((await refusal(other, fresh)).reason, 'replayed', 'another key cannot use it');
      assert.equal(runs, 1);
      await agent.flush();
      const trail = await admin.getAudit(fresh.id);
      assert.equal(trail.filter((entry) => entry.event === 'redeemed').length, 1);
    });

    test('changed arguments or a tampered receipt never run; the approved arguments still run once', async () => {
      const outcome = await redeemedAtIssue();
      assert.equal((await refusal(agent, outcome, { ...PARAMS, amount: 20000 })).reason, 'mismatch');
      const receipt = outcome.receipt!;
      const tampered = { ...outcome, receipt: { ...receipt, argsDigest: '0'.repeat(64) } };
      assert.equal((await refusal(agent, tampered, PARAMS)).reason, 'signature');
      assert.equal((await refusal(agent, { ...outcome, receipt: null })).reason, 'missing');
      let runs = 0;
      await runApproved(agent, outcome, 'refund', PARAMS, () => ++runs);
      assert.equal(runs, 1);
    });

    test('without redeemOnIssue the receipt is redeemed by the separate call, as before', async () => {
      const outcome = await askApproval(agent, 'refund', PARAMS);
      calls.length = 0;
      await runApproved(agent, outcome, 'refund', PARAMS, () => undefined, { confirm: false });
      assert.deepEqual(calls, ['POST /api/receipts/redeem']);
    });

    test('a request redeemed at issue over plain HTTP, naming a session, is forwarded by the gate into that session once', async () => {
      const sessionId = `issue-plain-${backend}-${Date.now()}`;
      await observe.withSession({ agentId: 'curl-agent', sessionId }, async () => undefined);
      const created = await fetch(`${live.gateUrl}/api/requests`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${agentKey}` },
        body: JSON.stringify({ action: 'refund', params: PARAMS, context: { sessionId, agentId: 'curl-agent' }, redeem: true }),
      });
      const body = (await created.json()) as { id: string; redemption: { redeemedBy: string } | null };
      assert.equal(body.redemption?.redeemedBy, 'api:issue-agent');
      const redeemed = (list: { eventType: string; payload: Record<string, unknown> }[]) =>
        list.filter((e) => e.eventType === 'custom' && e.payload.type === 'approval_redeemed');
      await eventually(
        async () => (await observe.listEvents({ sessionId, order: 'asc', limit: 100 })).events,
        (list) => redeemed(list).length > 0,
        10_000,
        'the forwarded redemption',
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      const events = (await observe.listEvents({ sessionId, order: 'asc', limit: 100 })).events;
      assert.equal(redeemed(events).length, 1);
      assert.deepEqual(redeemed(events)[0]!.payload, { type: 'approval_redeemed', requestId: body.id, data: { requestId: body.id, action: 'refund' } });
    });

    test('a confirmation that fails goes to onError; the action is still answered as run', async () => {
      const errors: unknown[] = [];
      const gate = new GateClient({ baseUrl: live.gateUrl, apiKey: agentKey, onError: (error) => errors.push(error) });
      // Confirmed by someone else while it runs: the gate refuses runApproved's confirmation (409).
      const result = await withApproval(gate, 'refund', PARAMS, async (outcome) => {
        await admin.confirm(outcome.id, { by: 'someone else' });
        return 'ran';
      });
      assert.equal(result, 'ran');
      await gate.flush();
      assert.equal(errors.length, 1);
      assert.match((errors[0] as Error).message, /^could not confirm approval request \S+: /);
    });
  });
}
