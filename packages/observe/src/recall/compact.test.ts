import { encodeVector, isStoredVector } from '@vigil/platform';
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { ingest, startTestObserve, type TestObserve } from '../testing.ts';
import { LocalEmbedder } from './embedder.ts';
import { queueRows, drain, llmCall, llmResponse, sessionEnded, toolCall } from './test-fixtures.ts';
import { eventDetails } from './text.ts';

const MIGRATION = '0019_compact_embeddings';

/** A vector as versions before 0019 stored it: Float32 little-endian. */
function floatBytes(vector: Float32Array): Buffer {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
  return bytes;
}

const approval = (sessionId: string, agentId: string, eventType: string, reason?: string): Record<string, unknown> => ({
  sessionId,
  agentId,
  eventType,
  payload: { requestId: 'r1', action: 'deploy_checkout', decidedBy: 'api:ops', ...(reason === undefined ? {} : { reason }) },
});

await describeEachDatabase('migration 0019_compact_embeddings', (backend) => {
  let old: TestObserve;
  let migrated: TestObserve;
  let ids: string[];
  const embedder = new LocalEmbedder();

  before(async () => {
    // A database as the previous version left it: every vector Float32, events' rows carrying the
    // event's text and metadata, approval decisions without a reason embedded, 0019 not applied.
    old = await startTestObserve(backend);
    ids = await ingest(old, [
      toolCall('m1', 'a1', 'invoice_create', { customer: 'ACME', note: 'quarterly subscription invoice' }),
      llmCall('m1', 'a1', 'Why did the invoice email bounce?'),
      llmResponse('m1', 'a1', 'The SMTP relay rejected the invoice email.'),
      approval('m1', 'a1', 'approval_granted'),
      approval('m1', 'a1', 'approval_denied', 'the invoice total looks wrong'),
      sessionEnded('m1', 'a1', 'completed', 'Invoice sent after fixing the relay'),
    ]);
    await drain(old);
    const { db } = old.service.context.database;
    const rows = await db.selectFrom('embeddings').select(['source_type', 'source_id', 'text']).execute();
    const events = await db.selectFrom('events').selectAll().execute();
    const byId = new Map(events.map((e) => [e.id, e]));
    for (const row of rows) {
      const event = byId.get(row.source_id);
      const details = event ? eventDetails(event) : null;
      const text = details?.text ?? row.text;
      await db
        .updateTable('embeddings')
        .set({ vector: floatBytes(embedder.embedOne(text)), text, metadata: details ? JSON.stringify(details.metadata) : '{}' })
        .where('source_type', '=', row.source_type)
        .where('source_id', '=', row.source_id)
        .execute();
    }
    // What the previous version embedded and this one no longer does: a decision without a reason.
    const granted = byId.get(ids[3]!)!;
    await db
      .insertInto('embeddings')
      .values({
        source_type: 'event',
        source_id: granted.id,
        agent_id: 'a1',
        session_id: 'm1',
        user_id: null,
        ts: Number(granted.ts),
        last_ts: Number(granted.ts),
        model: embedder.model,
        dims: 512,
        vector: floatBytes(embedder.embedOne('approval_granted deploy_checkout by api:ops')),
        text: 'approval_granted deploy_checkout by api:ops',
        metadata: '{}',
        updated_seq: 1000,
        deleted: 0,
      })
      .execute();
    await db.updateTable('embedding_meta').set({ last_seq: 1000 }).where('id', '=', 1).execute();
    await db
      .deleteFrom('schema_migrations' as never)
      .where('name' as never, '=', MIGRATION as never)
      .execute();
    await old.close();
    migrated = await startTestObserve(backend, { database: old.config.database, createKey: false });
  });
  const get = (url: string) => migrated.service.app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${old.key}` } });
  after(() => migrated.close());

  test('Float32 vectors become int8 in place; events keep no copy of their text; vectors of events no longer embedded are dropped', async () => {
    const { db } = migrated.service.context.database;
    const rows = await db.selectFrom('embeddings').select(['source_type', 'source_id', 'dims', 'vector', 'text', 'metadata', 'deleted']).execute();
    const keys = rows.map((r) => `${r.source_type}:${r.source_id}`).sort();
    assert.deepEqual(keys, [...[0, 1, 2, 4, 5].map((i) => `event:${ids[i]}`), 'session:m1'].sort(), 'the reasonless approval_granted lost its vector');
    for (const row of rows) {
      assert.ok(isStoredVector(row.vector, 512) && row.vector.byteLength < 4 + 512, `${row.source_type}:${row.source_id} is int8`);
      if (row.source_type === 'event') assert.deepEqual([row.text, row.metadata], ['', '']);
      else assert.match(row.text, /Session m1 of agent a1/);
    }
    const event = rows.find((r) => r.source_id === ids[2])!;
    const exact = embedder.embedOne('llm_response gpt-4o-mini: The SMTP relay rejected the invoice email.');
    assert.deepEqual(Buffer.from(event.vector), encodeVector(exact), 'the int8 form of the old Float32 vector');
    const meta = await db.selectFrom('embedding_meta').select(['last_seq', 'purged_seq']).executeTakeFirstOrThrow();
    assert.equal(Number(meta.purged_seq), Number(meta.last_seq), 'indexes that read the dropped vector reload');
    assert.deepEqual(await queueRows(migrated), []);
  });

  test('recall and context answer from the migrated vectors with the text and metadata of the events', async () => {
    const answer = (await get('/api/recall?query=smtp%20relay%20rejected&scope=events&limit=3')).json() as {
      results: { sourceId: string; text: string; score: number; metadata: Record<string, unknown> }[];
    };
    assert.equal(answer.results[0]!.sourceId, ids[2]);
    assert.equal(answer.results[0]!.text, 'llm_response gpt-4o-mini: The SMTP relay rejected the invoice email.');
    assert.equal(answer.results[0]!.metadata.eventType, 'llm_response');
    assert.equal(answer.results[0]!.metadata.sessionId, 'm1');
    const query = embedder.embedOne('smtp relay rejected');
    let dot = 0;
    const exact = embedder.embedOne(answer.results[0]!.text);
    for (let i = 0; i < 512; i++) dot += query[i]! * exact[i]!;
    assert.equal(answer.results[0]!.score, Math.round(dot * 1e6) / 1e6, 'the best candidates are scored exactly');
    const context = (await get('/api/context?topic=invoice%20email')).json() as {
      sessions: { sessionId: string; summary: string }[];
    };
    assert.equal(context.sessions[0]!.sessionId, 'm1');
    assert.match(context.sessions[0]!.summary, /Invoice sent after fixing the relay/);
  });
});
