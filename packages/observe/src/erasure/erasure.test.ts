import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { leafHash, verifyBytes } from '@vigil/platform';
import { describeEachDatabase, type TestBackend } from '@vigil/platform/testing';
import { sql } from 'kysely';
import { erasureMarker } from '../events/index.ts';
import { assertErrorBody, everyTableText, clockOf, ingest, startTestObserve, TEST_NOW, type TestObserve } from '../testing.ts';

const ALICE = 'alice.liddell@example.com';
const BOB = 'bob.builder@example.org';
/** What Alice's events say; none of it may be stored anywhere after her erasure. */
const ALICE_SECRET = 'Wonderland diagnosis 4711 rabbit-hole';
const BOB_TEXT = 'Builder quotation 0815 scaffolding';
const DAY = 86_400_000;

interface Receipt {
  erasureId: string;
  subject: string;
  eventCount: number;
  sessionIds: string[];
  requestedBy: string;
  leaf: { index: number; body: string; signature: string; keyId: string; publicKey: string };
}

interface Verdict {
  valid: boolean;
  brokenAt: { reason: string; eventId: string | null } | null;
  erasures: { erasureId: string; eventIds: string[] }[];
}

const iso = (at: number) => new Date(at).toISOString();

/** A session's events: Alice's prompts and answers with her data, Bob's turn, and a subject-less step. */
function conversation(sessionId: string, at: number): object[] {
  return [
    {
      sessionId,
      agentId: 'support',
      eventType: 'custom',
      timestamp: iso(at),
      metadata: { subjectId: ALICE },
      payload: { type: 'note', data: { note: `${ALICE_SECRET} for ${ALICE}` } },
    },
    {
      sessionId,
      agentId: 'support',
      eventType: 'llm_call',
      timestamp: iso(at + 1),
      metadata: { subjectId: ALICE },
      payload: { callId: `l-${sessionId}`, provider: 'openai', model: 'gpt-4o-mini', messages: [{ role: 'user', content: `I am ${ALICE}: ${ALICE_SECRET}` }] },
    },
    {
      sessionId,
      agentId: 'support',
      eventType: 'custom',
      timestamp: iso(at + 2),
      metadata: { subjectId: BOB },
      payload: { type: 'note', data: { note: BOB_TEXT } },
    },
    { sessionId, agentId: 'support', eventType: 'custom', timestamp: iso(at + 3), payload: { type: 'note', data: { note: 'routine step' } } },
  ];
}

/** Where each value is stored: table names, and the SQLite file (and WAL) after a checkpoint. */
async function whereStored(observe: TestObserve, values: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  for (const [table, text] of await everyTableText(observe)) for (const value of values) if (text.includes(value)) found.push(`${value} in table ${table}`);
  const { database } = observe.config;
  if (database.kind === 'sqlite') {
    await sql`pragma wal_checkpoint(TRUNCATE)`.execute(observe.service.context.database.db);
    for (const file of [database.file, `${database.file}-wal`]) {
      if (!existsSync(file)) continue;
      const bytes = readFileSync(file);
      for (const value of values) if (bytes.includes(Buffer.from(value, 'utf8'))) found.push(`${value} in the bytes of ${file}`);
    }
  }
  return found;
}

async function verify(observe: TestObserve, sessionId: string): Promise<Verdict> {
  const response = await observe.call({ method: 'GET', url: `/api/audit/verify?sessionId=${sessionId}` });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as Verdict;
}

async function erase(observe: TestObserve, subject: string, reason = 'GDPR Art. 17 request 2026-0142') {
  return observe.call({ method: 'DELETE', url: `/api/subjects/${encodeURIComponent(subject)}`, payload: { reason } });
}

await describeEachDatabase('erasure by data subject', (backend: TestBackend) => {
  let observe: TestObserve;
  const sessions = ['conv-1', 'conv-2', 'conv-3'];
  let receipt: Receipt;

  before(async () => {
    observe = await startTestObserve(backend);
    for (const [i, id] of sessions.entries()) await ingest(observe, conversation(id, TEST_NOW - 60_000 + i * 10));
    // Vectors and summaries stored, the in-memory index loaded, the memos filled.
    while ((await observe.call({ method: 'GET', url: '/api/recall/status' })).json().queue.depth > 0) await observe.service.jobs.embeddings.tick();
    const recalled = await observe.call({ method: 'GET', url: `/api/recall?query=${encodeURIComponent('Wonderland diagnosis')}` });
    assert.equal(recalled.statusCode, 200, recalled.body);
    for (const id of sessions) {
      assert.equal((await verify(observe, id)).valid, true);
      assert.equal((await observe.call({ method: 'GET', url: `/api/sessions/${id}/replay` })).statusCode, 200);
      assert.equal((await observe.call({ method: 'GET', url: `/api/sessions/${id}/timeline` })).statusCode, 200);
    }
    const found = await observe.call({ method: 'GET', url: '/api/events?search=Wonderland%20diagnosis' });
    assert.equal(found.json().events.length, 6, 'the full-text index finds her events before');
  });
  after(() => observe.close());

  test('a legal hold on the subject, or on an agent of its sessions, refuses the erasure (409 naming it) and changes nothing', async () => {
    const placed = await observe.call({ method: 'POST', url: '/api/holds', payload: { scope: 'subject', targetId: ALICE, reason: 'litigation hold 12' } });
    assert.equal(placed.statusCode, 201, placed.body);
    const hold = placed.json() as { id: string };
    const refused = await erase(observe, ALICE);
    assertErrorBody(refused, 409);
    assert.equal(refused.json().code, 'legal_hold');
    assert.match(refused.json().error, new RegExp(hold.id));
    assert.equal((await observe.call({ method: 'POST', url: `/api/holds/${hold.id}/release`, payload: { reason: 'settled' } })).statusCode, 200);

    const onAgent = (await observe.call({ method: 'POST', url: '/api/holds', payload: { scope: 'agent', targetId: 'support', reason: 'audit' } })).json() as {
      id: string;
    };
    const refusedAgain = await erase(observe, ALICE);
    assertErrorBody(refusedAgain, 409);
    assert.match(refusedAgain.json().error, new RegExp(onAgent.id));
    assert.equal((await observe.call({ method: 'POST', url: `/api/holds/${onAgent.id}/release`, payload: { reason: 'done' } })).statusCode, 200);

    const count = await observe.service.context.database.db.selectFrom('audit_erasures').select('erasure_id').execute();
    assert.equal(count.length, 0, 'no erasure was recorded');
    const stillThere = await observe.call({ method: 'GET', url: '/api/events?search=Wonderland%20diagnosis' });
    assert.equal(stillThere.json().events.length, 6);
  });

  test('bad requests: no reason is 400, an unknown subject 404; both store nothing', async () => {
    assertErrorBody(await observe.call({ method: 'DELETE', url: `/api/subjects/${ALICE}`, payload: {} }), 400);
    const unknown = await erase(observe, 'nobody@example.com');
    assertErrorBody(unknown, 404);
    assert.equal(unknown.json().code, 'subject_not_found');
  });

  test('erasure replaces the content of every event of the subject, keeps hashes and positions, and answers a signed receipt', async () => {
    const beforeRows = await observe.service.context.database.db.selectFrom('events').select(['id', 'seq', 'hash', 'session_id']).orderBy('id').execute();
    const response = await erase(observe, ALICE);
    assert.equal(response.statusCode, 200, response.body);
    receipt = response.json() as Receipt;
    assert.equal(receipt.eventCount, 6);
    assert.deepEqual(receipt.sessionIds, sessions);
    assert.equal(receipt.subject, observe.service.context.subjects.hash(ALICE));
    assert.equal(receipt.requestedBy, 'api:test');
    // The receipt verifies offline: the signature over the leaf body, the body names every event with its hash.
    const body = Buffer.from(receipt.leaf.body, 'utf8');
    assert.equal(verifyBytes(body, receipt.leaf.signature, Buffer.from(receipt.leaf.publicKey, 'base64')), true);
    const leaf = JSON.parse(receipt.leaf.body) as { events: { id: string; hash: string }[]; subject: string; reason: string; kind: string };
    assert.equal(leaf.kind, 'erasure');
    assert.equal(leaf.reason, 'GDPR Art. 17 request 2026-0142');
    assert.equal(leaf.subject, receipt.subject);
    const afterRows = await observe.service.context.database.db
      .selectFrom('events')
      .select(['id', 'seq', 'hash', 'session_id', 'payload', 'metadata'])
      .orderBy('id')
      .execute();
    assert.deepEqual(
      afterRows.map((r) => [r.id, r.seq, r.hash.toString('hex')]),
      beforeRows.map((r) => [r.id, r.seq, r.hash.toString('hex')]),
      'every event keeps its id, seq and hash',
    );
    const erased = afterRows.filter((r) => r.payload === erasureMarker(receipt.erasureId).payload);
    assert.deepEqual(
      erased.map((r) => ({ id: r.id, hash: r.hash.toString('hex') })).sort((a, b) => (a.id < b.id ? -1 : 1)),
      leaf.events,
    );
    // The log holds the leaf at the receipt's index.
    const logged = await observe.service.context.database.db
      .selectFrom('audit_log_leaves')
      .select(['leaf_hash', 'kind'])
      .where('idx', '=', receipt.leaf.index)
      .executeTakeFirstOrThrow();
    assert.equal(Buffer.from(logged.leaf_hash).equals(leafHash(body)), true);
    assert.equal(logged.kind, 'erasure');
    const again = await observe.call({ method: 'GET', url: `/api/erasures/${receipt.erasureId}` });
    assert.equal(again.statusCode, 200, again.body);
    assert.equal(again.json().leaf.body, receipt.leaf.body);
    assertErrorBody(await erase(observe, ALICE), 404);
  });

  test('GET /api/audit/erasures?from&to keeps the erasures made in the period (inclusive); from after to is a 400', async () => {
    const listed = async (query: string) => {
      const response = await observe.call({ method: 'GET', url: `/api/audit/erasures${query}` });
      assert.equal(response.statusCode, 200, response.body);
      return (response.json() as { erasures: { erasureId: string; body: string }[] }).erasures.map((e) => e.erasureId);
    };
    const erasedAt = Date.parse((JSON.parse(receipt.leaf.body) as { timestamp: string }).timestamp);
    assert.deepEqual(await listed(''), [receipt.erasureId]);
    assert.deepEqual(await listed(`?from=${iso(erasedAt)}&to=${iso(erasedAt)}`), [receipt.erasureId]);
    assert.deepEqual(await listed(`?from=${iso(erasedAt + 1)}`), []);
    assert.deepEqual(await listed(`?to=${iso(erasedAt - 1)}`), []);
    assertErrorBody(await observe.call({ method: 'GET', url: `/api/audit/erasures?from=${iso(erasedAt)}&to=${iso(erasedAt - 1)}` }), 400);
  });

  test('every session still verifies, naming the erasure; timelines, replays and search show the markers', async () => {
    for (const id of sessions) {
      const verdict = await verify(observe, id);
      assert.equal(verdict.valid, true, JSON.stringify(verdict));
      assert.equal(verdict.erasures.length, 1);
      assert.equal(verdict.erasures[0]!.erasureId, receipt.erasureId);
      assert.equal(verdict.erasures[0]!.eventIds.length, 2);
      const timeline = await observe.call({ method: 'GET', url: `/api/sessions/${id}/timeline` });
      assert.equal(timeline.json().chainValid, true);
      assert.equal(timeline.body.includes('Wonderland'), false, `timeline: ${timeline.body.slice(0, 3000)}`);
      const replay = await observe.call({ method: 'GET', url: `/api/sessions/${id}/replay` });
      assert.equal(replay.statusCode, 200, replay.body);
      assert.equal(replay.body.includes('Wonderland'), false, 'the replay cache dropped the session');
    }
    const found = await observe.call({ method: 'GET', url: '/api/events?search=Wonderland%20diagnosis' });
    assert.equal(found.json().events.length, 0, 'the full-text index no longer finds them');
    const bob = await observe.call({ method: 'GET', url: '/api/events?search=quotation' });
    assert.equal(bob.json().events.length, 3, "Bob's events are untouched");
    for (const event of await observe.service.context.database.db.selectFrom('events').select('id').where('payload', 'like', '%"erased":true%').execute())
      assert.equal(observe.service.context.vectorIndex.holds('event', event.id), false, 'the in-memory index dropped the vector');
    const recalled = await observe.call({ method: 'GET', url: `/api/recall?query=${encodeURIComponent('Wonderland diagnosis rabbit')}` });
    const texts = (recalled.json() as { results: { text: string }[] }).results.map((r) => r.text);
    assert.equal(
      texts.some((text) => text.includes('Wonderland') || text.includes(ALICE)),
      false,
      texts.join('\n'),
    );
  });

  test('no residue: the raw values appear in no table (nor the SQLite file after a checkpoint)', async () => {
    assert.deepEqual(await whereStored(observe, [ALICE_SECRET, ALICE, 'rabbit-hole']), []);
    // The control: what was not erased is still found by the same scan.
    assert.notDeepEqual(await whereStored(observe, [BOB_TEXT]), []);
  });

  test('an erasure forged in the database without a signed leaf is reported as tampering', async () => {
    const { db } = observe.service.context.database;
    const target = await db.selectFrom('events').select(['id', 'session_id']).where('payload', 'like', `%${BOB_TEXT}%`).orderBy('id').executeTakeFirstOrThrow();
    // A marker naming no erasure, then one naming Alice's real erasure (whose leaf does not list the event).
    for (const erasureId of ['forged-erasure', receipt.erasureId]) {
      const marker = erasureMarker(erasureId);
      await db.updateTable('events').set({ payload: marker.payload, metadata: marker.metadata }).where('id', '=', target.id).execute();
      const verdict = await verify(observe, target.session_id);
      assert.equal(verdict.valid, false);
      assert.equal(verdict.brokenAt!.eventId, target.id);
      assert.match(verdict.brokenAt!.reason, /erasure marker .* no signed erasure leaf/);
    }
    // A leaf row inserted around the log (signed by no key the log has) covers nothing either.
    await db
      .insertInto('audit_erasures')
      .values({
        erasure_id: 'forged-erasure',
        leaf_idx: receipt.leaf.index,
        subject_hash: 'x',
        body: receipt.leaf.body.replace(receipt.erasureId, 'forged-erasure'),
        signature: receipt.leaf.signature,
        created_at: 0,
      })
      .execute();
    const marker = erasureMarker('forged-erasure');
    await db.updateTable('events').set({ payload: marker.payload, metadata: marker.metadata }).where('id', '=', target.id).execute();
    assert.equal((await verify(observe, target.session_id)).valid, false);
  });
});

await describeEachDatabase('a subject under a legal hold keeps its sessions from retention', (backend: TestBackend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
    assert.equal((await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 1 } })).statusCode, 200);
  });
  after(() => observe.close());

  test('retention keeps the sessions with an event of the held subject, and deletes them once released', async () => {
    await ingest(observe, [
      ...conversation('held', TEST_NOW - 3 * DAY),
      { sessionId: 'free', agentId: 'other', eventType: 'custom', timestamp: iso(TEST_NOW - 3 * DAY), payload: { type: 'step', data: {} } },
    ]);
    const hold = (await observe.call({ method: 'POST', url: '/api/holds', payload: { scope: 'subject', targetId: BOB, reason: 'case 9' } })).json() as {
      id: string;
    };
    await observe.service.jobs.retention.tick();
    const ids = async () => (await observe.service.context.database.db.selectFrom('sessions').select('id').execute()).map((r) => r.id);
    assert.deepEqual(await ids(), ['held']);
    await observe.call({ method: 'POST', url: `/api/holds/${hold.id}/release`, payload: { reason: 'closed' } });
    clockOf(observe).advance(1000);
    await observe.service.jobs.retention.tick();
    assert.deepEqual(await ids(), []);
  });

  test('an erased session still expires: retention confirms its newest event by the erasure leaf', async () => {
    await ingest(observe, conversation('erased-old', TEST_NOW - 3 * DAY).slice(0, 2));
    assert.equal((await erase(observe, ALICE)).statusCode, 200);
    clockOf(observe).advance(1000);
    await observe.service.jobs.retention.tick();
    const left = await observe.service.context.database.db.selectFrom('sessions').select('id').where('id', '=', 'erased-old').execute();
    assert.deepEqual(left, [], 'the erased session was deleted by retention');
  });
});
