import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import type { ManualClock } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildGateService, type GateService } from '../app.ts';
import { assertGateError, startTestGate, TEST_ADMIN_KEY, type TestGate } from '../testing.ts';

interface Policy {
  id: string;
  name: string;
  priority: number;
  enabled: boolean;
  rules: unknown[];
  createdAt: string;
  updatedAt: string;
}

interface PolicyList {
  policies: Policy[];
  pagination: { total: number; limit: number; offset: number; hasMore: boolean };
}

interface CreatedRequest {
  id: string;
  status: string;
  decidedBy: string | null;
  policyDecision: { decision: string; policyId: string | null };
}

const START = '2026-11-22T10:00:00.000Z';

await describeEachDatabase('gate policies API', (backend) => {
  let gate: TestGate;
  beforeEach(async () => {
    gate = await startTestGate(backend);
  });
  afterEach(() => gate.close());

  const createPolicy = async (payload: object): Promise<Policy> => {
    const response = await gate.call({ method: 'POST', url: '/api/policies', payload });
    assert.equal(response.statusCode, 201, response.body);
    return response.json() as Policy;
  };
  const list = async (query = ''): Promise<PolicyList> => {
    const response = await gate.call({ method: 'GET', url: `/api/policies${query}` });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as PolicyList;
  };
  const createRequestVia = async (call: (o: InjectOptions) => Promise<LightMyRequestResponse>, action: string): Promise<CreatedRequest> => {
    const response = await call({ method: 'POST', url: '/api/requests', payload: { action } });
    assert.equal(response.statusCode, 201, response.body);
    return response.json() as CreatedRequest;
  };
  const createRequest = (action: string) => createRequestVia((o) => gate.call(o), action);

  test('POST /api/policies answers 201 with id, defaults enabled true and priority 100, and createdAt', async () => {
    const rules = [
      {
        match: { action: 'deploy', 'params.amount': { $gte: 1, $lte: 9 } },
        decision: 'route_to_human',
        approvers: ['alice'],
        channels: ['#ops'],
        requireReason: true,
      },
    ];
    const response = await gate.call({ method: 'POST', url: '/api/policies', payload: { name: 'Deploys', rules } });
    assert.equal(response.statusCode, 201, response.body);
    const policy = response.json() as Policy;
    assert.equal(typeof policy.id, 'string');
    assert.ok(policy.id.length > 0);
    assert.equal(policy.name, 'Deploys');
    assert.equal(policy.enabled, true);
    assert.equal(policy.priority, 100);
    assert.deepEqual(policy.rules, rules);
    assert.equal(policy.createdAt, START);
    assert.equal(policy.updatedAt, START);
    // It is stored: the list shows it as created.
    const { policies } = await list();
    assert.deepEqual(policies, [policy]);
  });

  test('POST /api/policies keeps a given priority and enabled false', async () => {
    const policy = await createPolicy({ name: 'Off', priority: -5, enabled: false, rules: [] });
    assert.equal(policy.priority, -5);
    assert.equal(policy.enabled, false);
    assert.deepEqual(policy.rules, []);
  });

  test('invalid policy bodies are 400 bad_request and store nothing', async () => {
    const rule = { match: { action: 'x' }, decision: 'auto_approve' };
    const bodies: Array<[string, unknown]> = [
      ['missing name', { rules: [rule] }],
      ['empty name', { name: '   ', rules: [rule] }],
      ['missing rules', { name: 'p' }],
      ['unknown decision', { name: 'p', rules: [{ match: { action: 'x' }, decision: 'approve_maybe' }] }],
      ['missing decision', { name: 'p', rules: [{ match: { action: 'x' } }] }],
      ['unknown operator $ne', { name: 'p', rules: [{ match: { action: { $ne: 'x' } }, decision: 'auto_deny' }] }],
      ['empty operator object', { name: 'p', rules: [{ match: { action: {} }, decision: 'auto_deny' }] }],
      ['non-array rules (object)', { name: 'p', rules: { match: {}, decision: 'auto_deny' } }],
      ['non-array rules (string)', { name: 'p', rules: 'auto_deny' }],
      ['comparison with a string bound', { name: 'p', rules: [{ match: { amount: { $gt: '5' } }, decision: 'auto_deny' }] }],
      ['$in not an array', { name: 'p', rules: [{ match: { env: { $in: 'prod' } }, decision: 'auto_deny' }] }],
      ['array matcher', { name: 'p', rules: [{ match: { env: ['prod'] }, decision: 'auto_deny' }] }],
      ['unknown rule field', { name: 'p', rules: [{ ...rule, extra: true }] }],
      ['unknown policy field', { name: 'p', rules: [rule], owner: 'me' }],
      ['priority not an integer', { name: 'p', priority: 1.5, rules: [rule] }],
      ['enabled not a boolean', { name: 'p', enabled: 'yes', rules: [rule] }],
    ];
    for (const [label, payload] of bodies) {
      const response = await gate.call({ method: 'POST', url: '/api/policies', payload: payload as object });
      assert.equal(response.statusCode, 400, `${label}: ${response.body}`);
      assertGateError(response, 400, 'bad_request');
    }
    assert.equal((await list()).pagination.total, 0);
  });

  test('an unsafe regex is refused at save time with a 400 naming rules[0] and the field', async () => {
    const response = await gate.call({
      method: 'POST',
      url: '/api/policies',
      payload: { name: 'ReDoS', rules: [{ match: { 'params.command': { $regex: '^(a+)+$' } }, decision: 'auto_deny' }] },
    });
    const error = assertGateError(response, 400, 'bad_request');
    assert.match(error, /rules\[0\]/);
    assert.match(error, /params\.command/);
    assert.equal((await list()).pagination.total, 0);
  });

  test('the unsafe regex is located in a later rule too', async () => {
    const response = await gate.call({
      method: 'POST',
      url: '/api/policies',
      payload: {
        name: 'ReDoS later',
        rules: [
          { match: { action: { $regex: '^deploy-[a-z]+$' } }, decision: 'auto_approve' },
          { match: { 'context.path': { $regex: '(x+x+)+y' } }, decision: 'auto_deny' },
        ],
      },
    });
    const error = assertGateError(response, 400, 'bad_request');
    assert.match(error, /rules\[1\]/);
    assert.match(error, /context\.path/);
  });

  test('an invalid regex is a 400', async () => {
    const response = await gate.call({
      method: 'POST',
      url: '/api/policies',
      payload: { name: 'Broken', rules: [{ match: { action: { $regex: '(' } }, decision: 'auto_deny' }] },
    });
    const error = assertGateError(response, 400, 'bad_request');
    assert.match(error, /rules\[0\]/);
    assert.equal((await list()).pagination.total, 0);
  });

  test('a safe regex is accepted', async () => {
    const policy = await createPolicy({ name: 'Safe', rules: [{ match: { action: { $regex: '^deploy-[a-z]+$' } }, decision: 'auto_approve' }] });
    assert.deepEqual(policy.rules, [{ match: { action: { $regex: '^deploy-[a-z]+$' } }, decision: 'auto_approve' }]);
  });

  test('GET /api/policies lists in priority order with pagination {total, limit, offset, hasMore}', async () => {
    const c = await createPolicy({ name: 'C', priority: 30, rules: [] });
    const a = await createPolicy({ name: 'A', priority: 10, rules: [] });
    const d = await createPolicy({ name: 'D', priority: 40, enabled: false, rules: [] });
    const b = await createPolicy({ name: 'B', priority: 20, rules: [] });

    const all = await list();
    assert.deepEqual(
      all.policies.map((p) => p.id),
      [a.id, b.id, c.id, d.id],
    );
    assert.deepEqual(all.pagination, { total: 4, limit: 50, offset: 0, hasMore: false });

    const first = await list('?limit=2');
    assert.deepEqual(
      first.policies.map((p) => p.name),
      ['A', 'B'],
    );
    assert.deepEqual(first.pagination, { total: 4, limit: 2, offset: 0, hasMore: true });

    const second = await list('?limit=2&offset=2');
    assert.deepEqual(
      second.policies.map((p) => p.name),
      ['C', 'D'],
    );
    assert.deepEqual(second.pagination, { total: 4, limit: 2, offset: 2, hasMore: false });

    const middle = await list('?limit=2&offset=1');
    assert.deepEqual(
      middle.policies.map((p) => p.name),
      ['B', 'C'],
    );
    assert.equal(middle.pagination.hasMore, true);

    const beyond = await list('?offset=10');
    assert.deepEqual(beyond.policies, []);
    assert.deepEqual(beyond.pagination, { total: 4, limit: 50, offset: 10, hasMore: false });

    for (const query of ['?limit=0', '?limit=-1', '?offset=-1', '?limit=abc', '?offset=10000001']) {
      assertGateError(await gate.call({ method: 'GET', url: `/api/policies${query}` }), 400, 'bad_request');
    }
  });

  test('policies of equal priority are listed in a stable order', async () => {
    const first = await createPolicy({ name: 'first', priority: 5, rules: [] });
    const second = await createPolicy({ name: 'second', priority: 5, rules: [] });
    const ids = (await list()).policies.map((p) => p.id);
    assert.deepEqual(ids, [first.id, second.id].sort());
    assert.deepEqual(
      (await list()).policies.map((p) => p.id),
      ids,
    );
  });

  test('PUT /api/policies/:id changes only the given fields', async () => {
    const rules = [{ match: { action: 'deploy' }, decision: 'auto_deny' }];
    const created = await createPolicy({ name: 'Original', priority: 5, rules });
    (gate.clock as ManualClock).advance(60_000);

    const response = await gate.call({ method: 'PUT', url: `/api/policies/${created.id}`, payload: { priority: 7 } });
    assert.equal(response.statusCode, 200, response.body);
    const updated = response.json() as Policy;
    assert.equal(updated.id, created.id);
    assert.equal(updated.priority, 7);
    assert.equal(updated.name, 'Original');
    assert.equal(updated.enabled, true);
    assert.deepEqual(updated.rules, rules);
    assert.equal(updated.createdAt, START);
    assert.equal(updated.updatedAt, '2026-11-22T10:01:00.000Z');

    const newRules = [{ match: { urgency: 'low' }, decision: 'auto_approve', channels: ['email'] }];
    const again = (await gate.call({ method: 'PUT', url: `/api/policies/${created.id}`, payload: { rules: newRules, enabled: false } })).json() as Policy;
    assert.equal(again.name, 'Original');
    assert.equal(again.priority, 7);
    assert.equal(again.enabled, false);
    assert.deepEqual(again.rules, newRules);

    const renamed = (await gate.call({ method: 'PUT', url: `/api/policies/${created.id}`, payload: { name: 'Renamed' } })).json() as Policy;
    assert.deepEqual({ ...renamed, updatedAt: again.updatedAt }, { ...again, name: 'Renamed' });

    // The stored policy is what the last answer said.
    assert.deepEqual((await list()).policies, [renamed]);
  });

  test('PUT on an unknown policy is 404 not_found; a bad patch is 400 and changes nothing', async () => {
    assertGateError(await gate.call({ method: 'PUT', url: '/api/policies/does-not-exist', payload: { priority: 1 } }), 404, 'not_found');
    const created = await createPolicy({ name: 'Keep', priority: 3, rules: [{ match: { action: 'a' }, decision: 'auto_deny' }] });
    const patches: object[] = [
      { priority: 'high' },
      { enabled: 1 },
      { name: '' },
      { rules: [{ match: { action: { $ne: 'a' } }, decision: 'auto_deny' }] },
      { rules: [{ match: { action: { $regex: '^(a+)+$' } }, decision: 'auto_deny' }] },
      { rules: [{ match: { action: { $regex: '(' } }, decision: 'auto_deny' }] },
      { unknown: true },
    ];
    for (const payload of patches) {
      assertGateError(await gate.call({ method: 'PUT', url: `/api/policies/${created.id}`, payload }), 400, 'bad_request');
    }
    assert.deepEqual((await list()).policies, [created]);
  });

  test('DELETE /api/policies/:id answers {id, deleted:true}, then 404', async () => {
    const keep = await createPolicy({ name: 'Keep', rules: [] });
    const gone = await createPolicy({ name: 'Gone', rules: [] });
    const response = await gate.call({ method: 'DELETE', url: `/api/policies/${gone.id}` });
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json(), { id: gone.id, deleted: true });
    assert.deepEqual(
      (await list()).policies.map((p) => p.id),
      [keep.id],
    );
    assertGateError(await gate.call({ method: 'DELETE', url: `/api/policies/${gone.id}` }), 404, 'not_found');
    assertGateError(await gate.call({ method: 'PUT', url: `/api/policies/${gone.id}`, payload: { name: 'back' } }), 404, 'not_found');
    assertGateError(await gate.call({ method: 'DELETE', url: '/api/policies/never-existed' }), 404, 'not_found');
  });

  test('policy routes need the admin scope', async () => {
    const created = await createPolicy({ name: 'Admin only', rules: [] });
    const key = await gate.createKey(['request:create', 'request:read', 'request:decide', 'webhook:manage'], null, 'everything-but-admin');
    const calls: InjectOptions[] = [
      { method: 'GET', url: '/api/policies' },
      { method: 'POST', url: '/api/policies', payload: { name: 'x', rules: [] } },
      { method: 'PUT', url: `/api/policies/${created.id}`, payload: { enabled: false } },
      { method: 'DELETE', url: `/api/policies/${created.id}` },
    ];
    for (const options of calls) assertGateError(await gate.call(options, key), 403, 'forbidden');
    for (const options of calls) assertGateError(await gate.call({ ...options, headers: { authorization: '' } }), 401, 'unauthorized');
    assert.deepEqual((await list()).policies, [created]);
  });

  test('the policy set takes effect on the very next request after create, update and delete', async () => {
    // Warm the cache with no policies.
    const before = await createRequest('deploy');
    assert.equal(before.status, 'pending');
    assert.equal(before.policyDecision.decision, 'route_to_human');
    assert.equal(before.policyDecision.policyId, null);

    const deny = await createPolicy({ name: 'No deploys', priority: 10, rules: [{ match: { action: 'deploy' }, decision: 'auto_deny' }] });
    const denied = await createRequest('deploy');
    assert.equal(denied.status, 'denied');
    assert.equal(denied.decidedBy, `policy:${deny.id}`);
    assert.equal(denied.policyDecision.policyId, deny.id);

    // Disable: the next request is no longer decided by it.
    await gate.call({ method: 'PUT', url: `/api/policies/${deny.id}`, payload: { enabled: false } });
    const afterDisable = await createRequest('deploy');
    assert.equal(afterDisable.status, 'pending');
    assert.equal(afterDisable.policyDecision.policyId, null);

    // Enable again.
    await gate.call({ method: 'PUT', url: `/api/policies/${deny.id}`, payload: { enabled: true } });
    assert.equal((await createRequest('deploy')).status, 'denied');

    // A second policy with a lower priority number takes over once its priority moves ahead.
    const approve = await createPolicy({ name: 'Deploys ok', priority: 20, rules: [{ match: { action: 'deploy' }, decision: 'auto_approve' }] });
    assert.equal((await createRequest('deploy')).policyDecision.policyId, deny.id);
    await gate.call({ method: 'PUT', url: `/api/policies/${approve.id}`, payload: { priority: 5 } });
    const approved = await createRequest('deploy');
    assert.equal(approved.status, 'approved');
    assert.equal(approved.decidedBy, `policy:${approve.id}`);

    // Changing the rules takes effect too.
    await gate.call({ method: 'PUT', url: `/api/policies/${approve.id}`, payload: { rules: [{ match: { action: 'other' }, decision: 'auto_approve' }] } });
    assert.equal((await createRequest('deploy')).policyDecision.policyId, deny.id);

    // Delete both: back to the default.
    assert.equal((await gate.call({ method: 'DELETE', url: `/api/policies/${deny.id}` })).statusCode, 200);
    assert.equal((await gate.call({ method: 'DELETE', url: `/api/policies/${approve.id}` })).statusCode, 200);
    const afterDelete = await createRequest('deploy');
    assert.equal(afterDelete.status, 'pending');
    assert.equal(afterDelete.policyDecision.decision, 'route_to_human');
    assert.equal(afterDelete.policyDecision.policyId, null);
  });

  if (backend.kind === 'postgres') {
    test('two gate instances on one database: a change through A decides requests through B once the refresh interval has passed', async () => {
      const refreshMs = gate.config.cacheRefreshMs;
      assert.equal(refreshMs, 1000, 'the default GATE_CACHE_REFRESH_MS');
      const other: GateService = await buildGateService({ ...gate.config }, { runJobs: false, clock: gate.clock });
      try {
        const callB = (options: InjectOptions) => other.app.inject({ ...options, headers: { authorization: `Bearer ${TEST_ADMIN_KEY}`, ...options.headers } });
        // B evaluates (and caches) the empty policy set first.
        assert.equal((await createRequestVia(callB, 'wire_transfer')).status, 'pending');

        const policy = await createPolicy({ name: 'No wires', rules: [{ match: { action: 'wire_transfer' }, decision: 'auto_deny' }] });
        // Within the interval B may still decide with the set it has; A applies its own change at once.
        gate.clock.advance(refreshMs - 1);
        assert.equal((await createRequestVia(callB, 'wire_transfer')).status, 'pending');
        assert.equal((await createRequest('wire_transfer')).status, 'denied');
        gate.clock.advance(1);
        const throughB = await createRequestVia(callB, 'wire_transfer');
        assert.equal(throughB.status, 'denied');
        assert.equal(throughB.decidedBy, `policy:${policy.id}`);

        // An update through A reaches B after the interval.
        await gate.call({
          method: 'PUT',
          url: `/api/policies/${policy.id}`,
          payload: { rules: [{ match: { action: 'wire_transfer' }, decision: 'auto_approve' }] },
        });
        gate.clock.advance(refreshMs);
        assert.equal((await createRequestVia(callB, 'wire_transfer')).status, 'approved');

        // A delete through B applies on B at once and reaches A after the interval.
        assert.equal((await callB({ method: 'DELETE', url: `/api/policies/${policy.id}` })).statusCode, 200);
        assert.equal((await createRequestVia(callB, 'wire_transfer')).status, 'pending');
        gate.clock.advance(refreshMs);
        const throughA = await createRequest('wire_transfer');
        assert.equal(throughA.status, 'pending');
        assert.equal(throughA.policyDecision.policyId, null);
      } finally {
        await other.app.close();
      }
    });

    test("GATE_CACHE_REFRESH_MS=0: every evaluation checks the policy version, so B sees A's change on the next request", async () => {
      const strict = { ...gate.config, cacheRefreshMs: 0 };
      const a: GateService = await buildGateService(strict, { runJobs: false, clock: gate.clock });
      const b: GateService = await buildGateService(strict, { runJobs: false, clock: gate.clock });
      const via = (service: GateService) => (options: InjectOptions) =>
        service.app.inject({ ...options, headers: { authorization: `Bearer ${TEST_ADMIN_KEY}`, ...options.headers } });
      try {
        assert.equal((await createRequestVia(via(b), 'rm_backups')).status, 'pending');
        const created = await via(a)({
          method: 'POST',
          url: '/api/policies',
          payload: { name: 'No backup deletion', rules: [{ match: { action: 'rm_backups' }, decision: 'auto_deny' }] },
        });
        assert.equal(created.statusCode, 201, created.body);
        assert.equal((await createRequestVia(via(b), 'rm_backups')).status, 'denied');
      } finally {
        await a.app.close();
        await b.app.close();
      }
    });
  }
});
