import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { slackClick, startChatGate, waitForCount, waitUntil, type ChatGate } from '../chat/chat-harness.ts';
import { migrateToLatest } from '@vigil/platform';
import { sql } from 'kysely';
import { gateMigrations } from '../migrations.ts';
import { assertGateError, startTestGate } from '../testing.ts';

const MINUTE = 60_000;
const text = (value: unknown): string => JSON.stringify(value);

interface Detail {
  id: string;
  status: string;
  decidedBy: string | null;
  decisionReason: string | null;
  escalation: { tier: number; deadlineAt: string | null; remindAt: string | null };
}

await describeEachDatabase('gate escalation', (backend) => {
  let chat: ChatGate;
  before(async () => {
    chat = await startChatGate(backend);
  });
  after(() => chat.close());

  const iso = (ms: number) => new Date(ms).toISOString();
  const now = () => chat.gate.clock.now();
  const tick = () => chat.gate.service.jobs.expiry.tick();
  const get = async (id: string) => (await chat.getRequest(id)) as unknown as Detail;
  const events = async (id: string) => (await chat.audit(id)).map((entry) => entry.event);

  test('a rule escalates through its tiers (each its own audit entry, webhook and chat post), reminds before each deadline, then fails closed with its reason', async () => {
    const hook = await chat.gate.call({
      method: 'POST',
      url: '/api/webhooks',
      payload: { url: 'http://127.0.0.1:9/hook', events: ['request.escalated', 'request.reminder', 'request.expired'] },
    });
    assert.equal(hook.statusCode, 201, hook.body);
    const policy = await chat.createPolicy({
      name: 'Payments escalate',
      rules: [
        {
          match: { action: 'pay' },
          decision: 'route_to_human',
          approvers: ['slack:U1'],
          onDeadline: {
            escalate: [
              { approvers: ['slack:U9'], channels: ['slack:C7'], timeoutSeconds: 600 },
              { approvers: ['slack:U8'], timeoutSeconds: 300 },
            ],
            remindBeforeSeconds: 60,
          },
        },
      ],
    });
    const start = now();
    const created = (await chat.createRequest({ action: 'pay', params: { amount: 10 }, expiresAt: iso(start + 10 * MINUTE) })) as unknown as Detail;
    assert.deepEqual(created.escalation, { tier: 0, deadlineAt: iso(start + 10 * MINUTE), remindAt: iso(start + 9 * MINUTE) });
    await waitForCount('the first post', () => chat.slack.messagesOf(created.id, 'chat.postMessage'));
    await waitUntil('the post delivered', async () =>
      (await chat.deliveriesOf(created.id, 'slack')).find((row) => row.event === 'chat.post' && row.status === 'delivered'),
    );

    // Tier 0: U9 may not decide yet.
    await chat.slackInteraction(slackClick('U9', 'vigil_approve', created.id));
    assert.equal((await get(created.id)).status, 'pending');

    // The reminder, a minute before the deadline: posted again to the rule's channel, recorded.
    chat.gate.clock.advance(9 * MINUTE + 1);
    assert.equal(await tick(), true);
    const reminded = await get(created.id);
    assert.equal(reminded.escalation.remindAt, null);
    assert.deepEqual((await events(created.id)).slice(-1), ['reminded']);
    const posts = await waitForCount('the reminder post', () => chat.slack.messagesOf(created.id, 'chat.postMessage'), 2);
    assert.equal(posts[1]!.fields.channel, 'C1');
    // A second tick reminds no more.
    await tick();
    assert.equal((await events(created.id)).filter((e) => e === 'reminded').length, 1);

    // The deadline: tier 1, a new deadline, posted to the tier's channel; the old messages are edited to show it.
    chat.gate.clock.advance(MINUTE);
    await tick();
    const tier1 = await get(created.id);
    assert.equal(tier1.status, 'pending');
    assert.equal(tier1.escalation.tier, 1);
    assert.equal(tier1.escalation.deadlineAt, iso(now() + 10 * MINUTE));
    assert.equal(tier1.escalation.remindAt, iso(now() + 9 * MINUTE));
    const trail = await chat.audit(created.id);
    const escalated = trail.at(-1)!;
    assert.equal(escalated.event, 'escalated');
    assert.equal(escalated.actor, 'system:expiry');
    assert.deepEqual(escalated.details, { tier: 1, of: 2, approvers: ['slack:U1', 'slack:U9'], channels: ['slack:C7'], deadlineAt: iso(now() + 10 * MINUTE) });
    const [tierPost] = await waitForCount('the tier 1 post', () =>
      chat.slack.messagesOf(created.id, 'chat.postMessage').filter((call) => call.fields.channel === 'C7'),
    );
    assert.match(text(tierPost!.blocks), /tier 1/);
    await waitForCount('edits showing the tier', () => chat.slack.messagesOf(created.id, 'chat.update').filter((call) => text(call.blocks).includes('tier 1')));

    // Tier 1's reminder and its own deadline: tier 2; then failing closed after tier 2's (its reminder skipped: the scan found the deadline passed).
    chat.gate.clock.advance(9 * MINUTE + 1);
    await tick();
    chat.gate.clock.advance(MINUTE);
    await tick();
    assert.equal((await get(created.id)).escalation.tier, 2);
    chat.gate.clock.advance(5 * MINUTE + 1);
    await tick();
    const failed = await get(created.id);
    assert.equal(failed.status, 'expired');
    assert.equal(failed.decidedBy, 'system:expiry');
    const reason = `No decision after escalation to tier 2: failed closed (policy "Payments escalate" (${policy.id}), rule 0)`;
    assert.equal(failed.decisionReason, reason);
    assert.equal(failed.escalation.deadlineAt, null);
    assert.deepEqual(await events(created.id), ['created', 'decision_refused', 'reminded', 'escalated', 'reminded', 'escalated', 'expired']);
    const expiredEntry = (await chat.audit(created.id)).at(-1)!;
    assert.equal((expiredEntry.details as { reason: string }).reason, reason);
    await waitForCount('an edit with the reason', () =>
      chat.slack.messagesOf(created.id, 'chat.update').filter((call) => text(call.blocks).includes('failed closed')),
    );

    // Each escalation and reminder is a webhook event of its own.
    const { db } = chat.gate.service.context.database;
    const delivered = await db.selectFrom('deliveries').select('event').where('kind', '=', 'webhook').where('body', 'like', `%${created.id}%`).execute();
    assert.deepEqual(delivered.map((row) => row.event).sort(), [
      'request.escalated',
      'request.escalated',
      'request.expired',
      'request.reminder',
      'request.reminder',
    ]);
  });

  test("an escalated tier's approver decides from chat; a decide past the deadline escalates instead of refusing", async () => {
    await chat.createPolicy({
      name: 'Refunds escalate',
      rules: [
        {
          match: { action: 'refund' },
          decision: 'route_to_human',
          approvers: ['slack:U1'],
          onDeadline: { escalate: [{ approvers: ['slack:U9'], timeoutSeconds: 600 }] },
        },
      ],
    });
    const created = (await chat.createRequest({ action: 'refund', params: {}, expiresAt: iso(now() + MINUTE) })) as unknown as Detail;
    await waitUntil('the post delivered', async () =>
      (await chat.deliveriesOf(created.id, 'slack')).find((row) => row.event === 'chat.post' && row.status === 'delivered'),
    );
    chat.gate.clock.advance(MINUTE + 1);
    // The click arrives before the scanner: the deadline escalates the request, and U9 is now a decider.
    const answer = await chat.slackInteraction(slackClick('U9', 'vigil_approve', created.id));
    assert.equal(answer.statusCode, 200, answer.body);
    const decided = await get(created.id);
    assert.equal(decided.status, 'approved');
    assert.equal(decided.decidedBy, 'slack:U9');
    assert.equal(decided.escalation.tier, 1);
    assert.deepEqual(await events(created.id), ['created', 'escalated', 'approved']);
  });

  test('a rule without onDeadline fails closed at expiresAt with a reason naming the rule, as the spec expires it; a request no rule routed expires as before', async () => {
    const hook = await chat.gate.call({
      method: 'POST',
      url: '/api/webhooks',
      payload: { url: 'http://127.0.0.1:9/default-plan', events: ['request.escalated', 'request.expired'] },
    });
    assert.equal(hook.statusCode, 201, hook.body);
    await chat.createPolicy({ name: 'Default plan', rules: [{ match: { action: 'default_plan' }, decision: 'route_to_human' }] });
    const ruled = (await chat.createRequest({ action: 'default_plan', params: {}, expiresAt: iso(now() + MINUTE) })) as unknown as Detail;
    const unruled = (await chat.createRequest({ action: 'nobody_rules_this', params: {}, expiresAt: iso(now() + MINUTE) })) as unknown as Detail;
    chat.gate.clock.advance(MINUTE + 1);
    await tick();
    const failed = await get(ruled.id);
    assert.equal(failed.status, 'expired');
    assert.equal(failed.decidedBy, 'system:expiry');
    assert.equal(failed.escalation.tier, 0);
    assert.match(failed.decisionReason!, /^No decision by the deadline: failed closed \(policy "Default plan"/);
    // As the specification's expiry: one `expired` entry, request.expired webhooks only (never an
    // escalation), and deciding it is 409.
    assert.deepEqual(await events(ruled.id), ['created', 'expired']);
    const { db } = chat.gate.service.context.database;
    const delivered = await db.selectFrom('deliveries').select('event').where('kind', '=', 'webhook').where('body', 'like', `%${ruled.id}%`).execute();
    assert.deepEqual([...new Set(delivered.map((row) => row.event))], ['request.expired']);
    const late = await chat.gate.call({ method: 'POST', url: `/api/requests/${ruled.id}/decide`, payload: { decision: 'approved' } });
    assert.equal(late.statusCode, 409, late.body);
    const plain = await get(unruled.id);
    assert.equal(plain.status, 'expired');
    assert.equal(plain.decisionReason, 'Expired before a decision');
  });

  test('a plan without tiers fails closed at the first deadline with its own reason', async () => {
    await chat.createPolicy({
      name: 'Fail closed',
      rules: [{ match: { action: 'wire' }, decision: 'route_to_human', onDeadline: { escalate: [], reason: 'Wires are never approved late' } }],
    });
    const created = (await chat.createRequest({ action: 'wire', params: {}, expiresAt: iso(now() + MINUTE) })) as unknown as Detail;
    chat.gate.clock.advance(MINUTE + 1);
    const failed = await get(created.id);
    assert.equal(failed.status, 'expired');
    assert.equal(failed.decisionReason, 'Wires are never approved late');
    assert.deepEqual(await events(created.id), ['created', 'expired']);
  });

  test('a bad onDeadline is a 400 and stores nothing', async () => {
    for (const onDeadline of [
      { escalate: [{ timeoutSeconds: 0 }] },
      { escalate: [{ approvers: ['x'] }] },
      { escalate: [], remindBeforeSeconds: -1 },
      { escalate: [], extra: true },
      { escalate: Array.from({ length: 11 }, () => ({ timeoutSeconds: 60 })) },
    ]) {
      const response = await chat.gate.call({
        method: 'POST',
        url: '/api/policies',
        payload: { name: 'bad', rules: [{ match: { action: 'x' }, decision: 'route_to_human', onDeadline }] },
      });
      assertGateError(response, 400, 'bad_request', JSON.stringify(onDeadline));
    }
    const list = await chat.gate.call({ method: 'GET', url: '/api/policies' });
    assert.doesNotMatch(list.body, /"name":"bad"/);
  });

  test('two instances scanning at once escalate a request exactly once', async () => {
    const other = await startTestGate(backend, { database: chat.gate.config.database, clock: chat.gate.clock });
    try {
      await chat.createPolicy({
        name: 'Once',
        rules: [{ match: { action: 'once' }, decision: 'route_to_human', onDeadline: { escalate: [{ timeoutSeconds: 600 }] } }],
      });
      const ids: string[] = [];
      for (let i = 0; i < 5; i += 1)
        ids.push(((await chat.createRequest({ action: 'once', params: { i }, expiresAt: iso(now() + MINUTE) })) as unknown as Detail).id);
      chat.gate.clock.advance(MINUTE + 1);
      const scans = [chat.gate.service.requests, other.service.requests, chat.gate.service.requests];
      // In one process two SQLite connections cannot wait on each other (a write blocks the thread
      // the other's commit needs): there the instances scan one after another, the later finding nothing due.
      if (backend.kind === 'postgres') await Promise.all(scans.map((scan) => scan.expireDue()));
      else for (const scan of scans) await scan.expireDue();
      for (const id of ids) {
        assert.deepEqual(await events(id), ['created', 'escalated'], id);
        assert.equal((await get(id)).escalation.tier, 1);
      }
    } finally {
      await other.close();
    }
  });

  test('a row whose deadline or tier was moved in the database, without an escalated entry, is refused', async () => {
    await chat.createPolicy({
      name: 'Tamper',
      rules: [{ match: { action: 'tamper' }, decision: 'route_to_human', onDeadline: { escalate: [{ timeoutSeconds: 600 }] } }],
    });
    const { db } = chat.gate.service.context.database;
    const moved = (await chat.createRequest({ action: 'tamper', params: { n: 1 }, expiresAt: iso(now() + MINUTE) })) as unknown as Detail;
    await db
      .updateTable('requests')
      .set({ deadline_at: now() + 365 * 24 * 60 * MINUTE })
      .where('id', '=', moved.id)
      .execute();
    const answer = await chat.gate.call({ method: 'GET', url: `/api/requests/${moved.id}` });
    assert.equal(answer.statusCode, 500, answer.body);
    assert.match(answer.body, /escalation is .{0,2}tier 0 until/);
    const escalated = (await chat.createRequest({ action: 'tamper', params: { n: 2 }, expiresAt: iso(now() + MINUTE) })) as unknown as Detail;
    chat.gate.clock.advance(MINUTE + 1);
    assert.equal((await get(escalated.id)).escalation.tier, 1);
    await db.updateTable('requests').set({ escalation_tier: 0 }).where('id', '=', escalated.id).execute();
    const refused = await chat.gate.call({ method: 'GET', url: `/api/requests/${escalated.id}` });
    assert.equal(refused.statusCode, 500, refused.body);
    assert.match(refused.body, /does not match its audit trail/);
    // Leave no tampered row behind for the other tests' scans.
    await db.updateTable('requests').set({ status: 'denied' }).where('id', 'in', [moved.id]).execute();
  });

  test('migration 0018 keeps a pending request stored before it on its expiresAt: it expires as it did', async () => {
    const gate = await startTestGate(backend, { clock: chat.gate.clock });
    try {
      const created = await gate.call({ method: 'POST', url: '/api/requests', payload: { action: 'from_before', expiresAt: iso(now() + MINUTE) } });
      const id = created.json<{ id: string }>().id;
      const database = gate.service.context.database;
      const db = database.db;
      // Back to a database from before 0018: its columns and indexes gone, the old deadline index back.
      await db.schema.dropIndex('requests_deadline_at').execute();
      await db.schema.dropIndex('requests_remind').execute();
      for (const column of ['deadline_at', 'escalation_tier', 'remind_at']) await db.schema.alterTable('requests').dropColumn(column).execute();
      await db.schema.createIndex('requests_deadline').on('requests').columns(['status', 'expires_at']).where('expires_at', 'is not', null).execute();
      await sql`delete from schema_migrations where name = '0018_request_escalation'`.execute(db);
      await migrateToLatest(database, gateMigrations);
      const row = await db.selectFrom('requests').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      assert.equal(row.deadline_at, row.expires_at);
      assert.equal(row.escalation_tier, 0);
      chat.gate.clock.advance(MINUTE + 1);
      assert.equal(await gate.service.requests.expireDue(), 1);
      const expired = await gate.call({ method: 'GET', url: `/api/requests/${id}` });
      assert.equal(expired.json<{ status: string }>().status, 'expired');
    } finally {
      await gate.close();
    }
  });
});
