/**
 * Issue 36's door of the forwarded approval: an `ingest` key can post an `approval_granted` shaped
 * exactly like the one the gate forwards through the signed webhook-ingest route. Each event now
 * records which credential wrote it (`written_by`), under the audit log's writer leaves, and a
 * rewritten writer is reported by the server's verify and by `vigil verify` (exit 1).
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { appendLeaves } from '@vigil/platform';
import { describeEachDatabase, type TestBackend } from '@vigil/platform/testing';
import type { ObserveSchema } from '@vigil/observe';
import { ago, ingestEvents, insertEventCopy, relinkChain, started, startTestObserve, type TestObserve } from '@vigil/observe/testing';
import { serverVerdict } from './tamper-observe-testkit.ts';
import { runVerify } from './verify-testkit.ts';

const APPROVAL_SECRET = 'approval-gate-env-secret-0123456789';
const SESSION = 'w-pay';
const AGENT = 'agent-pay';
const APPROVAL = { requestId: 'r-1', action: 'payments.refund', decidedBy: 'api:admin', reason: 'routine' };
/** What the gate's forwarding stores as metadata, and what the imitation sends. */
const FORWARDED_METADATA = { webhook: { source: 'approval_gate', event: 'request.approved' } };

interface WrittenEvent {
  id: string;
  seq: number;
  eventType: string;
  payload: Record<string, unknown>;
  metadata: Record<string, unknown>;
  hash: string;
  writtenBy: string | null;
}

interface Door {
  observe: TestObserve;
  url: string;
  dir: string;
  saved: string;
  ingestKeyId: string;
  imitation: string;
  genuine: string;
}

async function openDoor(backend: TestBackend): Promise<Door> {
  const observe = await startTestObserve(backend, { env: { APPROVAL_GATE_WEBHOOK_SECRET: APPROVAL_SECRET } });
  await observe.service.app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(observe.service.app.server.address() as AddressInfo).port}`;
  await ingestEvents(observe, [started(SESSION, AGENT, ago(5))]);

  const created = await observe.call({ method: 'POST', url: '/api/keys', payload: { name: 'agent-only', scopes: ['ingest'] } });
  assert.equal(created.statusCode, 201, created.body);
  const ingestKey = created.json<{ id: string; key: string }>();
  const imitated = await observe.service.app.inject({
    method: 'POST',
    url: '/api/events',
    headers: { authorization: `Bearer ${ingestKey.key}` },
    payload: { events: [{ sessionId: SESSION, agentId: AGENT, eventType: 'approval_granted', payload: APPROVAL, metadata: FORWARDED_METADATA }] },
  });
  assert.equal(imitated.statusCode, 201, imitated.body);

  const forwarded = JSON.stringify({
    source: 'approval_gate',
    event: 'request.approved',
    data: APPROVAL,
    context: { service_session_id: SESSION, service_agent_id: AGENT },
  });
  const genuine = await observe.service.app.inject({
    method: 'POST',
    url: '/api/events/ingest',
    headers: { 'content-type': 'application/json', 'x-webhook-signature': createHmac('sha256', APPROVAL_SECRET).update(forwarded).digest('hex') },
    payload: forwarded,
  });
  assert.equal(genuine.statusCode, 201, genuine.body);

  const checkpoint = await observe.call({ method: 'POST', url: '/api/audit/checkpoint' });
  assert.equal(checkpoint.statusCode, 201, checkpoint.body);
  const dir = mkdtempSync(join(tmpdir(), 'vigil-writer-'));
  const saved = join(dir, 'saved-checkpoint.json');
  writeFileSync(saved, checkpoint.body);
  return {
    observe,
    url,
    dir,
    saved,
    ingestKeyId: ingestKey.id,
    imitation: imitated.json<{ events: { id: string }[] }>().events[0]!.id,
    genuine: genuine.json<{ eventId: string }>().eventId,
  };
}

async function withDoor(backend: TestBackend, body: (door: Door) => Promise<void>): Promise<void> {
  const door = await openDoor(backend);
  try {
    await body(door);
  } finally {
    await door.observe.close();
    rmSync(door.dir, { recursive: true, force: true });
  }
}

async function readEvent(observe: TestObserve, id: string): Promise<WrittenEvent> {
  const response = await observe.call({ method: 'GET', url: `/api/events/${id}` });
  assert.equal(response.statusCode, 200, response.body);
  return response.json<WrittenEvent>();
}

function setWriter(door: Door, eventId: string, writtenBy: string | null): Promise<unknown> {
  return door.observe.service.context.database.db.updateTable('events').set({ written_by: writtenBy }).where('id', '=', eventId).execute();
}

await describeEachDatabase('tamper doors (issue 36): who wrote an event', (backend) => {
  test("an ingest key's imitation of the gate's forwarded approval records key:<id>; the gate's signed one records webhook:approval_gate", async () => {
    await withDoor(backend, async (door) => {
      const imitation = await readEvent(door.observe, door.imitation);
      const genuine = await readEvent(door.observe, door.genuine);
      assert.equal(imitation.eventType, 'approval_granted');
      assert.equal(genuine.eventType, 'approval_granted');
      assert.deepEqual(imitation.payload, genuine.payload, 'the same payload');
      assert.deepEqual(imitation.metadata, FORWARDED_METADATA, 'metadata is exactly what the client sent');
      assert.deepEqual(genuine.metadata, FORWARDED_METADATA, 'metadata is exactly what the forwarding sets');
      assert.equal(imitation.writtenBy, `key:${door.ingestKeyId}`);
      assert.equal(genuine.writtenBy, 'webhook:approval_gate');

      // The same writers in every answer that lists events.
      const list = await door.observe.call({ method: 'GET', url: `/api/events?sessionId=${SESSION}` });
      assert.equal(list.statusCode, 200, list.body);
      const writers = (events: WrittenEvent[]) => Object.fromEntries(events.map((event) => [event.id, event.writtenBy]));
      const expected = { [door.imitation]: `key:${door.ingestKeyId}`, [door.genuine]: 'webhook:approval_gate' };
      assert.deepEqual(writers(list.json<{ events: WrittenEvent[] }>().events.filter((e) => e.eventType === 'approval_granted')), expected);
      const timeline = await door.observe.call({ method: 'GET', url: `/api/sessions/${SESSION}/timeline` });
      assert.equal(timeline.statusCode, 200, timeline.body);
      const timed = timeline.json<{ events: WrittenEvent[]; chainValid: boolean }>();
      assert.equal(timed.chainValid, true);
      assert.deepEqual(writers(timed.events.filter((e) => e.eventType === 'approval_granted')), expected);
      assert.equal(timed.events.find((e) => e.eventType === 'session_started')!.writtenBy, door.observe.keyWriter);
      const replay = await door.observe.call({ method: 'GET', url: `/api/sessions/${SESSION}/replay` });
      assert.equal(replay.statusCode, 200, replay.body);
      const steps = replay.json<{ steps: { event: WrittenEvent }[] }>().steps.map((step) => step.event);
      assert.deepEqual(writers(steps.filter((e) => e.eventType === 'approval_granted')), expected);

      assert.deepEqual(await serverVerdict(door.observe, SESSION), {
        sessionId: SESSION,
        valid: true,
        eventCount: 3,
        headHash: timed.events.at(-1)!.hash,
        brokenAt: null,
      } as never);
      const result = await runVerify(['--url', door.url, '--checkpoint', door.saved], door.observe.key);
      assert.equal(result.status, 0, `${result.stderr}\n${JSON.stringify(result.report)}`);
    });
  });

  test("the imitation's written_by rewritten to the gate's webhook in the database: the server's verify and vigil verify report it (exit 1)", async () => {
    await withDoor(backend, async (door) => {
      await setWriter(door, door.imitation, 'webhook:approval_gate');
      const imitation = await readEvent(door.observe, door.imitation);
      assert.equal(imitation.writtenBy, 'webhook:approval_gate', 'the forger managed to change what the API shows');

      const verdict = await serverVerdict(door.observe, SESSION);
      assert.notEqual(verdict, 404);
      assert.equal((verdict as { valid: boolean }).valid, false);
      assert.equal((verdict as { brokenAt: { seq: number } }).brokenAt.seq, imitation.seq);
      assert.match(
        (verdict as { brokenAt: { reason: string } }).brokenAt.reason,
        new RegExp(`event ${door.imitation} records writer webhook:approval_gate, but its writer leaf \\d+ names key:${door.ingestKeyId}`),
      );

      const result = await runVerify(['--url', door.url, '--checkpoint', door.saved], door.observe.key);
      assert.equal(result.status, 1, `${result.stderr}\n${JSON.stringify(result.report)}`);
      const findings = result.report.findings.filter((f) => f.check === 'writer');
      assert.equal(findings.length, 1, JSON.stringify(result.report.findings));
      assert.equal(findings[0]!.eventId, door.imitation);
      assert.equal(findings[0]!.sessionId, SESSION);
      assert.match(findings[0]!.message, new RegExp(`names key:${door.ingestKeyId}`));
    });
  });

  test('a writer erased (set to null) or its writer leaf body rewritten is reported too (exit 1)', async () => {
    await withDoor(backend, async (door) => {
      await setWriter(door, door.genuine, null);
      const verdict = await serverVerdict(door.observe, SESSION);
      assert.equal((verdict as { valid: boolean }).valid, false);
      assert.match((verdict as { brokenAt: { reason: string } }).brokenAt.reason, /records no writer, but its writer leaf \d+ names webhook:approval_gate/);
      const erased = await runVerify(['--url', door.url, '--checkpoint', door.saved], door.observe.key);
      assert.equal(erased.status, 1, `${erased.stderr}\n${JSON.stringify(erased.report)}`);
      assert.ok(erased.report.findings.some((f) => f.check === 'writer' && f.eventId === door.genuine));

      // Both rewritten together, column and stored body (the writer's bytes in it), to name the gate: the body no longer is the leaf's data.
      await setWriter(door, door.genuine, 'webhook:approval_gate');
      await setWriter(door, door.imitation, 'webhook:approval_gate');
      const { db } = door.observe.service.context.database;
      const writer = Buffer.from(`key:${door.ingestKeyId}`, 'utf8');
      for (const leaf of await db.selectFrom('audit_writer_leaves').selectAll().execute()) {
        const body = Buffer.from(leaf.body);
        const at = body.lastIndexOf(writer);
        if (at === -1) continue;
        await db
          .updateTable('audit_writer_leaves')
          .set({ body: Buffer.concat([body.subarray(0, at), Buffer.from('webhook:approval_gate', 'utf8'), body.subarray(at + writer.length)]) })
          .where('item_id', '=', leaf.item_id)
          .execute();
      }
      const rewritten = await serverVerdict(door.observe, SESSION);
      assert.equal((rewritten as { valid: boolean }).valid, false);
      assert.match((rewritten as { brokenAt: { reason: string } }).brokenAt.reason, /writer leaf \d+ is not the body stored for it/);
      const walked = await runVerify(['--url', door.url, '--checkpoint', door.saved], door.observe.key);
      assert.equal(walked.status, 1, `${walked.stderr}\n${JSON.stringify(walked.report)}`);
      assert.ok(
        walked.report.findings.some((f) => f.check === 'writer' && f.eventId === door.imitation),
        JSON.stringify(walked.report.findings),
      );
    });
  });

  test('concurrent requests of two credentials into one session (committed together or not): each event keeps its writer, every check passes', async () => {
    await withDoor(backend, async (door) => {
      const sent = await Promise.all(
        Array.from({ length: 12 }, (_, i) => {
          if (i % 2 === 0)
            return door.observe
              .call({
                method: 'POST',
                url: '/api/events',
                payload: { events: [{ sessionId: SESSION, agentId: AGENT, eventType: 'custom', payload: { type: 'step', data: { i } } }] },
              })
              .then((response) => ({ id: response.json<{ events: { id: string }[] }>().events[0]!.id, writer: door.observe.keyWriter }));
          const forwarded = JSON.stringify({
            source: 'approval_gate',
            event: 'request.approved',
            data: { ...APPROVAL, requestId: `r-${i}` },
            context: { service_session_id: SESSION, service_agent_id: AGENT },
          });
          return door.observe.service.app
            .inject({
              method: 'POST',
              url: '/api/events/ingest',
              headers: { 'content-type': 'application/json', 'x-webhook-signature': createHmac('sha256', APPROVAL_SECRET).update(forwarded).digest('hex') },
              payload: forwarded,
            })
            .then((response) => ({ id: response.json<{ eventId: string }>().eventId, writer: 'webhook:approval_gate' }));
        }),
      );
      for (const { id, writer } of sent) assert.equal((await readEvent(door.observe, id)).writtenBy, writer);
      assert.equal(((await serverVerdict(door.observe, SESSION)) as { valid: boolean }).valid, true);
      assert.equal((await door.observe.call({ method: 'POST', url: '/api/audit/checkpoint' })).statusCode, 201);
      const result = await runVerify(['--url', door.url, '--checkpoint', door.saved], door.observe.key);
      assert.equal(result.status, 0, `${result.stderr}\n${JSON.stringify(result.report)}`);
    });
  });

  test('an event stored before writers were recorded (no written_by, no writer leaf) stays valid', async () => {
    await withDoor(backend, async (door) => {
      const { database } = door.observe.service.context;
      // As ingest wrote it before migration 0027: the row and its event leaf, no writer.
      const head = await database.db.selectFrom('sessions').select('last_seq').where('id', '=', SESSION).executeTakeFirstOrThrow();
      const old = await insertEventCopy(database, door.genuine, { id: '01a2f000-0000-7000-8000-000000000001', seq: head.last_seq + 1, written_by: null });
      await relinkChain(database, SESSION);
      const row = await database.db.selectFrom('events').select('hash').where('id', '=', old.id).executeTakeFirstOrThrow();
      await database.db
        .transaction()
        .execute((trx) => appendLeaves<ObserveSchema>(trx, database.dialect, [{ itemId: old.id, scopeId: SESSION, kind: 'event', data: row.hash }]));

      assert.equal((await readEvent(door.observe, old.id)).writtenBy, null, 'not recorded');
      assert.equal(((await serverVerdict(door.observe, SESSION)) as { valid: boolean }).valid, true);
      const result = await runVerify(['--url', door.url, '--checkpoint', door.saved], door.observe.key);
      assert.equal(result.status, 0, `${result.stderr}\n${JSON.stringify(result.report)}`);
    });
  });
});
