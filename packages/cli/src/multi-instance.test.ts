/**
 * Production mode: two observe and two gate processes (`vigil observe|gate`, real child
 * processes) share one PostgreSQL database and one Redis. Concurrent ingest keeps every chain
 * valid and gapless; background work (alert evaluation, expiry, webhook and notification
 * delivery, guardrail notifications) happens once cluster-wide, counted at a real receiver; rate
 * limits are shared through Redis; a revoked key and a changed policy reach the other instance
 * within GATE_CACHE_REFRESH_MS (1 s).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { acquireLease, createLeaseTable, ManualClock, openDatabase, startPeriodicJob } from '@vigil/platform';
import { TestHttpServer, type ReceivedRequest } from '@vigil/platform/testing';
import {
  call,
  dropSchemas,
  expectStatus,
  firstObserveKey,
  newSchemaName,
  POSTGRES_URL,
  REDIS_URL,
  removeDir,
  ServiceProcess,
  servicesSkipReason,
  tempDir,
  waitFor,
} from './cluster.ts';
import { batchOf, checkBatches, verifyChains, type BatchOutcome } from './crash-scenarios.ts';

const skip = await servicesSkipReason(true);
const ADMIN = `gk_multi_${randomBytes(12).toString('hex')}`;
const run = randomBytes(4).toString('hex');

/** Answers 503 to the first attempt of every delivery (by its delivery header), 200 afterwards. */
function failFirstAttempt(header: string) {
  const seen = new Set<string>();
  return (request: ReceivedRequest): number => {
    const id = String(request.headers[header]);
    if (seen.has(id)) return 200;
    seen.add(id);
    return 503;
  };
}

// The observe and the gate tests run at the same time (they wait on retries and scanners more than
// on the CPU). The observe tests use separate agents and sessions, so they run at once too; the
// gate tests run in order (every request created reaches the webhook the first one counts).
describe('several instances on one PostgreSQL and one Redis', { skip, concurrency: true }, () => {
  const observeSchema = newSchemaName('multi_observe');
  const gateSchema = newSchemaName('multi_gate');
  const dataDir = tempDir();
  const answers = new Map<ReceivedRequest, number>();
  const alertAnswer = failFirstAttempt('x-vigil-delivery');
  const gateAnswer = failFirstAttempt('x-gate-delivery');
  const receiver = new TestHttpServer((request, res) => {
    let status = 200;
    if (request.url.startsWith('/alert/')) status = alertAnswer(request);
    else if (request.url.startsWith('/gate/')) status = gateAnswer(request);
    answers.set(request, status);
    res.writeHead(status).end();
  });
  const received = (prefix: string) => receiver.requests.filter((r) => r.url.startsWith(prefix));
  const succeeded = (prefix: string) => received(prefix).filter((r) => answers.get(r) === 200);

  let observe: ServiceProcess[] = [];
  let gate: ServiceProcess[] = [];
  let key = '';

  before(async () => {
    await receiver.start();
    const observeEnv = { DATABASE_URL: POSTGRES_URL, OBSERVE_DB_SCHEMA: observeSchema, ALERT_EVAL_INTERVAL_MS: '500' };
    const gateEnv = {
      DATABASE_URL: POSTGRES_URL,
      GATE_DB_SCHEMA: gateSchema,
      REDIS_URL,
      GATE_ADMIN_KEY: ADMIN,
      EXPIRY_SCAN_INTERVAL_MS: '300',
      WEBHOOK_SCAN_INTERVAL_MS: '300',
    };
    observe = await Promise.all([ServiceProcess.create('observe', observeEnv, dataDir), ServiceProcess.create('observe', observeEnv, dataDir)]);
    gate = await Promise.all([ServiceProcess.create('gate', gateEnv, dataDir), ServiceProcess.create('gate', gateEnv, dataDir)]);
    // All four start together: the instances of a service race on creating their schema and migrating it.
    await Promise.all([...observe, ...gate].map((service) => service.start()));
    key = await firstObserveKey(observe[0]!.base);
  });

  after(async () => {
    await Promise.all([...observe, ...gate].map((service) => service.stop()));
    await receiver.stop();
    removeDir(dataDir);
    await dropSchemas(observeSchema, gateSchema);
  });

  describe('two observe instances', () => {
    test('two observe instances ingesting into the same sessions at once keep every chain valid and gapless, every acknowledged event stored', async () => {
      const sessionIds = Array.from({ length: 6 }, (_, k) => `multi-${run}-${k}`);
      const batches: BatchOutcome[] = [];
      const client = async (c: number): Promise<void> => {
        for (let n = 0; n < 6; n++) {
          // Batches alternate between the instances; each spans three of the shared sessions.
          const instance = observe[(c + n) % 2]!;
          const marker = `${run}-c${c}-b${n}`;
          const touched = [0, 1, 2].map((j) => sessionIds[(c + n + j) % sessionIds.length]!);
          const answer = await call<{ events: { id: string }[] }>(instance.base, 'POST', '/api/events', { key, body: { events: batchOf(marker, 24, touched, `agent-${c}`) } });
          assert.equal(answer.status, 201, JSON.stringify(answer.body));
          batches.push({ marker, size: 24, outcome: 'acked', ids: answer.body.events.map((e) => e.id) });
        }
      };
      await Promise.all(Array.from({ length: 6 }, (_, c) => client(c)));

      for (const instance of observe) {
        const problems: string[] = [];
        const stored = await verifyChains(instance.base, key, sessionIds, problems);
        checkBatches(stored, batches, problems);
        assert.deepEqual(problems, [], `read through ${instance.base}`);
        assert.equal(stored.length, 6 * 6 * 24);
      }
    });

    test('alert rules are evaluated and their notifications sent (and retried) once per tick across both instances', async () => {
      const rules = [];
      for (let k = 0; k < 3; k++) {
        const rule = await expectStatus<{ id: string }>(201, observe[k % 2]!.base, 'POST', '/api/alerts/rules', {
          key,
          body: {
            name: `busy agent ${k}`,
            condition: 'event_count_exceeds',
            threshold: 0,
            windowMinutes: 60,
            scope: { agentId: `alerting-${run}-${k}` },
            notifyChannels: [`${receiver.url}/alert/${k}`],
          },
        });
        rules.push(rule);
        await expectStatus(201, observe[(k + 1) % 2]!.base, 'POST', '/api/events', { key, body: { events: batchOf(`alert-${run}-${k}`, 1, [`alerting-${run}-${k}`], `alerting-${run}-${k}`) } });
      }
      // Each channel refuses the first attempt: the retry is due 2 s later and taken by whichever instance evaluates next.
      await waitFor('a delivered notification for every rule', 30_000, async () => [0, 1, 2].every((k) => succeeded(`/alert/${k}`).length > 0));

      // Both instances keep evaluating every 500 ms; a later rule fired, refused and retried in the
      // meantime proves further ticks ran before the counts are read.
      await expectStatus(201, observe[1]!.base, 'POST', '/api/alerts/rules', {
        key,
        body: { name: 'sentinel', condition: 'event_count_exceeds', threshold: 0, windowMinutes: 60, scope: { agentId: `alerting-${run}-0` }, notifyChannels: [`${receiver.url}/alert/sentinel`] },
      });
      await waitFor('the sentinel notification', 30_000, async () => succeeded('/alert/sentinel').length > 0);

      for (const [k, rule] of rules.entries()) {
        const requests = received(`/alert/${k}`);
        const deliveries = new Set(requests.map((r) => r.headers['x-vigil-delivery']));
        assert.equal(deliveries.size, 1, `rule ${k}: one notification (${requests.length} attempts)`);
        assert.equal(requests.length, 2, `rule ${k}: the refused attempt and one retry`);
        assert.equal(succeeded(`/alert/${k}`).length, 1);
        const body = JSON.parse(succeeded(`/alert/${k}`)[0]!.body) as { alertRuleId: string; currentValue: number };
        assert.equal(body.alertRuleId, rule.id);
        const history = await expectStatus<{ entries: { notified: boolean }[]; total: number }>(200, observe[0]!.base, 'GET', `/api/alerts/history?ruleId=${rule.id}`, { key });
        assert.equal(history.total, 1, `rule ${k}: one history entry`);
        assert.equal(history.entries[0]!.notified, true);
      }
    });

    test('a guardrail notify_webhook fires once per cooldown although both instances evaluate it after their commits', async () => {
      const agent = `guarded-${run}`;
      const rule = await expectStatus<{ id: string }>(201, observe[0]!.base, 'POST', '/api/guardrails', {
        key,
        body: {
          name: 'errors',
          agentId: agent,
          conditionType: 'error_rate_threshold',
          conditionConfig: { threshold: 10 },
          actionType: 'notify_webhook',
          actionConfig: { url: `${receiver.url}/guard/errors` },
          cooldownMinutes: 15,
        },
      });
      const errors = (n: number, marker: string) =>
        Array.from({ length: n }, (_, i) => ({
          sessionId: `guard-${run}`,
          agentId: agent,
          eventType: 'tool_error',
          payload: { toolName: 'charge', callId: `${marker}-${i}`, error: 'card declined', durationMs: 5 },
        }));
      // Eight error batches at once, four through each instance: each commit queues an evaluation there.
      await Promise.all(
        Array.from({ length: 8 }, (_, i) => expectStatus(201, observe[i % 2]!.base, 'POST', '/api/events', { key, body: { events: errors(5, `burst${i}`) } })),
      );
      await waitFor('the guardrail notification', 30_000, async () => succeeded('/guard/errors').length > 0);

      // More errors through both instances within the cooldown, then a sentinel rule per instance:
      // once both sentinels fired, both instances have evaluated the later batches too.
      for (const [i, instance] of observe.entries()) {
        await expectStatus(201, instance.base, 'POST', '/api/events', { key, body: { events: errors(5, `later${i}`) } });
      }
      for (const [i, instance] of observe.entries()) {
        const sentinelAgent = `sentinel-${run}-${i}`;
        await expectStatus(201, instance.base, 'POST', '/api/guardrails', {
          key,
          body: {
            name: `sentinel ${i}`,
            agentId: sentinelAgent,
            conditionType: 'error_rate_threshold',
            conditionConfig: { threshold: 10 },
            actionType: 'notify_webhook',
            actionConfig: { url: `${receiver.url}/guard/sentinel-${i}` },
          },
        });
        await expectStatus(201, instance.base, 'POST', '/api/events', {
          key,
          body: { events: [{ sessionId: `sentinel-${run}-${i}`, agentId: sentinelAgent, eventType: 'tool_error', payload: { toolName: 't', callId: 'c', error: 'x', durationMs: 1 } }] },
        });
      }
      await waitFor('both sentinel notifications', 30_000, async () => succeeded('/guard/sentinel-0').length > 0 && succeeded('/guard/sentinel-1').length > 0);

      assert.equal(received('/guard/errors').length, 1, 'one notification within the cooldown');
      const notification = JSON.parse(received('/guard/errors')[0]!.body) as { ruleId: string; agentId: string; actionType: string };
      assert.equal(notification.ruleId, rule.id);
      assert.equal(notification.agentId, agent);
      const history = await expectStatus<{ total: number }>(200, observe[1]!.base, 'GET', `/api/guardrails/history?ruleId=${rule.id}`, { key });
      assert.equal(history.total, 1, 'one trigger recorded');
    });
  });

  describe('two gate instances', { concurrency: 1 }, () => {
    test('gate webhooks are delivered once each, their retries taken by one instance, while both run the delivery scanner', async () => {
      const [a, b] = gate as [ServiceProcess, ServiceProcess];
      const hook = await expectStatus<{ id: string }>(201, a.base, 'POST', '/api/webhooks', {
        key: ADMIN,
        body: { url: `${receiver.url}/gate/hook`, events: ['request.created', 'request.decided'] },
      });
      const ids: string[] = [];
      await Promise.all(
        Array.from({ length: 12 }, async (_, i) => {
          const created = await expectStatus<{ id: string }>(201, gate[i % 2]!.base, 'POST', '/api/requests', { key: ADMIN, body: { action: `multi_${run}`, params: { i } } });
          ids.push(created.id);
          await expectStatus(200, gate[(i + 1) % 2]!.base, 'POST', `/api/requests/${created.id}/decide`, { key: ADMIN, body: { decision: i % 3 === 0 ? 'denied' : 'approved' } });
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
      await waitFor('every webhook delivered', 30_000, async () => ids.every((id) => delivered(id, 'request.created').length > 0 && delivered(id, 'request.decided').length > 0));
      // A later request's retried delivery shows both scanners had their chance meanwhile.
      const late = await expectStatus<{ id: string }>(201, b.base, 'POST', '/api/requests', { key: ADMIN, body: { action: `multi_${run}`, params: { late: true } } });
      await waitFor('the later delivery', 30_000, async () => delivered(late.id, 'request.created').length > 0);

      const attempts = new Map<string, number>();
      for (const r of received('/gate/hook').filter(ours)) attempts.set(String(r.headers['x-gate-delivery']), (attempts.get(String(r.headers['x-gate-delivery'])) ?? 0) + 1);
      for (const id of ids) {
        assert.equal(delivered(id, 'request.created').length, 1, `request.created of ${id}`);
        assert.equal(delivered(id, 'request.decided').length, 1, `request.decided of ${id}`);
      }
      assert.equal(attempts.size, ids.length * 2 + 1, 'one delivery per request and event (and the later request)');
      for (const [delivery, count] of attempts) assert.equal(count, 2, `delivery ${delivery}: the refused attempt and one retry`);
      const list = await expectStatus<{ deliveries: { status: string; attempts: number }[]; total: number }>(200, a.base, 'GET', `/api/webhooks/${hook.id}/deliveries?limit=500`, { key: ADMIN });
      assert.equal(list.total, ids.length * 2 + 1);
      assert.ok(list.deliveries.every((d) => d.status === 'delivered' && d.attempts === 2), JSON.stringify(list.deliveries.filter((d) => d.attempts !== 2)));
    });

    test('pending requests past their deadline expire once, with one request.expired webhook, although both instances scan', async () => {
      await expectStatus(201, gate[0]!.base, 'POST', '/api/webhooks', { key: ADMIN, body: { url: `${receiver.url}/expired/hook`, events: ['request.expired'] } });
      const expiresAt = new Date(Date.now() + 3000).toISOString();
      const ids = await Promise.all(
        Array.from({ length: 8 }, async (_, i) =>
          (await expectStatus<{ id: string }>(201, gate[i % 2]!.base, 'POST', '/api/requests', { key: ADMIN, body: { action: `expiring_${run}`, params: { i }, expiresAt } })).id,
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
      const limited = await expectStatus<{ key: string }>(201, gate[0]!.base, 'POST', '/api/api-keys', { key: ADMIN, body: { name: 'limited', scopes: ['request:read'], rateLimit: 10 } });
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
      const created = await expectStatus<{ id: string; key: string }>(201, a.base, 'POST', '/api/api-keys', { key: ADMIN, body: { name: 'revoked', scopes: ['request:read'] } });
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
});

describe('the job lease', { skip }, () => {
  test('admits one holder per interval, also for intervals of a second or less', async () => {
    const schema = newSchemaName('multi_lease');
    const first = await openDatabase<any>({ kind: 'postgres', url: POSTGRES_URL, schema });
    const second = await openDatabase<any>({ kind: 'postgres', url: POSTGRES_URL, schema });
    try {
      await createLeaseTable(first.db);
      const clock = new ManualClock(1_000_000);
      const log = { error() {} } as never;
      for (const intervalMs of [300, 1000, 1500, 60_000]) {
        const runs: string[] = [];
        const job = (db: typeof first.db, holder: string) =>
          startPeriodicJob({ name: `lease-${intervalMs}`, intervalMs, db, holder, clock, log, run: async () => void runs.push(holder) }, false);
        const [x, y] = [job(first.db, 'x'), job(second.db, 'y')];
        // Two instances whose timers are out of phase: y ticks 40 % of an interval after x, each once per interval.
        for (let tick = 0; tick < 5; tick++) {
          assert.equal(await x.tick(), true, `interval ${intervalMs}: x keeps its lease at tick ${tick}`);
          clock.advance(intervalMs * 0.4);
          assert.equal(await y.tick(), false, `interval ${intervalMs}: y must not run within x's interval (tick ${tick})`);
          clock.advance(intervalMs * 0.6);
        }
        assert.deepEqual(runs, Array(5).fill('x'));
        // When x stops, y takes over at its next tick after the lease lapsed.
        clock.advance(intervalMs * 0.4);
        assert.equal(await y.tick(), true, `interval ${intervalMs}: y takes the lapsed lease`);
        clock.advance(intervalMs);
      }
      // The conditional UPDATE decides between two instances asking at the same moment.
      const results = await Promise.all([acquireLease(first.db, 'same-moment', 'x', clock.now(), 500), acquireLease(second.db, 'same-moment', 'y', clock.now(), 500)]);
      assert.deepEqual(results.filter(Boolean).length, 1);
    } finally {
      await first.close();
      await second.close();
      await dropSchemas(schema);
    }
  });
});
