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
import { recomputedAgents, reportedAgents } from './agents-report-testing.ts';
import { aggregate, emptySums } from './aggregate.ts';

const SPAN = 3 * DAY_MS;
/** Weeks start on Monday 00:00 UTC: 1970-01-05, four days after the epoch. */
const WEEK_OFFSET = 4 * DAY_MS;

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

    // Any instant of the data's days, or one on or next to an hour's or a day's edge.
    const instant = () =>
      fc.oneof(
        fc.integer({ min: START - 2 * HOUR_MS, max: end + 2 * HOUR_MS }),
        fc
          .tuple(fc.integer({ min: -1, max: 3 * 24 }), fc.constantFrom(-1, 0, 1))
          .map(([hour, off]) => Math.floor(START / DAY_MS) * DAY_MS + hour * HOUR_MS + off),
        fc.tuple(fc.integer({ min: 0, max: 4 }), fc.constantFrom(-1, 0, 1)).map(([day, off]) => Math.floor(START / DAY_MS) * DAY_MS + day * DAY_MS + off),
      );

    test('equals the figures computed from the events and sessions of the range (property)', async () => {
      await fc.assert(
        fc.asyncProperty(instant(), instant(), async (a, b) => {
          const [from, to] = a <= b ? [a, b] : [b, a];
          assert.deepEqual(
            await reportedAgents(observe, from, to),
            await recomputedAgents(db(), from, to),
            `${new Date(from).toISOString()} – ${new Date(to).toISOString()}`,
          );
        }),
        { numRuns: 150 },
      );
    });

    test('an aggregate asked for some sums answers those as the full aggregate does, and 0 for the others (property)', async () => {
      const database = observe.service.context.database;
      // The sums left out are not 0 over the data: a 0 in their place is the option's doing.
      const [whole] = await aggregate(database, { from: START, to: end, dimensions: [] });
      assert.ok(whole && whole.durationCount > 0 && whole.latencyCount > 0 && whole.inputTokens > 0 && whole.toolCallCount > 0);
      await fc.assert(
        fc.asyncProperty(instant(), instant(), async (a, b) => {
          const [from, to] = a <= b ? [a, b] : [b, a];
          const full = await aggregate(database, { from, to, dimensions: ['agent_id'] });
          const some = await aggregate(database, { from, to, dimensions: ['agent_id'], sums: ['errorCount', 'costNanos'] });
          assert.deepEqual(
            some,
            full.map((row) => ({ ...emptySums(), agent_id: row.agent_id, eventCount: row.eventCount, errorCount: row.errorCount, costNanos: row.costNanos })),
          );
        }),
        { numRuns: 40 },
      );
    });

    // The spec's GET /api/analytics by day and by week (weeks start on Monday, UTC): buckets that
    // daily rows serve whole, and the cut days at either end.
    test('GET /api/analytics by day and by week equals the events of each bucket of the range (property)', async () => {
      await fc.assert(
        fc.asyncProperty(instant(), instant(), fc.constantFrom('day', 'week'), async (a, b, granularity) => {
          const [from, to] = a <= b ? [a, b] : [b, a];
          const url = `/api/analytics?granularity=${granularity}&from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`;
          const response = await observe.call({ method: 'GET', url });
          assert.equal(response.statusCode, 200, response.body);
          const reported = (response.json() as { buckets: { bucket: string; eventCount: number; errorCount: number; totalCostUsd: number }[] }).buckets
            .filter((bucket) => bucket.eventCount > 0)
            .map(({ bucket, eventCount, errorCount, totalCostUsd }) => ({ bucket, eventCount, errorCount, totalCostUsd }));
          const rows = await db().selectFrom('events').select(['ts', 'is_error', 'cost_usd']).where('ts', '>=', from).where('ts', '<=', to).execute();
          const bucketOf = (ts: number) =>
            granularity === 'day' ? Math.floor(ts / DAY_MS) * DAY_MS : Math.floor((ts - WEEK_OFFSET) / (7 * DAY_MS)) * 7 * DAY_MS + WEEK_OFFSET;
          const byBucket = new Map<number, { eventCount: number; errorCount: number; cost: number }>();
          for (const row of rows) {
            const key = bucketOf(Number(row.ts));
            const entry = byBucket.get(key) ?? { eventCount: 0, errorCount: 0, cost: 0 };
            entry.eventCount += 1;
            entry.errorCount += Number(row.is_error);
            entry.cost += Number(row.cost_usd ?? 0);
            byBucket.set(key, entry);
          }
          const recomputed = [...byBucket.entries()]
            .sort(([x], [y]) => x - y)
            .map(([bucket, { eventCount, errorCount, cost }]) => ({
              bucket: new Date(bucket).toISOString(),
              eventCount,
              errorCount,
              totalCostUsd: Math.round(cost * 1e9) / 1e9,
            }));
          assert.deepEqual(reported, recomputed, url);
        }),
        { numRuns: 100 },
      );
    });
  });
}
