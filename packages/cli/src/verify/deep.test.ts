import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { OBSERVE_DERIVED_TABLES, ROLLUPS_TABLE } from '@vigil/observe';
import { describeEachDatabase } from '@vigil/platform/testing';
import { ago, ended, ingestEvents, started, startTestObserve, toolCall, type EventInput, type TestObserve } from '@vigil/observe/testing';
import { DerivedDataAudit, sameSum, type ChainedEvent, type DerivedFinding } from './deep.ts';

const llmResponse = (sessionId: string, agentId: string, timestamp: string, fields: Record<string, unknown>): EventInput => ({
  sessionId,
  agentId,
  eventType: 'llm_response',
  timestamp,
  payload: {
    callId: `llm-${timestamp}`,
    provider: 'openai',
    model: 'gpt-4o',
    completion: 'ok',
    finishReason: 'stop',
    usage: { inputTokens: 1200, outputTokens: 300 },
    costUsd: 0.0123,
    latencyMs: 850,
    ...fields,
  },
});
const toolResult = (sessionId: string, agentId: string, timestamp: string, eventType: 'tool_response' | 'tool_error', durationMs: number): EventInput => ({
  sessionId,
  agentId,
  eventType,
  timestamp,
  payload:
    eventType === 'tool_response'
      ? { callId: 'c1', toolName: 'search', result: { hits: 3 }, durationMs }
      : { callId: 'c2', toolName: 'search', error: 'timeout', durationMs },
});

/** A realistic mix: LLM calls with costs, tokens and tiers, tools that succeed and fail, ended and open sessions, several hours and agents. */
const MIX: EventInput[] = [
  started('deep-1', 'agent-a', ago(200), { agentName: 'Alpha', tags: ['prod', 'eu', 'prod'] }),
  llmResponse('deep-1', 'agent-a', ago(199), { toolCalls: [{ name: 'search' }] }),
  toolCall('deep-1', 'agent-a', ago(198)),
  toolResult('deep-1', 'agent-a', ago(197), 'tool_response', 120.5),
  toolResult('deep-1', 'agent-a', ago(196), 'tool_error', 40),
  // 0.1 + 0.2 is not 0.3 in doubles: sums must be compared as sums.
  llmResponse('deep-1', 'agent-a', ago(150), { costUsd: 0.1, usage: { inputTokens: 12_000, outputTokens: 10 } }),
  llmResponse('deep-1', 'agent-a', ago(149), { costUsd: 0.2, finishReason: 'length' }),
  {
    sessionId: 'deep-1',
    agentId: 'agent-a',
    eventType: 'cost_tracked',
    timestamp: ago(148),
    payload: { provider: 'openai', model: 'gpt-4o', inputTokens: 10, outputTokens: 5, totalTokens: 15, costUsd: 0.0007 },
  },
  { sessionId: 'deep-1', agentId: 'agent-a', eventType: 'custom', severity: 'error', timestamp: ago(147), payload: { type: 'step', data: {} } },
  ended('deep-1', 'agent-a', ago(140), 'completed'),
  started('deep-2', 'agent-b', ago(130)),
  llmResponse('deep-2', 'agent-b', ago(129), { provider: 'anthropic', model: 'claude-sonnet', finishReason: 'error', costUsd: 0.03 }),
  toolCall('deep-2', 'agent-b', ago(128), 'c9'),
  ended('deep-2', 'agent-b', ago(120), 'error'),
  // An open session whose timestamps run backwards: the timeline lists it in another order than its chain.
  started('deep-3', 'agent-a', ago(30)),
  llmResponse('deep-3', 'agent-a', ago(95), { model: 'gpt-4o-mini', costUsd: 0.0004 }),
  toolCall('deep-3', 'agent-a', ago(100)),
  toolResult('deep-3', 'agent-a', ago(10), 'tool_error', 5),
  // Ended, then started again under an earlier timestamp: by seq it is active again (by time it would look ended).
  started('deep-4', 'agent-b', ago(60), { agentName: 'Beta' }),
  ended('deep-4', 'agent-b', ago(50), 'completed'),
  started('deep-4', 'agent-b', ago(70), { agentName: 'Beta again', tags: ['retry'] }),
];

/** Retention material: an old session, and a kept one sharing its hour, agent, model and tier. */
const DAYS_AGO = 2 * 24 * 60;
const OLD: EventInput[] = [
  started('deep-old', 'agent-a', ago(DAYS_AGO)),
  llmResponse('deep-old', 'agent-a', ago(DAYS_AGO - 1), { costUsd: 0.0301, latencyMs: 400 }),
  toolResult('deep-old', 'agent-a', ago(DAYS_AGO - 2), 'tool_response', 77),
  ended('deep-old', 'agent-a', ago(DAYS_AGO - 3), 'completed'),
  llmResponse('deep-kept', 'agent-a', ago(DAYS_AGO - 4), { costUsd: 0.0707, latencyMs: 410 }),
  toolResult('deep-kept', 'agent-a', ago(DAYS_AGO - 5), 'tool_response', 78),
  llmResponse('deep-kept', 'agent-a', ago(5), { costUsd: 0.0011 }),
];

test('sums of the same terms in another order are the same sum; a cent is not', () => {
  const terms = [0.1, 0.2, 0.0123, 0.0007, 0.3];
  const forward = terms.reduce((a, b) => a + b, 0);
  const backward = [...terms].reverse().reduce((a, b) => a + b, 0);
  assert.notEqual(forward, backward, 'the example must differ in the last bits');
  assert.ok(sameSum(forward, backward, terms.length));
  assert.ok(!sameSum(forward, forward + 0.01, terms.length));
  assert.ok(!sameSum(0, 1e-6, 1));
});

test('--deep compares every audited derived table the service registers, and refuses one it has no comparison for', () => {
  assert.doesNotThrow(() => new DerivedDataAudit(OBSERVE_DERIVED_TABLES));
  const unhandled = { ...ROLLUPS_TABLE, table: 'agents' as const };
  assert.throws(() => new DerivedDataAudit([...OBSERVE_DERIVED_TABLES, unhandled]), /no comparison for the derived table agents/);
  // A table without an audit is not listed, so --deep has nothing to compare.
  const { audit: _audit, ...unaudited } = unhandled;
  assert.doesNotThrow(() => new DerivedDataAudit([...OBSERVE_DERIVED_TABLES, unaudited]));
});

await describeEachDatabase('vigil verify --deep: derived data recomputed from chained events', (backend) => {
  let observe: TestObserve;
  let base: string;
  const sessions = ['deep-1', 'deep-2', 'deep-3', 'deep-4', 'deep-old', 'deep-kept'];

  before(async () => {
    observe = await startTestObserve(backend);
    await observe.service.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(observe.service.app.server.address() as AddressInfo).port}`;
    await ingestEvents(observe, MIX.slice(0, 9));
    await ingestEvents(observe, MIX.slice(9));
    await ingestEvents(observe, OLD);
  });
  after(() => observe.close());

  /** GET over real HTTP, as the CLI reads the API. */
  const get = async (path: string): Promise<unknown> => {
    const response = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${observe.key}` } });
    assert.equal(response.status, 200, `${path}: ${await response.clone().text()}`);
    return response.json();
  };

  /** The walk (built elsewhere) stands in as each session's timeline: every stored event, in timestamp order. */
  const walk = async (): Promise<DerivedDataAudit> => {
    const deep = new DerivedDataAudit();
    for (const sessionId of sessions) {
      const response = await observe.call({ method: 'GET', url: `/api/sessions/${sessionId}/timeline` });
      if (response.statusCode === 404) continue;
      for (const event of (response.json() as { events: ChainedEvent[] }).events) deep.add(event);
    }
    return deep;
  };
  const audit = async (): Promise<DerivedFinding[]> => (await walk()).finish(get);
  const where = (findings: DerivedFinding[]) =>
    findings
      .map(({ sessionId, eventId, seq, hour, field }) => ({ sessionId, eventId, seq, hour, field }))
      .sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));

  const db = () => observe.service.context.database.db;
  const eventOf = (sessionId: string, seq: number) =>
    db().selectFrom('events').selectAll().where('session_id', '=', sessionId).where('seq', '=', seq).executeTakeFirstOrThrow();

  test('untouched, nothing differs', async () => {
    const restarted = (await observe.call({ method: 'GET', url: '/api/sessions/deep-4' })).json() as { status: string; agentName: string };
    assert.deepEqual([restarted.status, restarted.agentName], ['active', 'Beta again'], 'the session the walk lists out of seq order');
    assert.deepEqual(await audit(), []);
  });

  test('the listings page by cursor in key order and refuse a foreign cursor', async () => {
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const page = (await get(`/api/audit/derived/events?limit=4${cursor === null ? '' : `&cursor=${cursor}`}`)) as {
        rows: { id: string }[];
        nextCursor: string | null;
      };
      assert.ok(page.rows.length <= 4);
      ids.push(...page.rows.map((r) => r.id));
      cursor = page.nextCursor;
    } while (cursor !== null);
    assert.equal(ids.length, MIX.length + OLD.length);
    assert.deepEqual(ids, [...ids].sort());
    const rollups = (await get('/api/audit/derived/rollups?limit=2')) as { rows: unknown[]; nextCursor: string };
    const next = (await get(`/api/audit/derived/rollups?limit=2&cursor=${rollups.nextCursor}`)) as { rows: unknown[] };
    assert.notDeepEqual(next.rows[0], rollups.rows[0]);
    const foreign = await observe.call({ method: 'GET', url: '/api/audit/derived/sessions?cursor=bm90LWpzb24' });
    assert.equal(foreign.statusCode, 400, foreign.body);
  });

  test("an event's cost_usd edited in the database is reported at that event", async () => {
    const event = await eventOf('deep-1', 1);
    await db().updateTable('events').set({ cost_usd: 0.5 }).where('id', '=', event.id).execute();
    const findings = await audit();
    await db().updateTable('events').set({ cost_usd: event.cost_usd }).where('id', '=', event.id).execute();
    assert.deepEqual(where(findings), [{ sessionId: 'deep-1', eventId: event.id, seq: 1, hour: undefined, field: 'cost_usd' }]);
    assert.equal(findings[0]!.stored, 0.5);
    assert.equal(findings[0]!.recomputed, 0.0123);
    assert.deepEqual(await audit(), []);
  });

  test("the session row's error_count and total_cost_usd edited are reported at the session", async () => {
    const row = await db().selectFrom('sessions').selectAll().where('id', '=', 'deep-1').executeTakeFirstOrThrow();
    await db()
      .updateTable('sessions')
      .set({ error_count: row.error_count - 1, total_cost_usd: Number(row.total_cost_usd) - 0.01 })
      .where('id', '=', 'deep-1')
      .execute();
    const findings = await audit();
    await db().updateTable('sessions').set({ error_count: row.error_count, total_cost_usd: row.total_cost_usd }).where('id', '=', 'deep-1').execute();
    assert.deepEqual(where(findings), [
      { sessionId: 'deep-1', eventId: undefined, seq: undefined, hour: undefined, field: 'error_count' },
      { sessionId: 'deep-1', eventId: undefined, seq: undefined, hour: undefined, field: 'total_cost_usd' },
    ]);
    // tool_error and the error-severity custom event.
    assert.deepEqual(findings.find((f) => f.field === 'error_count')!.recomputed, 2);
    assert.deepEqual(await audit(), []);
  });

  test('an hourly rollup edited is reported at its hour', async () => {
    const event = await eventOf('deep-2', 1);
    const hour = Math.floor(Number(event.ts) / 3_600_000) * 3_600_000;
    const edit = (sign: 1 | -1) =>
      db()
        .updateTable('event_rollups')
        .set((eb) => ({ cost_usd: eb('cost_usd', '+', sign * 0.03), failure_count: eb('failure_count', '+', sign) }))
        .where('hour', '=', hour)
        .where('agent_id', '=', 'agent-b')
        .where('event_type', '=', 'llm_response')
        .where('model', '=', 'claude-sonnet')
        .executeTakeFirstOrThrow();
    assert.equal(Number((await edit(-1)).numUpdatedRows), 1);
    const findings = await audit();
    await edit(1);
    const at = new Date(hour).toISOString();
    assert.deepEqual(where(findings), [
      { sessionId: undefined, eventId: undefined, seq: undefined, hour: at, field: 'cost_usd' },
      { sessionId: undefined, eventId: undefined, seq: undefined, hour: at, field: 'failure_count' },
    ]);
    assert.match(findings[0]!.message, /agent agent-b, llm_response, anthropic\/claude-sonnet/);
    assert.deepEqual(await audit(), []);
  });

  test('a daily rollup and a daily sketch bin edited are reported at their day', async () => {
    const event = await eventOf('deep-2', 1);
    const day = Math.floor(Number(event.ts) / 86_400_000) * 86_400_000;
    const editRollup = (sign: 1 | -1) =>
      db()
        .updateTable('event_rollups_daily')
        .set((eb) => ({ event_count: eb('event_count', '+', sign) }))
        .where('hour', '=', day)
        .where('agent_id', '=', 'agent-b')
        .where('event_type', '=', 'llm_response')
        .where('model', '=', 'claude-sonnet')
        .executeTakeFirstOrThrow();
    const sketch = await db()
      .selectFrom('latency_sketches_daily')
      .selectAll()
      .where('metric', '=', 'tool')
      .orderBy('hour')
      .orderBy('bin')
      .executeTakeFirstOrThrow();
    const editSketch = (count: number) =>
      db()
        .updateTable('latency_sketches_daily')
        .set({ count })
        .where('hour', '=', sketch.hour)
        .where('agent_id', '=', sketch.agent_id)
        .where('tool_name', '=', sketch.tool_name)
        .where('bin', '=', sketch.bin)
        .where('metric', '=', 'tool')
        .executeTakeFirstOrThrow();
    assert.equal(Number((await editRollup(1)).numUpdatedRows), 1);
    assert.equal(Number((await editSketch(Number(sketch.count) + 2)).numUpdatedRows), 1);
    const findings = await audit();
    await editRollup(-1);
    await editSketch(Number(sketch.count));
    assert.deepEqual(where(findings), [
      { sessionId: undefined, eventId: undefined, seq: undefined, hour: new Date(Number(sketch.hour)).toISOString(), field: 'count' },
      { sessionId: undefined, eventId: undefined, seq: undefined, hour: new Date(day).toISOString(), field: 'event_count' },
    ]);
    assert.match(findings.find((f) => f.field === 'event_count')!.message, /^daily rollup .*agent agent-b, llm_response/);
    assert.match(findings.find((f) => f.field === 'count')!.message, /^daily latency sketch /);
    assert.deepEqual(await audit(), []);
  });

  test("an event's model edited is reported at that event", async () => {
    const event = await eventOf('deep-3', 1);
    await db().updateTable('events').set({ model: 'gpt-4o' }).where('id', '=', event.id).execute();
    const findings = await audit();
    await db().updateTable('events').set({ model: event.model }).where('id', '=', event.id).execute();
    assert.deepEqual(where(findings), [{ sessionId: 'deep-3', eventId: event.id, seq: 1, hour: undefined, field: 'model' }]);
    assert.deepEqual([findings[0]!.stored, findings[0]!.recomputed], ['gpt-4o', 'gpt-4o-mini']);
    assert.deepEqual(await audit(), []);
  });

  test("a session's status and a latency sketch bin edited are reported", async () => {
    await db().updateTable('sessions').set({ status: 'completed' }).where('id', '=', 'deep-3').execute();
    const sketch = await db().selectFrom('latency_sketches').selectAll().where('metric', '=', 'tool').orderBy('hour').orderBy('bin').executeTakeFirstOrThrow();
    await db()
      .updateTable('latency_sketches')
      .set({ count: Number(sketch.count) + 5 })
      .where('hour', '=', sketch.hour)
      .where('bin', '=', sketch.bin)
      .where('metric', '=', 'tool')
      .execute();
    const findings = await audit();
    await db().updateTable('sessions').set({ status: 'active' }).where('id', '=', 'deep-3').execute();
    await db()
      .updateTable('latency_sketches')
      .set({ count: sketch.count })
      .where('hour', '=', sketch.hour)
      .where('bin', '=', sketch.bin)
      .where('metric', '=', 'tool')
      .execute();
    assert.deepEqual(where(findings), [
      { sessionId: undefined, eventId: undefined, seq: undefined, hour: new Date(Number(sketch.hour)).toISOString(), field: 'count' },
      { sessionId: 'deep-3', eventId: undefined, seq: undefined, hour: undefined, field: 'status' },
    ]);
    assert.deepEqual(await audit(), []);
  });

  test("an alert session moved to the system agent (migration 0012) is no difference; any other session's agent is", async () => {
    await ingestEvents(observe, [started('alert:rule-9', 'agent-a', ago(3)), started('deep-6', 'agent-a', ago(3))]);
    sessions.push('alert:rule-9', 'deep-6');
    // What 0012_session_idle did to older alert sessions: the row moves, the events keep the agentId they were hashed with.
    await db().updateTable('sessions').set({ agent_id: 'system', agent_name: 'system' }).where('id', 'in', ['alert:rule-9', 'deep-6']).execute();
    const findings = await audit();
    await db().updateTable('sessions').set({ agent_id: 'agent-a', agent_name: 'agent-a' }).where('id', '=', 'deep-6').execute();
    assert.deepEqual(where(findings), [
      { sessionId: 'deep-6', eventId: undefined, seq: undefined, hour: undefined, field: 'agent_id' },
      { sessionId: 'deep-6', eventId: undefined, seq: undefined, hour: undefined, field: 'agent_name' },
    ]);
    assert.deepEqual(await audit(), []);
  });

  test('events appended after the walk are no difference: their session is left out, their rollups counted as stored', async () => {
    const deep = await walk();
    await ingestEvents(observe, [llmResponse('deep-2', 'agent-b', ago(1), { costUsd: 0.25 }), started('deep-5', 'agent-c', ago(1))]);
    assert.deepEqual(await deep.finish(get), []);
    assert.equal(deep.skippedSessions, 2, 'deep-2 moved on; deep-5 is new');
    assert.deepEqual(await audit(), []);
  });

  test('after a retention run, the remaining events still give the stored derived data exactly', async () => {
    assert.equal((await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 1 } })).statusCode, 200);
    await observe.service.jobs.retention.tick();
    assert.equal((await observe.call({ method: 'GET', url: '/api/sessions/deep-old' })).statusCode, 404, 'retention removed the old session');
    // The kept session's old events share the deleted session's rollup rows, which retention subtracted from.
    const shared = await db()
      .selectFrom('event_rollups')
      .select(['event_count', 'cost_usd'])
      .where('hour', '=', Math.floor(Date.parse(ago(DAYS_AGO)) / 3_600_000) * 3_600_000)
      .where('event_type', '=', 'llm_response')
      .executeTakeFirstOrThrow();
    assert.deepEqual([Number(shared.event_count), Number(shared.cost_usd)], [1, 0.0707 + 0.0301 - 0.0301]);
    assert.deepEqual(await audit(), []);
  });
});
