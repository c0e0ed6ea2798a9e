/**
 * Issue 36's doors on observe that issue 18's matrix (tamper-observe-testkit.ts) left open, each as
 * the forger walks through it, after the auditor saved a checkpoint: retention decided by a derived
 * column, and an ingest key imitating the approval gate's forwarded events.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { rmSync } from 'node:fs';
import { test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { assertErrorBody, clockOf, relinkChain, type TestObserve } from '@vigil/observe/testing';
import { serverVerdict, world, type World } from './tamper-observe-testkit.ts';
import { runVerify } from './verify-testkit.ts';

const YEARS_AGO = Date.parse('2020-01-01T00:00:00.000Z');
const GATE_SECRET = 'approval-gate-forwarding-secret-0123';

interface StoredEvent {
  id: string;
  eventType: string;
  payload: Record<string, unknown>;
  metadata: Record<string, unknown>;
}

async function storedEvent(observe: TestObserve, id: string): Promise<StoredEvent> {
  const response = await observe.call({ method: 'GET', url: `/api/events/${id}` });
  assert.equal(response.statusCode, 200, response.body);
  return response.json<StoredEvent>();
}

/** An `ingest`-scoped key, as an agent holds one. */
async function ingestKey(observe: TestObserve): Promise<{ key: string; id: string }> {
  const response = await observe.call({ method: 'POST', url: '/api/keys', payload: { name: 'agent', scopes: ['ingest'] } });
  assert.equal(response.statusCode, 201, response.body);
  return response.json<{ key: string; id: string }>();
}

async function tombstones(w: World): Promise<number> {
  const row = await w.observe.service.context.database.db
    .selectFrom('audit_tombstones')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function withWorld(backend: Parameters<typeof world>[0], body: (w: World) => Promise<void>): Promise<void> {
  const w = await world(backend);
  try {
    // A genuine one-day retention (the setting's own genuineness is another door).
    assert.equal((await w.observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 1 } })).statusCode, 200);
    await body(w);
  } finally {
    await w.observe.close();
    rmSync(w.dir, { recursive: true, force: true });
  }
}

await describeEachDatabase('tamper doors (issue 36): observe', (backend) => {
  test("retention: a live session's last_event_at set years back does not make the server delete it; verify --deep names the column", async () => {
    await withWorld(backend, async (w) => {
      const { db } = w.observe.service.context.database;
      await db.updateTable('sessions').set({ last_event_at: YEARS_AGO }).where('id', '=', 't-a').execute();
      await w.observe.service.jobs.retention.tick();
      assert.equal(await tombstones(w), 0, 'no tombstone signed');
      const metrics = await (await fetch(`${w.url}/metrics`)).text();
      assert.match(metrics, /^vigil_retention_sessions_kept_total 1$/m, 'the operator sees the kept session');
      const verdict = await serverVerdict(w.observe, 't-a');
      assert.notEqual(verdict, 404, 'the session is still there');
      assert.equal((verdict as { valid: boolean }).valid, true);
      const result = await runVerify(['--url', w.url, '--checkpoint', w.saved, '--deep'], w.observe.key);
      assert.equal(result.status, 1, `${result.stderr}\n${JSON.stringify(result.report)}`);
      assert.ok(
        result.report.findings.some((f) => f.check === 'derived' && f.sessionId === 't-a' && f.message.includes('last_event_at')),
        JSON.stringify(result.report.findings),
      );
      assert.doesNotMatch(JSON.stringify(result.report.notes), /deleted by retention/);
    });
  });

  test("retention: the session's timestamps set back and its chain relinked are not confirmed either (the audit log's leaves differ)", async () => {
    await withWorld(backend, async (w) => {
      const { db } = w.observe.service.context.database;
      const events = await db.selectFrom('events').select(['id', 'ts']).where('session_id', '=', 't-b').execute();
      for (const [i, event] of events.entries())
        await db
          .updateTable('events')
          .set({ ts: YEARS_AGO + i })
          .where('id', '=', event.id)
          .execute();
      await db
        .updateTable('sessions')
        .set({ last_event_at: YEARS_AGO + events.length - 1, started_at: YEARS_AGO })
        .where('id', '=', 't-b')
        .execute();
      await relinkChain(w.observe.service.context.database, 't-b');
      await w.observe.service.jobs.retention.tick();
      assert.equal(await tombstones(w), 0, 'no tombstone signed');
      assert.notEqual(await serverVerdict(w.observe, 't-b'), 404, 'the session is still there');
    });
  });

  test('retention still deletes a session whose chain confirms it expired, beside one it keeps', async () => {
    await withWorld(backend, async (w) => {
      const { db } = w.observe.service.context.database;
      await db.updateTable('sessions').set({ last_event_at: YEARS_AGO }).where('id', '=', 't-a').execute();
      // Three days on, every session is expired by its chain; t-a's column still disagrees with it.
      clockOf(w.observe).advance(3 * 86_400_000);
      await w.observe.service.jobs.retention.tick();
      assert.equal(await serverVerdict(w.observe, 't-b'), 404);
      assert.equal(await serverVerdict(w.observe, 't-c'), 404);
      assert.notEqual(await serverVerdict(w.observe, 't-a'), 404, 't-a is kept: its column is not its chain');
      assert.equal(await tombstones(w), 2);
    });
  });
});

await describeEachDatabase('tamper doors (issue 36): who wrote an event', (backend) => {
  const decision = { requestId: 'req-1', action: 'pay_invoice', decidedBy: 'slack:U1' };

  test("an ingest key's approval_granted shaped like the gate's forwarded one records the key; the gate's records its signature", async () => {
    const w = await world(backend);
    try {
      assert.equal((await w.observe.call({ method: 'PUT', url: '/api/config', payload: { approvalGateWebhookSecret: GATE_SECRET } })).statusCode, 200);
      // What the gate forwards: the signed webhook, mapped to approval_granted with metadata.webhook.
      const body = JSON.stringify({ source: 'approval_gate', event: 'request.approved', data: decision, context: { service_session_id: 't-a' } });
      const forwarded = await w.observe.service.app.inject({
        method: 'POST',
        url: '/api/events/ingest',
        payload: body,
        headers: { 'content-type': 'application/json', 'x-webhook-signature': createHmac('sha256', GATE_SECRET).update(body).digest('hex') },
      });
      assert.equal(forwarded.statusCode, 201, forwarded.body);
      // The imitation: an agent's ingest key posting the same event, metadata and all.
      const agent = await ingestKey(w.observe);
      const imitation = await w.observe.call({
        method: 'POST',
        url: '/api/events',
        headers: { authorization: `Bearer ${agent.key}` },
        payload: {
          events: [
            {
              sessionId: 't-a',
              agentId: 'agent-t',
              eventType: 'approval_granted',
              payload: decision,
              metadata: { webhook: { source: 'approval_gate', event: 'request.approved' } },
            },
          ],
        },
      });
      assert.equal(imitation.statusCode, 201, imitation.body);

      const gateEvent = await storedEvent(w.observe, forwarded.json<{ eventId: string }>().eventId);
      const agentEvent = await storedEvent(w.observe, imitation.json<{ events: { id: string }[] }>().events[0]!.id);
      assert.deepEqual(agentEvent.payload, gateEvent.payload);
      assert.equal(gateEvent.metadata.writtenBy, 'webhook:approval_gate');
      assert.equal(agentEvent.metadata.writtenBy, `key:${agent.id}`);
      // Both are chained: the writer is part of what each hash covers.
      const verdict = await serverVerdict(w.observe, 't-a');
      assert.equal((verdict as { valid: boolean }).valid, true);
    } finally {
      await w.observe.close();
      rmSync(w.dir, { recursive: true, force: true });
    }
  });

  test('a client cannot claim a writer: metadata.writtenBy sent is a 400 naming it, and nothing is stored', async () => {
    const w = await world(backend);
    try {
      const agent = await ingestKey(w.observe);
      const before = await w.observe.service.context.database.db
        .selectFrom('events')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow();
      const response = await w.observe.call({
        method: 'POST',
        url: '/api/events',
        headers: { authorization: `Bearer ${agent.key}` },
        payload: {
          events: [
            { sessionId: 't-a', agentId: 'agent-t', eventType: 'approval_granted', payload: decision, metadata: { writtenBy: 'webhook:approval_gate' } },
          ],
        },
      });
      const error = assertErrorBody(response, 400);
      assert.ok(
        error.details?.some((detail) => detail.path === 'events.0.metadata.writtenBy'),
        JSON.stringify(error),
      );
      const after = await w.observe.service.context.database.db
        .selectFrom('events')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow();
      assert.equal(Number(after.n), Number(before.n));
    } finally {
      await w.observe.close();
      rmSync(w.dir, { recursive: true, force: true });
    }
  });

  test('rewriting the recorded writer in the database breaks the chain (server verify and vigil verify)', async () => {
    const w = await world(backend);
    try {
      const { db } = w.observe.service.context.database;
      const target = w.acks.b[2]!.id;
      const row = await db.selectFrom('events').select('metadata').where('id', '=', target).executeTakeFirstOrThrow();
      assert.match(row.metadata, /"writtenBy":"key:/);
      await db
        .updateTable('events')
        .set({ metadata: JSON.stringify({ writtenBy: 'webhook:approval_gate' }) })
        .where('id', '=', target)
        .execute();
      const verdict = await serverVerdict(w.observe, 't-b');
      assert.equal((verdict as { valid: boolean }).valid, false);
      const result = await runVerify(['--url', w.url, '--checkpoint', w.saved], w.observe.key);
      assert.equal(result.status, 1, `${result.stderr}\n${JSON.stringify(result.report)}`);
      assert.ok(
        result.report.findings.some((f) => f.sessionId === 't-b' && (f.eventId === target || f.message.includes(target))),
        JSON.stringify(result.report.findings),
      );
    } finally {
      await w.observe.close();
      rmSync(w.dir, { recursive: true, force: true });
    }
  });
});
