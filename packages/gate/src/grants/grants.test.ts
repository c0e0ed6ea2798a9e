import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { assertGateError, startTestGate, type TestGate } from '../testing.ts';

interface Grant {
  id: string;
  action: string;
  agentId: string | null;
  sessionId: string | null;
  expiresAt: string | null;
  maxUses: number | null;
  uses: number;
  usesLeft: number | null;
  status: string;
  requestId: string | null;
  createdBy: string;
  revokedAt: string | null;
  revokedBy: string | null;
}

interface CreatedRequest {
  id: string;
  status: string;
  decidedBy: string | null;
  decisionReason: string | null;
  receipt: { decidedBy: Record<string, string>; requestId: string } | null;
}

await describeEachDatabase('gate grants', (backend) => {
  let gate: TestGate;
  beforeEach(async () => {
    gate = await startTestGate(backend);
  });
  afterEach(() => gate.close());

  const grant = async (payload: object, key?: string): Promise<Grant> => {
    const response = await gate.call({ method: 'POST', url: '/api/grants', payload }, key);
    assert.equal(response.statusCode, 201, response.body);
    return response.json() as Grant;
  };
  const request = async (action: string, context: object, target: TestGate = gate): Promise<CreatedRequest> => {
    const response = await target.call({ method: 'POST', url: '/api/requests', payload: { action, context } });
    assert.equal(response.statusCode, 201, response.body);
    return response.json() as CreatedRequest;
  };
  const getGrant = async (id: string): Promise<Grant & { usedBy: { use: number; requestId: string }[] }> => {
    const response = await gate.call({ method: 'GET', url: `/api/grants/${id}` });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as Grant & { usedBy: { use: number; requestId: string }[] };
  };

  test('a grant of N uses approves the next N matching requests, citing the grant in decidedBy, receipt and audit trail; then requests route again', async () => {
    const decider = await gate.createKey(['request:decide', 'request:read'], null, 'oncall');
    const g = await grant({ action: 'deploy', agentId: 'agent-a', maxUses: 2, note: 'release day' }, decider);
    assert.equal(g.status, 'active');
    assert.equal(g.usesLeft, 2);
    assert.equal(g.createdBy, 'api:oncall');

    // Another agent, another action, no agent at all: not covered.
    assert.equal((await request('deploy', { agentId: 'agent-b' })).status, 'pending');
    assert.equal((await request('delete', { agentId: 'agent-a' })).status, 'pending');
    assert.equal((await request('deploy', {})).status, 'pending');

    const first = await request('deploy', { agentId: 'agent-a', sessionId: 's1' });
    assert.equal(first.status, 'approved');
    assert.equal(first.decidedBy, `grant:${g.id}`);
    assert.equal(first.decisionReason, `Approved by grant ${g.id}`);
    assert.deepEqual(first.receipt?.decidedBy, { user: `grant:${g.id}` });
    const trail = (await gate.call({ method: 'GET', url: `/api/requests/${first.id}/audit` })).json() as {
      event: string;
      actor: string;
      details?: Record<string, unknown>;
      chainValid: boolean;
    }[];
    assert.deepEqual(
      trail.map((e) => [e.event, e.actor]),
      [
        ['created', 'api:admin (GATE_ADMIN_KEY)'],
        ['approved', `grant:${g.id}`],
      ],
    );
    assert.equal(trail[1]!.details?.grantId, g.id);
    assert.ok(trail.every((e) => e.chainValid));
    const verify = (await gate.call({ method: 'GET', url: `/api/requests/${first.id}/audit/verify` })).json() as { valid: boolean };
    assert.equal(verify.valid, true);

    const second = await request('deploy', { agentId: 'agent-a' });
    assert.equal(second.status, 'approved');
    const third = await request('deploy', { agentId: 'agent-a' });
    assert.equal(third.status, 'pending');
    assert.equal(third.decidedBy, null);

    const detail = await getGrant(g.id);
    assert.equal(detail.status, 'used_up');
    assert.equal(detail.uses, 2);
    assert.equal(detail.usesLeft, 0);
    assert.deepEqual(
      detail.usedBy.map((u) => [u.use, u.requestId]),
      [
        [1, first.id],
        [2, second.id],
      ],
    );
    // Listed; not among the active ones any more.
    const all = (await gate.call({ method: 'GET', url: '/api/grants' })).json() as { grants: Grant[]; total: number };
    assert.deepEqual(
      all.grants.map((x) => x.id),
      [g.id],
    );
    const active = (await gate.call({ method: 'GET', url: '/api/grants?active=true' })).json() as { grants: Grant[]; total: number };
    assert.equal(active.total, 0);
  });

  test('a grant by time approves until it expires, for its session only', async () => {
    const g = await grant({ action: 'deploy', sessionId: 'sess-1', durationSeconds: 1800 });
    assert.equal(g.expiresAt, new Date(gate.clock.now() + 1800_000).toISOString());
    assert.equal(g.maxUses, null);
    for (let i = 0; i < 3; i += 1) assert.equal((await request('deploy', { sessionId: 'sess-1', agentId: `any-${i}` })).status, 'approved');
    assert.equal((await request('deploy', { sessionId: 'sess-2' })).status, 'pending');
    gate.clock.advance(1800_000 - 1);
    assert.equal((await request('deploy', { sessionId: 'sess-1' })).status, 'approved');
    gate.clock.advance(1);
    assert.equal((await request('deploy', { sessionId: 'sess-1' })).status, 'pending');
    const detail = await getGrant(g.id);
    assert.equal(detail.status, 'expired');
    assert.equal(detail.uses, 4);
  });

  test('agent and session together must both match', async () => {
    await grant({ action: 'deploy', agentId: 'a', sessionId: 's', maxUses: 10 });
    assert.equal((await request('deploy', { agentId: 'a', sessionId: 'other' })).status, 'pending');
    assert.equal((await request('deploy', { agentId: 'other', sessionId: 's' })).status, 'pending');
    assert.equal((await request('deploy', { agentId: 'a', sessionId: 's' })).status, 'approved');
  });

  test('revocation stops the grant at once, is recorded in the change log with creation, and a second revoke is a 409', async () => {
    const g = await grant({ action: 'deploy', agentId: 'a', durationSeconds: 3600 });
    assert.equal((await request('deploy', { agentId: 'a' })).status, 'approved');
    const revoked = await gate.call({ method: 'POST', url: `/api/grants/${g.id}/revoke` });
    assert.equal(revoked.statusCode, 200, revoked.body);
    assert.equal((revoked.json() as Grant).status, 'revoked');
    assert.equal((revoked.json() as Grant).revokedBy, 'api:admin (GATE_ADMIN_KEY)');
    assert.equal((await request('deploy', { agentId: 'a' })).status, 'pending');
    assertGateError(await gate.call({ method: 'POST', url: `/api/grants/${g.id}/revoke` }), 409, 'conflict');
    assertGateError(await gate.call({ method: 'POST', url: '/api/grants/nope/revoke' }), 404, 'not_found');
    assertGateError(await gate.call({ method: 'GET', url: '/api/grants/nope' }), 404, 'not_found');

    const changes = (await gate.call({ method: 'GET', url: '/api/audit/changes?resource=grant' })).json() as {
      entries: { resourceId: string; action: string; after: Record<string, unknown> | null }[];
    };
    assert.deepEqual(
      changes.entries.map((c) => [c.resourceId, c.action]),
      [
        [g.id, 'revoked'],
        [g.id, 'created'],
      ],
    );
    assert.equal(changes.entries[1]!.after?.action, 'deploy');
  });

  test('a policy that denies wins over a grant; one that approves needs none', async () => {
    await gate.call({
      method: 'POST',
      url: '/api/policies',
      payload: { name: 'No drops', rules: [{ match: { action: 'drop' }, decision: 'auto_deny' }] },
    });
    const g = await grant({ action: 'drop', agentId: 'a', maxUses: 5 });
    const denied = await request('drop', { agentId: 'a' });
    assert.equal(denied.status, 'denied');
    assert.match(denied.decidedBy!, /^policy:/);
    assert.equal((await getGrant(g.id)).uses, 0);
  });

  test('a grant from a pending request takes its action, agent and session', async () => {
    const pending = await request('pay', { agentId: 'agent-x', sessionId: 'sess-x' });
    assert.equal(pending.status, 'pending');
    const g = await grant({ requestId: pending.id, maxUses: 1 });
    assert.deepEqual([g.action, g.agentId, g.sessionId, g.requestId], ['pay', 'agent-x', 'sess-x', pending.id]);
    assert.equal((await request('pay', { agentId: 'agent-x', sessionId: 'sess-x' })).status, 'approved');
    assertGateError(await gate.call({ method: 'POST', url: '/api/grants', payload: { requestId: 'missing', maxUses: 1 } }), 404, 'not_found');
    assertGateError(
      await gate.call({ method: 'POST', url: '/api/grants', payload: { requestId: pending.id, action: 'other', maxUses: 1 } }),
      400,
      'bad_request',
    );
    const bare = await request('pay', {});
    assertGateError(await gate.call({ method: 'POST', url: '/api/grants', payload: { requestId: bare.id, maxUses: 1 } }), 400, 'bad_request');
  });

  test('bad grants are 400s and store nothing; scopes are enforced', async () => {
    for (const payload of [
      { action: 'deploy', maxUses: 1 },
      { action: 'deploy', agentId: 'a' },
      { agentId: 'a', maxUses: 1 },
      { action: 'deploy', agentId: 'a', maxUses: 0 },
      { action: 'deploy', agentId: 'a', durationSeconds: 31 * 24 * 3600 },
      { action: 'deploy', agentId: 'a', maxUses: 1, extra: true },
    ]) {
      assertGateError(await gate.call({ method: 'POST', url: '/api/grants', payload }), 400, 'bad_request', JSON.stringify(payload));
    }
    assert.equal(((await gate.call({ method: 'GET', url: '/api/grants' })).json() as { total: number }).total, 0);
    const reader = await gate.createKey(['request:read']);
    assertGateError(await gate.call({ method: 'POST', url: '/api/grants', payload: { action: 'deploy', agentId: 'a', maxUses: 1 } }, reader), 403, 'forbidden');
    assert.equal((await gate.call({ method: 'GET', url: '/api/grants' }, reader)).statusCode, 200);
  });

  test('a grant edited in the database is not applied', async () => {
    const g = await grant({ action: 'deploy', agentId: 'a', maxUses: 1 });
    await gate.service.context.database.db.updateTable('grants').set({ max_uses: 1000 }).where('id', '=', g.id).execute();
    assert.equal((await request('deploy', { agentId: 'a' })).status, 'pending');
  });

  test('exactly N uses under concurrent requests on two instances sharing the database', async () => {
    const other = await startTestGate(backend, { database: gate.config.database, clock: gate.clock });
    try {
      const g = await grant({ action: 'deploy', agentId: 'a', maxUses: 7 });
      const created = await Promise.all(Array.from({ length: 40 }, (_, i) => request('deploy', { agentId: 'a', n: i }, i % 2 === 0 ? gate : other)));
      const approved = created.filter((r) => r.status === 'approved');
      assert.equal(approved.length, 7);
      assert.equal(created.filter((r) => r.status === 'pending').length, 33);
      const detail = await getGrant(g.id);
      assert.equal(detail.uses, 7);
      assert.deepEqual(
        detail.usedBy.map((u) => u.use),
        [1, 2, 3, 4, 5, 6, 7],
      );
      assert.deepEqual(new Set(detail.usedBy.map((u) => u.requestId)), new Set(approved.map((r) => r.id)));
    } finally {
      await other.close();
    }
  });
});
