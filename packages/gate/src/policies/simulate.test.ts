import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { assertGateError, startTestGate, type TestGate } from '../testing.ts';

interface Simulation {
  decision: {
    decision: string;
    policyId: string | null;
    policyName: string | null;
    ruleIndex: number | null;
    approvers: string[];
    channels: string[];
    requireReason: boolean;
  };
  status: string;
  matchedRule: unknown;
  candidateMatched: boolean;
  policiesEvaluated: number;
}

await describeEachDatabase('gate policy simulator (POST /api/policies/simulate)', (backend) => {
  let gate: TestGate;
  let paymentsId: string;
  beforeEach(async () => {
    gate = await startTestGate(backend);
    const created = await gate.call({
      method: 'POST',
      url: '/api/policies',
      payload: {
        name: 'payments',
        priority: 10,
        rules: [
          { match: { action: { $regex: '^delete_' } }, decision: 'auto_deny' },
          { match: { action: 'pay', amount: { $lt: 100 } }, decision: 'auto_approve' },
          { match: { action: 'pay' }, decision: 'route_to_human', requireReason: true, approvers: ['finance'] },
        ],
      },
    });
    assert.equal(created.statusCode, 201, created.body);
    paymentsId = (created.json() as { id: string }).id;
    const disabled = await gate.call({
      method: 'POST',
      url: '/api/policies',
      payload: { name: 'off', priority: 1, enabled: false, rules: [{ match: { action: 'pay' }, decision: 'auto_deny' }] },
    });
    assert.equal(disabled.statusCode, 201, disabled.body);
  });
  afterEach(() => gate.close());

  const simulate = async (payload: object): Promise<Simulation> => {
    const response = await gate.call({ method: 'POST', url: '/api/policies/simulate', payload });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as Simulation;
  };

  test('answers what creating the request would decide, with the matching rule, and stores nothing', async () => {
    const small = await simulate({ action: 'pay', params: { amount: 20 } });
    assert.equal(small.status, 'approved');
    assert.equal(small.decision.decision, 'auto_approve');
    assert.equal(small.decision.policyId, paymentsId);
    assert.equal(small.decision.policyName, 'payments');
    assert.equal(small.decision.ruleIndex, 1);
    assert.deepEqual(small.matchedRule, { match: { action: 'pay', amount: { $lt: 100 } }, decision: 'auto_approve' });
    assert.equal(small.policiesEvaluated, 1, 'the disabled policy is skipped');

    const big = await simulate({ action: 'pay', params: { amount: 2500 }, urgency: 'high' });
    assert.equal(big.status, 'pending');
    assert.equal(big.decision.requireReason, true);
    assert.deepEqual(big.decision.approvers, ['finance']);

    const deletion = await simulate({ action: 'delete_user' });
    assert.equal(deletion.status, 'denied');

    const unmatched = await simulate({ action: 'deploy' });
    assert.deepEqual(unmatched.decision, {
      decision: 'route_to_human',
      policyId: null,
      policyName: null,
      ruleIndex: null,
      approvers: [],
      channels: [],
      requireReason: false,
    });
    assert.equal(unmatched.matchedRule, null);

    // The same request created for real gets the same decision.
    const real = await gate.call({ method: 'POST', url: '/api/requests', payload: { action: 'pay', params: { amount: 20 } } });
    assert.equal((real.json() as { status: string }).status, 'approved');

    // Only that one request exists; the simulations left no request, audit entry or delivery behind.
    const requests = (await gate.call({ method: 'GET', url: '/api/requests' })).json() as unknown[];
    assert.equal(requests.length, 1);
    const { db } = gate.service.context.database;
    assert.equal((await db.selectFrom('audit_entries').select('id').execute()).length, 2, 'created + approved of the real request');
  });

  test('a candidate policy is evaluated as if saved: added, or standing in for the stored policy of its id', async () => {
    const added = await simulate({
      action: 'pay',
      params: { amount: 20 },
      candidate: { name: 'freeze', priority: 5, rules: [{ match: { action: 'pay' }, decision: 'auto_deny' }] },
    });
    assert.equal(added.status, 'denied');
    assert.equal(added.decision.policyId, 'candidate');
    assert.equal(added.candidateMatched, true);
    assert.equal(added.policiesEvaluated, 2);

    const replaced = await simulate({
      action: 'pay',
      params: { amount: 20 },
      candidate: { id: paymentsId, name: 'payments v2', priority: 10, rules: [{ match: { action: 'pay' }, decision: 'route_to_agent' }] },
    });
    assert.equal(replaced.status, 'pending');
    assert.equal(replaced.decision.decision, 'route_to_agent');
    assert.equal(replaced.decision.policyName, 'payments v2');
    assert.equal(replaced.policiesEvaluated, 1);

    // The stored policy is unchanged.
    const stored = (await gate.call({ method: 'GET', url: '/api/policies' })).json() as { policies: { id: string; name: string }[] };
    assert.equal(stored.policies.find((p) => p.id === paymentsId)?.name, 'payments');
  });

  test('invalid input is a 400: missing action, unknown keys, an unsafe candidate regex', async () => {
    for (const payload of [{}, { action: '' }, { action: 'pay', extra: 1 }, { action: 'pay', urgency: 'urgent' }]) {
      assertGateError(await gate.call({ method: 'POST', url: '/api/policies/simulate', payload }), 400, 'bad_request', JSON.stringify(payload));
    }
    const unsafe = await gate.call({
      method: 'POST',
      url: '/api/policies/simulate',
      payload: { action: 'x', candidate: { name: 'bad', rules: [{ match: { action: { $regex: '^(a+)+$' } }, decision: 'auto_deny' }] } },
    });
    assertGateError(unsafe, 400, 'bad_request', 'unsafe regex');
  });

  test('needs the admin scope', async () => {
    for (const scope of ['request:create', 'request:read', 'request:decide', 'webhook:manage']) {
      const key = await gate.createKey([scope], null, `k-${scope}`);
      assertGateError(await gate.call({ method: 'POST', url: '/api/policies/simulate', payload: { action: 'pay' } }, key), 403, 'forbidden', scope);
    }
    assertGateError(await gate.service.app.inject({ method: 'POST', url: '/api/policies/simulate', payload: { action: 'pay' } }), 401, 'unauthorized');
  });
});
