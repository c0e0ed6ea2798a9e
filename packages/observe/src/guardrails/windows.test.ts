import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { bucketWidth, latestMetricOf, maxCost, maxErrorRate, RollingWindow, SeenPositions } from './windows.ts';

const event = (ts: number, isError = 0, cost: number | null = null) => ({ ts, is_error: isError, cost_usd: cost });

test('a window rolls: buckets wholly inside are exact, the edge buckets are bounds, buckets behind the window are dropped', () => {
  const window = new RollingWindow(60_000, 0);
  assert.equal(window.width, 1000);
  window.addEvent(event(0, 1, 0.5)); // bucket [0, 999]
  window.addEvent(event(30_500, 0, 0.25)); // bucket [30 000, 30 999]
  window.addEvent(event(59_999, 1)); // bucket [59 000, 59 999]

  // now = 60 000: [0, 60 000] holds every bucket wholly.
  assert.deepEqual(window.bounds(60_000), {
    inside: { eventCount: 3, errorCount: 2, costNanos: 750_000_000 },
    edges: { eventCount: 0, errorCount: 0, costNanos: 0 },
  });
  // now = 60 500: [500, 60 500]: the first bucket straddles the edge.
  assert.deepEqual(window.bounds(60_500), {
    inside: { eventCount: 2, errorCount: 1, costNanos: 250_000_000 },
    edges: { eventCount: 1, errorCount: 1, costNanos: 500_000_000 },
  });
  assert.equal(window.bucketCount, 3);
  // now = 61 000: [1000, 61 000]: the first bucket is behind the window for good.
  assert.deepEqual(window.bounds(61_000).edges, { eventCount: 0, errorCount: 0, costNanos: 0 });
  assert.equal(window.bucketCount, 2);
  // Far later every bucket is gone.
  assert.deepEqual(window.bounds(1_000_000), { inside: { eventCount: 0, errorCount: 0, costNanos: 0 }, edges: { eventCount: 0, errorCount: 0, costNanos: 0 } });
  assert.equal(window.bucketCount, 0);
});

test('events dated after now are kept for later and count only once their time has come', () => {
  const window = new RollingWindow(10_000, 0);
  window.addEvent(event(20_000, 1, 2));
  assert.equal(maxCost(window.bounds(15_000)), 0);
  assert.equal(maxErrorRate(window.bounds(15_000)), null);
  assert.equal(maxCost(window.bounds(25_000)), 2);
  assert.equal(maxErrorRate(window.bounds(25_000)), 100);
});

test('bucket width: about 60 buckets over any window, never below 1 ms', () => {
  assert.equal(bucketWidth(1000), 17);
  assert.equal(bucketWidth(300_000), 5000);
  assert.equal(bucketWidth(86_400_000), 1_440_000);
  assert.equal(bucketWidth(30), 1);
});

test('the bounds never understate the exact error rate or cost over [now − length, now] (property)', () => {
  const events = fc.array(
    fc.record({
      ts: fc.integer({ min: 0, max: 200_000 }),
      isError: fc.integer({ min: 0, max: 1 }),
      cost: fc.oneof(fc.constant(null), fc.double({ min: 0, max: 10, noNaN: true })),
    }),
    { maxLength: 80 },
  );
  fc.assert(
    fc.property(events, fc.integer({ min: 1000, max: 150_000 }), fc.integer({ min: 0, max: 250_000 }), (list, length, now) => {
      const window = new RollingWindow(length, 0);
      for (const e of list) window.addEvent(event(e.ts, e.isError, e.cost));
      const inWindow = list.filter((e) => e.ts >= now - length && e.ts <= now);
      const errors = inWindow.filter((e) => e.isError === 1).length;
      const cost = inWindow.reduce((sum, e) => sum + (e.cost ?? 0), 0);
      const bounds = window.bounds(now);
      assert.ok(maxCost(bounds) >= cost - 1e-9, `cost ${cost} > bound ${maxCost(bounds)}`);
      const bound = maxErrorRate(bounds);
      if (errors === 0) return;
      const rate = 100 * (errors / inWindow.length); // measure's arithmetic
      assert.ok(bound !== null && bound >= rate, `rate ${rate} > bound ${bound}`);
    }),
    { numRuns: 500 },
  );
});

test('seen positions: a window is complete only when every commit after its seed was seen here', () => {
  const seen = new SeenPositions();
  assert.equal(seen.latest, 0);
  assert.equal(seen.covers(5, 5), true, 'nothing committed since the seed');
  assert.equal(seen.covers(5, 6), false);
  seen.add({ first: 6, last: 8 });
  seen.add({ first: 11, last: 11 }); // 9 and 10 were another instance's
  assert.equal(seen.covers(5, 8), true);
  assert.equal(seen.covers(5, 11), false, 'the gap 9–10');
  assert.equal(seen.covers(10, 11), true, 'seeded after the gap');
  assert.equal(seen.latest, 11);
  seen.add({ first: 9, last: 10 }); // reported late (out of order)
  assert.equal(seen.covers(5, 11), true);
  assert.equal(seen.latest, 11);
  // Bounded: the oldest ranges go, and a window needing them is seeded again.
  const small = new SeenPositions(2);
  small.add({ first: 1, last: 1 });
  small.add({ first: 3, last: 3 });
  small.add({ first: 5, last: 5 });
  assert.equal(small.covers(0, 1), false);
  assert.equal(small.covers(4, 5), true);
});

test('custom metrics from committed events: the latest by time then id, payload.data before metadata, numbers only', () => {
  const committed = (id: string, ts: number, data: unknown, metadata: object = {}) => ({
    row: { id, ts, metadata: JSON.stringify(metadata) },
    payload: { type: 'score', data },
  });
  const events = [
    committed('b', 2000, { quality: { score: 0.4 } }),
    committed('a', 2000, { quality: { score: 0.9 } }),
    committed('c', 1000, { quality: { score: 0.1 } }),
    committed('d', 3000, { quality: { score: 'high' } }),
    committed('e', 500, {}, { quality: { score: 0.7 } }),
  ];
  assert.equal(latestMetricOf(events, 'quality.score'), 0.4, "ts 2000 twice: id 'b' is the later; 'd' holds no number");
  assert.equal(
    latestMetricOf([committed('f', 9000, { quality: 1 }, { quality: { score: 0.2 } }), ...events], 'quality.score'),
    0.2,
    'metadata when payload.data has no number',
  );
  assert.equal(latestMetricOf([committed('g', 9000, { quality: { score: 0.3 } }, { quality: { score: 0.2 } })], 'quality.score'), 0.3, 'payload.data first');
  assert.equal(latestMetricOf(events, 'missing'), null);
});
