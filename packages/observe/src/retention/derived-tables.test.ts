// The registered derived tables are the list retention and `verify --deep` go by: after a retention
// run, every one of them holds exactly what its own declaration rebuilds (backfill) or recomputes
// (audit) from the events that remain, so a table registered but not subtracted by retention fails here.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { DerivedDataRecomputation, type ChainedEventFields } from '../audit-log/index.ts';
import { isAudited } from '../events/index.ts';
import { ago, ended, ingestEvents, started, startTestObserve, toolCall, type EventInput, type TestObserve } from '../testing.ts';

const DAYS_AGO = 2 * 24 * 60;
const llmResponse = (sessionId: string, timestamp: string, costUsd: number, latencyMs: number): EventInput => ({
  sessionId,
  agentId: 'agent-a',
  eventType: 'llm_response',
  timestamp,
  payload: {
    callId: `llm-${timestamp}`,
    provider: 'openai',
    model: 'gpt-4o',
    completion: 'ok',
    finishReason: 'stop',
    usage: { inputTokens: 1200, outputTokens: 30 },
    costUsd,
    latencyMs,
  },
});
const toolResponse = (sessionId: string, timestamp: string, durationMs: number): EventInput => ({
  sessionId,
  agentId: 'agent-a',
  eventType: 'tool_response',
  timestamp,
  payload: { callId: 'c1', toolName: 'search', result: {}, durationMs },
});

/** An old session retention deletes, a kept one sharing its hour, agent, model and tool (so rows shared by both), and a recent one. */
const EVENTS: EventInput[] = [
  started('old', 'agent-a', ago(DAYS_AGO)),
  llmResponse('old', ago(DAYS_AGO - 1), 0.0301, 400),
  toolCall('old', 'agent-a', ago(DAYS_AGO - 2)),
  toolResponse('old', ago(DAYS_AGO - 2), 77),
  ended('old', 'agent-a', ago(DAYS_AGO - 3), 'completed'),
  llmResponse('kept', ago(DAYS_AGO - 4), 0.0707, 410),
  toolResponse('kept', ago(DAYS_AGO - 5), 78),
  llmResponse('kept', ago(5), 0.0011, 300),
  started('recent', 'agent-b', ago(10), { tags: ['prod'] }),
  ended('recent', 'agent-b', ago(9), 'error'),
];
const REMAINING = ['kept', 'recent'];

/** Rows as comparable values: numbers as numbers (PostgreSQL answers bigint as text), in a stable order. */
const comparable = (rows: readonly Record<string, unknown>[]) =>
  rows
    .map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === 'string' && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v])))
    .map((row) => JSON.stringify(row))
    .sort();

await describeEachDatabase('derived tables: retention and verify --deep go by the registered list', (backend) => {
  let observe: TestObserve;
  const tables = () => observe.service.context.derivedTables;
  const db = () => observe.service.context.database.db;

  before(async () => {
    observe = await startTestObserve(backend);
    await ingestEvents(observe, EVENTS);
    assert.equal((await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 1 } })).statusCode, 200);
    await observe.service.jobs.retention.tick();
    assert.equal((await observe.call({ method: 'GET', url: '/api/sessions/old' })).statusCode, 404, 'retention removed the old session');
  });
  after(() => observe.close());

  test('every registered table can be checked: it declares a backfill or an audit', () => {
    assert.deepEqual(
      tables().map((table) => table.table),
      [
        'events',
        'sessions',
        'store_totals',
        'event_rollups',
        'latency_sketches',
        'agent_session_hours',
        'event_rollups_daily',
        'latency_sketches_daily',
        'agent_session_days',
      ],
    );
    for (const table of tables()) assert.ok(table.backfill ?? table.audit, `${table.table} declares neither a backfill nor an audit`);
  });

  test('after retention, each audited table lists what its recomputation gives from the remaining chained events', async () => {
    const recomputation = new DerivedDataRecomputation(tables());
    for (const sessionId of REMAINING) {
      const timeline = await observe.call({ method: 'GET', url: `/api/sessions/${sessionId}/timeline` });
      for (const event of (timeline.json() as { events: ChainedEventFields[] }).events) recomputation.add(event);
    }
    assert.deepEqual(
      recomputation.tables.map((table) => table.audit.path),
      ['events', 'sessions', 'rollups', 'latency-sketches', 'rollups-daily', 'latency-sketches-daily'],
    );
    for (const table of recomputation.tables) {
      const recomputed = recomputation.rowsOf<Record<string, unknown>>(table);
      let stored = 0;
      let cursor: string | null = null;
      do {
        const response = await observe.call({
          method: 'GET',
          url: `/api/audit/derived/${table.audit.path}?limit=2${cursor === null ? '' : `&cursor=${cursor}`}`,
        });
        assert.equal(response.statusCode, 200, response.body);
        const page = response.json() as { rows: Record<string, unknown>[]; nextCursor: string | null };
        for (const row of page.rows) {
          const expected = recomputed.take(table.audit.keyOf(row));
          assert.ok(expected, `${table.table}: ${JSON.stringify(row)} is stored, the remaining events give no such row`);
          assert.deepEqual(Object.fromEntries(Object.keys(expected).map((k) => [k, row[k]])), expected, table.table);
          stored += 1;
        }
        cursor = page.nextCursor;
      } while (cursor !== null);
      assert.ok(stored > 0, `${table.table} lists rows`);
      assert.deepEqual([...recomputed.remaining()], [], `${table.table}: recomputed rows without a stored row`);
    }
  });

  // Last of the checks after retention: it rebuilds the tables it checks.
  test('after retention, each table with a backfill holds what its backfill rebuilds from the remaining events', async () => {
    for (const table of tables()) {
      if (table.backfill === undefined) continue;
      const kept = comparable(await db().selectFrom(table.table).selectAll().execute());
      assert.ok(kept.length > 0, `${table.table} holds rows`);
      await db().deleteFrom(table.table).execute();
      await table.backfill(db());
      assert.deepEqual(comparable(await db().selectFrom(table.table).selectAll().execute()), kept, `${table.table} after retention`);
    }
  });

  test('the derived listings are the audited tables, in registration order', async () => {
    const document = (await observe.call({ method: 'GET', url: '/api/openapi.json' })).json() as { paths: Record<string, unknown> };
    const listed = Object.keys(document.paths).filter((path) => path.startsWith('/api/audit/derived/'));
    assert.deepEqual(
      listed,
      tables()
        .filter(isAudited)
        .map((table) => `/api/audit/derived/${table.audit.path}`),
    );
  });
});
