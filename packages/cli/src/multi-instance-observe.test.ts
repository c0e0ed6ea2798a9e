/**
 * Production mode, observe: two `vigil observe` processes (real child processes) share one
 * PostgreSQL schema. Ingest into the same sessions through both keeps every chain valid and
 * gapless; alert notifications and guardrail notify_webhook arrive once (counted at a real
 * receiver) although both instances run the jobs and evaluate after their commits. Also the job
 * lease itself, and alert ticks of two instances that overlap. The gate's side is
 * multi-instance-gate.test.ts.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { acquireLease, createLeaseTable, ManualClock, openDatabase, startPeriodicJob, systemClock } from '@vigil/platform';
import { failingFirstReceiver } from '@vigil/platform/testing';
import { buildObserveService, observeConfigFromEnvironment } from '@vigil/observe';
import { evaluateRules } from '@vigil/observe/testing';
import {
  call,
  dropSchemas,
  expectStatus,
  firstObserveKey,
  newSchemaName,
  POSTGRES_URL,
  removeDir,
  type ServiceProcess,
  servicesSkipReason,
  startTwoInstances,
  stopInstances,
  tempDir,
  waitFor,
} from './cluster.ts';
import { batchOf, checkBatches, verifyChains, type BatchOutcome } from './crash-scenarios.ts';

const skip = await servicesSkipReason(false);
const run = randomBytes(4).toString('hex');

// The tests use separate agents, sessions and receiver paths, and wait on retries and job ticks
// more than on the CPU, so they run at once.
describe('two observe instances on one PostgreSQL schema', { skip, concurrency: true }, () => {
  const schema = newSchemaName('multi_observe');
  const dataDir = tempDir();
  const { server: receiver, received, succeeded } = failingFirstReceiver('/alert/', 'x-vigil-delivery');

  let observe: ServiceProcess[] = [];
  let key = '';

  before(async () => {
    await receiver.start();
    const env = { DATABASE_URL: POSTGRES_URL, OBSERVE_DB_SCHEMA: schema, ALERT_EVAL_INTERVAL_MS: '500' };
    observe = await startTwoInstances('observe', env, dataDir);
    key = await firstObserveKey(observe[0]!.base);
  });

  after(async () => {
    await stopInstances(observe, dataDir, schema);
    await receiver.stop();
  });

  test('two observe instances ingesting into the same sessions at once keep every chain valid and gapless, every acknowledged event stored', async () => {
    const sessionIds = Array.from({ length: 6 }, (_, k) => `multi-${run}-${k}`);
    const batches: BatchOutcome[] = [];
    const client = async (c: number): Promise<void> => {
      for (let n = 0; n < 6; n++) {
        // Batches alternate between the instances; each spans three of the shared sessions.
        const instance = observe[(c + n) % 2]!;
        const marker = `${run}-c${c}-b${n}`;
        const touched = [0, 1, 2].map((j) => sessionIds[(c + n + j) % sessionIds.length]!);
        const answer = await call<{ events: { id: string }[] }>(instance.base, 'POST', '/api/events', {
          key,
          body: { events: batchOf(marker, 24, touched, `agent-${c}`) },
        });
        assert.equal(answer.status, 201, `${JSON.stringify(answer.body)}\n${instance.output}`);
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
      await expectStatus(201, observe[(k + 1) % 2]!.base, 'POST', '/api/events', {
        key,
        body: { events: batchOf(`alert-${run}-${k}`, 1, [`alerting-${run}-${k}`], `alerting-${run}-${k}`) },
      });
    }
    // Each channel refuses the first attempt: the retry is due 2 s later and taken by whichever instance evaluates next.
    await waitFor('a delivered notification for every rule', 30_000, async () => [0, 1, 2].every((k) => succeeded(`/alert/${k}`).length > 0));

    // Both instances keep evaluating every 500 ms; a later rule fired, refused and retried in the
    // meantime proves further ticks ran before the counts are read.
    await expectStatus(201, observe[1]!.base, 'POST', '/api/alerts/rules', {
      key,
      body: {
        name: 'sentinel',
        condition: 'event_count_exceeds',
        threshold: 0,
        windowMinutes: 60,
        scope: { agentId: `alerting-${run}-0` },
        notifyChannels: [`${receiver.url}/alert/sentinel`],
      },
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
      const history = await expectStatus<{ entries: { notified: boolean }[]; total: number }>(
        200,
        observe[0]!.base,
        'GET',
        `/api/alerts/history?ruleId=${rule.id}`,
        { key },
      );
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
        body: {
          events: [
            {
              sessionId: `sentinel-${run}-${i}`,
              agentId: sentinelAgent,
              eventType: 'tool_error',
              payload: { toolName: 't', callId: 'c', error: 'x', durationMs: 1 },
            },
          ],
        },
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

describe('the job lease', { skip }, () => {
  test('admits one holder per interval, also for intervals of a second or less', async () => {
    const schema = newSchemaName('multi_lease');
    const first = await openDatabase<any>({ kind: 'postgres', url: POSTGRES_URL, schema });
    const second = await openDatabase<any>({ kind: 'postgres', url: POSTGRES_URL, schema });
    try {
      await createLeaseTable(first.db);
      const clock = new ManualClock(1_000_000);
      const log = { error() {}, warn() {} } as never;
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
      // A tick that outlasts its lease keeps it: another instance's tick during it does not run.
      {
        let release: () => void = () => {};
        const held = new Promise<void>((resolve) => (release = resolve));
        const slow = startPeriodicJob({ name: 'lease-slow', intervalMs: 200, db: first.db, holder: 'x', clock: systemClock, log, run: () => held }, false);
        const other = startPeriodicJob(
          { name: 'lease-slow', intervalMs: 200, db: second.db, holder: 'y', clock: systemClock, log, run: async () => {} },
          false,
        );
        const slowTick = slow.tick();
        for (let i = 0; i < 4; i++) {
          await new Promise((resolve) => setTimeout(resolve, 200));
          assert.equal(await other.tick(), false, `y must not run while x's tick lasts (${(i + 1) * 200} ms, lease 180 ms)`);
        }
        release();
        assert.equal(await slowTick, true);
        await new Promise((resolve) => setTimeout(resolve, 250));
        assert.equal(await other.tick(), true, 'once the tick ended and its lease lapsed, y runs');
      }
      // The conditional UPDATE decides between two instances asking at the same moment.
      const results = await Promise.all([
        acquireLease(first.db, 'same-moment', 'x', clock.now(), 500),
        acquireLease(second.db, 'same-moment', 'y', clock.now(), 500),
      ]);
      assert.deepEqual(results.filter(Boolean).length, 1);
    } finally {
      await first.close();
      await second.close();
      await dropSchemas(schema);
    }
  });
});

describe('alert ticks that overlap on two instances', { skip }, () => {
  // A tick longer than the lease (a slow database) overlaps the next tick, taken by another
  // instance: the older tick's measurement must not undo what the newer one decided.
  test('a measurement older than the open alert does not resolve it, one older than its resolution does not reopen it', async () => {
    const schema = newSchemaName('multi_alerts');
    const dir = tempDir();
    const config = {
      ...observeConfigFromEnvironment({ LOG_LEVEL: 'silent' }, { dataDir: dir }),
      database: { kind: 'postgres' as const, url: POSTGRES_URL, schema },
    };
    const T = Date.parse('2026-11-22T10:00:00.000Z');
    const first = await buildObserveService(config, { clock: new ManualClock(T), runJobs: false });
    const second = await buildObserveService(config, { clock: new ManualClock(T), runJobs: false });
    try {
      const { key: raw } = (await first.app.inject({ method: 'POST', url: '/api/keys', payload: { name: 'k' } })).json() as { key: string };
      const headers = { authorization: `Bearer ${raw}` };
      const rule = (
        await first.app.inject({
          method: 'POST',
          url: '/api/alerts/rules',
          headers,
          payload: { name: 'busy', condition: 'event_count_exceeds', threshold: 0, windowMinutes: 60, scope: { agentId: 'overlap' } },
        })
      ).json() as { id: string };
      const ingested = await first.app.inject({
        method: 'POST',
        url: '/api/events',
        headers,
        payload: { events: [{ sessionId: 'o', agentId: 'overlap', eventType: 'custom', payload: { type: 't', data: 1 } }] },
      });
      assert.equal(ingested.statusCode, 201);
      const history = async () =>
        (
          (await first.app.inject({ method: 'GET', url: `/api/alerts/history?ruleId=${rule.id}`, headers })).json() as {
            entries: { triggeredAt: string; resolvedAt?: string }[];
          }
        ).entries.map(({ triggeredAt, resolvedAt }) => (resolvedAt === undefined ? { triggeredAt } : { triggeredAt, resolvedAt }));

      assert.deepEqual(await evaluateRules(first.context, T, first.app.log), { fired: 1, resolved: 0 });
      // The other instance's tick began a millisecond before the event: it measures 0 but finds the entry open.
      assert.deepEqual(await evaluateRules(second.context, T - 1, second.app.log), { fired: 0, resolved: 0 });
      assert.deepEqual(await history(), [{ triggeredAt: '2026-11-22T10:00:00.000Z' }]);

      // The event leaves the window: a newer tick resolves; a tick that measured half an hour earlier must not reopen.
      assert.deepEqual(await evaluateRules(first.context, T + 61 * 60_000, first.app.log), { fired: 0, resolved: 1 });
      assert.deepEqual(await evaluateRules(second.context, T + 30 * 60_000, second.app.log), { fired: 0, resolved: 0 });
      assert.deepEqual(await history(), [{ triggeredAt: '2026-11-22T10:00:00.000Z', resolvedAt: '2026-11-22T11:01:00.000Z' }]);
    } finally {
      await first.app.close();
      await second.app.close();
      removeDir(dir);
      await dropSchemas(schema);
    }
  });
});
