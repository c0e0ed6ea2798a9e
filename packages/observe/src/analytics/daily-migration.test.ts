// Migration 0050: an existing database gains the daily rollups, sketches and sessions per agent,
// filled from its hourly tables; they hold what ingest would have kept, and every report answers as before.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { migrateToLatest } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { sql } from 'kysely';
import { ago, ingestEvents, started, startTestObserve, toolCall, type EventInput } from '../testing.ts';
import { observeMigrations } from '../migrations.ts';
import { DAILY } from './spans.ts';

const DAY_MINUTES = 24 * 60;

const llm = (sessionId: string, agentId: string, timestamp: string, costUsd: number, latencyMs: number): EventInput => ({
  sessionId,
  agentId,
  timestamp,
  eventType: 'llm_response',
  payload: {
    callId: `l-${timestamp}`,
    provider: 'openai',
    model: 'gpt-4o',
    completion: 'ok',
    finishReason: 'stop',
    usage: { inputTokens: 10, outputTokens: 5 },
    costUsd,
    latencyMs,
  },
});

const toolResponse = (sessionId: string, agentId: string, timestamp: string, durationMs: number): EventInput => ({
  sessionId,
  agentId,
  timestamp,
  eventType: 'tool_response',
  payload: { toolName: 'search', callId: `c-${timestamp}`, result: 1, durationMs },
});

await describeEachDatabase('migration 0050: daily analytics', (backend) => {
  test('the daily tables are filled from the hourly ones, equal to what ingest kept, and the reports answer as before', async () => {
    const observe = await startTestObserve(backend);
    try {
      const events: EventInput[] = [];
      // Three days of sessions, several hours each day, spend that does not sum exactly as doubles.
      for (let day = 0; day < 3; day += 1) {
        for (const [hour, agent] of [
          [2, 'agent-a'],
          [5, 'agent-b'],
          [9, 'agent-a'],
        ] as const) {
          const session = `d${day}-${hour}`;
          const minutes = day * DAY_MINUTES + hour * 60 + 30;
          events.push(started(session, agent, ago(minutes)), toolCall(session, agent, ago(minutes - 1)));
          events.push(toolResponse(session, agent, ago(minutes - 2), 100 + hour), llm(session, agent, ago(minutes - 3), 0.1, 200 * (day + 1)));
          events.push(llm(session, agent, ago(minutes - 4), 0.2, 300));
        }
      }
      await ingestEvents(observe, events);
      const database = observe.service.context.database;
      const { db } = database;
      const tables = [DAILY.rollups, DAILY.sketches, DAILY.sessions] as const;
      const rows = async () =>
        Promise.all(
          tables.map(async (table) =>
            (await db.selectFrom(table).selectAll().execute())
              .map((row) =>
                JSON.stringify(
                  Object.entries(row).map(([k, v]) => [k, typeof v === 'string' && k !== 'agent_id' && /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v]),
                ),
              )
              .sort(),
          ),
        );
      const reports = async () =>
        Promise.all(
          [
            '/api/analytics/agents?range=7d',
            '/api/analytics/llm?range=7d',
            '/api/analytics/tools?range=7d',
            `/api/analytics?from=${ago(4 * DAY_MINUTES)}&granularity=day`,
          ].map(async (url) => (await observe.call({ method: 'GET', url })).body),
        );
      const kept = await rows();
      assert.ok(kept.every((table) => table.length > 0));
      const answers = await reports();

      for (const table of tables) await db.schema.dropTable(table).execute();
      await sql`delete from schema_migrations where name = '0050_daily_analytics'`.execute(db);
      await migrateToLatest(database, observeMigrations);

      assert.deepEqual(await rows(), kept);
      assert.deepEqual(await reports(), answers);
    } finally {
      await observe.close();
    }
  });
});
