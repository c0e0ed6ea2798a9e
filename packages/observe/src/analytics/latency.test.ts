import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { HOUR_MS } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { ingest, startTestObserve, type TestObserve } from '../testing.ts';
import { exactQuantile, percentilesOfBins, RELATIVE_ACCURACY, sketchDeltas, type SketchSource } from './latency.ts';
import { HOURLY } from './spans.ts';

const QUANTILES = { p50: 0.5, p95: 0.95, p99: 0.99 } as const;
const relativeError = (approx: number, exact: number) => (exact === 0 ? Math.abs(approx) : Math.abs(approx - exact) / exact);

test('merged hourly sketches answer every percentile within 1 % of the exact one (property)', (t) => {
  let worst = 0;
  const value = fc.oneof(
    fc.constant(0),
    fc.double({ min: 0.001, max: 10, noNaN: true }),
    fc.double({ min: 10, max: 600_000, noNaN: true }),
    fc.integer({ min: 1, max: 5_000 }),
  );
  fc.assert(
    fc.property(
      fc.array(fc.record({ ms: value, hour: fc.integer({ min: 0, max: 5 }), tool: fc.constantFrom('a', 'b') }), { minLength: 1, maxLength: 400 }),
      (samples) => {
        const events: SketchSource[] = samples.map(({ ms, hour, tool }) => ({
          ts: hour * HOUR_MS + 1,
          agent_id: 'A',
          tool_name: tool,
          provider: null,
          model: null,
          duration_ms: ms,
          latency_ms: null,
        }));
        // As the query merges them: the hourly rows of every tool and hour, each a [bin, count].
        const rows = sketchDeltas(events, HOURLY);
        const got = percentilesOfBins(rows.map((row) => [row.bin, row.count] as const))!;
        const sorted = samples.map((s) => s.ms).sort((a, b) => a - b);
        for (const [name, q] of Object.entries(QUANTILES)) {
          const exact = exactQuantile(sorted, q);
          const error = relativeError(got[name as keyof typeof QUANTILES], exact);
          worst = Math.max(worst, error);
          assert.ok(error <= RELATIVE_ACCURACY + 1e-12, `${name}: ${got[name as keyof typeof QUANTILES]} vs exact ${exact} (${samples.length} values)`);
        }
      },
    ),
    { numRuns: 500 },
  );
  t.diagnostic(`worst relative error seen: ${worst}`);
  assert.ok(worst > 0.001, `the bound is approached, not trivially met (worst ${worst})`);
});

test('no timed value, no percentiles', () => {
  assert.equal(percentilesOfBins([]), null);
  assert.deepEqual(sketchDeltas([{ ts: 0, agent_id: 'A', tool_name: 't', provider: null, model: null, duration_ms: null, latency_ms: null }], HOURLY), []);
});

test('the exact percentile interpolates between the closest ranks (PostgreSQL percentile_cont, numpy and Excel PERCENTILE.INC)', () => {
  assert.equal(exactQuantile([42], 0.99), 42);
  assert.equal(exactQuantile([0, 76], 0.5), 38);
  assert.ok(Math.abs(exactQuantile([0, 76], 0.95) - 72.2) < 1e-9);
  assert.equal(exactQuantile([10, 20, 424], 0.5), 20);
  assert.ok(Math.abs(exactQuantile([10, 20, 424], 0.99) - 415.92) < 1e-9);
});

const sketchOf = (values: readonly number[], hourOf: (i: number) => number = () => 0) =>
  percentilesOfBins(
    sketchDeltas(
      values.map((ms, i) => ({ ts: hourOf(i) * HOUR_MS, agent_id: 'A', tool_name: 't', provider: null, model: null, duration_ms: ms, latency_ms: null })),
      HOURLY,
    ).map((row) => [row.bin, row.count] as const),
  )!;

test('one, two and three values: every percentile within 1 % of the exact one, whatever hours the values fall in', () => {
  // Two calls of a tool, 0.3 and 75.7 ms (mean 38 ms): p50/p95/p99 were all the smaller one, shown as 0 ms.
  for (const values of [[424], [0.3, 75.7], [0, 76], [86, 424], [12, 86, 424], [0, 0, 5], [7, 7, 7]]) {
    for (const hourOf of [() => 0, (i: number) => i]) {
      const got = sketchOf(values, hourOf);
      const sorted = [...values].sort((a, b) => a - b);
      for (const [name, q] of Object.entries(QUANTILES)) {
        const exact = exactQuantile(sorted, q);
        const value = got[name as keyof typeof QUANTILES];
        assert.ok(relativeError(value, exact) <= RELATIVE_ACCURACY, `${name} of ${JSON.stringify(values)}: ${value} vs exact ${exact}`);
      }
    }
  }
});

test('p99 of fewer than 100 calls lies between the two largest, so one slow call shows (86 ms vs a 424 ms call)', () => {
  const values = [...Array.from({ length: 29 }, (_, i) => 20 + i * 2), 424];
  const { p99 } = sketchOf(values, (i) => i % 3);
  const exact = exactQuantile(
    [...values].sort((a, b) => a - b),
    0.99,
  );
  assert.ok(exact > 300, `exact p99 ${exact}`);
  assert.ok(relativeError(p99, exact) <= RELATIVE_ACCURACY, `p99 ${p99} vs exact ${exact}`);
});

// The test clock stands at 2026-11-22T10:00:00.000Z.
const HOUR = (h: number) => Date.UTC(2026, 10, 22, h);
const iso = (ms: number) => new Date(ms).toISOString();

await describeEachDatabase('latency percentiles over the API', (backend) => {
  let observe: TestObserve;
  // 300 tool durations and 300 LLM latencies spread over 06:00–09:59, a spread of magnitudes.
  const samples = Array.from({ length: 300 }, (_, i) => ({ ts: HOUR(6) + i * 48_000, ms: Math.round(5 + ((i * 7919) % 300) ** 1.6) }));
  const percentilesOf = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    return Object.fromEntries(Object.entries(QUANTILES).map(([name, q]) => [name, exactQuantile(sorted, q)])) as Record<keyof typeof QUANTILES, number>;
  };
  const within = (got: Record<string, unknown>, prefix: string, exact: Record<keyof typeof QUANTILES, number>) => {
    for (const name of Object.keys(QUANTILES) as (keyof typeof QUANTILES)[]) {
      const value = got[`${name}${prefix}Ms`] as number;
      assert.ok(relativeError(value, exact[name]) <= RELATIVE_ACCURACY, `${name}${prefix}Ms ${value} vs exact ${exact[name]}`);
    }
  };

  before(async () => {
    observe = await startTestObserve(backend);
    const events = samples.flatMap(({ ts, ms }, i) => [
      {
        sessionId: `s${i % 3}`,
        agentId: i % 3 === 0 ? 'planner' : 'coder',
        timestamp: iso(ts),
        eventType: 'tool_response',
        payload: { toolName: i % 2 === 0 ? 'search' : 'fetch', callId: `t${i}`, result: 1, durationMs: ms },
      },
      {
        sessionId: `s${i % 3}`,
        agentId: i % 3 === 0 ? 'planner' : 'coder',
        timestamp: iso(ts),
        eventType: 'llm_response',
        payload: {
          callId: `l${i}`,
          provider: 'openai',
          model: i % 2 === 0 ? 'gpt-4o' : 'gpt-4o-mini',
          completion: 'ok',
          finishReason: 'stop',
          costUsd: 0.001,
          usage: { inputTokens: 1, outputTokens: 1 },
          latencyMs: ms * 3,
        },
      },
    ]);
    const response = await observe.call({ method: 'POST', url: '/api/events', payload: { events } });
    assert.equal(response.statusCode, 201, response.body);
  });
  after(() => observe.close());

  const get = async (url: string) => {
    const response = await observe.call({ method: 'GET', url });
    assert.equal(response.statusCode, 200, response.body);
    return response.json() as Record<string, unknown>;
  };

  // A range off the hour at both ends: 06:20 to 09:35, whole hours 07–08 from the sketches, the edges from the events.
  const from = HOUR(6) + 20 * 60_000;
  const to = HOUR(9) + 35 * 60_000;
  const inRange = samples.map((s, i) => ({ ...s, i })).filter((s) => s.ts >= from && s.ts <= to);

  test('per tool and overall (overview) tool durations, exact range edges', async () => {
    const { tools } = (await get(`/api/analytics/tools?from=${iso(from)}&to=${iso(to)}`)) as { tools: Record<string, unknown>[] };
    for (const [toolName, parity] of [
      ['search', 0],
      ['fetch', 1],
    ] as const) {
      const tool = tools.find((t) => t.toolName === toolName)!;
      within(tool, 'Duration', percentilesOf(inRange.filter((s) => s.i % 2 === parity).map((s) => s.ms)));
    }
    const { totals } = (await get(`/api/analytics?from=${iso(from)}&to=${iso(to)}`)) as { totals: Record<string, unknown> };
    within(totals, 'Latency', percentilesOf(inRange.map((s) => s.ms)));
  });

  test('per model and overall LLM latency', async () => {
    const body = (await get(`/api/analytics/llm?from=${iso(from)}&to=${iso(to)}`)) as { summary: Record<string, unknown>; byModel: Record<string, unknown>[] };
    within(body.summary, 'Latency', percentilesOf(inRange.map((s) => s.ms * 3)));
    for (const [model, parity] of [
      ['gpt-4o', 0],
      ['gpt-4o-mini', 1],
    ] as const) {
      within(
        body.byModel.find((m) => m.model === model)!,
        'Latency',
        percentilesOf(inRange.filter((s) => s.i % 2 === parity).map((s) => s.ms * 3)),
      );
    }
    const filtered = (await get(`/api/analytics/llm?from=${iso(from)}&to=${iso(to)}&model=gpt-4o-mini&agentId=coder`)) as { summary: Record<string, unknown> };
    within(filtered.summary, 'Latency', percentilesOf(inRange.filter((s) => s.i % 2 === 1 && s.i % 3 !== 0).map((s) => s.ms * 3)));
  });

  test('per agent, tool and LLM', async () => {
    const { agents } = (await get(`/api/analytics/agents?from=${iso(from)}&to=${iso(to)}`)) as { agents: Record<string, unknown>[] };
    for (const [agentId, planner] of [
      ['planner', true],
      ['coder', false],
    ] as const) {
      const agent = agents.find((a) => a.agentId === agentId)!;
      const mine = inRange.filter((s) => (s.i % 3 === 0) === planner);
      within(agent, 'ToolDuration', percentilesOf(mine.map((s) => s.ms)));
      within(agent, 'LlmLatency', percentilesOf(mine.map((s) => s.ms * 3)));
    }
  });

  test('few calls across an hour edge (2 calls of one tool, one slow call among 30): percentiles within 1 % of the exact ones, from sketches and from events', async () => {
    // 04:00–05:59, before the other samples: two issue_refund calls either side of 05:00, one slow web_search among lookups.
    const calls = [
      { tool: 'issue_refund', ts: HOUR(5) - 1, ms: 0.3 },
      { tool: 'issue_refund', ts: HOUR(5), ms: 75.7 },
      { tool: 'web_search', ts: HOUR(5) + 10 * 60_000, ms: 424 },
      ...Array.from({ length: 29 }, (_, i) => ({ tool: 'lookup', ts: HOUR(4) + 30 * 60_000 + i * 150_000, ms: 20 + i * 2 })),
    ];
    await ingest(
      observe,
      calls.map(({ tool, ts, ms }, i) => ({
        sessionId: 'edge',
        agentId: 'coder',
        timestamp: iso(ts),
        eventType: 'tool_response',
        payload: { toolName: tool, callId: `e${i}`, result: 1, durationMs: ms },
      })),
    );
    for (const [start, end] of [
      [HOUR(4), HOUR(6) - 1],
      [HOUR(4) + 20 * 60_000, HOUR(5) + 50 * 60_000],
    ] as const) {
      const inside = calls.filter((c) => c.ts >= start && c.ts <= end);
      const { tools } = (await get(`/api/analytics/tools?from=${iso(start)}&to=${iso(end)}`)) as { tools: Record<string, unknown>[] };
      for (const toolName of ['issue_refund', 'web_search', 'lookup']) {
        within(
          tools.find((t) => t.toolName === toolName)!,
          'Duration',
          percentilesOf(inside.filter((c) => c.tool === toolName).map((c) => c.ms)),
        );
      }
      const { totals } = (await get(`/api/analytics?from=${iso(start)}&to=${iso(end)}`)) as { totals: Record<string, unknown> };
      within(totals, 'Latency', percentilesOf(inside.map((c) => c.ms)));
    }
  });

  test('a range inside one hour reads only events; a range of whole hours only sketches: both agree with exact', async () => {
    for (const [start, end] of [
      [HOUR(7) + 5 * 60_000, HOUR(7) + 50 * 60_000],
      [HOUR(7), HOUR(9) - 1],
    ]) {
      const { totals } = (await get(`/api/analytics?from=${iso(start!)}&to=${iso(end!)}`)) as { totals: Record<string, unknown> };
      within(totals, 'Latency', percentilesOf(samples.filter((s) => s.ts >= start! && s.ts <= end!).map((s) => s.ms)));
    }
  });
});
