import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { ManualClock } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import type { LightMyRequestResponse } from 'fastify';
import { assertErrorBody, ingest, startTestObserve, type TestObserve } from '../testing.ts';
import {
  BENCHMARK_METRICS,
  compareContinuous,
  compareRates,
  describe as describeValues,
  HIGHER_IS_BETTER,
  winner as winnerOf,
  type BenchmarkMetric,
  type ComparisonStats,
} from './statistics.ts';

const NOW = Date.parse('2026-11-22T10:00:00.000Z');
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;
const iso = (ms: number): string => new Date(ms).toISOString();

type Json = Record<string, unknown>;

interface Variant {
  id: string;
  name: string;
  tag: string;
  description: string | null;
  agentId: string | null;
  sessionCount: number;
}

interface Benchmark {
  id: string;
  name: string;
  description: string | null;
  agentId: string | null;
  status: string;
  variants: Variant[];
  metrics: string[];
  minSessionsPerVariant: number;
  timeRange: { from: string | null; to: string | null } | null;
  createdAt: string;
  updatedAt: string;
}

interface ListPage {
  benchmarks: (Omit<Benchmark, 'variants' | 'minSessionsPerVariant' | 'timeRange'> & { variants: { id: string; name: string; tag: string }[] })[];
  total: number;
  hasMore: boolean;
}

interface Description {
  mean: number | null;
  median: number | null;
  stddev: number | null;
  min: number | null;
  max: number | null;
  count: number;
}

interface Side {
  id: string;
  name: string;
  stats: Description & { rate?: number | null; numerator?: number; denominator?: number };
}

interface Comparison {
  metric: BenchmarkMetric;
  variantA: Side;
  variantB: Side;
  absoluteDiff: number | null;
  percentDiff: number | null;
  testType: string;
  testStatistic: number | null;
  pValue: number;
  confidenceInterval: { lower: number; upper: number } | null;
  effectSize: number | null;
  significant: boolean;
  winner?: string;
  confidence: string;
  belowMinimum: boolean;
  degenerate: string | null;
}

interface Results {
  benchmarkId: string;
  tenantId: string;
  status: string;
  minSessionsPerVariant: number;
  belowMinimum: boolean;
  variants: {
    variantId: string;
    variantName: string;
    tag: string;
    sessionCount: number;
    belowMinimum: boolean;
    metrics: Record<string, Description>;
    distributions?: Record<string, number[]>;
  }[];
  comparisons: Comparison[];
  summary: string;
  computedAt: string;
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/** Deep equality where numbers may differ by a relative 1e-9 (sums over the same values in SQL and JS). */
function assertClose(actual: unknown, expected: unknown, path = 'value'): void {
  if (typeof expected === 'number') {
    assert.equal(typeof actual, 'number', `${path}: expected a number, got ${JSON.stringify(actual)}`);
    const a = actual as number;
    const tolerance = 1e-9 * Math.max(1, Math.abs(expected));
    assert.ok(Math.abs(a - expected) <= tolerance, `${path}: ${a} vs ${expected}`);
    // Tiny p-values are checked relatively too.
    if (expected !== 0 && Math.abs(expected) < 1e-6) assert.ok(Math.abs(a - expected) <= 1e-9 * Math.abs(expected), `${path}: ${a} vs ${expected} (relative)`);
    return;
  }
  if (expected === null || typeof expected !== 'object') {
    assert.deepEqual(actual, expected, path);
    return;
  }
  if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), `${path}: expected an array`);
    assert.equal((actual as unknown[]).length, expected.length, `${path}: length`);
    expected.forEach((item, i) => assertClose((actual as unknown[])[i], item, `${path}[${i}]`));
    return;
  }
  assert.ok(actual !== null && typeof actual === 'object', `${path}: expected an object, got ${JSON.stringify(actual)}`);
  assert.deepEqual(Object.keys(actual as object).sort(), Object.keys(expected).sort(), `${path}: keys`);
  for (const [key, value] of Object.entries(expected)) assertClose((actual as Json)[key], value, `${path}.${key}`);
}

async function create(observe: TestObserve, body: Json): Promise<Benchmark> {
  const response = await observe.call({ method: 'POST', url: '/api/benchmarks', payload: body });
  assert.equal(response.statusCode, 201, response.body);
  return response.json() as Benchmark;
}

async function detail(observe: TestObserve, id: string): Promise<Benchmark> {
  const response = await observe.call({ method: 'GET', url: `/api/benchmarks/${id}` });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as Benchmark;
}

const putStatus = (observe: TestObserve, id: string, status: unknown): Promise<LightMyRequestResponse> =>
  observe.call({ method: 'PUT', url: `/api/benchmarks/${id}/status`, payload: { status } });

async function moveTo(observe: TestObserve, id: string, status: string): Promise<Benchmark> {
  const response = await putStatus(observe, id, status);
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as Benchmark;
}

async function results(observe: TestObserve, id: string, query = ''): Promise<Results> {
  const response = await observe.call({ method: 'GET', url: `/api/benchmarks/${id}/results${query}` });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as Results;
}

async function list(observe: TestObserve, query: string): Promise<ListPage> {
  const response = await observe.call({ method: 'GET', url: `/api/benchmarks${query}` });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as ListPage;
}

let counter = 0;
/** A tag prefix no other test uses. */
const unique = (label: string): string => `${label}-${++counter}-${Math.random().toString(36).slice(2, 8)}`;

interface SessionSpec {
  id: string;
  agentId: string;
  tags: string[];
  /** Epoch ms of session_started. */
  start: number;
  llm?: { input: number; output: number; cost: number }[];
  costTracked?: { input: number; output: number; cost: number }[];
  tools?: { ok: boolean; durationMs: number }[];
  /** Adds a custom event with severity error. */
  errorEvent?: boolean;
  /** session_ended `offsetMs` after the start; absent: the session stays active. */
  end?: { reason: 'completed' | 'error' | 'timeout'; offsetMs: number };
}

/** What the benchmark should see of a session, computed here from the documented rules (not by the server's code). */
interface Expected {
  errored: number;
  completed: number;
  cost: number;
  tokens: number;
  durationMs: number;
  latency: number | null;
  toolOk: number;
  toolFailed: number;
}

function sessionEvents(spec: SessionSpec): { events: Json[]; expected: Expected } {
  const base = { sessionId: spec.id, agentId: spec.agentId };
  const events: Json[] = [{ ...base, eventType: 'session_started', timestamp: iso(spec.start), payload: { tags: spec.tags } }];
  let offset = 0;
  const next = (): string => iso(spec.start + (offset += 1000));
  let cost = 0;
  let tokens = 0;
  for (const [i, call] of (spec.llm ?? []).entries()) {
    events.push({
      ...base,
      eventType: 'llm_response',
      timestamp: next(),
      payload: {
        callId: `l${i}`,
        provider: 'openai',
        model: 'gpt-4o-mini',
        completion: 'ok',
        finishReason: 'stop',
        usage: { inputTokens: call.input, outputTokens: call.output },
        costUsd: call.cost,
        latencyMs: 250,
      },
    });
    cost += call.cost;
    tokens += call.input + call.output;
  }
  for (const tracked of spec.costTracked ?? []) {
    events.push({
      ...base,
      eventType: 'cost_tracked',
      timestamp: next(),
      payload: {
        provider: 'openai',
        model: 'gpt-4o-mini',
        inputTokens: tracked.input,
        outputTokens: tracked.output,
        totalTokens: tracked.input + tracked.output,
        costUsd: tracked.cost,
      },
    });
    cost += tracked.cost;
    tokens += tracked.input + tracked.output;
  }
  const durations: number[] = [];
  let toolOk = 0;
  let toolFailed = 0;
  for (const [i, tool] of (spec.tools ?? []).entries()) {
    events.push({ ...base, eventType: 'tool_call', timestamp: next(), payload: { toolName: 'search', callId: `t${i}`, arguments: {} } });
    events.push({
      ...base,
      eventType: tool.ok ? 'tool_response' : 'tool_error',
      timestamp: next(),
      payload: tool.ok
        ? { toolName: 'search', callId: `t${i}`, result: { hits: 1 }, durationMs: tool.durationMs }
        : { toolName: 'search', callId: `t${i}`, error: 'boom', durationMs: tool.durationMs },
    });
    durations.push(tool.durationMs);
    if (tool.ok) toolOk += 1;
    else toolFailed += 1;
  }
  if (spec.errorEvent) events.push({ ...base, eventType: 'custom', severity: 'error', timestamp: next(), payload: { type: 'failure', data: {} } });
  if (spec.end) events.push({ ...base, eventType: 'session_ended', timestamp: iso(spec.start + spec.end.offsetMs), payload: { reason: spec.end.reason } });
  return {
    events,
    expected: {
      errored: toolFailed > 0 || spec.errorEvent ? 1 : 0,
      completed: spec.end?.reason === 'completed' ? 1 : 0,
      cost,
      tokens,
      durationMs: spec.end ? spec.end.offsetMs : offset,
      latency: durations.length > 0 ? durations.reduce((a, b) => a + b, 0) / durations.length : null,
      toolOk,
      toolFailed,
    },
  };
}

async function ingestSessions(observe: TestObserve, specs: SessionSpec[]): Promise<Expected[]> {
  const built = specs.map(sessionEvents);
  await ingest(
    observe,
    built.flatMap((b) => b.events),
  );
  return built.map((b) => b.expected);
}

/** A minimal completed session carrying `tags`. */
const simple = (id: string, agentId: string, tags: string[], start: number, cost = 0.01): SessionSpec => ({
  id,
  agentId,
  tags,
  start,
  llm: [{ input: 100, output: 50, cost }],
  end: { reason: 'completed', offsetMs: 10_000 },
});

/** Per-session values of a metric, as the decisions define them. */
function valuesOf(metric: BenchmarkMetric, sessions: Expected[]): number[] {
  switch (metric) {
    case 'error_rate':
      return sessions.map((s) => s.errored);
    case 'completion_rate':
      return sessions.map((s) => s.completed);
    case 'tool_success_rate':
      return sessions.filter((s) => s.toolOk + s.toolFailed > 0).map((s) => s.toolOk / (s.toolOk + s.toolFailed));
    case 'avg_cost':
      return sessions.map((s) => s.cost);
    case 'avg_latency':
      return sessions.filter((s) => s.latency !== null).map((s) => s.latency!);
    case 'avg_tokens':
      return sessions.map((s) => s.tokens);
    case 'avg_duration':
      return sessions.map((s) => s.durationMs);
  }
}

/** [numerator, denominator] of the 2×2 test of a rate metric. */
function countsOf(metric: BenchmarkMetric, sessions: Expected[]): [number, number] {
  const sum = (f: (s: Expected) => number) => sessions.reduce((a, s) => a + f(s), 0);
  if (metric === 'error_rate') return [sum((s) => s.errored), sessions.length];
  if (metric === 'completion_rate') return [sum((s) => s.completed), sessions.length];
  return [sum((s) => s.toolOk), sum((s) => s.toolOk + s.toolFailed)];
}

const isRate = (metric: BenchmarkMetric): boolean => ['error_rate', 'completion_rate', 'tool_success_rate'].includes(metric);

function expectedStats(metric: BenchmarkMetric, a: Expected[], b: Expected[]): ComparisonStats {
  if (isRate(metric)) {
    const [sa, ta] = countsOf(metric, a);
    const [sb, tb] = countsOf(metric, b);
    return compareRates(sa, ta, sb, tb);
  }
  return compareContinuous(valuesOf(metric, a), valuesOf(metric, b));
}

function expectedSide(metric: BenchmarkMetric, sessions: Expected[]): Side['stats'] {
  const description = describeValues(valuesOf(metric, sessions));
  if (!isRate(metric)) return description;
  const [numerator, denominator] = countsOf(metric, sessions);
  return { ...description, rate: denominator > 0 ? numerator / denominator : null, numerator, denominator };
}

const BENCHMARK_FIELDS = [
  'agentId',
  'createdAt',
  'description',
  'id',
  'metrics',
  'minSessionsPerVariant',
  'name',
  'status',
  'timeRange',
  'updatedAt',
  'variants',
];
const LIST_FIELDS = ['agentId', 'createdAt', 'description', 'id', 'metrics', 'name', 'status', 'updatedAt', 'variants'];

// ---------------------------------------------------------------------------------------------
// Creation and validation
// ---------------------------------------------------------------------------------------------

await describeEachDatabase('benchmarks: creation and validation', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  const variants = [
    { name: 'Control', tag: 'exp:control' },
    { name: 'Candidate', tag: 'exp:candidate' },
  ];

  test('POST creates a draft with generated ids and the documented defaults', async () => {
    const benchmark = await create(observe, { name: '  Prompt v2  ', variants });
    assert.deepEqual(Object.keys(benchmark).sort(), BENCHMARK_FIELDS);
    assert.match(benchmark.id, /^[0-9a-f-]{36}$/);
    assert.equal(benchmark.name, 'Prompt v2');
    assert.equal(benchmark.status, 'draft');
    assert.equal(benchmark.description, null);
    assert.equal(benchmark.agentId, null);
    assert.deepEqual(benchmark.metrics, [...BENCHMARK_METRICS]);
    assert.ok(!(benchmark.metrics as string[]).includes('health_score'));
    assert.equal(benchmark.minSessionsPerVariant, 10);
    assert.equal(benchmark.timeRange, null);
    assert.equal(benchmark.createdAt, iso(NOW));
    assert.equal(benchmark.updatedAt, iso(NOW));
    assert.equal(benchmark.variants.length, 2);
    for (const [i, v] of benchmark.variants.entries()) {
      assert.deepEqual(Object.keys(v).sort(), ['agentId', 'description', 'id', 'name', 'sessionCount', 'tag']);
      assert.match(v.id, /^[0-9a-f-]{36}$/);
      assert.equal(v.name, variants[i]!.name);
      assert.equal(v.tag, variants[i]!.tag);
      assert.equal(v.sessionCount, 0);
      assert.equal(v.description, null);
      assert.equal(v.agentId, null);
    }
    assert.notEqual(benchmark.variants[0]!.id, benchmark.variants[1]!.id);
    assert.deepEqual(await detail(observe, benchmark.id), benchmark);
  });

  test('POST keeps every optional field', async () => {
    const benchmark = await create(observe, {
      name: 'Full',
      description: 'Which prompt is cheaper',
      agentId: 'support-bot',
      variants: [
        { name: 'A', tag: 'v:a', description: 'old prompt' },
        { name: 'B', tag: 'v:b', agentId: 'support-bot-2' },
        { name: 'C', tag: 'v:c' },
      ],
      metrics: ['avg_cost', 'error_rate'],
      minSessionsPerVariant: 3,
      timeRange: { from: '2026-11-01T00:00:00Z', to: '2026-11-20T00:00:00+01:00' },
    });
    assert.equal(benchmark.description, 'Which prompt is cheaper');
    assert.equal(benchmark.agentId, 'support-bot');
    assert.deepEqual(benchmark.metrics, ['avg_cost', 'error_rate']);
    assert.equal(benchmark.minSessionsPerVariant, 3);
    assert.deepEqual(benchmark.timeRange, { from: '2026-11-01T00:00:00.000Z', to: '2026-11-19T23:00:00.000Z' });
    assert.deepEqual(
      benchmark.variants.map((v) => [v.name, v.tag, v.description, v.agentId]),
      [
        ['A', 'v:a', 'old prompt', null],
        ['B', 'v:b', null, 'support-bot-2'],
        ['C', 'v:c', null, null],
      ],
    );
    const open = await create(observe, { name: 'Open range', variants, timeRange: { from: '2026-11-01' } });
    assert.deepEqual(open.timeRange, { from: '2026-11-01T00:00:00.000Z', to: null });
  });

  test('every bound is enforced: 400 in the observe error body, nothing stored', async () => {
    const before = (await list(observe, '?limit=100')).total;
    const many = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `V${i}`, tag: `t${i}` }));
    const valid = { name: 'B', variants };
    const cases: [string, Json, string][] = [
      ['missing name', { variants }, 'name'],
      ['empty name', { ...valid, name: '' }, 'name'],
      ['blank name', { ...valid, name: '   ' }, 'name'],
      ['name of 201 characters', { ...valid, name: 'x'.repeat(201) }, 'name'],
      ['name not a string', { ...valid, name: 5 }, 'name'],
      ['description of 2001 characters', { ...valid, description: 'd'.repeat(2001) }, 'description'],
      ['missing variants', { name: 'B' }, 'variants'],
      ['no variant', { ...valid, variants: [] }, 'variants'],
      ['one variant', { ...valid, variants: many(1) }, 'variants'],
      ['eleven variants', { ...valid, variants: many(11) }, 'variants'],
      ['variant without tag', { ...valid, variants: [{ name: 'A' }, { name: 'B', tag: 'b' }] }, 'variants.0.tag'],
      ['variant without name', { ...valid, variants: [{ tag: 'a' }, { name: 'B', tag: 'b' }] }, 'variants.0.name'],
      [
        'empty tag',
        {
          ...valid,
          variants: [
            { name: 'A', tag: '' },
            { name: 'B', tag: 'b' },
          ],
        },
        'variants.0.tag',
      ],
      [
        'tag of 201 characters',
        {
          ...valid,
          variants: [
            { name: 'A', tag: 't'.repeat(201) },
            { name: 'B', tag: 'b' },
          ],
        },
        'variants.0.tag',
      ],
      [
        'same tag twice',
        {
          ...valid,
          variants: [
            { name: 'A', tag: 'x' },
            { name: 'B', tag: 'x' },
          ],
        },
        'variants.1.tag',
      ],
      [
        'same name twice',
        {
          ...valid,
          variants: [
            { name: 'A', tag: 'x' },
            { name: 'A', tag: 'y' },
          ],
        },
        'variants.1.name',
      ],
      [
        'unknown variant key',
        {
          ...valid,
          variants: [
            { name: 'A', tag: 'x', weight: 1 },
            { name: 'B', tag: 'y' },
          ],
        },
        'variants.0',
      ],
      ['health_score', { ...valid, metrics: ['avg_cost', 'health_score'] }, 'metrics.1'],
      ['unknown metric', { ...valid, metrics: ['p99_latency'] }, 'metrics.0'],
      ['metric twice', { ...valid, metrics: ['avg_cost', 'avg_cost'] }, 'metrics.1'],
      ['empty metrics', { ...valid, metrics: [] }, 'metrics'],
      ['metrics not an array', { ...valid, metrics: 'avg_cost' }, 'metrics'],
      ['minSessionsPerVariant 0', { ...valid, minSessionsPerVariant: 0 }, 'minSessionsPerVariant'],
      ['fractional minSessionsPerVariant', { ...valid, minSessionsPerVariant: 2.5 }, 'minSessionsPerVariant'],
      ['minSessionsPerVariant as text', { ...valid, minSessionsPerVariant: '10' }, 'minSessionsPerVariant'],
      ['timeRange from after to', { ...valid, timeRange: { from: '2026-11-20T00:00:00Z', to: '2026-11-01T00:00:00Z' } }, 'timeRange.from'],
      ['timeRange not ISO', { ...valid, timeRange: { from: 'yesterday', to: '2026-11-01T00:00:00Z' } }, 'timeRange.from'],
      ['timeRange empty', { ...valid, timeRange: {} }, 'timeRange'],
      ['timeRange unknown key', { ...valid, timeRange: { start: '2026-11-01T00:00:00Z' } }, 'timeRange'],
      ['unknown key', { ...valid, status: 'running' }, ''],
    ];
    for (const [label, payload, path] of cases) {
      const response = await observe.call({ method: 'POST', url: '/api/benchmarks', payload });
      const body = assertErrorBody(response, 400);
      assert.ok(Array.isArray(body.details) && body.details.length > 0, `${label}: details`);
      assert.ok(
        body.details.some((d) => d.path === path || d.path.startsWith(`${path}.`) || path === ''),
        `${label}: a detail at ${path} in ${JSON.stringify(body.details)}`,
      );
    }
    const healthScore = await observe.call({ method: 'POST', url: '/api/benchmarks', payload: { ...valid, metrics: ['health_score'] } });
    assert.match(assertErrorBody(healthScore, 400).error, /health_score cannot be benchmarked/);
    const malformed = await observe.call({ method: 'POST', url: '/api/benchmarks', headers: { 'content-type': 'application/json' }, payload: '{"name":' });
    assertErrorBody(malformed, 400);
    assert.equal((await list(observe, '?limit=100')).total, before, 'nothing stored');
  });

  test('GET, PUT, DELETE and results of an unknown benchmark are 404', async () => {
    const id = '00000000-0000-7000-8000-000000000000';
    assertErrorBody(await observe.call({ method: 'GET', url: `/api/benchmarks/${id}` }), 404);
    assertErrorBody(await putStatus(observe, id, 'running'), 404);
    assertErrorBody(await observe.call({ method: 'GET', url: `/api/benchmarks/${id}/results` }), 404);
    assertErrorBody(await observe.call({ method: 'DELETE', url: `/api/benchmarks/${id}` }), 404);
  });
});

// ---------------------------------------------------------------------------------------------
// Listing
// ---------------------------------------------------------------------------------------------

await describeEachDatabase('benchmarks: list, filters and paging', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  const variants = [
    { name: 'A', tag: 'l:a' },
    { name: 'B', tag: 'l:b' },
  ];

  test('filters by status and agentId, newest first, with exact totals and hasMore', async () => {
    const clock = observe.clock as ManualClock;
    const created: Benchmark[] = [];
    for (let i = 0; i < 5; i++) {
      clock.advance(1000);
      created.push(await create(observe, { name: `L${i}`, description: `d${i}`, agentId: 'list-agent', variants }));
    }
    await create(observe, { name: 'other agent', agentId: 'someone-else', variants });
    const overriding = await create(observe, { name: 'variant override', variants: [variants[0]!, { ...variants[1]!, agentId: 'list-agent-2' }] });
    await moveTo(observe, created[1]!.id, 'cancelled');
    await moveTo(observe, created[3]!.id, 'cancelled');

    const all = await list(observe, '?agentId=list-agent');
    assert.equal(all.total, 5);
    assert.equal(all.hasMore, false);
    assert.deepEqual(
      all.benchmarks.map((b) => b.name),
      ['L4', 'L3', 'L2', 'L1', 'L0'],
    );
    for (const item of all.benchmarks) {
      assert.deepEqual(Object.keys(item).sort(), LIST_FIELDS);
      for (const v of item.variants) assert.deepEqual(Object.keys(v).sort(), ['id', 'name', 'tag']);
    }
    const first = all.benchmarks[4]!;
    assert.deepEqual(first, {
      id: created[0]!.id,
      name: 'L0',
      description: 'd0',
      status: 'draft',
      agentId: 'list-agent',
      metrics: [...BENCHMARK_METRICS],
      variants: created[0]!.variants.map(({ id, name, tag }) => ({ id, name, tag })),
      createdAt: created[0]!.createdAt,
      updatedAt: created[0]!.updatedAt,
    });

    const cancelled = await list(observe, '?agentId=list-agent&status=cancelled');
    assert.equal(cancelled.total, 2);
    assert.deepEqual(
      cancelled.benchmarks.map((b) => b.name),
      ['L3', 'L1'],
    );
    assert.ok(cancelled.benchmarks.every((b) => b.status === 'cancelled'));
    assert.equal((await list(observe, '?agentId=list-agent&status=draft')).total, 3);
    assert.equal((await list(observe, '?agentId=list-agent&status=running')).total, 0);

    const page1 = await list(observe, '?agentId=list-agent&limit=2');
    assert.deepEqual(
      page1.benchmarks.map((b) => b.name),
      ['L4', 'L3'],
    );
    assert.equal(page1.total, 5);
    assert.equal(page1.hasMore, true);
    const page3 = await list(observe, '?agentId=list-agent&limit=2&offset=4');
    assert.deepEqual(
      page3.benchmarks.map((b) => b.name),
      ['L0'],
    );
    assert.equal(page3.hasMore, false);
    const beyond = await list(observe, '?agentId=list-agent&offset=10');
    assert.deepEqual(beyond.benchmarks, []);
    assert.equal(beyond.total, 5);

    const byOverride = await list(observe, '?agentId=list-agent-2');
    assert.deepEqual(
      byOverride.benchmarks.map((b) => b.id),
      [overriding.id],
    );

    const everything = await list(observe, '');
    assert.equal(everything.total, 7);
    assert.equal(everything.benchmarks[0]!.id, overriding.id, 'newest first');
  });

  test('limit defaults to 20 and is capped at 100', async () => {
    for (let i = 0; i < 21; i++) await create(observe, { name: `P${i}`, agentId: 'paging-agent', variants });
    const page = await list(observe, '?agentId=paging-agent');
    assert.equal(page.benchmarks.length, 20);
    assert.equal(page.total, 21);
    assert.equal(page.hasMore, true);
    assert.equal((await list(observe, '?agentId=paging-agent&limit=100')).benchmarks.length, 21);
  });

  test('bad query values are 400', async () => {
    for (const query of ['limit=0', 'limit=101', 'limit=abc', 'limit=1.5', 'offset=-1', 'status=paused', 'status=']) {
      assertErrorBody(await observe.call({ method: 'GET', url: `/api/benchmarks?${query}` }), 400);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Status transitions and deletion
// ---------------------------------------------------------------------------------------------

const STATUSES = ['draft', 'running', 'completed', 'cancelled'] as const;
const ALLOWED: Record<string, string[]> = { draft: ['running', 'cancelled'], running: ['completed', 'cancelled'], completed: [], cancelled: [] };

await describeEachDatabase('benchmarks: status transitions and deletion', (backend) => {
  let observe: TestObserve;
  let tags: [string, string];
  before(async () => {
    observe = await startTestObserve(backend);
    const prefix = unique('tr');
    tags = [`${prefix}:a`, `${prefix}:b`];
    await ingestSessions(observe, [simple(`${prefix}-s1`, 'agent-t', [tags[0]], NOW - DAY), simple(`${prefix}-s2`, 'agent-t', [tags[1]], NOW - DAY + MINUTE)]);
  });
  after(() => observe.close());

  const body = (): Json => ({
    name: 'Transitions',
    variants: [
      { name: 'A', tag: tags[0] },
      { name: 'B', tag: tags[1] },
    ],
    minSessionsPerVariant: 1,
  });

  /** A benchmark brought to `status` through allowed moves. */
  async function benchmarkIn(status: (typeof STATUSES)[number]): Promise<Benchmark> {
    const benchmark = await create(observe, body());
    if (status === 'draft') return benchmark;
    if (status === 'cancelled') return moveTo(observe, benchmark.id, 'cancelled');
    await moveTo(observe, benchmark.id, 'running');
    if (status === 'completed') return moveTo(observe, benchmark.id, 'completed');
    return detail(observe, benchmark.id);
  }

  test('every allowed move answers 200 with the updated benchmark', async () => {
    const clock = observe.clock as ManualClock;
    const benchmark = await create(observe, body());
    clock.advance(5000);
    const running = await moveTo(observe, benchmark.id, 'running');
    assert.deepEqual(Object.keys(running).sort(), BENCHMARK_FIELDS);
    assert.equal(running.status, 'running');
    assert.equal(running.updatedAt, iso(clock.now()));
    assert.equal(running.createdAt, benchmark.createdAt);
    assert.deepEqual(
      running.variants.map((v) => v.sessionCount),
      [1, 1],
    );
    clock.advance(5000);
    const completed = await moveTo(observe, benchmark.id, 'completed');
    assert.equal(completed.status, 'completed');
    assert.equal(completed.updatedAt, iso(clock.now()));
    assert.deepEqual(await detail(observe, benchmark.id), completed);

    const cancelledFromDraft = await moveTo(observe, (await create(observe, body())).id, 'cancelled');
    assert.equal(cancelledFromDraft.status, 'cancelled');
    const runningOne = await benchmarkIn('running');
    const cancelledFromRunning = await moveTo(observe, runningOne.id, 'cancelled');
    assert.equal(cancelledFromRunning.status, 'cancelled');
    assert.equal((await detail(observe, runningOne.id)).status, 'cancelled');
  });

  test('every other move is 409 and changes nothing', async () => {
    for (const from of STATUSES) {
      const benchmark = await benchmarkIn(from);
      for (const to of STATUSES) {
        if (ALLOWED[from]!.includes(to)) continue;
        const response = await putStatus(observe, benchmark.id, to);
        const error = assertErrorBody(response, 409);
        assert.match(error.error, new RegExp(`${from} benchmark to ${to}`), `${from} → ${to}: ${error.error}`);
        const after = await detail(observe, benchmark.id);
        assert.equal(after.status, from, `${from} → ${to} left the status`);
        assert.equal(after.updatedAt, benchmark.updatedAt);
      }
    }
  });

  test('draft → running is 409 while a variant has no session, and allowed once it has one', async () => {
    const prefix = unique('empty');
    const benchmark = await create(observe, {
      name: 'Needs sessions',
      variants: [
        { name: 'Has sessions', tag: tags[0] },
        { name: 'Nobody yet', tag: `${prefix}:b` },
      ],
    });
    const error = assertErrorBody(await putStatus(observe, benchmark.id, 'running'), 409);
    assert.match(error.error, /"Nobody yet"/);
    assert.doesNotMatch(error.error, /"Has sessions"/);
    assert.equal((await detail(observe, benchmark.id)).status, 'draft');
    // A session with the tag but outside the benchmark's agent does not count either.
    const scoped = await create(observe, {
      name: 'Scoped',
      agentId: 'agent-t',
      variants: [
        { name: 'A', tag: tags[0] },
        { name: 'B', tag: `${prefix}:b` },
      ],
    });
    await ingestSessions(observe, [simple(`${prefix}-other`, 'another-agent', [`${prefix}:b`], NOW - DAY)]);
    assertErrorBody(await putStatus(observe, scoped.id, 'running'), 409);
    assert.equal((await moveTo(observe, benchmark.id, 'running')).status, 'running');
    await ingestSessions(observe, [simple(`${prefix}-mine`, 'agent-t', [`${prefix}:b`], NOW - DAY)]);
    assert.equal((await moveTo(observe, scoped.id, 'running')).status, 'running');
  });

  test('a bad status value is 400', async () => {
    const benchmark = await create(observe, body());
    for (const payload of [{ status: 'paused' }, { status: 'RUNNING' }, { status: 1 }, {}, { status: 'running', force: true }]) {
      const response = await observe.call({ method: 'PUT', url: `/api/benchmarks/${benchmark.id}/status`, payload });
      assertErrorBody(response, 400);
    }
    assert.equal((await detail(observe, benchmark.id)).status, 'draft');
  });

  test('results are 400 while draft; cancelled benchmarks are computed live', async () => {
    const benchmark = await create(observe, body());
    const draft = assertErrorBody(await observe.call({ method: 'GET', url: `/api/benchmarks/${benchmark.id}/results` }), 400);
    assert.match(draft.error, /draft/);
    await moveTo(observe, benchmark.id, 'cancelled');
    const live = await results(observe, benchmark.id);
    assert.equal(live.status, 'cancelled');
    assert.deepEqual(
      live.variants.map((v) => v.sessionCount),
      [1, 1],
    );
    assertErrorBody(await observe.call({ method: 'GET', url: `/api/benchmarks/${benchmark.id}/results?includeDistributions=yes` }), 400);
  });

  test('DELETE: 204 for draft and cancelled, 409 for running and completed, 404 afterwards', async () => {
    for (const status of ['draft', 'cancelled'] as const) {
      const benchmark = await benchmarkIn(status);
      const response = await observe.call({ method: 'DELETE', url: `/api/benchmarks/${benchmark.id}` });
      assert.equal(response.statusCode, 204, response.body);
      assert.equal(response.body, '');
      assertErrorBody(await observe.call({ method: 'GET', url: `/api/benchmarks/${benchmark.id}` }), 404);
      assertErrorBody(await observe.call({ method: 'DELETE', url: `/api/benchmarks/${benchmark.id}` }), 404);
      const variants = await observe.service.context.database.db
        .selectFrom('benchmark_variants')
        .select('id')
        .where('benchmark_id', '=', benchmark.id)
        .execute();
      assert.deepEqual(variants, [], 'the variants go with it');
    }
    for (const status of ['running', 'completed'] as const) {
      const benchmark = await benchmarkIn(status);
      const error = assertErrorBody(await observe.call({ method: 'DELETE', url: `/api/benchmarks/${benchmark.id}` }), 409);
      assert.match(error.error, new RegExp(status));
      assert.equal((await detail(observe, benchmark.id)).status, status);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------------------------

await describeEachDatabase('benchmarks: results', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend);
  });
  after(() => observe.close());

  test('per-variant statistics and every pairwise comparison match the statistics module on a controlled data set', async () => {
    const prefix = unique('res');
    const tagA = `${prefix}:a`;
    const tagB = `${prefix}:b`;
    const tagC = `${prefix}:c`;
    const base = NOW - 2 * DAY;
    const agent = `${prefix}-agent`;
    const agentC = `${prefix}-agent-c`;

    const specsA: SessionSpec[] = Array.from({ length: 12 }, (_, i) => ({
      id: `${prefix}-a${String(i).padStart(2, '0')}`,
      agentId: agent,
      tags: [tagA, 'shared-tag'],
      start: base + i * 10 * MINUTE,
      llm: [{ input: 1000 + 10 * i, output: 200, cost: 0.01 + 0.001 * i }],
      tools:
        i % 3 === 0
          ? [
              { ok: false, durationMs: 300 + i },
              { ok: true, durationMs: 100 },
            ]
          : [
              { ok: true, durationMs: 100 + 10 * i },
              { ok: true, durationMs: 200 },
            ],
      end: i === 1 ? { reason: 'error', offsetMs: 90_000 } : i === 2 ? undefined : { reason: 'completed', offsetMs: 60_000 + 1000 * i },
    }));
    const specsB: SessionSpec[] = Array.from({ length: 12 }, (_, i) => ({
      id: `${prefix}-b${String(i).padStart(2, '0')}`,
      agentId: agent,
      tags: [tagB],
      start: base + i * 10 * MINUTE + 5 * MINUTE,
      llm: [{ input: 400 + 5 * i, output: 100, cost: 0.002 + 0.0002 * i }],
      costTracked: i % 4 === 0 ? [{ input: 10, output: 5, cost: 0.0001 }] : [],
      tools:
        i === 0
          ? [
              { ok: true, durationMs: 50 },
              { ok: false, durationMs: 70 },
            ]
          : [{ ok: true, durationMs: 50 + 5 * i }],
      errorEvent: i === 5,
      end: { reason: 'completed', offsetMs: 30_000 + 500 * i },
    }));
    const specsC: SessionSpec[] = Array.from({ length: 3 }, (_, i) => ({
      id: `${prefix}-c${i}`,
      agentId: agentC,
      tags: [tagC],
      start: base + i * 10 * MINUTE + 2 * MINUTE,
      llm: [{ input: 2000, output: 500, cost: 0.05 }],
      tools: [{ ok: true, durationMs: 500 }],
      end: { reason: 'completed', offsetMs: 120_000 },
    }));
    const expectedA = await ingestSessions(observe, specsA);
    const expectedB = await ingestSessions(observe, specsB);
    const expectedC = await ingestSessions(observe, specsC);
    // Sessions that carry a variant's tag but fall outside its filters.
    await ingestSessions(observe, [
      simple(`${prefix}-other-agent`, 'someone-else', [tagA], base + MINUTE, 5),
      simple(`${prefix}-too-early`, agent, [tagA], base - 60 * MINUTE, 5),
      simple(`${prefix}-too-late`, agent, [tagB], base + 300 * MINUTE, 5),
      simple(`${prefix}-c-wrong-agent`, agent, [tagC], base + MINUTE, 5),
    ]);

    const benchmark = await create(observe, {
      name: 'Cheaper prompt',
      agentId: agent,
      variants: [
        { name: 'Control', tag: tagA },
        { name: 'Candidate', tag: tagB },
        { name: 'Other agent', tag: tagC, agentId: agentC },
      ],
      timeRange: { from: iso(base), to: iso(base + 200 * MINUTE) },
    });
    assert.deepEqual(
      (await detail(observe, benchmark.id)).variants.map((v) => v.sessionCount),
      [12, 12, 3],
    );
    await moveTo(observe, benchmark.id, 'running');
    const out = await results(observe, benchmark.id);

    assert.deepEqual(Object.keys(out).sort(), [
      'belowMinimum',
      'benchmarkId',
      'comparisons',
      'computedAt',
      'minSessionsPerVariant',
      'status',
      'summary',
      'tenantId',
      'variants',
    ]);
    assert.equal(out.benchmarkId, benchmark.id);
    assert.equal(out.tenantId, 'default');
    assert.equal(out.status, 'running');
    assert.equal(out.computedAt, iso(observe.clock.now()));
    assert.equal(out.minSessionsPerVariant, 10);
    assert.equal(out.belowMinimum, true, 'the third variant has 3 sessions');

    const groups = [expectedA, expectedB, expectedC];
    const names = ['Control', 'Candidate', 'Other agent'];
    assert.deepEqual(
      out.variants.map((v) => [v.variantId, v.variantName, v.tag, v.sessionCount, v.belowMinimum]),
      [
        [benchmark.variants[0]!.id, 'Control', tagA, 12, false],
        [benchmark.variants[1]!.id, 'Candidate', tagB, 12, false],
        [benchmark.variants[2]!.id, 'Other agent', tagC, 3, true],
      ],
    );
    for (const [i, variant] of out.variants.entries()) {
      assert.equal(variant.distributions, undefined, 'no distributions unless asked');
      assert.deepEqual(Object.keys(variant.metrics).sort(), [...BENCHMARK_METRICS].sort());
      for (const metric of BENCHMARK_METRICS) {
        assertClose(variant.metrics[metric], describeValues(valuesOf(metric, groups[i]!)), `${names[i]}.${metric}`);
      }
    }

    // Hand-checkable figures.
    const control = out.variants[0]!.metrics;
    const candidate = out.variants[1]!.metrics;
    assertClose(control.error_rate, { mean: 4 / 12, median: 0, stddev: control.error_rate!.stddev, min: 0, max: 1, count: 12 });
    assert.equal(control.completion_rate!.mean, 10 / 12);
    assert.equal(candidate.completion_rate!.mean, 1);
    assert.equal(candidate.error_rate!.mean, 2 / 12);
    assertClose(control.avg_cost!.median, 0.0155);
    assertClose(control.avg_cost!.min, 0.01);
    assertClose(control.avg_cost!.max, 0.021);
    assert.equal(control.avg_tokens!.min, 1200);
    assert.equal(control.avg_tokens!.max, 1310);
    assert.equal(candidate.avg_tokens!.mean, 6375 / 12, 'llm_response tokens plus 15 cost_tracked tokens in 3 sessions');
    assertClose(candidate.avg_latency!.mean, 940 / 12);
    assert.equal(candidate.avg_latency!.count, 12);
    assert.equal(control.avg_duration!.max, 90_000);
    assert.equal(control.avg_duration!.min, 5000, 'the active session: its last event 5 s after the start');
    assert.equal(control.tool_success_rate!.count, 12);
    assertClose(control.tool_success_rate!.mean, (4 * 0.5 + 8 * 1) / 12);
    assert.equal(out.variants[2]!.metrics.avg_cost!.mean, 0.05);

    // 3 pairs × 7 metrics, metric by metric, pairs in variant order.
    const pairs: [number, number][] = [
      [0, 1],
      [0, 2],
      [1, 2],
    ];
    assert.equal(out.comparisons.length, 21);
    let index = 0;
    for (const metric of BENCHMARK_METRICS) {
      for (const [ia, ib] of pairs) {
        const comparison = out.comparisons[index++]!;
        const label = `${metric} ${names[ia]} vs ${names[ib]}`;
        const stats = expectedStats(metric, groups[ia]!, groups[ib]!);
        const belowMinimum = ia === 2 || ib === 2;
        const better = winnerOf(stats, HIGHER_IS_BETTER[metric], { belowMinimum });
        const expected: Json = {
          metric,
          variantA: { id: benchmark.variants[ia]!.id, name: names[ia], stats: expectedSide(metric, groups[ia]!) },
          variantB: { id: benchmark.variants[ib]!.id, name: names[ib], stats: expectedSide(metric, groups[ib]!) },
          absoluteDiff: stats.absoluteDiff,
          percentDiff: stats.percentDiff,
          testType: stats.testType,
          testStatistic: stats.testStatistic,
          pValue: stats.pValue,
          confidenceInterval: stats.confidenceInterval,
          effectSize: stats.effectSize,
          significant: stats.significant,
          confidence: stats.confidence,
          belowMinimum,
          degenerate: stats.degenerate,
        };
        if (better !== null) expected.winner = better === 'A' ? names[ia] : names[ib];
        assertClose(comparison, expected, label);
        assert.equal(comparison.testType, isRate(metric) ? 'chi_squared' : 'welch_t', label);
      }
    }

    // The data set was built so that these outcomes are certain.
    const find = (metric: string, a: string, b: string) => out.comparisons.find((c) => c.metric === metric && c.variantA.name === a && c.variantB.name === b)!;
    const cost = find('avg_cost', 'Control', 'Candidate');
    assert.equal(cost.significant, true);
    assert.equal(cost.winner, 'Candidate');
    assert.equal(cost.confidence, '***');
    assert.ok(cost.absoluteDiff! < 0, 'B − A');
    assertClose(cost.absoluteDiff, (0.002 * 12 + 0.0002 * 66 + 0.0003) / 12 - (0.01 * 12 + 0.001 * 66) / 12);
    const tokens = find('avg_tokens', 'Control', 'Candidate');
    assert.equal(tokens.winner, 'Candidate');
    const toolRate = find('tool_success_rate', 'Control', 'Candidate');
    assert.deepEqual([toolRate.variantA.stats.numerator, toolRate.variantA.stats.denominator], [20, 24]);
    assert.deepEqual([toolRate.variantB.stats.numerator, toolRate.variantB.stats.denominator], [12, 13]);
    assertClose(toolRate.absoluteDiff, 12 / 13 - 20 / 24);
    const errors = find('error_rate', 'Control', 'Candidate');
    assert.deepEqual([errors.variantA.stats.numerator, errors.variantA.stats.denominator, errors.variantB.stats.numerator], [4, 12, 2]);
    // Against the 3-session variant the difference is significant but no winner is named.
    const costVsC = find('avg_cost', 'Control', 'Other agent');
    assert.equal(costVsC.significant, true);
    assert.equal(costVsC.belowMinimum, true);
    assert.equal(costVsC.winner, undefined);
    assert.ok(out.comparisons.filter((c) => c.belowMinimum).every((c) => c.winner === undefined));

    assert.match(out.summary, /"Candidate" beats "Control" on avg_cost \(p < 0\.0001, \*\*\*\)/);
    assert.match(out.summary, /"Other agent" has fewer than 10 sessions/);

    // Raw per-session values, in session start order.
    const withDistributions = await results(observe, benchmark.id, '?includeDistributions=true');
    for (const [i, variant] of withDistributions.variants.entries()) {
      assert.ok(variant.distributions, 'distributions present');
      assert.deepEqual(Object.keys(variant.distributions).sort(), [...BENCHMARK_METRICS].sort());
      for (const metric of BENCHMARK_METRICS) assertClose(variant.distributions[metric], valuesOf(metric, groups[i]!), `${names[i]}.${metric}`);
    }
    const candidateValues = withDistributions.variants[1]!.distributions!;
    assert.deepEqual(candidateValues.error_rate, [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    assert.equal(candidateValues.avg_tokens![0], 515, 'llm_response 500 + cost_tracked 15 tokens');
    assert.equal(candidateValues.avg_latency![0], 60, '(50 + 70) / 2');
    assert.deepEqual(candidateValues.tool_success_rate!.slice(0, 2), [0.5, 1]);
    const explicitFalse = await results(observe, benchmark.id, '?includeDistributions=false');
    assert.ok(explicitFalse.variants.every((v) => v.distributions === undefined));
  });

  test('only the selected metrics are computed, in the given order', async () => {
    const prefix = unique('sel');
    await ingestSessions(observe, [
      simple(`${prefix}-1`, 'sel-agent', [`${prefix}:a`], NOW - DAY),
      simple(`${prefix}-2`, 'sel-agent', [`${prefix}:b`], NOW - DAY),
    ]);
    const benchmark = await create(observe, {
      name: 'Selected',
      variants: [
        { name: 'A', tag: `${prefix}:a` },
        { name: 'B', tag: `${prefix}:b` },
      ],
      metrics: ['avg_tokens', 'completion_rate'],
    });
    await moveTo(observe, benchmark.id, 'running');
    const out = await results(observe, benchmark.id);
    assert.deepEqual(
      out.comparisons.map((c) => c.metric),
      ['avg_tokens', 'completion_rate'],
    );
    assert.deepEqual(Object.keys(out.variants[0]!.metrics).sort(), ['avg_tokens', 'completion_rate']);
    // One session per variant: no test is possible, p = 1, nothing is significant.
    const tokens = out.comparisons[0]!;
    assert.equal(tokens.pValue, 1);
    assert.equal(tokens.testStatistic, null);
    assert.equal(tokens.degenerate, 'insufficient_data');
    assert.equal(tokens.confidence, '-');
  });

  test('a session carrying the tags of two variants counts in both', async () => {
    const prefix = unique('both');
    await ingestSessions(observe, [
      simple(`${prefix}-both`, 'both-agent', [`${prefix}:a`, `${prefix}:b`], NOW - DAY),
      simple(`${prefix}-a`, 'both-agent', [`${prefix}:a`], NOW - DAY),
    ]);
    const benchmark = await create(observe, {
      name: 'Overlap',
      variants: [
        { name: 'A', tag: `${prefix}:a` },
        { name: 'B', tag: `${prefix}:b` },
      ],
    });
    assert.deepEqual(
      (await detail(observe, benchmark.id)).variants.map((v) => v.sessionCount),
      [2, 1],
    );
    await moveTo(observe, benchmark.id, 'running');
    assert.deepEqual(
      (await results(observe, benchmark.id)).variants.map((v) => v.sessionCount),
      [2, 1],
    );
  });

  test('below minSessionsPerVariant the results are flagged and name no winner', async () => {
    const prefix = unique('min');
    const tags = [`${prefix}:a`, `${prefix}:b`];
    await ingestSessions(observe, [
      simple(`${prefix}-a1`, 'min-agent', [tags[0]!], NOW - DAY, 0.01),
      simple(`${prefix}-a2`, 'min-agent', [tags[0]!], NOW - DAY + MINUTE, 0.01),
      simple(`${prefix}-b1`, 'min-agent', [tags[1]!], NOW - DAY, 0.02),
      simple(`${prefix}-b2`, 'min-agent', [tags[1]!], NOW - DAY + MINUTE, 0.02),
    ]);
    const variants = [
      { name: 'Cheap', tag: tags[0] },
      { name: 'Pricey', tag: tags[1] },
    ];
    const flagged = await create(observe, { name: 'Too few', variants, metrics: ['avg_cost'] });
    await moveTo(observe, flagged.id, 'running');
    const preliminary = await results(observe, flagged.id);
    assert.equal(preliminary.belowMinimum, true);
    assert.deepEqual(
      preliminary.variants.map((v) => v.belowMinimum),
      [true, true],
    );
    const [comparison] = preliminary.comparisons;
    // Two constant groups with different means: the difference is certain (p = 0) …
    assert.equal(comparison!.significant, true);
    assert.equal(comparison!.pValue, 0);
    assert.equal(comparison!.belowMinimum, true);
    // … yet with 2 sessions per variant no winner is named.
    assert.equal(comparison!.winner, undefined);
    assert.ok(!('winner' in comparison!));
    assert.match(preliminary.summary, /No winner is named/);
    assert.match(preliminary.summary, /"Cheap" and "Pricey" have fewer than 10 sessions/);

    const enough = await create(observe, { name: 'Enough', variants, metrics: ['avg_cost'], minSessionsPerVariant: 2 });
    await moveTo(observe, enough.id, 'running');
    const conclusive = await results(observe, enough.id);
    assert.equal(conclusive.belowMinimum, false);
    assert.equal(conclusive.comparisons[0]!.winner, 'Cheap');
    assert.equal(conclusive.comparisons[0]!.belowMinimum, false);
    assert.match(conclusive.summary, /^Significant differences \(p < 0\.05\): "Cheap" beats "Pricey" on avg_cost/);

    const none = await create(observe, { name: 'Equal', variants, metrics: ['completion_rate'], minSessionsPerVariant: 2 });
    await moveTo(observe, none.id, 'running');
    const equal = await results(observe, none.id);
    assert.equal(equal.comparisons[0]!.significant, false);
    assert.equal(equal.comparisons[0]!.degenerate, 'no_variation');
    assert.match(equal.summary, /^No significant difference/);
  });

  test('running results are live; completing caches them, and later sessions do not change the cache', async () => {
    const clock = observe.clock as ManualClock;
    const prefix = unique('cache');
    const tags = [`${prefix}:a`, `${prefix}:b`];
    let n = 0;
    const session = (tag: string, cost: number): SessionSpec => simple(`${prefix}-${++n}`, 'cache-agent', [tag], NOW - DAY + n * MINUTE, cost);
    await ingestSessions(observe, [session(tags[0]!, 0.01), session(tags[0]!, 0.012), session(tags[1]!, 0.02), session(tags[1]!, 0.021)]);
    const benchmark = await create(observe, {
      name: 'Cache',
      variants: [
        { name: 'A', tag: tags[0] },
        { name: 'B', tag: tags[1] },
      ],
      minSessionsPerVariant: 2,
    });
    await moveTo(observe, benchmark.id, 'running');
    const first = await results(observe, benchmark.id);
    assert.deepEqual(
      first.variants.map((v) => v.sessionCount),
      [2, 2],
    );

    await ingestSessions(observe, [session(tags[0]!, 0.011)]);
    clock.advance(1000);
    const live = await results(observe, benchmark.id);
    assert.deepEqual(
      live.variants.map((v) => v.sessionCount),
      [3, 2],
      'a running benchmark sees the new session',
    );
    assert.notDeepEqual(live.variants[0]!.metrics.avg_cost, first.variants[0]!.metrics.avg_cost);
    assert.equal(live.computedAt, iso(clock.now()));

    clock.advance(1000);
    const completedAt = clock.now();
    await moveTo(observe, benchmark.id, 'completed');
    const cached = await results(observe, benchmark.id);
    assert.equal(cached.status, 'completed');
    assert.equal(cached.computedAt, iso(completedAt));
    assert.deepEqual(
      cached.variants.map((v) => v.sessionCount),
      [3, 2],
    );
    const cachedWithDistributions = await results(observe, benchmark.id, '?includeDistributions=true');
    assert.deepEqual(
      cachedWithDistributions.variants.map((v) => v.distributions!.avg_cost!.length),
      [3, 2],
    );

    await ingestSessions(observe, [session(tags[0]!, 0.5), session(tags[1]!, 0.9), session(tags[1]!, 0.7)]);
    clock.advance(60_000);
    assert.deepEqual(await results(observe, benchmark.id), cached, 'served from the cache');
    assert.deepEqual(await results(observe, benchmark.id, '?includeDistributions=true'), cachedWithDistributions);
    // The detail still counts sessions now.
    assert.deepEqual(
      (await detail(observe, benchmark.id)).variants.map((v) => v.sessionCount),
      [4, 4],
    );
  });
});
