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
          assert.deepEqual(
            await reportedAgents(observe, from, to),
            await recomputedAgents(db(), from, to),
            `${new Date(from).toISOString()} – ${new Date(to).toISOString()}`,
          );
        }),
        { numRuns: 150 },
      );
    });
  });
}
