import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import { canonicalJson, type ManualClock } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { CompiledQuery, sql } from 'kysely';
import type { AuditEntry } from '../audit-trail/index.ts';
import { assertGateError, startTestGate, type TestGate } from '../testing.ts';
import { dueForExpiryQuery, listRequestsQuery, loggedTrailQuery } from './store.ts';

interface PolicyDecisionBody {
  decision: string;
  policyId: string | null;
  approvers: string[];
  channels: string[];
  requireReason: boolean;
}

interface RequestDetail {
  id: string;
  action: string;
  params: Record<string, unknown>;
  context: Record<string, unknown>;
  status: string;
  urgency: string;
  decidedBy: string | null;
  decisionReason: string | null;
  createdAt: string;
  decidedAt: string | null;
  expiresAt: string | null;
  confirmedAt: string | null;
  executionResult: unknown;
  policyDecision: PolicyDecisionBody;
}

interface ListItem {
  id: string;
  action: string;
  status: string;
  urgency: string;
  createdAt: string;
  agentId: string | null;
  params: Record<string, unknown>;
  policyId: string | null;
  policyName: string | null;
}

const T0 = Date.parse('2026-11-22T10:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const MINUTE = 60_000;

await describeEachDatabase('gate requests API', (backend) => {
  let gate: TestGate;
  beforeEach(async () => {
    gate = await startTestGate(backend);
  });
  afterEach(() => gate.close());

  const clock = () => gate.clock as ManualClock;
  /** The query's plan; PostgreSQL prefers a sequential scan on a table this small, so it is forbidden to see the index it can use. */
  const planOf = async (compiled: CompiledQuery): Promise<string> => {
    const { db, dialect } = gate.service.context.database;
    return db.transaction().execute(async (trx) => {
      if (dialect === 'postgres') await sql`set local enable_seqscan = off; set local enable_bitmapscan = off`.execute(trx);
      const explain = dialect === 'postgres' ? 'explain' : 'explain query plan';
      const result = await trx.executeQuery(CompiledQuery.raw(`${explain} ${compiled.sql}`, [...compiled.parameters]));
      return result.rows.map((row) => Object.values(row as object).join(' ')).join('\n');
    });
  };

  const create = async (payload: object, key?: string): Promise<RequestDetail> => {
    const response = await gate.call({ method: 'POST', url: '/api/requests', payload }, key);
    assert.equal(response.statusCode, 201, response.body);
    return response.json() as RequestDetail;
  };
  const get = async (id: string): Promise<RequestDetail> => {
    const response = await gate.call({ method: 'GET', url: `/api/requests/${id}` });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as RequestDetail;
  };
  const listRequests = async (query = ''): Promise<ListItem[]> => {
    const response = await gate.call({ method: 'GET', url: `/api/requests${query}` });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as ListItem[];
  };
  const audit = async (id: string): Promise<AuditEntry[]> => {
    const response = await gate.call({ method: 'GET', url: `/api/requests/${id}/audit` });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as AuditEntry[];
  };
  const decide = (id: string, payload: object, key?: string) => gate.call({ method: 'POST', url: `/api/requests/${id}/decide`, payload }, key);
  const confirm = (id: string, payload: object, key?: string) => gate.call({ method: 'POST', url: `/api/requests/${id}/confirm`, payload }, key);
  const createPolicy = async (payload: object): Promise<{ id: string; name: string }> => {
    const response = await gate.call({ method: 'POST', url: '/api/policies', payload });
    assert.equal(response.statusCode, 201, response.body);
    return response.json() as { id: string; name: string };
  };
  const storedRow = (id: string) => gate.service.context.database.db.selectFrom('requests').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const requestCount = async () =>
    Number(
      (
        await gate.service.context.database.db
          .selectFrom('requests')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  // ---------------------------------------------------------------- POST /api/requests

  test('POST /api/requests answers 201 with the request, pending, urgency normal by default, and the policy decision', async () => {
    const response = await gate.call({
      method: 'POST',
      url: '/api/requests',
      payload: { action: 'deploy', params: { env: 'prod', replicas: 3 }, context: { agentId: 'agent-1', nested: { a: [1, 2] } } },
    });
    assert.equal(response.statusCode, 201, response.body);
    const body = response.json() as RequestDetail;
    assert.equal(typeof body.id, 'string');
    assert.ok(body.id.length > 0);
    assert.equal(body.action, 'deploy');
    assert.deepEqual(body.params, { env: 'prod', replicas: 3 });
    assert.deepEqual(body.context, { agentId: 'agent-1', nested: { a: [1, 2] } });
    assert.equal(body.status, 'pending');
    assert.equal(body.urgency, 'normal');
    assert.equal(body.createdAt, iso(T0));
    assert.equal(body.expiresAt, null);
    assert.equal(body.decidedBy, null);
    assert.equal(body.decidedAt, null);
    assert.equal(body.decisionReason, null);
    assert.deepEqual(body.policyDecision, { decision: 'route_to_human', policyId: null, approvers: [], channels: [], requireReason: false });
    // GET answers the same request.
    assert.deepEqual(await get(body.id), body);
  });

  test('params and context default to empty objects; urgency and expiresAt are kept', async () => {
    const expiresAt = iso(T0 + 30 * MINUTE);
    for (const urgency of ['low', 'normal', 'high', 'critical']) {
      const body = await create({ action: 'notify', urgency, expiresAt });
      assert.equal(body.urgency, urgency);
      assert.deepEqual(body.params, {});
      assert.deepEqual(body.context, {});
      assert.equal(body.expiresAt, expiresAt);
    }
    // An expiresAt with an offset is normalised to UTC with milliseconds.
    const offset = await create({ action: 'notify', expiresAt: '2026-11-22T12:30:00+02:00' });
    assert.equal(offset.expiresAt, '2026-11-22T10:30:00.000Z');
  });

  test('invalid request bodies are 400 bad_request and store nothing', async () => {
    const bodies: Array<[string, unknown]> = [
      ['missing action', { params: {} }],
      ['empty action', { action: '' }],
      ['action not a string', { action: 42 }],
      ['bad urgency', { action: 'x', urgency: 'urgent' }],
      ['params an array', { action: 'x', params: [1, 2] }],
      ['params a string', { action: 'x', params: 'a=b' }],
      ['params null', { action: 'x', params: null }],
      ['context not an object', { action: 'x', context: 5 }],
      ['expiresAt not ISO', { action: 'x', expiresAt: 'tomorrow' }],
      ['expiresAt a number', { action: 'x', expiresAt: T0 + MINUTE }],
      ['expiresAt in the past', { action: 'x', expiresAt: iso(T0 - MINUTE) }],
      ['expiresAt exactly now', { action: 'x', expiresAt: iso(T0) }],
      ['unknown field', { action: 'x', status: 'approved' }],
      ['body an array', [{ action: 'x' }]],
    ];
    for (const [label, payload] of bodies) {
      const response = await gate.call({ method: 'POST', url: '/api/requests', payload: payload as object });
      assert.equal(response.statusCode, 400, `${label}: ${response.body}`);
      assertGateError(response, 400, 'bad_request');
    }
    assert.equal(await requestCount(), 0);
    assert.deepEqual(await listRequests(), []);
  });

  test('auto_approve: status approved, decidedBy policy:<id>, a reason naming the policy, audit [created, approved]', async () => {
    const policy = await createPolicy({ name: 'Reads are fine', rules: [{ match: { action: 'read_file' }, decision: 'auto_approve', channels: ['log'] }] });
    const body = await create({ action: 'read_file', params: { path: '/tmp/x' } });
    assert.equal(body.status, 'approved');
    assert.equal(body.decidedBy, `policy:${policy.id}`);
    assert.equal(body.decidedAt, iso(T0));
    assert.ok(body.decisionReason?.includes('Reads are fine'), body.decisionReason ?? 'null');
    assert.deepEqual(body.policyDecision, { decision: 'auto_approve', policyId: policy.id, approvers: [], channels: ['log'], requireReason: false });
    assert.deepEqual(await get(body.id), body);
    const trail = await audit(body.id);
    assert.deepEqual(
      trail.map((e) => e.event),
      ['created', 'approved'],
    );
    assert.equal(trail[1]!.actor, `policy:${policy.id}`);
    assert.equal(trail[1]!.timestamp, iso(T0));
  });

  test('auto_deny: status denied, decidedBy policy:<id>, a reason naming the policy, audit [created, denied]', async () => {
    const policy = await createPolicy({ name: 'Never drop tables', rules: [{ match: { action: 'drop_table' }, decision: 'auto_deny' }] });
    const body = await create({ action: 'drop_table', params: { table: 'users' } });
    assert.equal(body.status, 'denied');
    assert.equal(body.decidedBy, `policy:${policy.id}`);
    assert.equal(body.decidedAt, iso(T0));
    assert.ok(body.decisionReason?.includes('Never drop tables'), body.decisionReason ?? 'null');
    assert.equal(body.policyDecision.decision, 'auto_deny');
    assert.equal(body.policyDecision.policyId, policy.id);
    assert.deepEqual(
      (await audit(body.id)).map((e) => [e.event, e.actor]),
      [
        ['created', 'api:admin (GATE_ADMIN_KEY)'],
        ['denied', `policy:${policy.id}`],
      ],
    );
    assert.equal((await storedRow(body.id)).status, 'denied');
  });

  test('route_to_human and route_to_agent leave the request pending, with the routing in policyDecision', async () => {
    const human = await createPolicy({
      name: 'Humans for payments',
      rules: [{ match: { action: 'pay' }, decision: 'route_to_human', approvers: ['alice', 'bob'], channels: ['#payments'], requireReason: true }],
    });
    const agent = await createPolicy({
      name: 'Agents for triage',
      rules: [{ match: { action: 'triage' }, decision: 'route_to_agent', approvers: ['triage-bot'] }],
    });
    const paid = await create({ action: 'pay' });
    assert.equal(paid.status, 'pending');
    assert.equal(paid.decidedBy, null);
    assert.equal(paid.decidedAt, null);
    assert.deepEqual(paid.policyDecision, {
      decision: 'route_to_human',
      policyId: human.id,
      approvers: ['alice', 'bob'],
      channels: ['#payments'],
      requireReason: true,
    });
    const triaged = await create({ action: 'triage' });
    assert.equal(triaged.status, 'pending');
    assert.equal(triaged.decidedBy, null);
    assert.deepEqual(triaged.policyDecision, { decision: 'route_to_agent', policyId: agent.id, approvers: ['triage-bot'], channels: [], requireReason: false });
    assert.deepEqual(
      (await audit(paid.id)).map((e) => e.event),
      ['created'],
    );
    assert.deepEqual(
      (await audit(triaged.id)).map((e) => e.event),
      ['created'],
    );
  });

  test('policies see params, context and urgency of the new request', async () => {
    const policy = await createPolicy({
      name: 'Big critical transfers',
      rules: [{ match: { action: 'transfer', 'params.amount': { $gt: 10_000 }, 'context.team.name': 'finance', urgency: 'critical' }, decision: 'auto_deny' }],
    });
    const big = await create({ action: 'transfer', urgency: 'critical', params: { amount: 50_000 }, context: { team: { name: 'finance' } } });
    assert.equal(big.status, 'denied');
    assert.equal(big.decidedBy, `policy:${policy.id}`);
    const small = await create({ action: 'transfer', urgency: 'critical', params: { amount: 50 }, context: { team: { name: 'finance' } } });
    assert.equal(small.status, 'pending');
    const normal = await create({ action: 'transfer', params: { amount: 50_000 }, context: { team: { name: 'finance' } } });
    assert.equal(normal.status, 'pending');
  });

  // ---------------------------------------------------------------- GET /api/requests

  test('GET /api/requests lists {id, action, status, urgency, createdAt, agentId, params, policyId, policyName}, newest first', async () => {
    const a = await create({ action: 'a', urgency: 'low' });
    clock().advance(1000);
    const b = await create({ action: 'b', urgency: 'high', params: { amount: 12 }, context: { agentId: 'billing-bot' } });
    clock().advance(1000);
    const c = await create({ action: 'c' });
    const items = await listRequests();
    const none = { agentId: null, params: {}, policyId: null, policyName: null };
    assert.deepEqual(items, [
      { id: c.id, action: 'c', status: 'pending', urgency: 'normal', createdAt: iso(T0 + 2000), ...none },
      { id: b.id, action: 'b', status: 'pending', urgency: 'high', createdAt: iso(T0 + 1000), ...none, agentId: 'billing-bot', params: { amount: 12 } },
      { id: a.id, action: 'a', status: 'pending', urgency: 'low', createdAt: iso(T0), ...none },
    ]);
  });

  test('GET /api/requests names the routing policy as it is called now; a deleted policy leaves its id without a name', async () => {
    const policy = await createPolicy({ name: 'Payments to people', rules: [{ match: { action: 'pay' }, decision: 'route_to_human' }] });
    const paid = await create({ action: 'pay' });
    const routed = async () => (await listRequests()).find((r) => r.id === paid.id)!;
    assert.deepEqual([(await routed()).policyId, (await routed()).policyName], [policy.id, 'Payments to people']);
    assert.equal((await gate.call({ method: 'PUT', url: `/api/policies/${policy.id}`, payload: { name: 'Payments (renamed)' } })).statusCode, 200);
    assert.equal((await routed()).policyName, 'Payments (renamed)');
    assert.equal((await gate.call({ method: 'DELETE', url: `/api/policies/${policy.id}` })).statusCode, 200);
    assert.deepEqual([(await routed()).policyId, (await routed()).policyName], [policy.id, null]);
  });

  test('requests created in the same millisecond are still listed newest first', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) ids.push((await create({ action: `same-${i}` })).id);
    assert.deepEqual(
      (await listRequests()).map((r) => r.id),
      ids.reverse(),
    );
  });

  test('GET /api/requests filters by status, action and urgency', async () => {
    await createPolicy({ name: 'ok', rules: [{ match: { action: 'read' }, decision: 'auto_approve' }] });
    await createPolicy({ name: 'no', rules: [{ match: { action: 'drop' }, decision: 'auto_deny' }] });
    const read1 = await create({ action: 'read', urgency: 'high' });
    clock().advance(10);
    const drop = await create({ action: 'drop', urgency: 'high' });
    clock().advance(10);
    const write1 = await create({ action: 'write', urgency: 'low' });
    clock().advance(10);
    const write2 = await create({ action: 'write', urgency: 'high' });
    clock().advance(10);
    const read2 = await create({ action: 'read', urgency: 'low' });

    const ids = async (query: string) => (await listRequests(query)).map((r) => r.id);
    assert.deepEqual(await ids('?status=approved'), [read2.id, read1.id]);
    assert.deepEqual(await ids('?status=denied'), [drop.id]);
    assert.deepEqual(await ids('?status=pending'), [write2.id, write1.id]);
    assert.deepEqual(await ids('?status=expired'), []);
    assert.deepEqual(await ids('?action=write'), [write2.id, write1.id]);
    assert.deepEqual(await ids('?action=nothing'), []);
    assert.deepEqual(await ids('?urgency=high'), [write2.id, drop.id, read1.id]);
    assert.deepEqual(await ids('?urgency=critical'), []);
    assert.deepEqual(await ids('?status=approved&urgency=low'), [read2.id]);
    assert.deepEqual(await ids('?action=write&urgency=high&status=pending'), [write2.id]);
    for (const item of await listRequests('?status=approved')) assert.equal(item.status, 'approved');

    for (const query of ['?status=done', '?urgency=urgent', '?action=']) {
      assertGateError(await gate.call({ method: 'GET', url: `/api/requests${query}` }), 400, 'bad_request');
    }
  });

  test('GET /api/requests filters by the context’s agentId and by creation time (from, to inclusive)', async () => {
    const early = await create({ action: 'pay', context: { agentId: 'billing-bot' } });
    clock().advance(1000);
    const other = await create({ action: 'pay', context: { agentId: 'support-bot' } });
    const middle = await create({ action: 'pay', context: { agentId: 'billing-bot' } });
    clock().advance(1000);
    const late = await create({ action: 'pay', context: { agentId: 'billing-bot' } });
    await create({ action: 'pay' });
    const ids = async (query: string) => (await listRequests(query)).map((r) => r.id);
    assert.deepEqual(await ids('?agentId=billing-bot'), [late.id, middle.id, early.id]);
    assert.deepEqual(await ids('?agentId=nobody'), []);
    assert.deepEqual(await ids(`?from=${iso(T0 + 1000)}&to=${iso(T0 + 1000)}`), [middle.id, other.id]);
    assert.deepEqual(await ids(`?agentId=billing-bot&from=${iso(T0 + 1000)}`), [late.id, middle.id]);
    assert.deepEqual(await ids(`?agentId=billing-bot&to=${iso(T0 + 999)}`), [early.id]);
    for (const query of [`?from=${iso(T0 + 1)}&to=${iso(T0)}`, '?from=yesterday', '?agentId=']) {
      assertGateError(await gate.call({ method: 'GET', url: `/api/requests${query}` }), 400, 'bad_request');
    }
  });

  test('the list by agent and period reads the agent index in its order (no scan, no sort)', async () => {
    const compiled = listRequestsQuery(gate.service.context.database, { agentId: 'billing-bot', from: T0, to: T0 + 1000, limit: 500, offset: 0 }).compile();
    const plan = await planOf(compiled);
    assert.ok(plan.includes('requests_agent_created'), plan);
    assert.doesNotMatch(plan, /Seq Scan|SCAN requests$|USE TEMP B-TREE|Sort/m, plan);
  });

  test('GET /api/requests: limit defaults to 50, at most 500 (501 is a 400), offset pages', async () => {
    const created: string[] = [];
    for (let i = 0; i < 55; i += 1) {
      created.push((await create({ action: 'bulk', params: { i } })).id);
      clock().advance(1);
    }
    const newestFirst = [...created].reverse();

    assert.deepEqual(
      (await listRequests()).map((r) => r.id),
      newestFirst.slice(0, 50),
    );
    assert.deepEqual(
      (await listRequests('?limit=500')).map((r) => r.id),
      newestFirst,
    );
    assert.deepEqual(
      (await listRequests('?limit=10')).map((r) => r.id),
      newestFirst.slice(0, 10),
    );
    assert.deepEqual(
      (await listRequests('?limit=10&offset=50')).map((r) => r.id),
      newestFirst.slice(50),
    );
    assert.deepEqual(
      (await listRequests('?offset=50')).map((r) => r.id),
      newestFirst.slice(50),
    );
    assert.deepEqual(await listRequests('?offset=55'), []);

    // Pages concatenate to the whole list, without gaps or repeats.
    const pages: string[] = [];
    for (let offset = 0; offset < 55; offset += 20) pages.push(...(await listRequests(`?limit=20&offset=${offset}`)).map((r) => r.id));
    assert.deepEqual(pages, newestFirst);

    for (const query of ['?limit=501', '?limit=0', '?limit=-1', '?limit=ten', '?offset=-1', '?limit=1.5', '?offset=10000001']) {
      assertGateError(await gate.call({ method: 'GET', url: `/api/requests${query}` }), 400, 'bad_request');
    }
  });

  // ---------------------------------------------------------------- GET /api/requests/:id

  test('GET /api/requests/:id answers the full request; an unknown id is 404 not_found', async () => {
    const created = await create({ action: 'deploy', urgency: 'high', params: { v: 2 }, context: { by: 'agent' }, expiresAt: iso(T0 + 10 * MINUTE) });
    const body = await get(created.id);
    assert.deepEqual(Object.keys(body).sort(), [
      'action',
      'approvals',
      'confirmedAt',
      'context',
      'createdAt',
      'decidedAt',
      'decidedBy',
      'decisionReason',
      'escalation',
      'executionResult',
      'expiresAt',
      'id',
      'params',
      'policyDecision',
      'receipt',
      'status',
      'urgency',
    ]);
    assert.deepEqual(body, {
      id: created.id,
      action: 'deploy',
      params: { v: 2 },
      context: { by: 'agent' },
      status: 'pending',
      urgency: 'high',
      decidedBy: null,
      decisionReason: null,
      createdAt: iso(T0),
      decidedAt: null,
      expiresAt: iso(T0 + 10 * MINUTE),
      confirmedAt: null,
      executionResult: null,
      policyDecision: { decision: 'route_to_human', policyId: null, approvers: [], channels: [], requireReason: false },
      escalation: { tier: 0, deadlineAt: iso(T0 + 10 * MINUTE), remindAt: null },
      approvals: null,
      receipt: null,
    });
    assertGateError(await gate.call({ method: 'GET', url: '/api/requests/0190d6c4-0000-7000-8000-000000000000' }), 404, 'not_found');
    assertGateError(await gate.call({ method: 'GET', url: '/api/requests/unknown' }), 404, 'not_found');
  });

  // ---------------------------------------------------------------- decide

  test('decide: 200 {id, status, decidedBy: api:<key name>, decidedAt}; the request and the audit show it', async () => {
    const key = await gate.createKey(['request:decide'], null, 'ops-bot');
    const created = await create({ action: 'deploy' });
    clock().advance(5000);
    const response = await decide(created.id, { decision: 'approved', reason: 'Looks safe' }, key);
    assert.equal(response.statusCode, 200, response.body);
    const { receipt, ...decided } = response.json<{ receipt: { requestId: string } | null }>();
    assert.deepEqual(decided, { id: created.id, status: 'approved', decidedBy: 'api:ops-bot', decidedAt: iso(T0 + 5000) });
    assert.equal(receipt?.requestId, created.id, 'an approval answers its receipt (receipts/receipts.test.ts)');

    const stored = await get(created.id);
    assert.equal(stored.status, 'approved');
    assert.equal(stored.decidedBy, 'api:ops-bot');
    assert.equal(stored.decidedAt, iso(T0 + 5000));
    assert.equal(stored.decisionReason, 'Looks safe');

    const trail = await audit(created.id);
    assert.deepEqual(
      trail.map((e) => e.event),
      ['created', 'approved'],
    );
    assert.deepEqual(trail[1], {
      id: trail[1]!.id,
      timestamp: iso(T0 + 5000),
      event: 'approved',
      actor: 'api:ops-bot',
      actorKeyId: await gate.keyIdOf(key),
      actorKeyName: 'ops-bot',
      details: { reason: 'Looks safe' },
      seq: 1,
      prevHash: trail[0]!.hash,
      hash: trail[1]!.hash,
      chainValid: true,
    });
  });

  test('decide with denied: status denied, reason optional', async () => {
    const key = await gate.createKey(['request:decide'], null, 'reviewer');
    const created = await create({ action: 'delete_repo' });
    const response = await decide(created.id, { decision: 'denied' }, key);
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json(), { id: created.id, status: 'denied', decidedBy: 'api:reviewer', decidedAt: iso(T0), receipt: null });
    const stored = await get(created.id);
    assert.equal(stored.status, 'denied');
    assert.equal(stored.decisionReason, null);
    assert.deepEqual((await audit(created.id)).map((e) => [e.event, e.actor]).slice(1), [['denied', 'api:reviewer']]);
  });

  test('a decidedBy in the body is accepted and ignored: the actor is derived from the key', async () => {
    const key = await gate.createKey(['request:decide', 'request:read'], null, 'honest-key');
    const created = await create({ action: 'deploy' });
    const spoof = await decide(created.id, { decision: 'approved', reason: 'looks fine', decidedBy: 'dashboard:mallory' }, key);
    assert.equal(spoof.statusCode, 200, spoof.body);
    assert.equal((spoof.json() as { decidedBy: string }).decidedBy, 'api:honest-key');
    const row = await storedRow(created.id);
    assert.equal(row.status, 'approved');
    assert.equal(row.decided_by, 'api:honest-key');
    assert.equal(row.decision_reason, 'looks fine');
    const trail = await audit(created.id);
    assert.ok(trail.every((e) => !e.actor.includes('mallory')));
    assert.equal(trail.at(-1)!.actor, 'api:honest-key');

    // A null decidedBy too; an unknown field (a typo) is still refused and decides nothing.
    const other = await create({ action: 'deploy' });
    assert.equal((await decide(other.id, { decision: 'denied', decidedBy: null }, key)).statusCode, 200);
    assert.equal((await storedRow(other.id)).decided_by, 'api:honest-key');
    const third = await create({ action: 'deploy' });
    const typo = await decide(third.id, { decision: 'approved', decidedby: 'slack:U1' }, key);
    assertGateError(typo, 400, 'bad_request');
    assert.match((typo.json() as { error: { message: string } }).error.message, /decidedby/);
    assert.equal((await storedRow(third.id)).status, 'pending');
  });

  test('a second decision is 409 conflict and changes nothing', async () => {
    const created = await create({ action: 'deploy' });
    assert.equal((await decide(created.id, { decision: 'approved', reason: 'first' })).statusCode, 200);
    clock().advance(1000);
    assertGateError(await decide(created.id, { decision: 'denied', reason: 'second' }), 409, 'conflict');
    assertGateError(await decide(created.id, { decision: 'approved' }), 409, 'conflict');
    const stored = await get(created.id);
    assert.equal(stored.status, 'approved');
    assert.equal(stored.decisionReason, 'first');
    assert.equal(stored.decidedAt, iso(T0));
    assert.deepEqual(
      (await audit(created.id)).map((e) => e.event),
      ['created', 'approved'],
    );

    // A denied request and a request decided by a policy are settled too.
    const denied = await create({ action: 'deploy' });
    assert.equal((await decide(denied.id, { decision: 'denied' })).statusCode, 200);
    assertGateError(await decide(denied.id, { decision: 'approved' }), 409, 'conflict');
    await createPolicy({ name: 'auto', rules: [{ match: { action: 'auto' }, decision: 'auto_approve' }] });
    const auto = await create({ action: 'auto' });
    assertGateError(await decide(auto.id, { decision: 'denied' }), 409, 'conflict');
    assert.equal((await get(auto.id)).status, 'approved');
  });

  test('decide needs request:decide: request:create (or request:read) alone is 403; no key is 401', async () => {
    const creator = await gate.createKey(['request:create'], null, 'agent');
    const reader = await gate.createKey(['request:read'], null, 'viewer');
    const created = await create({ action: 'deploy' }, creator);
    assertGateError(await decide(created.id, { decision: 'approved' }, creator), 403, 'forbidden');
    assertGateError(await decide(created.id, { decision: 'approved' }, reader), 403, 'forbidden');
    assertGateError(
      await gate.call({ method: 'POST', url: `/api/requests/${created.id}/decide`, payload: { decision: 'approved' }, headers: { authorization: '' } }),
      401,
      'unauthorized',
    );
    assertGateError(await decide(created.id, { decision: 'approved' }, 'gk_not_a_real_key'), 401, 'unauthorized');
    assert.equal((await storedRow(created.id)).status, 'pending');
  });

  test('decide: invalid bodies are 400, an unknown request 404', async () => {
    const created = await create({ action: 'deploy' });
    for (const payload of [{}, { decision: 'approve' }, { decision: 'expired' }, { decision: 'approved', reason: 5 }]) {
      assertGateError(await decide(created.id, payload), 400, 'bad_request');
    }
    assert.equal((await storedRow(created.id)).status, 'pending');
    assertGateError(await decide('0190d6c4-0000-7000-8000-000000000000', { decision: 'approved' }), 404, 'not_found');
  });

  test('a rule with requireReason: deciding without a reason is 400, with a reason 200', async () => {
    await createPolicy({ name: 'Explain payments', rules: [{ match: { action: 'pay' }, decision: 'route_to_human', requireReason: true }] });
    const created = await create({ action: 'pay', params: { amount: 10 } });
    assert.equal(created.policyDecision.requireReason, true);
    assertGateError(await decide(created.id, { decision: 'approved' }), 400, 'bad_request');
    assertGateError(await decide(created.id, { decision: 'denied', reason: '   ' }), 400, 'bad_request');
    assert.equal((await storedRow(created.id)).status, 'pending');
    assert.deepEqual(
      (await audit(created.id)).map((e) => e.event),
      ['created'],
    );

    const response = await decide(created.id, { decision: 'approved', reason: 'Invoice checked' });
    assert.equal(response.statusCode, 200, response.body);
    const stored = await get(created.id);
    assert.equal(stored.status, 'approved');
    assert.equal(stored.decisionReason, 'Invoice checked');

    // Requests without requireReason still decide without one.
    const plain = await create({ action: 'other' });
    assert.equal((await decide(plain.id, { decision: 'approved' })).statusCode, 200);
  });

  // ---------------------------------------------------------------- confirm

  test('confirm an approved request: 200 {id, status: approved, confirmedAt}; GET and audit show the result', async () => {
    const agent = await gate.createKey(['request:create', 'request:read'], null, 'runner');
    const created = await create({ action: 'deploy' }, agent);
    clock().advance(1000);
    assert.equal((await decide(created.id, { decision: 'approved' })).statusCode, 200);
    clock().advance(1000);
    const result = { success: true, output: 'deployed v2', durationMs: 1234, steps: [{ name: 'build' }] };
    const response = await confirm(created.id, { result }, agent);
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json(), { id: created.id, status: 'approved', confirmedAt: iso(T0 + 2000) });

    const stored = await get(created.id);
    assert.equal(stored.status, 'approved');
    assert.equal(stored.confirmedAt, iso(T0 + 2000));
    assert.deepEqual(stored.executionResult, result);

    const trail = await audit(created.id);
    assert.deepEqual(
      trail.map((e) => e.event),
      ['created', 'approved', 'confirmed'],
    );
    const confirmed = trail[2]!;
    assert.equal(confirmed.actor, 'api:runner');
    assert.equal(confirmed.timestamp, iso(T0 + 2000));
    assert.deepEqual(confirmed.details?.result, result);
  });

  test('confirm only once: a second confirm is 409 and keeps the first result', async () => {
    const created = await create({ action: 'deploy' });
    await decide(created.id, { decision: 'approved' });
    assert.equal((await confirm(created.id, { result: { attempt: 1 } })).statusCode, 200);
    clock().advance(1000);
    assertGateError(await confirm(created.id, { result: { attempt: 2 } }), 409, 'conflict');
    const stored = await get(created.id);
    assert.deepEqual(stored.executionResult, { attempt: 1 });
    assert.equal(stored.confirmedAt, iso(T0));
    assert.deepEqual((await audit(created.id)).filter((e) => e.event === 'confirmed').length, 1);
  });

  test('confirm of a pending, denied or expired request is 409 conflict', async () => {
    const pending = await create({ action: 'deploy' });
    assertGateError(await confirm(pending.id, { result: { ok: true } }), 409, 'conflict');
    assert.equal((await get(pending.id)).status, 'pending');

    const denied = await create({ action: 'deploy' });
    await decide(denied.id, { decision: 'denied' });
    assertGateError(await confirm(denied.id, { result: { ok: true } }), 409, 'conflict');
    const deniedNow = await get(denied.id);
    assert.equal(deniedNow.status, 'denied');
    assert.equal(deniedNow.confirmedAt, null);
    assert.equal(deniedNow.executionResult, null);

    const expiring = await create({ action: 'deploy', expiresAt: iso(T0 + MINUTE) });
    clock().advance(2 * MINUTE);
    assertGateError(await confirm(expiring.id, { result: { ok: true } }), 409, 'conflict');
    assert.ok(!(await audit(expiring.id)).some((e) => e.event === 'confirmed'));
  });

  test('confirm of a request approved by a policy works; confirm needs request:create; bad bodies are 400; unknown 404', async () => {
    await createPolicy({ name: 'auto', rules: [{ match: { action: 'read' }, decision: 'auto_approve' }] });
    const created = await create({ action: 'read' });
    const decider = await gate.createKey(['request:decide', 'request:read'], null, 'decider');
    assertGateError(await confirm(created.id, { result: {} }, decider), 403, 'forbidden');
    for (const payload of [{}, { result: 'ok' }, { result: [1] }, { result: {}, extra: 1 }]) {
      assertGateError(await confirm(created.id, payload), 400, 'bad_request');
    }
    const creator = await gate.createKey(['request:create'], null, 'creator');
    const response = await confirm(created.id, { result: { rows: 3 } }, creator);
    assert.equal(response.statusCode, 200, response.body);
    assert.equal((response.json() as { status: string }).status, 'approved');
    assertGateError(await confirm('0190d6c4-0000-7000-8000-000000000000', { result: {} }), 404, 'not_found');
  });

  // ---------------------------------------------------------------- expiry

  test('expiry on read: GET /api/requests/:id of a request past expiresAt shows expired, decidedBy system:expiry, audit expired', async () => {
    const created = await create({ action: 'deploy', expiresAt: iso(T0 + MINUTE) });
    assert.equal((await get(created.id)).status, 'pending');
    clock().advance(2 * MINUTE);
    const stored = await get(created.id);
    assert.equal(stored.status, 'expired');
    assert.equal(stored.decidedBy, 'system:expiry');
    assert.equal(stored.decidedAt, iso(T0 + 2 * MINUTE));
    assert.equal(stored.expiresAt, iso(T0 + MINUTE));
    const trail = await audit(created.id);
    assert.deepEqual(
      trail.map((e) => e.event),
      ['created', 'expired'],
    );
    assert.equal(trail[1]!.actor, 'system:expiry');
    // Stored, not only shown.
    const row = await storedRow(created.id);
    assert.equal(row.status, 'expired');
    assert.equal(row.decided_by, 'system:expiry');
    // Reading again does not expire it twice.
    await get(created.id);
    assert.equal((await audit(created.id)).filter((e) => e.event === 'expired').length, 1);
  });

  test('expiry by the scanner: jobs.expiry.tick() expires due requests only', async () => {
    const due = await create({ action: 'deploy', expiresAt: iso(T0 + MINUTE) });
    const exactlyDue = await create({ action: 'deploy', expiresAt: iso(T0 + 2 * MINUTE) });
    const later = await create({ action: 'deploy', expiresAt: iso(T0 + 10 * MINUTE) });
    const never = await create({ action: 'deploy' });
    const decided = await create({ action: 'deploy', expiresAt: iso(T0 + MINUTE) });
    assert.equal((await decide(decided.id, { decision: 'approved' })).statusCode, 200);

    clock().advance(2 * MINUTE);
    await gate.service.jobs.expiry.tick();

    // Read the rows directly, so no read path could have expired them.
    const dueRow = await storedRow(due.id);
    assert.equal(dueRow.status, 'expired');
    assert.equal(dueRow.decided_by, 'system:expiry');
    assert.equal(dueRow.decided_at, T0 + 2 * MINUTE);
    assert.equal((await storedRow(exactlyDue.id)).status, 'expired');
    assert.equal((await storedRow(later.id)).status, 'pending');
    assert.equal((await storedRow(never.id)).status, 'pending');
    const decidedRow = await storedRow(decided.id);
    assert.equal(decidedRow.status, 'approved');
    assert.notEqual(decidedRow.decided_by, 'system:expiry');

    const events = await gate.service.context.database.db
      .selectFrom('audit_entries')
      .select(['event', 'actor'])
      .where('request_id', '=', due.id)
      .orderBy('ts')
      .orderBy('id')
      .execute();
    assert.deepEqual(events.map((e) => [e.event, e.actor]).at(-1), ['expired', 'system:expiry']);
  });

  test('the expiry scanner reads the partial index of requests with a deadline', async () => {
    const compiled = dueForExpiryQuery(gate.service.context.database.db, T0, 200).compile();
    const plan = await planOf(compiled);
    assert.ok(plan.includes('requests_deadline'), plan);
    assert.doesNotMatch(plan, /Seq Scan|SCAN requests$|USE TEMP B-TREE|Sort/m, plan);
  });

  test("the row check reads a request's trail by its trail index and each entry's leaf by its item index", async () => {
    const compiled = loggedTrailQuery(gate.service.context.database.db, 'some-request').compile();
    const plan = await planOf(compiled);
    assert.ok(plan.includes('audit_request_seq'), plan);
    assert.ok(plan.includes('audit_log_leaves_item'), plan);
    assert.doesNotMatch(plan, /Seq Scan|SCAN (e|l|audit_entries|audit_log_leaves)$|USE TEMP B-TREE|Sort/m, plan);
  });

  test('deciding a request past expiresAt is 409 and the request is now expired', async () => {
    const created = await create({ action: 'deploy', expiresAt: iso(T0 + MINUTE) });
    clock().advance(2 * MINUTE);
    assertGateError(await decide(created.id, { decision: 'approved', reason: 'too late' }), 409, 'conflict');
    const row = await storedRow(created.id);
    assert.equal(row.status, 'expired');
    assert.equal(row.decided_by, 'system:expiry');
    const trail = await audit(created.id);
    assert.deepEqual(
      trail.map((e) => e.event),
      ['created', 'expired'],
    );
    // And it stays expired.
    assertGateError(await decide(created.id, { decision: 'denied' }), 409, 'conflict');
    assert.equal((await get(created.id)).status, 'expired');
  });

  test('a request can still be decided before expiresAt', async () => {
    const created = await create({ action: 'deploy', expiresAt: iso(T0 + MINUTE) });
    clock().advance(MINUTE - 1);
    const response = await decide(created.id, { decision: 'approved' });
    assert.equal(response.statusCode, 200, response.body);
    clock().advance(MINUTE);
    await gate.service.jobs.expiry.tick();
    assert.equal((await get(created.id)).status, 'approved');
  });

  test('the list shows expired status for due requests and does not list them as pending', async () => {
    const due = await create({ action: 'deploy', expiresAt: iso(T0 + MINUTE) });
    const open = await create({ action: 'deploy' });
    clock().advance(2 * MINUTE);
    assert.deepEqual(
      (await listRequests('?status=pending')).map((r) => r.id),
      [open.id],
    );
    const all = await listRequests();
    assert.equal(all.find((r) => r.id === due.id)?.status, 'expired');
    assert.deepEqual(
      (await listRequests('?status=expired')).map((r) => r.id),
      [due.id],
    );
  });

  // ---------------------------------------------------------------- audit

  test('GET /api/requests/:id/audit lists {id, timestamp, event, actor, actorKeyId, actorKeyName, details?, seq, prevHash, hash, chainValid} oldest first', async () => {
    const agent = await gate.createKey(['request:create'], null, 'agent-7');
    const approver = await gate.createKey(['request:decide'], null, 'approver');
    const created = await create({ action: 'deploy', urgency: 'high' }, agent);
    clock().advance(1000);
    await decide(created.id, { decision: 'approved', reason: 'ok by me' }, approver);
    clock().advance(1000);
    await confirm(created.id, { result: { success: true } }, agent);

    const trail = await audit(created.id);
    assert.equal(trail.length, 3);
    const [agentId, approverId] = [await gate.keyIdOf(agent), await gate.keyIdOf(approver)];
    assert.deepEqual(
      trail.map((e) => [e.timestamp, e.event, e.actor, e.actorKeyId, e.actorKeyName]),
      [
        [iso(T0), 'created', 'api:agent-7', agentId, 'agent-7'],
        [iso(T0 + 1000), 'approved', 'api:approver', approverId, 'approver'],
        [iso(T0 + 2000), 'confirmed', 'api:agent-7', agentId, 'agent-7'],
      ],
    );
    for (const entry of trail) {
      const fields = ['id', 'timestamp', 'event', 'actor', 'actorKeyId', 'actorKeyName', 'details', 'seq', 'prevHash', 'hash', 'chainValid'];
      for (const field of Object.keys(entry)) assert.ok(fields.includes(field), field);
      if (entry.details !== undefined) assert.equal(typeof entry.details, 'object');
    }
    assert.deepEqual(trail[1]!.details, { reason: 'ok by me' });
    assert.deepEqual(trail[2]!.details?.result, { success: true });
    // Stored as their canonical text, which the entry's hash takes as it is (writtenEntryHash).
    const stored = await gate.service.context.database.db
      .selectFrom('audit_entries')
      .select('details')
      .where('request_id', '=', created.id)
      .orderBy('seq')
      .execute();
    for (const { details } of stored) assert.equal(details, canonicalJson(JSON.parse(details!)));
    assert.deepEqual(
      trail.map((e) => [e.seq, e.chainValid]),
      [
        [0, true],
        [1, true],
        [2, true],
      ],
    );
  });

  test('audit of an unknown request is 404 not_found; audit needs request:read', async () => {
    assertGateError(await gate.call({ method: 'GET', url: '/api/requests/0190d6c4-0000-7000-8000-000000000000/audit' }), 404, 'not_found');
    const created = await create({ action: 'deploy' });
    const creator = await gate.createKey(['request:create'], null, 'creator');
    assertGateError(await gate.call({ method: 'GET', url: `/api/requests/${created.id}/audit` }, creator), 403, 'forbidden');
    const reader = await gate.createKey(['request:read'], null, 'reader');
    assert.equal((await gate.call({ method: 'GET', url: `/api/requests/${created.id}/audit` }, reader)).statusCode, 200);
  });

  // ---------------------------------------------------------------- errors

  test('malformed JSON is 400 bad_request in the gate error body', async () => {
    for (const payload of ['{"action": "deploy"', '{action: deploy}', 'not json', '{"action":"a",}']) {
      const response = await gate.call({ method: 'POST', url: '/api/requests', payload, headers: { 'content-type': 'application/json' } });
      assertGateError(response, 400, 'bad_request');
      assert.deepEqual(Object.keys(response.json() as object), ['error']);
    }
    assert.equal(await requestCount(), 0);
  });

  test('a body over 1 MB is 413 in the gate error body; just under 1 MB is accepted', async () => {
    const big = JSON.stringify({ action: 'upload', params: { blob: 'x'.repeat(1024 * 1024) } });
    const response = await gate.call({ method: 'POST', url: '/api/requests', payload: big, headers: { 'content-type': 'application/json' } });
    assert.equal(response.statusCode, 413, response.body);
    const body = response.json() as { error: { code: string; message: string } };
    assert.deepEqual(Object.keys(body), ['error']);
    assert.equal(typeof body.error.code, 'string');
    assert.ok(body.error.code.length > 0);
    assert.equal(typeof body.error.message, 'string');
    assert.equal(await requestCount(), 0);

    const fits = JSON.stringify({ action: 'upload', params: { blob: 'x'.repeat(1024 * 1024 - 200) } });
    assert.ok(Buffer.byteLength(fits) <= 1024 * 1024);
    const ok = await gate.call({ method: 'POST', url: '/api/requests', payload: fits, headers: { 'content-type': 'application/json' } });
    assert.equal(ok.statusCode, 201, ok.body.slice(0, 300));

    // The limit holds on other endpoints with a body too.
    const created = (ok.json() as { id: string }).id;
    const bigConfirm = JSON.stringify({ result: { blob: 'y'.repeat(1024 * 1024) } });
    const confirmResponse = await gate.call({
      method: 'POST',
      url: `/api/requests/${created}/confirm`,
      payload: bigConfirm,
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(confirmResponse.statusCode, 413);
    assert.equal(typeof (confirmResponse.json() as { error: { code: string } }).error.code, 'string');
  });

  test('an unknown route is 404 not_found in the gate error body', async () => {
    for (const [method, url] of [
      ['GET', '/api/nothing-here'],
      ['POST', '/api/requests/abc/approve'],
      ['DELETE', '/api/requests'],
      ['GET', '/nope'],
    ] as const) {
      const response = await gate.call({ method, url });
      assertGateError(response, 404, 'not_found');
      assert.deepEqual(Object.keys(response.json() as object), ['error']);
    }
  });

  test('request routes need a valid key (401) and the right scope (403)', async () => {
    const reader = await gate.createKey(['request:read'], null, 'reader');
    const creator = await gate.createKey(['request:create'], null, 'creator');
    assertGateError(await gate.call({ method: 'GET', url: '/api/requests', headers: { authorization: '' } }), 401, 'unauthorized');
    assertGateError(await gate.call({ method: 'POST', url: '/api/requests', payload: { action: 'x' } }, reader), 403, 'forbidden');
    assertGateError(await gate.call({ method: 'GET', url: '/api/requests' }, creator), 403, 'forbidden');
    const created = await create({ action: 'x' }, creator);
    assert.equal((await gate.call({ method: 'GET', url: `/api/requests/${created.id}` }, reader)).statusCode, 200);
    assert.equal(await requestCount(), 1);
  });
});
