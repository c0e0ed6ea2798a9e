import assert from 'node:assert/strict';
import { test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { sql } from 'kysely';
import { ago, backToBefore0044, ingest, startTestObserve, type TestObserve } from '../testing.ts';
import { eventPartitions, eventsPartitioned } from './partitions.ts';

/** A session of tool calls, answers and LLM answers starting `minutesAgo` before TEST_NOW. */
function session(id: string, agent: string, minutesAgo: number, count: number): object[] {
  return Array.from({ length: count }, (_, i) => {
    const base = { sessionId: id, agentId: agent, timestamp: ago(minutesAgo - i) };
    if (i % 3 === 0) return { ...base, eventType: 'tool_call', payload: { toolName: `tool-${i % 2}`, callId: `c${i}`, arguments: { q: `${id} ${i}` } } };
    if (i % 3 === 1)
      return {
        ...base,
        eventType: 'tool_response',
        payload: { toolName: `tool-${(i - 1) % 2}`, callId: `c${i - 1}`, result: { hits: i }, durationMs: 10 + i },
      };
    return {
      ...base,
      eventType: 'llm_response',
      payload: {
        callId: `l${i}`,
        provider: 'openai',
        model: i % 2 === 0 ? 'gpt-4o-mini' : 'gpt-4o',
        completion: `answer ${i} for ${id}`,
        finishReason: 'stop',
        usage: { inputTokens: 40 + i, outputTokens: 9 + i },
        costUsd: 0.0001 * i,
        latencyMs: 100 + i,
      },
    };
  });
}

const SESSIONS = ['mig-a', 'mig-b', 'mig-c'];

/** The answers compared before and after the migration: lists, a session's every view, figures, audit listings. */
const urls = (): string[] => [
  '/api/events?limit=500',
  '/api/events?sessionId=mig-b&limit=100',
  '/api/events?eventType=llm_response&limit=100',
  '/api/sessions',
  '/api/stats',
  '/api/agents',
  '/api/analytics',
  '/api/analytics/agents',
  '/api/analytics/tools',
  '/api/analytics/costs',
  '/api/analytics/llm',
  '/api/llm-calls',
  '/api/audit/heads',
  '/api/audit/derived/events?limit=500',
  '/api/audit/derived/sessions?limit=500',
  `/api/reflect?analysis=tool_sequences&from=${ago(60 * 24 * 40)}`,
  ...SESSIONS.flatMap((id) => [
    `/api/sessions/${id}`,
    `/api/sessions/${id}/timeline`,
    `/api/sessions/${id}/replay`,
    `/api/sessions/${id}/tree`,
    `/api/sessions/${id}/steps`,
    `/api/audit/verify?sessionId=${id}`,
  ]),
];

async function answers(observe: TestObserve): Promise<Map<string, string>> {
  const bodies = new Map<string, string>();
  for (const url of urls()) {
    const response = await observe.call({ method: 'GET', url });
    assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
    // The one figure of where rows lie rather than what they are: the bytes the tables take.
    bodies.set(url, url === '/api/stats' ? response.body.replace(/"storageSizeBytes":\d+/, '"storageSizeBytes":"(measured)"') : response.body);
  }
  return bodies;
}

await describeEachDatabase('migration 0044 of an existing database', (backend) => {
  test('every answer is byte-identical before and after; the old sessions keep growing in place and retention still removes them', async () => {
    let observe: TestObserve = await startTestObserve(backend);
    const database = observe.config.database;
    const key = observe.key;
    await ingest(observe, [...session('mig-a', 'agent-1', 60 * 24 * 20, 12), ...session('mig-b', 'agent-2', 60 * 24 * 3, 9)]);
    await ingest(observe, session('mig-c', 'agent-1', 90, 15));
    const postgres = backend.kind === 'postgres';
    const reopen = async () => {
      const opened = await startTestObserve(backend, { database, createKey: false });
      return {
        ...opened,
        key,
        call: ((request) => opened.call({ ...request, headers: { authorization: `Bearer ${key}`, ...request.headers } })) as TestObserve['call'],
      };
    };
    const db = () => observe.service.context.database.db;
    // The answers of a service started afresh on the rows (on PostgreSQL in their week partitions)...
    if (postgres) await observe.service.jobs.eventPartitions.tick();
    await observe.close();
    observe = await reopen();
    const before = await answers(observe);
    // ...and of one started on the same rows put back unpartitioned, as 0043 left them (0044 applies as it starts).
    await backToBefore0044(db(), backend.kind);
    await observe.close();
    observe = await reopen();
    assert.equal(await eventsPartitioned(db(), backend.kind), postgres);
    if (postgres) {
      const partitions = await eventPartitions(db());
      assert.deepEqual(
        partitions.map((partition) => partition.name),
        ['events_default', 'events_legacy'],
      );
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from events_legacy where session_start = 0`.execute(db());
      assert.equal(rows[0]!.n, 36, 'every existing row stays in place, in the legacy partition');
    }
    const after = await answers(observe);
    assert.deepEqual([...after.keys()], [...before.keys()]);
    for (const [url, body] of before) assert.equal(after.get(url), body, url);

    // An old session keeps its place (session_start 0) and its chain; a new one goes by its start.
    await ingest(observe, session('mig-b', 'agent-2', 30, 3));
    await ingest(observe, session('mig-new', 'agent-3', 10, 3));
    const starts = await db().selectFrom('events').select(['session_id', 'session_start']).distinct().where('session_id', 'in', ['mig-b', 'mig-new']).execute();
    assert.deepEqual(starts.map((row) => [row.session_id, Number(row.session_start) === 0]).sort(), [
      ['mig-b', true],
      ['mig-new', false],
    ]);
    for (const id of ['mig-b', 'mig-new']) {
      const verify = (await observe.call({ method: 'GET', url: `/api/audit/verify?sessionId=${id}` })).json() as { valid: boolean };
      assert.equal(verify.valid, true, id);
    }
    if (postgres) await observe.service.jobs.eventPartitions.tick();
    assert.equal((await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 7 } })).statusCode, 200);
    await observe.service.jobs.retention.tick();
    assert.equal((await observe.call({ method: 'GET', url: '/api/sessions/mig-a' })).statusCode, 404, 'the 20-day-old legacy session went by row deletes');
    assert.equal((await observe.call({ method: 'GET', url: '/api/audit/verify?sessionId=mig-b' })).json<{ valid: boolean }>().valid, true);
    await observe.close();
  });
});
