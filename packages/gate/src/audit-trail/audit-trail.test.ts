import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import { migrateToLatest, openDatabase } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { CompiledQuery, sql } from 'kysely';
import { gateMigrations } from '../migrations.ts';
import type { GateSchema } from '../schema.ts';
import { assertGateError, startTestGate, type TestGate } from '../testing.ts';
import type { AuditEntry, AuditPage } from './routes.ts';
import { auditActors, auditListQuery, listAudit, type AuditListFilter } from './store.ts';
import { indexAuditTerms } from './terms.ts';

const T0 = Date.parse('2026-11-22T10:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const MINUTE = 60_000;

test('the audit-key migration runs after the dashboard sessions', () => {
  const names = Object.keys(gateMigrations);
  assert.ok(names.indexOf('0003_audit_key_actor') > names.indexOf('0002_dashboard_sessions'));
});

await describeEachDatabase('gate audit: who decided, and the audit across requests', (backend) => {
  let gate: TestGate;
  beforeEach(async () => {
    gate = await startTestGate(backend);
  });
  afterEach(() => gate.close());

  const create = async (payload: object, key?: string): Promise<{ id: string; status: string }> => {
    const response = await gate.call({ method: 'POST', url: '/api/requests', payload }, key);
    assert.equal(response.statusCode, 201, response.body);
    return response.json() as { id: string; status: string };
  };
  const decide = async (id: string, payload: object, credential?: string): Promise<void> => {
    const response = await gate.call({ method: 'POST', url: `/api/requests/${id}/decide`, payload }, credential);
    assert.equal(response.statusCode, 200, response.body);
  };
  const trail = async (id: string): Promise<AuditEntry[]> => {
    const response = await gate.call({ method: 'GET', url: `/api/requests/${id}/audit` });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as AuditEntry[];
  };
  const page = async (query = '', key?: string): Promise<AuditPage> => {
    const response = await gate.call({ method: 'GET', url: `/api/audit${query}` }, key);
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as AuditPage;
  };
  const signIn = async (path: string, key: string, name: string): Promise<string> => {
    const response = await gate.call({ method: 'POST', url: path, payload: { name } }, key);
    assert.equal(response.statusCode, 201, response.body);
    return (response.json() as { token: string }).token;
  };
  const keyId = (raw: string) => gate.keyIdOf(raw);
  const createPolicy = async (payload: object): Promise<string> => {
    const response = await gate.call({ method: 'POST', url: '/api/policies', payload });
    assert.equal(response.statusCode, 201, response.body);
    return (response.json() as { id: string }).id;
  };

  // ---------------------------------------------------------------- who decided

  test('a session picks its own display name, but every entry also names the key behind it (dashboard, MCP and plain key)', async () => {
    const opsBot = await gate.createKey(['request:create', 'request:decide'], null, 'ops-bot');
    const opsBotId = await keyId(opsBot);
    const dashboard = await signIn('/api/dashboard/sessions', opsBot, 'CFO Alice');
    const mcp = await signIn('/api/mcp/sessions', opsBot, 'claude-desktop');

    const first = await create({ action: 'wire_transfer' }, dashboard);
    await decide(first.id, { decision: 'approved', reason: 'signed off' }, dashboard);
    const second = await create({ action: 'wire_transfer' }, mcp);
    await decide(second.id, { decision: 'denied' }, opsBot);

    const key = { actorKeyId: opsBotId, actorKeyName: 'ops-bot' };
    assert.deepEqual(
      (await trail(first.id)).map((e) => ({ event: e.event, actor: e.actor, actorKeyId: e.actorKeyId, actorKeyName: e.actorKeyName })),
      [
        { event: 'created', actor: 'dashboard:CFO Alice', ...key },
        { event: 'approved', actor: 'dashboard:CFO Alice', ...key },
      ],
    );
    assert.deepEqual(
      (await trail(second.id)).map((e) => [e.event, e.actor, e.actorKeyId, e.actorKeyName]),
      [
        ['created', 'mcp:claude-desktop', opsBotId, 'ops-bot'],
        ['denied', 'api:ops-bot', opsBotId, 'ops-bot'],
      ],
    );
    // The list across requests shows the same.
    const listed = (await page()).entries.map((e) => [e.requestId, e.event, e.actor, e.actorKeyId, e.actorKeyName]);
    assert.deepEqual(listed, [
      [second.id, 'denied', 'api:ops-bot', opsBotId, 'ops-bot'],
      [second.id, 'created', 'mcp:claude-desktop', opsBotId, 'ops-bot'],
      [first.id, 'approved', 'dashboard:CFO Alice', opsBotId, 'ops-bot'],
      [first.id, 'created', 'dashboard:CFO Alice', opsBotId, 'ops-bot'],
    ]);
  });

  test('the key name is recorded as it was: renaming, then revoking the key leaves past entries unchanged', async () => {
    const key = await gate.createKey(['request:create', 'request:decide'], null, 'ops-bot');
    const id = await keyId(key);
    const session = await signIn('/api/dashboard/sessions', key, 'Ada');
    const request = await create({ action: 'deploy' }, key);
    gate.clock.advance(1000);
    await decide(request.id, { decision: 'approved' }, session);

    const renamed = await gate.call({ method: 'PATCH', url: `/api/api-keys/${id}`, payload: { name: 'renamed-bot' } });
    assert.equal(renamed.statusCode, 200, renamed.body);
    const later = await create({ action: 'deploy' }, key);
    assert.deepEqual(
      (await trail(later.id)).map((e) => [e.actor, e.actorKeyName]),
      [['api:renamed-bot', 'renamed-bot']],
    );
    assert.equal((await gate.call({ method: 'DELETE', url: `/api/api-keys/${id}` })).statusCode, 200);

    assert.deepEqual(
      (await trail(request.id)).map((e) => [e.event, e.actor, e.actorKeyId, e.actorKeyName]),
      [
        ['created', 'api:ops-bot', id, 'ops-bot'],
        ['approved', 'dashboard:Ada', id, 'ops-bot'],
      ],
    );
  });

  test('the gate’s own actions have no key: a policy decision and an expiry are recorded with actorKeyId and actorKeyName null', async () => {
    const agent = await gate.createKey(['request:create'], null, 'agent-7');
    const agentId = await keyId(agent);
    const policyId = await createPolicy({ name: 'small payments', rules: [{ match: { action: 'pay' }, decision: 'auto_approve' }] });
    const paid = await create({ action: 'pay' }, agent);
    assert.equal(paid.status, 'approved');
    assert.deepEqual(
      (await trail(paid.id)).map((e) => [e.event, e.actor, e.actorKeyId, e.actorKeyName]),
      [
        ['created', 'api:agent-7', agentId, 'agent-7'],
        ['approved', `policy:${policyId}`, null, null],
      ],
    );

    const due = await create({ action: 'deploy', expiresAt: iso(T0 + MINUTE) }, agent);
    gate.clock.advance(2 * MINUTE);
    await gate.service.jobs.expiry.tick();
    const expired = (await page(`?requestId=${due.id}&event=expired`)).entries;
    assert.deepEqual(
      expired.map((e) => [e.event, e.actor, e.actorKeyId, e.actorKeyName]),
      [['expired', 'system:expiry', null, null]],
    );
  });

  // ---------------------------------------------------------------- GET /api/audit

  test('GET /api/audit lists the entries of all requests newest first, with request id, action and key', async () => {
    const agent = await gate.createKey(['request:create'], null, 'agent-7');
    const agentId = await keyId(agent);
    const deploy = await create({ action: 'deploy', urgency: 'high' }, agent);
    gate.clock.advance(1000);
    const pay = await create({ action: 'pay' }, agent);
    gate.clock.advance(1000);
    await decide(deploy.id, { decision: 'approved', reason: 'ok' });

    const body = await page();
    assert.equal(body.nextCursor, null);
    assert.equal(body.hasMore, false);
    assert.equal(body.entries.length, 3);
    const [approved, payCreated, deployCreated] = body.entries;
    assert.deepEqual(
      { ...approved, id: undefined },
      {
        id: undefined,
        requestId: deploy.id,
        action: 'deploy',
        timestamp: iso(T0 + 2000),
        event: 'approved',
        actor: 'api:admin (GATE_ADMIN_KEY)',
        actorKeyId: await keyId(gate.config.adminKey!),
        actorKeyName: 'admin (GATE_ADMIN_KEY)',
        details: { reason: 'ok' },
        seq: 1,
        prevHash: deployCreated!.hash,
        hash: approved!.hash,
        eventType: 'approved',
        createdAt: iso(T0 + 2000),
      },
    );
    assert.match(approved!.hash, /^[0-9a-f]{64}$/);
    assert.deepEqual(
      [payCreated, deployCreated].map((e) => [e!.requestId, e!.action, e!.timestamp, e!.event, e!.actor, e!.actorKeyId]),
      [
        [pay.id, 'pay', iso(T0 + 1000), 'created', 'api:agent-7', agentId],
        [deploy.id, 'deploy', iso(T0), 'created', 'api:agent-7', agentId],
      ],
    );
    assert.equal(new Set(body.entries.map((e) => e.id)).size, 3, 'every entry has its own id');
  });

  test('GET /api/audit filters by action, event, actor, keyId, requestId and an inclusive from/to, combined with AND', async () => {
    const alice = await gate.createKey(['request:create', 'request:decide'], null, 'alice-key');
    const bob = await gate.createKey(['request:create', 'request:decide'], null, 'bob-key');
    const session = await signIn('/api/dashboard/sessions', bob, 'Bob');
    const a = await create({ action: 'deploy' }, alice); // T0
    gate.clock.advance(MINUTE);
    const b = await create({ action: 'pay' }, bob); // T0+1m
    gate.clock.advance(MINUTE);
    await decide(a.id, { decision: 'approved' }, session); // T0+2m
    gate.clock.advance(MINUTE);
    await decide(b.id, { decision: 'denied' }, alice); // T0+3m

    const seen = async (query: string) => (await page(query)).entries.map((e) => `${e.event}:${e.action}:${e.actor}`);
    assert.deepEqual(await seen('?action=deploy'), ['approved:deploy:dashboard:Bob', 'created:deploy:api:alice-key']);
    assert.deepEqual(await seen('?event=created'), ['created:pay:api:bob-key', 'created:deploy:api:alice-key']);
    assert.deepEqual(await seen(`?actor=${encodeURIComponent('dashboard:Bob')}`), ['approved:deploy:dashboard:Bob']);
    assert.deepEqual(await seen(`?keyId=${await keyId(bob)}`), ['approved:deploy:dashboard:Bob', 'created:pay:api:bob-key']);
    assert.deepEqual(await seen(`?requestId=${b.id}`), ['denied:pay:api:alice-key', 'created:pay:api:bob-key']);
    assert.deepEqual(await seen(`?from=${iso(T0 + MINUTE)}&to=${iso(T0 + 2 * MINUTE)}`), ['approved:deploy:dashboard:Bob', 'created:pay:api:bob-key']);
    assert.deepEqual(await seen(`?from=${iso(T0 + 3 * MINUTE)}`), ['denied:pay:api:alice-key']);
    assert.deepEqual(await seen(`?to=${iso(T0)}`), ['created:deploy:api:alice-key']);
    assert.deepEqual(await seen(`?keyId=${await keyId(alice)}&event=denied`), ['denied:pay:api:alice-key']);
    assert.deepEqual(await seen('?action=deploy&event=denied'), []);
    assert.deepEqual(await seen('?actor=nobody'), []);
  });

  test('GET /api/audit pages by cursor: every entry once, in order, ties in the same millisecond included; filters hold across pages', async () => {
    const created: string[] = [];
    for (let i = 0; i < 7; i += 1) {
      created.push((await create({ action: i % 2 === 0 ? 'deploy' : 'pay' })).id);
      // Two entries share each millisecond, so pages must break ties by id.
      if (i % 2 === 1) gate.clock.advance(1);
    }
    const everything = (await page('?limit=500')).entries;
    assert.equal(everything.length, 7);

    const walk = async (filters: string, limit: number): Promise<{ ids: string[]; pages: number }> => {
      const ids: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const body: AuditPage = await page(`?limit=${limit}${filters}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        pages += 1;
        assert.ok(body.entries.length <= limit);
        assert.equal(body.hasMore, body.nextCursor !== null);
        ids.push(...body.entries.map((e) => e.id));
        cursor = body.nextCursor;
      } while (cursor !== null);
      return { ids, pages };
    };
    const all = await walk('', 2);
    assert.deepEqual(
      all.ids,
      everything.map((e) => e.id),
    );
    assert.equal(all.pages, 4);
    const exact = await walk('', 7);
    assert.deepEqual([exact.ids.length, exact.pages], [7, 1], 'a full last page has no next cursor');

    const deploys = await walk('&action=deploy', 3);
    assert.deepEqual(
      deploys.ids,
      everything.filter((e) => e.action === 'deploy').map((e) => e.id),
    );
    assert.equal(deploys.ids.length, 4);
    assert.deepEqual(
      (await page('?limit=500&action=deploy')).entries.map((e) => e.requestId),
      [created[6], created[4], created[2], created[0]],
    );
  });

  test('GET /api/audit: bad queries are 400 in the gate error body, never a 500', async () => {
    await create({ action: 'deploy' });
    const bad: Array<[string, RegExp]> = [
      ['?limit=0', /limit/],
      ['?limit=501', /limit/],
      ['?limit=ten', /limit/],
      ['?event=viewed', /event/],
      ['?from=yesterday', /from/],
      ['?to=2026-13-01T00:00:00Z', /to/],
      [`?from=${iso(T0 + MINUTE)}&to=${iso(T0)}`, /from must not be after to/],
      ['?cursor=not-a-cursor', /cursor/],
      [`?cursor=${Buffer.from('{"ts":1}').toString('base64url')}`, /cursor/],
      ['?status=open', /status/],
      ['?offset=-1', /offset/],
      ['?eventType=viewed', /eventType/],
      ['?event=approved&eventType=denied', /give one/],
      [`?offset=0&cursor=${Buffer.from(JSON.stringify([T0, 'x'])).toString('base64url')}`, /cursor or by offset/],
      ['?page=2', /page: unknown query parameter/],
      ['?action=', /action/],
    ];
    for (const [query, message] of bad) {
      const response = await gate.call({ method: 'GET', url: `/api/audit${query}` });
      const text = assertGateError(response, 400, 'bad_request', query);
      const details = JSON.stringify((response.json() as { error: { details?: unknown } }).error.details ?? '');
      assert.match(`${text} ${details}`, message, query);
    }
  });

  test("AgentGate's listAuditLogs and list_audit_logs: eventType, status, offset and limit filter and page; entries carry eventType and createdAt, the page its pagination; Vigil's fields stay", async () => {
    // Written from what AgentGate's SDK and MCP tool send and read (query keys; entries[].eventType, createdAt; pagination).
    const decider = await gate.createKey(['request:create', 'request:decide'], null, 'ops');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      gate.clock.advance(MINUTE);
      ids.push((await create({ action: 'deploy' }, decider)).id);
    }
    gate.clock.advance(MINUTE);
    await decide(ids[0]!, { decision: 'approved' }, decider);
    await decide(ids[1]!, { decision: 'denied' }, decider);
    gate.clock.advance(MINUTE);
    await decide(ids[2]!, { decision: 'approved' }, decider);
    type AgentGatePage = AuditPage & {
      entries: (AuditPage['entries'][number] & { eventType: string; createdAt: string })[];
      pagination: { total: number; limit: number; offset: number; hasMore: boolean };
    };
    const read = async (query: string) => (await page(query)) as AgentGatePage;

    const all = await read('');
    assert.equal(all.entries.length, 8);
    for (const entry of all.entries) {
      assert.equal(entry.eventType, entry.event);
      assert.equal(entry.createdAt, entry.timestamp);
    }
    assert.deepEqual(all.pagination, { total: 8, limit: 50, offset: 0, hasMore: false });

    const approved = await read('?actor=api%3Aops&eventType=approved&limit=10');
    assert.deepEqual(
      approved.entries.map((e) => [e.requestId, e.eventType]),
      [
        [ids[2], 'approved'],
        [ids[0], 'approved'],
      ],
    );
    assert.deepEqual(approved.pagination, { total: 2, limit: 10, offset: 0, hasMore: false });

    // Offset pages: the same entries as the whole list, in order.
    const first = await read('?offset=0&limit=3');
    const second = await read('?offset=3&limit=3');
    const last = await read('?offset=6&limit=3');
    assert.deepEqual(
      [...first.entries, ...second.entries, ...last.entries].map((e) => e.id),
      all.entries.map((e) => e.id),
    );
    assert.deepEqual(
      [first.pagination, second.pagination, last.pagination],
      [
        { total: 8, limit: 3, offset: 0, hasMore: true },
        { total: 8, limit: 3, offset: 3, hasMore: true },
        { total: 8, limit: 3, offset: 6, hasMore: false },
      ],
    );
    assert.equal(first.hasMore, true, "Vigil's own paging fields stay");
    // A cursor page says where it stands too, and continues where the offset page ended.
    const byCursor = await read(`?limit=3&cursor=${first.nextCursor}`);
    assert.deepEqual(
      byCursor.entries.map((e) => e.id),
      second.entries.map((e) => e.id),
    );
    assert.deepEqual(byCursor.pagination, { total: 8, limit: 3, offset: 3, hasMore: true });

    // status: the request's current status (ids 3 and 4 are still pending).
    const pending = await read('?status=pending&offset=0&limit=50');
    assert.deepEqual(
      pending.entries.map((e) => [e.requestId, e.eventType]),
      [
        [ids[4], 'created'],
        [ids[3], 'created'],
      ],
    );
    assert.equal(pending.pagination.total, 2);
    assert.deepEqual(
      (await read('?status=denied&eventType=created')).entries.map((e) => e.requestId),
      [ids[1]],
    );
  });

  test('GET /api/audit and /api/audit/actors need request:read (the scope of the per-request trail)', async () => {
    const reader = await gate.createKey(['request:read'], null, 'reader');
    const creator = await gate.createKey(['request:create'], null, 'creator');
    await create({ action: 'deploy' }, creator);
    assert.equal((await page('', reader)).entries.length, 1);
    assertGateError(await gate.call({ method: 'GET', url: '/api/audit' }, creator), 403, 'forbidden');
    assertGateError(await gate.call({ method: 'GET', url: '/api/audit/actors' }, creator), 403, 'forbidden');
    assertGateError(await gate.service.app.inject({ method: 'GET', url: '/api/audit' }), 401, 'unauthorized');
  });

  test('GET /api/audit/actors lists each actor once, sorted', async () => {
    const agent = await gate.createKey(['request:create', 'request:decide'], null, 'agent-7');
    const session = await signIn('/api/dashboard/sessions', agent, 'Ada');
    const policyId = await createPolicy({ name: 'auto', rules: [{ match: { action: 'pay' }, decision: 'auto_approve' }] });
    await create({ action: 'pay' }, agent);
    const pending = await create({ action: 'deploy' }, agent);
    await decide(pending.id, { decision: 'approved' }, session);
    const response = await gate.call({ method: 'GET', url: '/api/audit/actors' });
    assert.equal(response.statusCode, 200, response.body);
    assert.deepEqual(response.json(), { actors: ['api:agent-7', 'dashboard:Ada', `policy:${policyId}`] });
  });

  test('every filter of the audit list reads an index range in order, never the whole table (a term filter: its terms, and the entries not yet indexed by leaf; requestId: its trail index, sorted)', async () => {
    const { db, dialect } = gate.service.context.database;
    const position = { ts: T0, id: '0190d6c4-0000-7000-8000-000000000000' };
    // A term filter's two parts: the terms' key range (read backwards, in order) and the leaves after the indexed ones.
    const termParts =
      dialect === 'postgres' ? ['audit_entry_terms_pk', 'audit_log_leaves_pkey'] : ['SEARCH t USING PRIMARY KEY', 'SEARCH l USING INTEGER PRIMARY KEY'];
    const shapes: Array<[AuditListFilter, string[]]> = [
      [{}, ['audit_ts']],
      [{ from: T0, to: T0 + MINUTE }, ['audit_ts']],
      [{ after: position }, ['audit_ts']],
      [{ action: 'deploy' }, termParts],
      [{ event: 'approved', after: position }, termParts],
      [{ actor: 'dashboard:Ada', from: T0 }, termParts],
      [{ keyId: 'k1', event: 'created' }, termParts],
      [{ requestId: 'r1', actor: 'dashboard:Ada' }, ['audit_request_seq']],
    ];
    // The log's leaves as a running gate has them, so the planner sees the unindexed tail as the few leaves it is.
    for (let i = 0; i < 5; i += 1) await create({ action: 'deploy' });
    await gate.service.jobs.auditTerms.tick();
    if (dialect === 'postgres') await sql`analyze audit_log_leaves, audit_entries, audit_entry_terms`.execute(db);
    for (const [filter, indexes] of shapes) {
      const compiled = (await auditListQuery(db, filter, 51, 10)).compile();
      const plan = await db.transaction().execute(async (trx) => {
        // PostgreSQL prefers a sequential or bitmap scan on a table this small; forbid them to see the index it can use.
        if (dialect === 'postgres') await sql`set local enable_seqscan = off; set local enable_bitmapscan = off`.execute(trx);
        const explain = dialect === 'postgres' ? 'explain' : 'explain query plan';
        const result = await trx.executeQuery(CompiledQuery.raw(`${explain} ${compiled.sql}`, [...compiled.parameters]));
        return result.rows.map((row) => Object.values(row as object).join(' ')).join('\n');
      });
      const context = `${JSON.stringify(filter)}:\n${plan}`;
      for (const index of indexes) assert.ok(plan.includes(index), `expected ${index}; ${context}`);
      assert.doesNotMatch(plan, /Seq Scan|SCAN (audit_entries|audit_entry_terms|audit_log_leaves|t|e|l)$/m, context);
      if (indexes === termParts) {
        // The terms' range gives the order: nothing sorts it (the merge sorts at most a page from each part).
        if (dialect === 'postgres') assert.match(plan, /Index (Only )?Scan Backward using audit_entry_terms_pk/, context);
        else {
          const range = plan
            .split('\n')
            .find((line) => line.includes('SEARCH t USING PRIMARY KEY'))!
            .split(' ');
          assert.ok(!plan.split('\n').some((line) => line.split(' ')[1] === range[1] && line.includes('USE TEMP B-TREE')), context);
        }
      } else if (filter.requestId === undefined) assert.doesNotMatch(plan, /USE TEMP B-TREE|Sort/m, context);
    }
  });

  test('two runs of the terms job at once (two instances whose leases overlapped) write each term once and leave the mark at the log size', async () => {
    for (let i = 0; i < 30; i += 1) await create({ action: i % 2 === 0 ? 'deploy' : 'pay' });
    const { database } = gate.service.context;
    const { db } = database;
    const [first, second] = await Promise.all([indexAuditTerms(database), indexAuditTerms(database)]);
    const size = Number((await db.selectFrom('audit_log_head').select('size').executeTakeFirstOrThrow()).size);
    assert.equal(first + second, size, 'the two runs covered the log between them, once');
    const terms = await db
      .selectFrom('audit_entry_terms')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirstOrThrow();
    // Each created entry: its actor, event and action (an admin key's entries have a key id too).
    const entries = await db.selectFrom('audit_entries').select(['actor_key_id']).execute();
    assert.equal(
      Number(terms.n),
      entries.reduce((sum, entry) => sum + (entry.actor_key_id === null ? 3 : 4), 0),
    );
    assert.equal(Number((await db.selectFrom('audit_terms_progress').select('indexed_to').executeTakeFirstOrThrow()).indexed_to), size);
    assert.equal((await page('?action=deploy&limit=500')).pagination.total, 15);
  });

  test('a term filter answers the same before, while and after the terms job has indexed the entries: pages, cursors, offsets, totals and actors', async () => {
    const alice = await gate.createKey(['request:create', 'request:decide'], null, 'alice-key');
    const bob = await gate.createKey(['request:create', 'request:decide'], null, 'bob-key');
    const write = async (i: number) => {
      const key = i % 3 === 0 ? bob : alice;
      const request = await create({ action: ['deploy', 'pay'][i % 2] }, key);
      if (i % 4 === 0) await decide(request.id, { decision: i % 8 === 0 ? 'approved' : 'denied' }, i % 8 === 0 ? alice : bob);
      // Several entries share a millisecond, so the merge of the two halves must break ties by id.
      if (i % 3 === 2) gate.clock.advance(1);
    };
    for (let i = 0; i < 12; i += 1) await write(i);
    const filters = [
      '&action=deploy',
      '&event=created',
      '&actor=api%3Aalice-key',
      `&keyId=${await keyId(bob)}`,
      '&action=pay&event=denied',
      '&event=approved&status=approved',
    ];
    const everything = async () => (await page('?limit=500')).entries;
    const expected = (all: AuditPage['entries'], filter: string) => {
      const query = new URLSearchParams(filter.slice(1));
      return all.filter(
        (e) =>
          (!query.has('action') || e.action === query.get('action')) &&
          (!query.has('event') || e.event === query.get('event')) &&
          (!query.has('actor') || e.actor === query.get('actor')) &&
          (!query.has('keyId') || e.actorKeyId === query.get('keyId')) &&
          (!query.has('status') || e.event === 'approved') &&
          // ISO 8601 with milliseconds in UTC: string order is time order; both bounds inclusive.
          (!query.has('from') || e.timestamp >= query.get('from')!) &&
          (!query.has('to') || e.timestamp <= query.get('to')!),
      );
    };
    const check = async (stage: string) => {
      const all = await everything();
      // Bounds on an entry's own time on each side, so inclusiveness shows in both parts.
      const bounded = `&from=${encodeURIComponent(all.at(-3)!.timestamp)}&to=${encodeURIComponent(all[2]!.timestamp)}`;
      for (const filter of [...filters, `&event=created${bounded}`, `&actor=api%3Aalice-key${bounded}`]) {
        const want = expected(all, filter);
        const whole = await page(`?limit=500${filter}`);
        assert.deepEqual(whole.entries, want, `${stage} ${filter}`);
        assert.equal(whole.pagination.total, want.length, `${stage} ${filter} total`);
        const ids: string[] = [];
        let cursor: string | null = null;
        do {
          const body: AuditPage = await page(`?limit=2${filter}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
          assert.equal(body.pagination.offset, ids.length, `${stage} ${filter} offset by cursor`);
          ids.push(...body.entries.map((e) => e.id));
          cursor = body.nextCursor;
        } while (cursor !== null);
        assert.deepEqual(
          ids,
          want.map((e) => e.id),
          `${stage} ${filter} by cursor`,
        );
        for (const offset of [1, 3]) {
          const body = await page(`?limit=2&offset=${offset}${filter}`);
          assert.deepEqual(
            body.entries.map((e) => e.id),
            want.slice(offset, offset + 2).map((e) => e.id),
            `${stage} ${filter} offset ${offset}`,
          );
          assert.equal(body.hasMore, want.length > offset + 2, `${stage} ${filter} offset ${offset} hasMore`);
        }
      }
      const actors = (await gate.call({ method: 'GET', url: '/api/audit/actors' })).json() as { actors: string[] };
      assert.deepEqual(actors.actors, [...new Set(all.map((e) => e.actor))].sort(), `${stage} actors`);
    };
    const { db } = gate.service.context.database;
    const indexedTo = async () => Number((await db.selectFrom('audit_terms_progress').select('indexed_to').executeTakeFirstOrThrow()).indexed_to);
    const logSize = async () => Number((await db.selectFrom('audit_log_head').select('size').executeTakeFirstOrThrow()).size);
    await check('none indexed');
    assert.ok((await indexedTo()) < (await logSize()));
    assert.ok(await gate.service.jobs.auditTerms.tick());
    assert.equal(await indexedTo(), await logSize(), 'the job indexes every leaf committed');
    const terms = await db
      .selectFrom('audit_entry_terms')
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirstOrThrow();
    assert.ok(Number(terms.n) > 0);
    await check('all indexed');
    for (let i = 12; i < 20; i += 1) await write(i);
    await check('half indexed');
    await gate.service.jobs.auditTerms.tick();
    await check('all indexed again');
  });
});

await describeEachDatabase('gate audit migration', (backend) => {
  test('0028 moves the four filter indexes into terms: every entry written before it is found by each filter, and the four indexes are gone', async () => {
    const { dataDir: _dataDir, ...config } = backend.freshDatabase();
    const database = await openDatabase<GateSchema>(config);
    try {
      await migrateToLatest(database, Object.fromEntries(Object.entries(gateMigrations).filter(([name]) => name < '0028')));
      await sql`insert into requests (id, action, params, context, urgency, status, created_at, policy_decision)
                values ('r1', 'deploy', '{}', '{}', 'normal', 'approved', ${T0}, '{}')`.execute(database.db);
      await sql`insert into audit_entries (id, request_id, action, ts, event, actor, actor_key_id, details, seq)
                values ('a1', 'r1', 'deploy', ${T0}, 'created', 'api:ops', 'k1', null, 0),
                       ('a2', 'r1', 'deploy', ${T0 + 1}, 'approved', 'policy:p1', null, null, 1)`.execute(database.db);
      await migrateToLatest(database, gateMigrations);
      const ids = async (filter: AuditListFilter) => (await listAudit(database, filter, { limit: 10, offset: 0 })).rows.map((row) => row.id);
      assert.deepEqual(await ids({ action: 'deploy' }), ['a2', 'a1']);
      assert.deepEqual(await ids({ event: 'created' }), ['a1']);
      assert.deepEqual(await ids({ actor: 'policy:p1' }), ['a2']);
      assert.deepEqual(await ids({ keyId: 'k1' }), ['a1']);
      assert.deepEqual(await auditActors(database), ['api:ops', 'policy:p1']);
      const terms = await database.db.selectFrom('audit_entry_terms').select(['kind', 'value', 'entry_id']).orderBy('entry_id').orderBy('kind').execute();
      assert.deepEqual(
        terms.map((t) => [t.entry_id, Number(t.kind), t.value]),
        [
          ['a1', 1, 'api:ops'],
          ['a1', 2, 'created'],
          ['a1', 3, 'deploy'],
          ['a1', 4, 'k1'],
          ['a2', 1, 'policy:p1'],
          ['a2', 2, 'approved'],
          ['a2', 3, 'deploy'],
        ],
      );
      const indexes =
        database.dialect === 'postgres'
          ? await sql<{ name: string }>`select indexname as name from pg_indexes where schemaname = current_schema() and tablename = 'audit_entries'`.execute(
              database.db,
            )
          : await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'audit_entries'`.execute(database.db);
      const names = indexes.rows.map((row) => row.name);
      for (const gone of ['audit_actor_ts', 'audit_event_ts', 'audit_action_ts', 'audit_key_ts']) assert.ok(!names.includes(gone), names.join());
      assert.ok(names.includes('audit_ts') && names.includes('audit_request_seq'), names.join());
    } finally {
      await database.close();
    }
  });

  test('entries written before 0003 get their request’s action; their key is unknown (null)', async () => {
    const { dataDir: _dataDir, ...config } = backend.freshDatabase();
    const database = await openDatabase<GateSchema>(config);
    try {
      const before = Object.fromEntries(Object.entries(gateMigrations).filter(([name]) => name < '0003'));
      await migrateToLatest(database, before);
      await sql`insert into requests (id, action, params, context, urgency, status, created_at, policy_decision)
                values ('r1', 'deploy', '{}', '{}', 'normal', 'pending', ${T0}, '{}')`.execute(database.db);
      await sql`insert into audit_entries (id, request_id, ts, event, actor, details) values ('a1', 'r1', ${T0}, 'created', 'api:old-key', null)`.execute(
        database.db,
      );
      await migrateToLatest(database, gateMigrations);
      const row = await database.db.selectFrom('audit_entries').selectAll().executeTakeFirstOrThrow();
      assert.deepEqual([row.action, row.actor, row.actor_key_id, row.actor_key_name], ['deploy', 'api:old-key', null, null]);
    } finally {
      await database.close();
    }
  });
});
