import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { fireAlertRule, startTestObserve, type TestObserve } from '../testing.ts';
import { normaliseErrorMessage, PatternCache } from './normalise.ts';
import { assess, evidence, halfScore, reflectTuning } from './service.ts';
import { call, ev, toolError } from './reflect-fixtures.ts';

// ---------------------------------------------------------------------------------------------
// Pure parts

describe('normaliseErrorMessage', () => {
  const cases: [string, string][] = [
    ['timeout after 3000 ms calling /api/users/42', 'timeout after <n> ms calling <path>'],
    ['timeout after 5000 ms calling /api/users/7', 'timeout after <n> ms calling <path>'],
    ['GET https://api.example.com/v1/users/42?page=2 returned 503', 'GET <url> returned <n>'],
    ['no account for bob.smith+test@example.co.uk', 'no account for <email>'],
    ["can't open 'config.json' at 2026-11-22T10:00:00.000Z", "can't open <str> at <timestamp>"],
    ['key "tenant-9" not found; `rm -rf` refused', 'key <str> not found; <str> refused'],
    ['session 0f8fad5b-d9cb-469f-a165-70867728950e expired on 2026-11-22', 'session <uuid> expired on <timestamp>'],
    ['event 01ARZ3NDEKTSV4RRFFQ69G5FAV is missing', 'event <ulid> is missing'],
    ['commit deadbeef1234cafe rejected (flag 0x1F)', 'commit <hex> rejected (flag <hex>)'],
    ['value -12.5 out of range [0, 10]', 'value <n> out of range [<n>, <n>]'],
    ['cannot read C:\\Users\\ann\\a.txt or ./data/file.csv: EOF.', 'cannot read <path> or <path>: EOF.'],
    ['read/write failed for user42 at 10:22:33', 'read/write failed for user<n> at <timestamp>'],
    ['Connection refused: 10.0.0.1:5432', 'Connection refused: <n>:<n>'],
    ['  many\n\tspaces   here ', 'many spaces here'],
    ['', '(empty message)'],
  ];
  for (const [input, expected] of cases) {
    test(JSON.stringify(input), () => assert.equal(normaliseErrorMessage(input), expected));
  }

  test('words, placeholders and case are kept; long messages are cut', () => {
    assert.equal(normaliseErrorMessage('Permission denied'), 'Permission denied');
    assert.equal(normaliseErrorMessage(normaliseErrorMessage('retry 3 of 5 for /a/b')), 'retry <n> of <n> for <path>', 'idempotent');
    const long = normaliseErrorMessage(`boom ${'x'.repeat(5000)}`);
    assert.equal(long.length, 300);
    assert.ok(long.endsWith('…'));
  });

  test('PatternCache answers the same as the normaliser', () => {
    const cache = new PatternCache(1);
    assert.equal(cache.pattern('a 1'), 'a <n>');
    assert.equal(cache.pattern('b 2'), 'b <n>', 'beyond capacity still normalises');
    assert.equal(cache.pattern('a 1'), 'a <n>');
  });
});

describe('confidence, trend rule and hour pieces', () => {
  test('evidence(n) = n / (n + 5)', () => {
    assert.deepEqual([0, 1, 5, 45, 95].map(evidence), [0, 0.167, 0.5, 0.9, 0.95]);
  });

  test('half score and assessment thresholds (more than ±5 points)', () => {
    const clean = (sessions: number) => ({ sessions, ended: sessions, completed: sessions, errorFree: sessions });
    assert.equal(halfScore({ sessions: 4, ended: 2, completed: 1, errorFree: 3 }, true), (100 * (0.5 + 0.75)) / 2);
    assert.equal(halfScore({ sessions: 4, ended: 0, completed: 0, errorFree: 3 }, false), 75);
    assert.equal(assess(clean(10), { ...clean(10), errorFree: 9 })!.assessment, 'stable', 'exactly −5 is stable');
    assert.equal(assess(clean(10), { ...clean(10), errorFree: 8 })!.assessment, 'degrading');
    assert.equal(assess({ ...clean(10), errorFree: 8 }, clean(10))!.assessment, 'improving');
    assert.equal(assess(clean(0), clean(3)), null, 'an empty half gives no trend');
  });
});

// ---------------------------------------------------------------------------------------------
// The endpoint over a controlled data set. The test clock stands at 2026-11-22T10:00:00.000Z, so
// the default range is [2026-11-15T10:00:00.000Z, 2026-11-22T10:00:00.000Z].

const toolResponse = (s: string, a: string, t: string, toolName: string, callId: string) =>
  ev(s, a, t, 'tool_response', { toolName, callId, result: 'ok', durationMs: 10 });
const llm = (s: string, a: string, t: string, model: string, costUsd: number, severity?: string) =>
  ev(
    s,
    a,
    t,
    'llm_response',
    {
      callId: `l-${t}`,
      provider: 'openai',
      model,
      completion: 'ok',
      finishReason: severity ? 'error' : 'stop',
      usage: { inputTokens: 10, outputTokens: 5 },
      costUsd,
      latencyMs: 100,
    },
    severity,
  );
const dbError = (s: string, a: string, t: string, message: string, severity: string) =>
  ev(s, a, t, 'custom', { type: 'db_error', data: { message } }, severity);
const ended = (s: string, a: string, t: string, reason: string) => ev(s, a, t, 'session_ended', { reason });

const d20 = (time: string) => `2026-11-20T${time}Z`;
const d21 = (time: string) => `2026-11-21T${time}Z`;

const MAIN = [
  // s1 (agent A): seq 0..10, 20 minutes, completed, 4 tool calls, 2 error events.
  ev('s1', 'A', d20('09:00:00.000'), 'session_started', { agentName: 'Agent A' }),
  call('s1', 'A', d20('09:01:00.000'), 'search', 'c1'),
  call('s1', 'A', d20('09:01:30.000'), 'fetch', 'c2'),
  llm('s1', 'A', d20('09:02:00.000'), 'gpt-4o', 0.1),
  toolError('s1', 'A', d20('09:03:00.000'), 'fetch', 'c2', 'timeout after 3000 ms calling /api/users/42'),
  call('s1', 'A', d20('09:04:00.000'), 'search', 'c3'),
  call('s1', 'A', d20('09:05:00.000'), 'parse', 'c4'),
  dbError('s1', 'A', d20('09:06:00.000'), 'Connection refused: 10.0.0.1:5432', 'error'),
  llm('s1', 'A', d20('09:08:00.000'), 'gpt-4o', 0.05),
  // A warning is not an error event, whatever its text.
  ev('s1', 'A', d20('09:09:00.000'), 'custom', { type: 'note', data: {}, message: 'timeout after 1 ms calling /x' }, 'warn'),
  ended('s1', 'A', d20('09:20:00.000'), 'completed'),
  // s2 (agent A): 10 minutes, ended with error, 4 tool calls, 2 error events.
  call('s2', 'A', d21('08:55:00.000'), 'search', 'c1'),
  call('s2', 'A', d21('08:56:00.000'), 'fetch', 'c2'),
  toolError('s2', 'A', d21('08:57:00.000'), 'fetch', 'c2', { message: 'timeout after 5000 ms calling /api/users/7' }),
  call('s2', 'A', d21('08:58:00.000'), 'search', 'c3'),
  llm('s2', 'A', d21('08:59:00.000'), 'gpt-4o', 0.03),
  call('s2', 'A', d21('09:00:00.000'), 'fetch', 'c4'),
  toolResponse('s2', 'A', d21('09:01:00.000'), 'fetch', 'c4'),
  dbError('s2', 'A', d21('09:02:00.000'), 'Connection refused: 10.0.0.2:5433', 'critical'),
  llm('s2', 'A', d21('09:04:00.000'), 'gpt-4o-mini', 0.02),
  ended('s2', 'A', d21('09:05:00.000'), 'error'),
  // s3 (agent B): active, 2 minutes; its c1 error must not mark the c1 calls of s1 and s2.
  call('s3', 'B', d21('10:00:00.000'), 'fetch', 'c1'),
  toolError('s3', 'B', d21('10:00:05.000'), 'fetch', 'c1', 'timeout after 100 ms calling /api/orders/9'),
  llm('s3', 'B', d21('10:01:00.000'), 'gpt-4o-mini', 0, 'error'),
  ev('s3', 'B', d21('10:02:00.000'), 'cost_tracked', {
    provider: 'anthropic',
    model: 'claude-sonnet-4',
    inputTokens: 1,
    outputTokens: 1,
    totalTokens: 2,
    costUsd: 0.5,
  }),
  // s0 (agent A): before the default range.
  toolError('s0', 'A', '2026-11-10T12:00:00.000Z', 'fetch', 'c9', 'timeout after 9 ms calling /api/a'),
];

/** October: one agent per trend, sessions in both halves of [2026-10-01, 2026-10-09). */
const TREND_RANGE = 'from=2026-10-01T00:00:00.000Z&to=2026-10-08T23:59:59.999Z';
function trendSessions(): object[] {
  const out: object[] = [];
  const session = (agent: string, id: string, day: string, reason: 'completed' | 'error', errors: number) => {
    const at = (time: string) => `2026-10-${day}T${time}Z`;
    out.push(ev(id, agent, at('10:00:00.000'), 'session_started', {}));
    for (let i = 0; i < errors; i++) out.push(dbError(id, agent, at(`10:0${i + 1}:00.000`), 'disk full', 'error'));
    out.push(ended(id, agent, at('10:30:00.000'), reason));
  };
  // improving: the first half fails, the second half is clean.
  session('imp', 'imp-1', '02', 'error', 1);
  session('imp', 'imp-2', '03', 'error', 1);
  session('imp', 'imp-3', '06', 'completed', 0);
  session('imp', 'imp-4', '07', 'completed', 0);
  // degrading: the reverse.
  session('deg', 'deg-1', '02', 'completed', 0);
  session('deg', 'deg-2', '06', 'error', 2);
  // stable at the threshold: 100 points, then 95 (one of ten sessions with an error event).
  for (let i = 0; i < 10; i++) session('sta', `sta-a${i}`, '02', 'completed', 0);
  for (let i = 0; i < 10; i++) session('sta', `sta-b${i}`, '06', 'completed', i === 0 ? 1 : 0);
  // only the first half: no trend.
  session('one', 'one-1', '02', 'completed', 0);
  return out;
}

/** September: one pattern in 22 sessions (affectedSessions lists 20). */
const CAP_RANGE = 'from=2026-09-01T00:00:00.000Z&to=2026-09-30T00:00:00.000Z';
const capSessions = () =>
  Array.from({ length: 22 }, (_, i) =>
    dbError(`cap-${String(i).padStart(2, '0')}`, 'cap', `2026-09-${String(i + 1).padStart(2, '0')}T12:00:00.000Z`, `quota exceeded for key 'k-${i}'`, 'error'),
  );

interface Insight {
  type: string;
  summary: string;
  data: Record<string, unknown>;
  confidence: number;
}
interface Reflection {
  analysis: string;
  insights: Insight[];
  metadata: { sessionsAnalyzed: number; eventsAnalyzed: number; timeRange: { from: string; to: string } };
}

await describeEachDatabase('GET /api/reflect', (backend) => {
  let observe: TestObserve;
  const get = async (query: string, status = 200): Promise<Reflection> => {
    const response = await observe.call({ method: 'GET', url: `/api/reflect?${query}` });
    assert.equal(response.statusCode, status, response.body);
    return response.json() as Reflection;
  };

  before(async () => {
    observe = await startTestObserve(backend);
    const response = await observe.call({ method: 'POST', url: '/api/events', payload: { events: [...MAIN, ...trendSessions(), ...capSessions()] } });
    assert.equal(response.statusCode, 201, response.body);
  });
  after(() => observe.close());

  const TIMEOUT = {
    pattern: 'timeout after <n> ms calling <path>',
    count: 3,
    firstSeen: d20('09:03:00.000'),
    lastSeen: d21('10:00:05.000'),
    affectedSessions: ['s3', 's2', 's1'],
    precedingTools: [['search', 'fetch'], ['fetch']],
  };
  const REFUSED = {
    pattern: 'Connection refused: <n>:<n>',
    count: 2,
    firstSeen: d20('09:06:00.000'),
    lastSeen: d21('09:02:00.000'),
    affectedSessions: ['s2', 's1'],
    precedingTools: [
      ['fetch', 'search', 'fetch'],
      ['fetch', 'search', 'parse'],
    ],
  };
  const NO_MESSAGE = {
    pattern: 'llm_response (no message)',
    count: 1,
    firstSeen: d21('10:01:00.000'),
    lastSeen: d21('10:01:00.000'),
    affectedSessions: ['s3'],
    precedingTools: [['fetch']],
  };

  test('error_patterns: normalised groups, exact counts, first/last seen, sessions, preceding tools', async () => {
    const body = await get('analysis=error_patterns');
    assert.equal(body.analysis, 'error_patterns');
    assert.deepEqual(
      body.insights.map((i) => i.data),
      [TIMEOUT, REFUSED, NO_MESSAGE],
    );
    assert.deepEqual(
      body.insights.map((i) => i.type),
      ['error_pattern', 'error_pattern', 'error_pattern'],
    );
    assert.deepEqual(
      body.insights.map((i) => i.confidence),
      [0.375, 0.286, 0.167],
    );
    assert.match(body.insights[0]!.summary, /occurred 3 times in 3 sessions/);
    assert.deepEqual(body.metadata, {
      sessionsAnalyzed: 3,
      eventsAnalyzed: 25,
      timeRange: { from: '2026-11-15T10:00:00.000Z', to: '2026-11-22T10:00:00.000Z' },
    });
  });

  test('error_patterns gives the same answer in tiny batches and through the full tool-call stream', async () => {
    const expected = await get('analysis=error_patterns');
    const sequences = await get('analysis=tool_sequences');
    const saved = { ...reflectTuning };
    try {
      reflectTuning.batchSize = 2;
      assert.deepEqual(await get('analysis=error_patterns'), expected);
      assert.deepEqual(await get('analysis=tool_sequences'), sequences);
      reflectTuning.sessionFilterMax = 0;
      assert.deepEqual(await get('analysis=error_patterns'), expected);
    } finally {
      Object.assign(reflectTuning, saved);
    }
  });

  test('error_patterns: range, agent and limit', async () => {
    const wide = await get('analysis=error_patterns&from=2026-11-01T00:00:00.000Z');
    assert.deepEqual(
      wide.insights[0]!.data,
      {
        ...TIMEOUT,
        count: 4,
        firstSeen: '2026-11-10T12:00:00.000Z',
        affectedSessions: ['s3', 's2', 's1', 's0'],
      },
      's0 has no earlier tool call, so precedingTools is unchanged',
    );
    assert.equal(wide.metadata.sessionsAnalyzed, 4);
    assert.equal(wide.metadata.eventsAnalyzed, 26);

    const b = await get('analysis=error_patterns&agentId=B');
    assert.deepEqual(
      b.insights.map((i) => [i.data.pattern, i.data.count, i.data.affectedSessions]),
      [
        [NO_MESSAGE.pattern, 1, ['s3']],
        [TIMEOUT.pattern, 1, ['s3']],
      ],
      'equal counts: the most recently seen first',
    );
    assert.deepEqual([b.metadata.sessionsAnalyzed, b.metadata.eventsAnalyzed], [1, 4]);

    const one = await get('analysis=error_patterns&limit=1');
    assert.deepEqual(
      one.insights.map((i) => i.data),
      [TIMEOUT],
      'limit cuts the list, never the figures',
    );
    assert.equal(one.metadata.eventsAnalyzed, 25);

    const s1Only = await get(`analysis=error_patterns&from=${d20('09:05:00.000')}&to=${d20('09:06:30.000')}`);
    assert.deepEqual(
      s1Only.insights.map((i) => i.data),
      [{ ...REFUSED, count: 1, lastSeen: REFUSED.firstSeen, affectedSessions: ['s1'], precedingTools: [['parse']] }],
      'preceding tool calls come from the range too',
    );
    assert.deepEqual([s1Only.metadata.sessionsAnalyzed, s1Only.metadata.eventsAnalyzed], [1, 2]);
  });

  test('error_patterns: affectedSessions is capped at 20, count and summary stay exact', async () => {
    const body = await get(`analysis=error_patterns&${CAP_RANGE}`);
    assert.equal(body.insights.length, 1);
    const [insight] = body.insights;
    assert.equal(insight!.data.pattern, 'quota exceeded for key <str>');
    assert.equal(insight!.data.count, 22);
    const sessions = insight!.data.affectedSessions as string[];
    assert.equal(sessions.length, 20);
    assert.equal(sessions[0], 'cap-21', 'most recent occurrence first');
    assert.equal(sessions[19], 'cap-02');
    assert.deepEqual(insight!.data.precedingTools, []);
    assert.match(insight!.summary, /in 22 sessions/);
    assert.match(insight!.summary, /lists the 20 .* of 22/);
    assert.equal(insight!.confidence, evidence(22));
    assert.equal(body.metadata.sessionsAnalyzed, 22);
  });

  test('tool_sequences: exact 2- and 3-gram frequencies, sessions and error rates', async () => {
    const body = await get('analysis=tool_sequences');
    assert.deepEqual(
      body.insights.map((i) => i.data),
      [
        { tools: ['search', 'fetch'], frequency: 3, sessions: 2, errorRate: 2 / 3 },
        { tools: ['search', 'fetch', 'search'], frequency: 2, sessions: 2, errorRate: 1 },
        { tools: ['fetch', 'search'], frequency: 2, sessions: 2, errorRate: 1 },
        { tools: ['fetch', 'search', 'fetch'], frequency: 1, sessions: 1, errorRate: 1 },
        { tools: ['fetch', 'search', 'parse'], frequency: 1, sessions: 1, errorRate: 1 },
        { tools: ['search', 'parse'], frequency: 1, sessions: 1, errorRate: 0 },
      ],
    );
    assert.equal(body.insights[0]!.type, 'tool_sequence');
    assert.equal(body.insights[0]!.confidence, evidence(2));
    assert.match(body.insights[0]!.summary, /search → fetch ran 3 times in 2 sessions; 66.7% of the runs hit a tool_error/);
    assert.deepEqual([body.metadata.sessionsAnalyzed, body.metadata.eventsAnalyzed], [3, 25]);

    const limited = await get('analysis=tool_sequences&limit=2');
    assert.deepEqual(
      limited.insights.map((i) => i.data.tools),
      [
        ['search', 'fetch'],
        ['search', 'fetch', 'search'],
      ],
    );
    const late = await get(`analysis=tool_sequences&from=${d20('09:04:00.000')}`);
    assert.deepEqual(
      late.insights.map((i) => [i.data.tools, i.data.frequency, i.data.errorRate]),
      [
        [['search', 'fetch'], 2, 0.5],
        [['fetch', 'search', 'fetch'], 1, 1],
        [['search', 'fetch', 'search'], 1, 1],
        [['fetch', 'search'], 1, 1],
        [['search', 'parse'], 1, 0],
      ],
      's1 contributes only search → parse from 09:04',
    );
    const b = await get('analysis=tool_sequences&agentId=B');
    assert.deepEqual(b.insights, [], 'a single call makes no sequence');
  });

  test('cost_analysis: summary and per-model figures from the spend events, highest cost first', async () => {
    const body = await get('analysis=cost_analysis');
    assert.deepEqual(
      body.insights.map((i) => [i.type, i.data]),
      [
        ['cost_summary', { totalCost: 0.7, avgPerSession: 0.233333333, totalSessions: 3 }],
        ['model_cost', { model: 'claude-sonnet-4', callCount: 1, totalCost: 0.5, avgCostPerCall: 0.5 }],
        ['model_cost', { model: 'gpt-4o', callCount: 3, totalCost: 0.18, avgCostPerCall: 0.06 }],
        ['model_cost', { model: 'gpt-4o-mini', callCount: 2, totalCost: 0.02, avgCostPerCall: 0.01 }],
      ],
    );
    assert.deepEqual(
      body.insights.map((i) => i.confidence),
      [1, evidence(1), evidence(3), evidence(2)],
    );

    const a = await get('analysis=cost_analysis&agentId=A');
    assert.deepEqual(
      a.insights.map((i) => i.data),
      [
        { totalCost: 0.2, avgPerSession: 0.1, totalSessions: 2 },
        { model: 'gpt-4o', callCount: 3, totalCost: 0.18, avgCostPerCall: 0.06 },
        { model: 'gpt-4o-mini', callCount: 1, totalCost: 0.02, avgCostPerCall: 0.02 },
      ],
    );

    // Partial hours at both ends plus whole hours between: the same model in both is one row.
    const partial = await get(`analysis=cost_analysis&from=${d20('09:05:00.000')}&to=${d21('09:03:00.000')}`);
    assert.deepEqual(
      partial.insights.map((i) => i.data),
      [
        { totalCost: 0.08, avgPerSession: 0.04, totalSessions: 2 },
        { model: 'gpt-4o', callCount: 2, totalCost: 0.08, avgCostPerCall: 0.04 },
      ],
    );

    const summaryOnly = await get('analysis=cost_analysis&limit=1');
    assert.deepEqual(
      summaryOnly.insights.map((i) => i.type),
      ['cost_summary'],
    );
    const empty = await get('analysis=cost_analysis&agentId=nobody');
    assert.deepEqual(empty.insights, [
      { type: 'cost_summary', summary: empty.insights[0]!.summary, data: { totalCost: 0, avgPerSession: 0, totalSessions: 0 }, confidence: 0 },
    ]);
  });

  test('performance_trends: session stats and the assessment of each trend', async () => {
    const a = await get('analysis=performance_trends&agentId=A');
    assert.deepEqual(
      a.insights.map((i) => [i.type, i.data]),
      [
        ['performance_stats', { successRate: 0.5, avgDuration: 900_000, avgToolCalls: 4, avgErrors: 2 }],
        ['performance_assessment', { assessment: 'stable' }],
      ],
    );
    assert.equal(a.insights[1]!.confidence, 0, 'both sessions started in the second half: no trend');
    assert.match(a.insights[1]!.summary, /Not enough data/);
    assert.deepEqual([a.metadata.sessionsAnalyzed, a.metadata.eventsAnalyzed], [2, 21]);

    const assessment = async (agent: string) => {
      const body = await get(`analysis=performance_trends&agentId=${agent}&${TREND_RANGE}`);
      return [body.insights[1]!.data.assessment, body.insights[1]!.confidence];
    };
    assert.deepEqual(await assessment('imp'), ['improving', evidence(2)]);
    assert.deepEqual(await assessment('deg'), ['degrading', evidence(1)]);
    assert.deepEqual(await assessment('sta'), ['stable', evidence(10)]);
    assert.deepEqual(await assessment('one'), ['stable', 0]);

    const imp = await get(`analysis=performance_trends&agentId=imp&${TREND_RANGE}`);
    assert.deepEqual(imp.insights[0]!.data, { successRate: 0.5, avgDuration: 1_800_000, avgToolCalls: 0, avgErrors: 0.5 });
    assert.match(imp.insights[1]!.summary, /improving: score 0 in the first half of the range, 100 in the second \(\+100 points\)/);

    const statsOnly = await get('analysis=performance_trends&limit=1');
    assert.deepEqual(
      statsOnly.insights.map((i) => i.type),
      ['performance_stats'],
    );
  });

  test('a session counts when it has an event in the range, not merely when it spans it', async () => {
    const gap = await get(`analysis=performance_trends&from=${d20('09:10:00.000')}&to=${d20('09:19:00.000')}`);
    assert.deepEqual([gap.metadata.sessionsAnalyzed, gap.metadata.eventsAnalyzed], [0, 0]);
    assert.deepEqual(gap.insights[0]!.data, { successRate: 0, avgDuration: 0, avgToolCalls: 0, avgErrors: 0 });
    const inside = await get(`analysis=cost_analysis&from=${d20('09:05:00.000')}&to=${d20('09:06:30.000')}`);
    assert.equal(inside.metadata.sessionsAnalyzed, 1);
  });

  test('bad parameters are 400 in the observe error body; no key is 401', async () => {
    for (const query of [
      '',
      'analysis=bogus',
      'analysis=error_patterns&limit=0',
      'analysis=error_patterns&limit=101',
      'analysis=error_patterns&limit=abc',
      'analysis=cost_analysis&from=yesterday',
      'analysis=cost_analysis&to=2026-13-45',
      `analysis=cost_analysis&from=${d21('00:00:00.000')}&to=${d20('00:00:00.000')}`,
    ]) {
      const response = await observe.call({ method: 'GET', url: `/api/reflect?${query}` });
      assert.equal(response.statusCode, 400, query);
      const body = response.json() as { error: string; status: number; details?: { path: string }[] };
      assert.equal(body.status, 400, query);
      assert.equal(typeof body.error, 'string');
    }
    const missing = (await observe.call({ method: 'GET', url: '/api/reflect' })).json() as { details: { path: string }[] };
    assert.ok(
      missing.details.some((d) => d.path === 'analysis'),
      JSON.stringify(missing),
    );
    assert.equal((await get('analysis=tool_sequences&limit=100')).analysis, 'tool_sequences', 'limit 100 is allowed');
    const anonymous = await observe.service.app.inject({ method: 'GET', url: '/api/reflect?analysis=cost_analysis' });
    assert.equal(anonymous.statusCode, 401);
    assert.equal((anonymous.json() as { status: number }).status, 401);
  });
});

await describeEachDatabase('reflect: the default limit', (backend) => {
  let observe: TestObserve;
  // 21 distinct error messages (letters, so normalisation keeps them apart) in one session yesterday.
  const WORDS = 'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform'.split(
    ' ',
  );
  before(async () => {
    observe = await startTestObserve(backend);
    const events = WORDS.map((word, i) => toolError('many', 'A', `2026-11-21T10:00:${String(i).padStart(2, '0')}.000Z`, 'search', `c${i}`, `failure ${word}`));
    const response = await observe.call({ method: 'POST', url: '/api/events', payload: { events } });
    assert.equal(response.statusCode, 201, response.body);
  });
  after(() => observe.close());

  test('limit defaults to 20 insights', async () => {
    const read = async (query: string) => {
      const response = await observe.call({ method: 'GET', url: `/api/reflect?${query}` });
      assert.equal(response.statusCode, 200, response.body);
      return response.json() as { insights: unknown[] };
    };
    assert.equal((await read('analysis=error_patterns&limit=100')).insights.length, 21);
    const byDefault = await read('analysis=error_patterns');
    assert.equal(byDefault.insights.length, 20);
    assert.deepEqual(byDefault.insights, (await read('analysis=error_patterns&limit=20')).insights);
  });
});

await describeEachDatabase("reflect: alert bookkeeping is no agent's session", (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
    const events = [
      ev('work', 'A', '2026-11-21T10:00:00.000Z', 'session_started', {}),
      ev('work', 'A', '2026-11-21T10:01:00.000Z', 'llm_response', {
        callId: 'l1',
        provider: 'openai',
        model: 'gpt-4o',
        completion: 'ok',
        finishReason: 'stop',
        usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 },
        costUsd: 0.5,
        latencyMs: 10,
      }),
      ev('work', 'A', '2026-11-21T10:02:00.000Z', 'session_ended', { reason: 'completed' }),
    ];
    const response = await observe.call({ method: 'POST', url: '/api/events', payload: { events } });
    assert.equal(response.statusCode, 201, response.body);
    const stored = await observe.call({ method: 'GET', url: `/api/sessions/${await fireAlertRule(observe, 'any')}` });
    assert.equal(stored.statusCode, 200, 'the alert session exists');
  });
  after(() => observe.close());

  test('sessions, events, cost per session and completion leave the system agent out', async () => {
    const read = async (query: string) => {
      const response = await observe.call({ method: 'GET', url: `/api/reflect?${query}` });
      assert.equal(response.statusCode, 200, response.body);
      return response.json() as { insights: { type: string; data: Record<string, unknown> }[]; metadata: { sessionsAnalyzed: number; eventsAnalyzed: number } };
    };
    const costs = await read('analysis=cost_analysis');
    assert.deepEqual(costs.metadata, { ...costs.metadata, sessionsAnalyzed: 1, eventsAnalyzed: 3 });
    assert.deepEqual(costs.insights[0]!.data, { totalCost: 0.5, avgPerSession: 0.5, totalSessions: 1 });
    const trends = await read('analysis=performance_trends');
    assert.equal(trends.metadata.sessionsAnalyzed, 1);
    assert.deepEqual(trends.insights[0]!.data, { successRate: 1, avgDuration: 120_000, avgToolCalls: 0, avgErrors: 0 });
    for (const analysis of ['error_patterns', 'tool_sequences']) assert.equal((await read(`analysis=${analysis}`)).metadata.sessionsAnalyzed, 1, analysis);
    // Asked for by name, the system agent's bookkeeping is what is analysed.
    const system = await read('analysis=cost_analysis&agentId=system');
    assert.equal(system.metadata.sessionsAnalyzed, 1);
    assert.equal(system.metadata.eventsAnalyzed, 1);
  });
});
