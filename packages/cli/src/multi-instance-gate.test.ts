/**
 * Production mode, gate: two `vigil gate` processes (real child processes) share one PostgreSQL
 * schema and one Redis. Webhook deliveries (and their retries) and expiries happen once although
 * both instances run the scanners (counted at a real receiver); a key's rate-limit budget is
 * shared through Redis; a revoked key and a changed policy reach the other instance within
 * GATE_CACHE_REFRESH_MS (1 s). The observe side is multi-instance-observe.test.ts.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { failingFirstReceiver, type ReceivedRequest } from '@vigil/platform/testing';
import {
  call,
  expectStatus,
  newSchemaName,
  POSTGRES_URL,
  REDIS_URL,
  type ServiceProcess,
  servicesSkipReason,
  startTwoInstances,
  stopInstances,
  tempDir,
  waitFor,
} from './cluster.ts';

const skip = await servicesSkipReason(true);
const ADMIN = `gk_multi_${randomBytes(12).toString('hex')}`;
const run = randomBytes(4).toString('hex');

// In order: every request created reaches the webhook the first test counts.
describe('two gate instances on one PostgreSQL schema and one Redis', { skip }, () => {
  const schema = newSchemaName('multi_gate');
  const dataDir = tempDir();
  const { server: receiver, received, succeeded } = failingFirstReceiver('/gate/', 'x-gate-delivery');

  let gate: ServiceProcess[] = [];

  before(async () => {
    await receiver.start();
    const env = {
      DATABASE_URL: POSTGRES_URL,
      GATE_DB_SCHEMA: schema,
      REDIS_URL,
      GATE_ADMIN_KEY: ADMIN,
      EXPIRY_SCAN_INTERVAL_MS: '300',
      WEBHOOK_SCAN_INTERVAL_MS: '300',
    };
    // Both start together: they also race on installing GATE_ADMIN_KEY.
    gate = await startTwoInstances('gate', env, dataDir);
  });

  after(async () => {
    await stopInstances(gate, dataDir, schema);
    await receiver.stop();
  });

  test('gate webhooks are delivered once each, their retries taken by one instance, while both run the delivery scanner', async () => {
    const [a, b] = gate as [ServiceProcess, ServiceProcess];
    const hook = await expectStatus<{ id: string }>(201, a.base, 'POST', '/api/webhooks', {
      key: ADMIN,
      body: { url: `${receiver.url}/gate/hook`, events: ['request.created', 'request.decided'] },
    });
    const ids: string[] = [];
    await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const created = await expectStatus<{ id: string }>(201, gate[i % 2]!.base, 'POST', '/api/requests', {
          key: ADMIN,
          body: { action: `multi_${run}`, params: { i } },
        });
        ids.push(created.id);
        await expectStatus(200, gate[(i + 1) % 2]!.base, 'POST', `/api/requests/${created.id}/decide`, {
          key: ADMIN,
          body: { decision: i % 3 === 0 ? 'denied' : 'approved' },
        });
      }),
    );
    // Other tests create requests meanwhile (their request.created reaches this hook too): only this test's action counts.
    const ours = (r: ReceivedRequest) => (JSON.parse(r.body) as { data: { action: string } }).data.action === `multi_${run}`;
    const delivered = (requestId: string, event: string) =>
      succeeded('/gate/hook').filter((r) => {
        const body = JSON.parse(r.body) as { event: string; data: { id: string } };
        return body.event === event && body.data.id === requestId;
      });
    // Every first attempt is refused; the retry (2 s later) comes from a retry timer or either scanner.
    await waitFor('every webhook delivered', 30_000, async () =>
      ids.every((id) => delivered(id, 'request.created').length > 0 && delivered(id, 'request.decided').length > 0),
    );
    // A later request's retried delivery shows both scanners had their chance meanwhile.
    const late = await expectStatus<{ id: string }>(201, b.base, 'POST', '/api/requests', {
      key: ADMIN,
      body: { action: `multi_${run}`, params: { late: true } },
    });
    await waitFor('the later delivery', 30_000, async () => delivered(late.id, 'request.created').length > 0);

    const attempts = new Map<string, number>();
    for (const r of received('/gate/hook').filter(ours))
      attempts.set(String(r.headers['x-gate-delivery']), (attempts.get(String(r.headers['x-gate-delivery'])) ?? 0) + 1);
    for (const id of ids) {
      assert.equal(delivered(id, 'request.created').length, 1, `request.created of ${id}`);
      assert.equal(delivered(id, 'request.decided').length, 1, `request.decided of ${id}`);
    }
    assert.equal(attempts.size, ids.length * 2 + 1, 'one delivery per request and event (and the later request)');
    for (const [delivery, count] of attempts) assert.equal(count, 2, `delivery ${delivery}: the refused attempt and one retry`);
    const list = await expectStatus<{ deliveries: { status: string; attempts: number }[]; total: number }>(
      200,
      a.base,
      'GET',
      `/api/webhooks/${hook.id}/deliveries?limit=500`,
      { key: ADMIN },
    );
    assert.equal(list.total, ids.length * 2 + 1);
    assert.ok(
      list.deliveries.every((d) => d.status === 'delivered' && d.attempts === 2),
      JSON.stringify(list.deliveries.filter((d) => d.attempts !== 2)),
    );
  });

  test('pending requests past their deadline expire once, with one request.expired webhook, although both instances scan', async () => {
    await expectStatus(201, gate[0]!.base, 'POST', '/api/webhooks', { key: ADMIN, body: { url: `${receiver.url}/expired/hook`, events: ['request.expired'] } });
    const expiresAt = new Date(Date.now() + 3000).toISOString();
    const ids = await Promise.all(
      Array.from(
        { length: 8 },
        async (_, i) =>
          (
            await expectStatus<{ id: string }>(201, gate[i % 2]!.base, 'POST', '/api/requests', {
              key: ADMIN,
              body: { action: `expiring_${run}`, params: { i }, expiresAt },
            })
          ).id,
      ),
    );
    const expiredOf = (id: string) => received('/expired/').filter((r) => (JSON.parse(r.body) as { data: { id: string } }).data.id === id);
    await waitFor('a request.expired webhook per request', 30_000, async () => ids.every((id) => expiredOf(id).length > 0));
    // A later expiry seen by the receiver proves the scanners kept running.
    const sentinel = await expectStatus<{ id: string }>(201, gate[1]!.base, 'POST', '/api/requests', {
      key: ADMIN,
      body: { action: `expiring_${run}`, params: { sentinel: true }, expiresAt: new Date(Date.now() + 2000).toISOString() },
    });
    await waitFor('the sentinel expiry', 30_000, async () => expiredOf(sentinel.id).length > 0);
    for (const id of ids) {
      assert.equal(expiredOf(id).length, 1, `one request.expired webhook for ${id}`);
      const entries = await expectStatus<{ event: string }[]>(200, gate[1]!.base, 'GET', `/api/requests/${id}/audit`, { key: ADMIN });
      assert.equal(entries.filter((e) => e.event === 'expired').length, 1, `one expired audit entry for ${id}`);
    }
  });

  test('two gate instances share each key’s rate-limit budget through Redis', async () => {
    const limited = await expectStatus<{ key: string }>(201, gate[0]!.base, 'POST', '/api/api-keys', {
      key: ADMIN,
      body: { name: 'limited', scopes: ['request:read'], rateLimit: 10 },
    });
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) statuses.push((await call(gate[i % 2]!.base, 'GET', '/api/requests?limit=1', { key: limited.key })).status);
    assert.deepEqual(statuses.slice(0, 10), Array(10).fill(200), 'the first ten requests, five on each instance, pass');
    assert.deepEqual(statuses.slice(10), Array(10).fill(429), 'then the shared budget is spent on both instances');
  });

  /**
   * Sends `probe` to the other instance until it shows the change; no request sent more than
   * `refreshMs` after the change was acknowledged may still see the old state.
   */
  async function propagation(changedAt: number, probe: () => Promise<'old' | 'new'>): Promise<number> {
    const deadline = changedAt + 10_000;
    let lastOld = -Infinity;
    for (;;) {
      const sentAt = Date.now();
      const state = await probe();
      if (state === 'new') break;
      lastOld = sentAt;
      assert.ok(Date.now() < deadline, 'the change never reached the other instance');
      await new Promise((r) => setTimeout(r, 20));
    }
    return lastOld - changedAt;
  }

  test('a key revoked through one gate instance stops working there at once and on the other within one second', async () => {
    const [a, b] = gate as [ServiceProcess, ServiceProcess];
    const created = await expectStatus<{ id: string; key: string }>(201, a.base, 'POST', '/api/api-keys', {
      key: ADMIN,
      body: { name: 'revoked', scopes: ['request:read'] },
    });
    // Both instances have the key cached.
    assert.equal((await call(a.base, 'GET', '/api/requests?limit=1', { key: created.key })).status, 200);
    assert.equal((await call(b.base, 'GET', '/api/requests?limit=1', { key: created.key })).status, 200);
    await expectStatus(200, a.base, 'DELETE', `/api/api-keys/${created.id}`, { key: ADMIN });
    const revokedAt = Date.now();
    assert.equal((await call(a.base, 'GET', '/api/requests?limit=1', { key: created.key })).status, 401, 'at once on the instance that revoked it');
    const stale = await propagation(revokedAt, async () => {
      const status = (await call(b.base, 'GET', '/api/requests?limit=1', { key: created.key })).status;
      assert.ok(status === 200 || status === 401, `status ${status}`);
      return status === 401 ? 'new' : 'old';
    });
    assert.ok(stale <= 1000, `the other instance accepted the revoked key in a request sent ${stale} ms after the revocation`);
  });

  test('a policy changed through one gate instance applies at once there and on the other within one second', async () => {
    const [a, b] = gate as [ServiceProcess, ServiceProcess];
    const action = `policy_${run}`;
    const policy = await expectStatus<{ id: string }>(201, a.base, 'POST', '/api/policies', {
      key: ADMIN,
      body: { name: 'flip', priority: 1, rules: [{ match: { action }, decision: 'auto_approve' }] },
    });
    const decisionOn = async (instance: ServiceProcess) =>
      (await expectStatus<{ status: string }>(201, instance.base, 'POST', '/api/requests', { key: ADMIN, body: { action, params: {} } })).status;
    // The new policy works everywhere at once (the other instance's cached set is at most a second old).
    await waitFor('the new policy on the other instance', 5000, async () => (await decisionOn(b)) === 'approved');
    assert.equal(await decisionOn(a), 'approved');
    await expectStatus(200, a.base, 'PUT', `/api/policies/${policy.id}`, { key: ADMIN, body: { rules: [{ match: { action }, decision: 'auto_deny' }] } });
    const changedAt = Date.now();
    assert.equal(await decisionOn(a), 'denied', 'at once on the instance that changed it');
    const stale = await propagation(changedAt, async () => {
      const status = await decisionOn(b);
      assert.ok(status === 'approved' || status === 'denied', status);
      return status === 'denied' ? 'new' : 'old';
    });
    assert.ok(stale <= 1000, `the other instance applied the old policy to a request sent ${stale} ms after the change`);
  });
});
