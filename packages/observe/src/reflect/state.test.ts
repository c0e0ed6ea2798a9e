import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { startTestObserve, TEST_NOW, type TestObserve } from '../testing.ts';
import { reflectTuning } from './figures.ts';
import { call, ev, recomputeReflection, toolError, type ReferenceQuery } from './reflect-fixtures.ts';

const failure = (s: string, a: string, t: string, message: string) => ev(s, a, t, 'custom', { type: 'failure', data: { message } }, 'error');
const at = (day: number, time: string) => `2026-11-${String(day).padStart(2, '0')}T${time}Z`;

/**
 * Sessions spread over hours and days: runs that repeat (a→a→a), tool errors answering calls of
 * the same session later (or another session's call ids), out-of-order timestamps, a session of
 * two agents, errors with and without text.
 */
const FIRST_LOAD = [
  call('r1', 'A', at(18, '09:00:00.000'), 'search', 'c1'),
  call('r1', 'A', at(18, '09:10:00.000'), 'search', 'c2'),
  call('r1', 'A', at(18, '09:20:00.000'), 'search', 'c3'),
  toolError('r1', 'A', at(18, '09:25:00.000'), 'search', 'c2', 'timeout after 30 ms calling /a/1'),
  call('r1', 'A', at(18, '10:05:00.000'), 'fetch', 'c4'),
  failure('r1', 'A', at(18, '10:06:00.000'), 'disk full on /dev/sda1'),
  call('r1', 'A', at(18, '11:00:00.000'), 'parse', 'c5'),
  // r2: timestamps out of seq order.
  call('r2', 'A', at(19, '12:00:00.000'), 'fetch', 'c1'),
  call('r2', 'A', at(19, '11:30:00.000'), 'search', 'c2'),
  call('r2', 'A', at(19, '12:30:00.000'), 'fetch', 'c3'),
  toolError('r2', 'A', at(19, '11:45:00.000'), 'fetch', 'c1', { message: 'timeout after 99 ms calling /b' }),
  call('r2', 'A', at(19, '13:00:00.000'), 'search', 'c4'),
  ev(
    'r2',
    'A',
    at(19, '13:10:00.000'),
    'llm_response',
    {
      callId: 'l',
      provider: 'openai',
      model: 'm',
      completion: '',
      finishReason: 'error',
      usage: { inputTokens: 1, outputTokens: 1 },
      costUsd: 0,
      latencyMs: 5,
    },
    'critical',
  ),
  // r3: two agents.
  call('r3', 'A', at(20, '08:00:00.000'), 'search', 'c1'),
  call('r3', 'B', at(20, '08:01:00.000'), 'fetch', 'c2'),
  call('r3', 'B', at(20, '08:02:00.000'), 'fetch', 'c3'),
  toolError('r3', 'B', at(20, '08:03:00.000'), 'fetch', 'c3', 'refused'),
  call('r3', 'A', at(20, '08:04:00.000'), 'fetch', 'c4'),
  // r4 (agent B): one hour, many repeats.
  ...Array.from({ length: 6 }, (_, i) => call('r4', 'B', at(21, `07:0${i}:00.000`), 'search', `c${i}`)),
  failure('r4', 'B', at(21, '07:30:00.000'), 'disk full on /dev/sdb2'),
  // r5: errors only, no calls; r6: nothing reflect counts.
  failure('r5', 'A', at(21, '20:00:00.000'), ''),
  ev('r6', 'A', at(21, '21:00:00.000'), 'custom', { type: 'note', data: {} }),
];

/** Appended after the states exist: new calls of r1 (its head moves) and a new session. */
const SECOND_LOAD = [
  toolError('r1', 'A', at(18, '11:05:00.000'), 'parse', 'c5', 'timeout after 5 ms calling /c'),
  call('r1', 'A', at(18, '11:10:00.000'), 'search', 'c6'),
  call('r7', 'B', at(21, '09:00:00.000'), 'search', 'c1'),
  call('r7', 'B', at(21, '09:01:00.000'), 'search', 'c2'),
];

const RANGES: [string, string][] = [
  ['all', `from=${at(1, '00:00:00.000')}&to=${at(22, '10:00:00.000')}`],
  ['cuts r1 inside an hour', `from=${at(18, '09:15:00.000')}&to=${at(22, '10:00:00.000')}`],
  ['cuts r2 between out-of-order calls', `from=${at(19, '11:50:00.000')}&to=${at(19, '12:45:00.000')}`],
  ['whole hours around r3 and r4', `from=${at(20, '08:00:00.000')}&to=${at(21, '07:59:59.999')}`],
  ['one millisecond', `from=${at(21, '07:03:00.000')}&to=${at(21, '07:03:00.000')}`],
  ['before everything', `from=${at(1, '00:00:00.000')}&to=${at(2, '00:00:00.000')}`],
];

await describeEachDatabase('reflect state: answers equal the recomputation from the events', (backend) => {
  let observe: TestObserve;
  const post = async (events: object[]) => {
    const response = await observe.call({ method: 'POST', url: '/api/events', payload: { events } });
    assert.equal(response.statusCode, 201, response.body);
  };
  /** Two ticks: a session's state is computed once its head stood still for one. */
  const keepState = async () => {
    assert.equal(await observe.service.jobs.reflectState.tick(), true);
    assert.equal(await observe.service.jobs.reflectState.tick(), true);
  };
  const states = async () =>
    (await observe.service.context.database.db.selectFrom('reflect_sessions').select(['session_id', 'head_hash']).orderBy('session_id').execute()).map(
      (row) => row.session_id,
    );

  /** Every analysis × range × agent, compared with the recomputation. */
  const compareAll = async (when: string) => {
    for (const analysis of ['error_patterns', 'tool_sequences'] as const)
      for (const [name, range] of RANGES)
        for (const agentId of [undefined, 'A', 'B']) {
          const url = `/api/reflect?analysis=${analysis}&limit=100&${range}${agentId ? `&agentId=${agentId}` : ''}`;
          const params = new URLSearchParams(range);
          const query: ReferenceQuery = { analysis, from: Date.parse(params.get('from')!), to: Date.parse(params.get('to')!), agentId, limit: 100 };
          const expected = await recomputeReflection(observe.service.context.database, query);
          // The sessions read from events listed, and (none listed) streamed with the whole range.
          for (const sessionFilterMax of [500, 0]) {
            reflectTuning.sessionFilterMax = sessionFilterMax;
            try {
              const response = await observe.call({ method: 'GET', url });
              assert.equal(response.statusCode, 200, response.body);
              assert.deepEqual(
                (response.json() as { insights: { data: unknown }[] }).insights.map((i) => i.data),
                expected,
                `${when}: ${analysis}, ${name}, agent ${agentId ?? 'any'}, sessions listed up to ${sessionFilterMax}`,
              );
            } finally {
              reflectTuning.sessionFilterMax = 500;
            }
          }
        }
  };

  before(async () => {
    observe = await startTestObserve(backend);
    await post(FIRST_LOAD);
  });
  after(() => observe.close());

  test('before any state: every session from its events', async () => {
    assert.deepEqual(await states(), []);
    await compareAll('no state');
  });

  test('a session still written to waits a tick; states then cover every session', async () => {
    assert.equal(await observe.service.jobs.reflectState.tick(), true);
    assert.deepEqual(await states(), [], 'the first tick only notes the heads');
    await observe.service.jobs.reflectState.tick();
    assert.deepEqual(await states(), ['r1', 'r2', 'r3', 'r4', 'r5', 'r6']);
    await compareAll('states current');
  });

  test('the answer comes from the state while it is current', async () => {
    const { db } = observe.service.context.database;
    const all = `analysis=tool_sequences&limit=100&${RANGES[0]![1]}`;
    const before = (await observe.call({ method: 'GET', url: `/api/reflect?${all}` })).json() as { insights: { data: { frequency: number } }[] };
    // Doubling r4's stored counts shows in the answer: r4 (wholly inside the range) is read from its state.
    await db
      .updateTable('reflect_ngrams')
      .set((eb) => ({ frequency: eb('frequency', '*', 2) }))
      .where('session_id', '=', 'r4')
      .execute();
    const changed = (await observe.call({ method: 'GET', url: `/api/reflect?${all}` })).json() as { insights: { data: { frequency: number } }[] };
    assert.notDeepEqual(changed, before);
    // Dropped states are computed again from the events.
    await db.deleteFrom('reflect_sessions').execute();
    await keepState();
    await compareAll('states recomputed');
  });

  test('right after an ingest: moved heads are read from events until their state is computed again', async () => {
    await post(SECOND_LOAD);
    await compareAll('after ingest, before the job');
    await keepState();
    assert.deepEqual(await states(), ['r1', 'r2', 'r3', 'r4', 'r5', 'r6', 'r7']);
    await compareAll('after ingest and the job');
  });

  test('after retention deletes sessions, their states count nothing and are dropped', async () => {
    // Keep 2 days: r1, r2, r3 (last events before 2026-11-20T10:00) go; a new r1 starts under the same id.
    const config = await observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 2 } });
    assert.equal(config.statusCode, 200, config.body);
    assert.equal(await observe.service.jobs.retention.tick(), true);
    await post([call('r1', 'A', new Date(TEST_NOW - 60_000).toISOString(), 'search', 'x1'), call('r1', 'A', new Date(TEST_NOW).toISOString(), 'search', 'x2')]);
    await compareAll('after retention, before the job');
    await keepState();
    assert.deepEqual(await states(), ['r1', 'r4', 'r5', 'r6', 'r7'], 'r2 and r3 dropped, r1 computed again');
    await compareAll('after retention and the job');
  });
});
