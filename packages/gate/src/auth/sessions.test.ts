import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { afterEach, beforeEach, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { gateMigrations } from '../migrations.ts';
import { assertGateError, startTestGate, type TestGate } from '../testing.ts';
import { DASHBOARD_SESSION_TTL_MS } from './sessions.ts';

const START = Date.parse('2026-11-22T10:00:00.000Z');
const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

interface SessionBody {
  id: string;
  token: string;
  name: string;
  actor: string;
  keyId: string;
  keyName: string;
  scopes: string[];
  rateLimit: number | null;
  createdAt: string;
  expiresAt: string;
}

test('the dashboard-session migration comes after the initial schema, and steps are listed in the order they run', () => {
  const names = Object.keys(gateMigrations);
  assert.ok(names.indexOf('0002_dashboard_sessions') > names.indexOf('0001_gate'));
  assert.deepEqual([...names].sort(), names);
});

await describeEachDatabase('gate dashboard sessions', (backend) => {
  let gate: TestGate;
  beforeEach(async () => {
    gate = await startTestGate(backend);
  });
  afterEach(() => gate.close());

  const signIn = async (key: string, name: string): Promise<SessionBody> => {
    const response = await gate.call({ method: 'POST', url: '/api/dashboard/sessions', payload: { name } }, key);
    assert.equal(response.statusCode, 201, response.body);
    return response.json() as SessionBody;
  };
  const pending = async (): Promise<string> => {
    const response = await gate.call({ method: 'POST', url: '/api/requests', payload: { action: 'deploy', params: { env: 'prod' } } });
    assert.equal(response.statusCode, 201, response.body);
    return (response.json() as { id: string }).id;
  };

  test('sign-in answers a token once, stores only its SHA-256, and the session expires after the TTL', async () => {
    const key = await gate.createKey(['request:read', 'request:decide'], null, 'ops-key');
    const session = await signIn(key, '  Ada Lovelace ');
    assert.match(session.token, /^gds_[A-Za-z0-9_-]{40,}$/);
    assert.equal(session.name, 'Ada Lovelace', 'the name is trimmed');
    assert.equal(session.actor, 'dashboard:Ada Lovelace');
    assert.equal(session.keyName, 'ops-key');
    assert.deepEqual(session.scopes, ['request:read', 'request:decide']);
    assert.equal(session.createdAt, new Date(START).toISOString());
    assert.equal(session.expiresAt, new Date(START + DASHBOARD_SESSION_TTL_MS).toISOString());

    const rows = await gate.service.context.database.db.selectFrom('dashboard_sessions').selectAll().execute();
    assert.equal(rows.length, 1);
    assert.equal(rows[0]!.token_hash, sha256(session.token));
    assert.equal(rows[0]!.name, 'Ada Lovelace');
    assert.ok(!JSON.stringify(rows).includes(session.token), 'the raw token is not stored');

    const whoami = await gate.call({ method: 'GET', url: '/api/dashboard/sessions/current' }, session.token);
    assert.equal(whoami.statusCode, 200, whoami.body);
    assert.deepEqual(whoami.json(), {
      kind: 'dashboard_session',
      actor: 'dashboard:Ada Lovelace',
      keyId: session.keyId,
      keyName: 'ops-key',
      scopes: ['request:read', 'request:decide'],
      rateLimit: null,
      session: { id: session.id, name: 'Ada Lovelace', createdAt: session.createdAt, expiresAt: session.expiresAt },
    });

    gate.clock.advance(DASHBOARD_SESSION_TTL_MS - 1);
    assert.equal((await gate.call({ method: 'GET', url: '/api/requests' }, session.token)).statusCode, 200);
    gate.clock.advance(1);
    const expired = assertGateError(await gate.call({ method: 'GET', url: '/api/requests' }, session.token), 401, 'unauthorized', 'expired');
    assert.match(expired, /expired/);
  });

  test('a decision taken with a session token is recorded as dashboard:<name>, in the answer, the request and the audit trail', async () => {
    const key = await gate.createKey(['request:read', 'request:decide'], null, 'ops-key');
    const { token } = await signIn(key, 'grace');
    const id = await pending();
    // The body cannot name the decider: a decidedBy in it is ignored, the session names the actor.
    const decided = await gate.call(
      { method: 'POST', url: `/api/requests/${id}/decide`, payload: { decision: 'approved', reason: 'looks fine', decidedBy: 'dashboard:root' } },
      token,
    );
    assert.equal(decided.statusCode, 200, decided.body);
    assert.equal((decided.json() as { decidedBy: string }).decidedBy, 'dashboard:grace');
    const detail = (await gate.call({ method: 'GET', url: `/api/requests/${id}` })).json() as { decidedBy: string; decisionReason: string };
    assert.equal(detail.decidedBy, 'dashboard:grace');
    assert.equal(detail.decisionReason, 'looks fine');
    const audit = (await gate.call({ method: 'GET', url: `/api/requests/${id}/audit` })).json() as { event: string; actor: string }[];
    assert.deepEqual(
      audit.map((e) => [e.event, e.actor]),
      [
        ['created', 'api:admin (GATE_ADMIN_KEY)'],
        ['approved', 'dashboard:grace'],
      ],
    );

    // The same key used directly is still api:<key name>.
    const other = await pending();
    const direct = await gate.call({ method: 'POST', url: `/api/requests/${other}/decide`, payload: { decision: 'denied' } }, key);
    assert.equal((direct.json() as { decidedBy: string }).decidedBy, 'api:ops-key');
  });

  test('an MCP client session is attributed mcp:<name> (answer, request, audit, who-am-I); it cannot open another session', async () => {
    const key = await gate.createKey(['request:read', 'request:decide'], null, 'agent-key');
    const opened = await gate.call({ method: 'POST', url: '/api/mcp/sessions', payload: { name: 'claude-desktop' } }, key);
    assert.equal(opened.statusCode, 201, opened.body);
    const session = opened.json() as SessionBody;
    assert.equal(session.actor, 'mcp:claude-desktop');
    const whoami = (await gate.call({ method: 'GET', url: '/api/dashboard/sessions/current' }, session.token)).json() as { kind: string; actor: string };
    assert.deepEqual([whoami.kind, whoami.actor], ['mcp_session', 'mcp:claude-desktop']);

    const id = await pending();
    const decided = await gate.call({ method: 'POST', url: `/api/requests/${id}/decide`, payload: { decision: 'denied', reason: 'not now' } }, session.token);
    assert.equal(decided.statusCode, 200, decided.body);
    assert.equal((decided.json() as { decidedBy: string }).decidedBy, 'mcp:claude-desktop');
    const audit = (await gate.call({ method: 'GET', url: `/api/requests/${id}/audit` })).json() as { event: string; actor: string }[];
    assert.deepEqual(audit.at(-1)?.actor, 'mcp:claude-desktop');
    assertGateError(await gate.call({ method: 'POST', url: '/api/mcp/sessions', payload: { name: 'again' } }, session.token), 403, 'forbidden');
    assertGateError(await gate.call({ method: 'POST', url: '/api/mcp/sessions', payload: { name: '' } }, key), 400, 'bad_request');
  });

  test("a session has its key's scopes and rate limit, now: narrowing or revoking the key applies to the session at once", async () => {
    const key = await gate.createKey(['request:read', 'request:decide'], 3, 'narrowed');
    const { token, keyId } = await signIn(key, 'lin');
    const id = await pending();
    assertGateError(await gate.call({ method: 'GET', url: '/api/policies' }, token), 403, 'forbidden', 'admin route');
    const read = await gate.call({ method: 'GET', url: `/api/requests/${id}` }, token);
    assert.equal(read.statusCode, 200);
    // The key's limit (3/min) counts the sign-in, the key's and the session's requests together.
    assert.equal(read.headers['x-ratelimit-limit'], '3');
    assert.equal(read.headers['x-ratelimit-remaining'], '1');

    gate.clock.advance(60_000);
    const patched = await gate.call({ method: 'PATCH', url: `/api/api-keys/${keyId}`, payload: { scopes: ['request:read'], rateLimit: null } });
    assert.equal(patched.statusCode, 200, patched.body);
    assertGateError(
      await gate.call({ method: 'POST', url: `/api/requests/${id}/decide`, payload: { decision: 'approved' } }, token),
      403,
      'forbidden',
      'decide after narrowing',
    );
    assert.equal((await gate.call({ method: 'GET', url: `/api/requests/${id}` }, token)).statusCode, 200);

    assert.equal((await gate.call({ method: 'DELETE', url: `/api/api-keys/${keyId}` })).statusCode, 200);
    assertGateError(await gate.call({ method: 'GET', url: `/api/requests/${id}` }, token), 401, 'unauthorized', 'key revoked');
  });

  test('sign-out revokes the token; an API key cannot sign out; a session cannot open another session', async () => {
    const key = await gate.createKey(['request:read'], null, 'reader');
    const { token, id } = await signIn(key, 'kim');
    assertGateError(
      await gate.call({ method: 'POST', url: '/api/dashboard/sessions', payload: { name: 'kim2' } }, token),
      403,
      'forbidden',
      'session → session',
    );
    assertGateError(await gate.call({ method: 'DELETE', url: '/api/dashboard/sessions/current' }, key), 400, 'bad_request', 'sign-out with a key');

    const out = await gate.call({ method: 'DELETE', url: '/api/dashboard/sessions/current' }, token);
    assert.equal(out.statusCode, 200, out.body);
    assert.deepEqual(out.json(), { id, revoked: true });
    assertGateError(await gate.call({ method: 'GET', url: '/api/requests' }, token), 401, 'unauthorized', 'after sign-out');
    // The key itself still works.
    assert.equal((await gate.call({ method: 'GET', url: '/api/requests' }, key)).statusCode, 200);
  });

  test('who-am-I with an API key names the key actor', async () => {
    const key = await gate.createKey(['request:read'], 100, 'plain');
    const response = await gate.call({ method: 'GET', url: '/api/dashboard/sessions/current' }, key);
    assert.equal(response.statusCode, 200, response.body);
    const body = response.json() as { kind: string; actor: string; session: unknown; rateLimit: number };
    assert.equal(body.kind, 'api_key');
    assert.equal(body.actor, 'api:plain');
    assert.equal(body.session, null);
    assert.equal(body.rateLimit, 100);
  });

  test('sign-in needs a valid key and a valid display name; nothing is stored otherwise', async () => {
    const anonymous = await gate.service.app.inject({ method: 'POST', url: '/api/dashboard/sessions', payload: { name: 'x' } });
    assertGateError(anonymous, 401, 'unauthorized', 'no key');
    assertGateError(
      await gate.call({ method: 'POST', url: '/api/dashboard/sessions', payload: { name: 'x' } }, 'gk_wrong_key_000000000000000'),
      401,
      'unauthorized',
      'wrong key',
    );
    assertGateError(await gate.call({ method: 'GET', url: '/api/requests' }, 'gds_not_a_session_000000000000000000000'), 401, 'unauthorized', 'forged token');
    for (const payload of [
      {},
      { name: '' },
      { name: '   ' },
      { name: 'a'.repeat(101) },
      { name: 'evil\u0007bell' },
      { name: ':root' },
      { name: 'ok', scopes: ['admin'] },
    ]) {
      assertGateError(await gate.call({ method: 'POST', url: '/api/dashboard/sessions', payload }), 400, 'bad_request', JSON.stringify(payload));
    }
    const rows = await gate.service.context.database.db.selectFrom('dashboard_sessions').select('id').execute();
    assert.equal(rows.length, 0);
  });

  test('sessions that ended more than a day ago are purged at the next sign-in', async () => {
    const key = await gate.createKey(['request:read'], null, 'old');
    await signIn(key, 'first');
    gate.clock.advance(DASHBOARD_SESSION_TTL_MS + 24 * 60 * 60 * 1000 + 1);
    await signIn(key, 'second');
    const rows = await gate.service.context.database.db.selectFrom('dashboard_sessions').select('name').execute();
    assert.deepEqual(
      rows.map((r) => r.name),
      ['second'],
    );
  });
});
