import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { sqliteBackend } from '@vigil/platform/testing';
import { clockOf, ingestEvents, startTestObserve, type TestObserve } from '../testing.ts';

const HOUR = 3_600_000;
const ROUND_HOURS = 6;
const SESSIONS_PER_ROUND = 10;
const EVENTS_PER_SESSION = 100;
/**
 * With a one-day retention, 4 rounds of 6 hours are live at any time. Recall's vectors of deleted
 * sessions stay a day longer as tombstones (recall/store.ts TOMBSTONE_TTL_MS), so from round 10 on
 * every round's writes replace rows deleted as many rounds before.
 */
const WARM_UP_ROUNDS = 10;
const ROUNDS = 18;

/** A session of the bench's mix: tool calls and answers, LLM calls and answers, with text. */
function session(id: string, at: number): object[] {
  return Array.from({ length: EVENTS_PER_SESSION }, (_, i) => {
    const base = { sessionId: id, agentId: `agent-${i % 3}`, timestamp: new Date(at + i).toISOString() };
    switch (i % 4) {
      case 0:
        return {
          ...base,
          eventType: 'tool_call',
          payload: { toolName: 'web_search', callId: `c${i}`, arguments: { query: `quarterly revenue report ${id} ${i}` } },
        };
      case 1:
        return { ...base, eventType: 'tool_response', payload: { toolName: 'web_search', callId: `c${i - 1}`, result: { hits: i }, durationMs: 100 + i } };
      case 2:
        return {
          ...base,
          eventType: 'llm_call',
          payload: { callId: `l${i}`, provider: 'openai', model: 'gpt-4o-mini', messages: [{ role: 'user', content: `Summarise report ${i}` }] },
        };
      default:
        return {
          ...base,
          eventType: 'llm_response',
          payload: {
            callId: `l${i - 1}`,
            provider: 'openai',
            model: 'gpt-4o-mini',
            completion: `Revenue grew ${i}% on cloud services.`,
            finishReason: 'stop',
            usage: { inputTokens: 400, outputTokens: 90 },
            costUsd: 0.0001,
            latencyMs: 800,
          },
        };
    }
  });
}

/** The audit log's tables: append-only by design (a leaf stays after its event is deleted, and a tombstone leaf is added), so they grow with every event ever ingested. */
const isAuditLogTable = (table: string): boolean => table.startsWith('audit_');

// SQLite only: the subject is the file on disk. (PostgreSQL's deleted rows are reused once
// autovacuum has run, on its own schedule: docs/deploy.md#disk-space.)
describe('retention gives space back: the SQLite file under steady ingest with retention on', () => {
  let observe: TestObserve;
  /** File plus WAL after each round's retention run, and the part of it that is not the audit log. */
  const sizes: { total: number; withoutAuditLog: number; auditLog: number }[] = [];

  before(async () => {
    observe = await startTestObserve(sqliteBackend);
    const config = await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 1 } });
    assert.equal(config.statusCode, 200, config.body);
  });
  after(() => observe.close());

  const measure = async (): Promise<{ total: number; withoutAuditLog: number; auditLog: number }> => {
    const database = observe.service.context.database;
    const total = await database.sizeBytes();
    const auditLog = (await database.storageBreakdown()).filter((o) => isAuditLogTable(o.table)).reduce((sum, o) => sum + o.bytes, 0);
    return { total, withoutAuditLog: total - auditLog, auditLog };
  };

  test('ingest, embedding and retention every 6 hours for 4½ days: after the warm-up the file grows by the audit log only', async () => {
    const clock = clockOf(observe);
    for (let round = 0; round < ROUNDS; round += 1) {
      clock.advance(ROUND_HOURS * HOUR);
      const at = clock.now() - EVENTS_PER_SESSION;
      await ingestEvents(observe, Array.from({ length: SESSIONS_PER_ROUND }, (_, s) => session(`r${round}-s${s}`, at)).flat());
      while ((await observe.service.jobs.embeddings.tick()) && (await queueDepth(observe)) > 0);
      assert.equal(await observe.service.jobs.retention.tick(), true);
      sizes.push(await measure());
    }
    const { count } = await observe.service.context.database.db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .executeTakeFirstOrThrow();
    // A day and a round: the sessions of the last 4 rounds, and the round retention will delete next.
    assert.ok(Number(count) <= 5 * SESSIONS_PER_ROUND * EVENTS_PER_SESSION, `${count} events are left`);

    const warm = sizes[WARM_UP_ROUNDS - 1]!;
    const last = sizes.at(-1)!;
    const peak = Math.max(...sizes.slice(WARM_UP_ROUNDS).map((s) => s.withoutAuditLog));
    // Everything but the audit log stays within 5 % of its size at the end of the warm-up ...
    assert.ok(peak <= warm.withoutAuditLog * 1.05, `without the audit log: ${warm.withoutAuditLog} bytes after warm-up, up to ${peak} after`);
    // ... so the file grows by what the audit log grew, and by nothing else.
    const growth = last.total - warm.total;
    const auditGrowth = last.auditLog - warm.auditLog;
    assert.ok(growth <= auditGrowth + warm.withoutAuditLog * 0.05, `file grew ${growth} bytes, the audit log ${auditGrowth}`);
  });

  test('once retention has deleted everything, the freed pages are returned to the file system and the WAL is emptied', async () => {
    const clock = clockOf(observe);
    const before = sizes.at(-1)!;
    // Every session expires; then recall tombstones their vectors, and purges the tombstones a day later.
    clock.advance(2 * 24 * HOUR);
    assert.equal(await observe.service.jobs.retention.tick(), true);
    assert.equal(await observe.service.jobs.embeddings.tick(), true);
    clock.advance(25 * HOUR);
    assert.equal(await observe.service.jobs.embeddings.tick(), true);
    assert.equal(await observe.service.jobs.retention.tick(), true);

    const afterAll = await measure();
    assert.ok(
      afterAll.withoutAuditLog < before.withoutAuditLog * 0.25,
      `without the audit log: ${before.withoutAuditLog} bytes before, ${afterAll.withoutAuditLog} after deleting every session`,
    );
    const { database } = observe.config;
    assert.equal(database.kind, 'sqlite');
    assert.equal(statSync(`${database.file}-wal`).size, 0, 'the WAL was emptied');
    assert.equal(statSync(database.file).size, afterAll.total, 'the file holds everything');
  });
});

async function queueDepth(observe: TestObserve): Promise<number> {
  const { count } = await observe.service.context.database.db
    .selectFrom('embedding_queue')
    .select((eb) => eb.fn.countAll<number>().as('count'))
    .executeTakeFirstOrThrow();
  return Number(count);
}
