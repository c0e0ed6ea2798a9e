// Any range, however it falls on days and hours: the agents report (sums from the daily and hourly
// rollups, sessions per agent, latency sketches, and the events of cut hours, added or taken out;
// aggregate.ts readRange) equals the same figures computed from the events and sessions of the range.
// Twice: with the data days in the past, and with the data up to the wall clock's now, where ranges
// reach into the future (whose parts readRange reads as empty: splitRange).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { DAY_MS, HOUR_MS, ManualClock } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { ingestEvents, startTestObserve, TEST_NOW, type EventInput, type TestObserve } from '../testing.ts';
import { binOf, percentilesOfBins } from './latency.ts';

const SPAN = 3 * DAY_MS;

/** Sessions of three agents over the three days before `end`, from a fixed seed. */
function dataset(end: number): EventInput[] {
  const start = end - SPAN;
  let seed = 42;
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  const events: EventInput[] = [];
  for (let s = 0; s < 40; s += 1) {
    const sessionId = `r-${s}`;
    const agentId = ['A', 'B', 'C'][s % 3]!;
    let ts = start + Math.floor(random() * (SPAN - 4 * HOUR_MS));
    for (let i = 0; i < 12; i += 1) {
      const timestamp = new Date(ts).toISOString();
      const kind = Math.floor(random() * 4);
      if (kind === 0) events.push({ sessionId, agentId, timestamp, eventType: 'tool_call', payload: { toolName: 'search', callId: `c${i}`, arguments: {} } });
      else if (kind === 1)
        events.push({
          sessionId,
          agentId,
          timestamp,
          eventType: 'tool_response',
          payload: { toolName: 'search', callId: `c${i}`, result: 1, durationMs: Math.floor(random() * 900) },
        });
      else if (kind === 2)
        events.push({
          sessionId,
          agentId,
          timestamp,
          eventType: 'llm_response',
          payload: {
            callId: `l${i}`,
            provider: 'openai',
            model: 'gpt-4o',
            completion: 'ok',
            finishReason: 'stop',
            usage: { inputTokens: 10, outputTokens: 5 },
            costUsd: Math.round(random() * 1000) / 10_000,
            latencyMs: 50 + Math.floor(random() * 3000),
          },
        });
      else events.push({ sessionId, agentId, timestamp, eventType: 'custom', severity: 'error', payload: { type: 'oops', data: {} } });
      ts += Math.floor(random() * 20 * 60_000);
    }
  }
  return events;
}

for (const [when, end] of [
  ['days ago', TEST_NOW],
  // Whole minutes: the data ends before the test's clock and the wall clock, which go on.
  ['up to now', Math.floor(Date.now() / 60_000) * 60_000],
] as const) {
  await describeEachDatabase(`the agents report over any range, data ${when}`, (backend) => {
    let observe: TestObserve;
    const db = () => observe.service.context.database.db;
    const START = end - SPAN;

    before(async () => {
      observe = await startTestObserve(backend, { clock: new ManualClock(end) });
      await ingestEvents(observe, dataset(end));
    });
    after(() => observe.close());

    async function recomputed(from: number, to: number) {
      const rows = await db()
        .selectFrom('events')
        .select(['agent_id', 'is_error', 'cost_usd', 'duration_ms', 'latency_ms'])
        .where('ts', '>=', from)
        .where('ts', '<=', to)
        .execute();
      const sessions = await db().selectFrom('sessions').select('agent_id').where('started_at', '>=', from).where('started_at', '<=', to).execute();
      const percentiles = (name: string, values: number[]) => {
        const p = percentilesOfBins(values.map((ms) => [binOf(ms), 1] as const));
        return Object.fromEntries((['p50', 'p95', 'p99'] as const).map((q) => [`${q}${name}Ms`, p?.[q] ?? null]));
      };
      const agents = [...new Set([...rows.map((r) => r.agent_id), ...sessions.map((r) => r.agent_id)])].sort();
      return agents.map((agentId) => {
        const own = rows.filter((r) => r.agent_id === agentId);
        const timed = (column: 'duration_ms' | 'latency_ms') => own.flatMap((r) => (r[column] === null ? [] : [Number(r[column])]));
        return {
          agentId,
          sessionCount: sessions.filter((r) => r.agent_id === agentId).length,
          totalEvents: own.length,
          totalErrors: own.filter((r) => Number(r.is_error) === 1).length,
          totalCostUsd: Math.round(own.reduce((sum, r) => sum + Number(r.cost_usd ?? 0), 0) * 1e9) / 1e9,
          ...percentiles('ToolDuration', timed('duration_ms')),
          ...percentiles('LlmLatency', timed('latency_ms')),
        };
      });
    }

    async function reported(from: number, to: number) {
      const url = `/api/analytics/agents?from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`;
      const response = await observe.call({ method: 'GET', url });
      assert.equal(response.statusCode, 200, response.body);
      return (response.json() as { agents: Record<string, unknown>[] }).agents
        .map(({ agentId, sessionCount, totalEvents, totalErrors, totalCostUsd, ...rest }) => ({
          agentId,
          sessionCount,
          totalEvents,
          totalErrors,
          totalCostUsd,
          ...Object.fromEntries(Object.entries(rest).filter(([name]) => /^p\d\d(ToolDuration|LlmLatency)Ms$/.test(name))),
        }))
        .sort((a, b) => String(a.agentId).localeCompare(String(b.agentId)));
    }

    test('equals the figures computed from the events and sessions of the range (property)', async () => {
      // Any instant of the data's days, or one on or next to an hour's or a day's edge.
      const instant = fc.oneof(
        fc.integer({ min: START - 2 * HOUR_MS, max: end + 2 * HOUR_MS }),
        fc
          .tuple(fc.integer({ min: -1, max: 3 * 24 }), fc.constantFrom(-1, 0, 1))
          .map(([hour, off]) => Math.floor(START / DAY_MS) * DAY_MS + hour * HOUR_MS + off),
        fc.tuple(fc.integer({ min: 0, max: 4 }), fc.constantFrom(-1, 0, 1)).map(([day, off]) => Math.floor(START / DAY_MS) * DAY_MS + day * DAY_MS + off),
      );
      await fc.assert(
        fc.asyncProperty(instant, instant, async (a, b) => {
          const [from, to] = a <= b ? [a, b] : [b, a];
          assert.deepEqual(await reported(from, to), await recomputed(from, to), `${new Date(from).toISOString()} – ${new Date(to).toISOString()}`);
        }),
        { numRuns: 150 },
      );
    });
  });
}
