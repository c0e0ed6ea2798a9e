import { compareCodeUnits } from '@vigil/platform';
import assert from 'node:assert/strict';
import { test } from 'node:test';
// The feature's entry first: its modules refer to one another at load (derived.ts reads latency.ts's key).
import './index.ts';
import { sketchDeltas, sketchKey, type SketchSource } from './latency.ts';
import { rollupDeltas, rollupKey, type RollupSource } from './rollups.ts';
import { DAILY, HOURLY, spanStart, type Span } from './spans.ts';

const HOUR = 3_600_000;
const agents = ['b', 'a|1', 'a', 'A', 'ab'];
const tools = ['search', 'x|y', '', 'fetch'];
/** Events in an order no key follows: agents, tools and hours shuffled by the index. */
const events = Array.from({ length: 60 }, (_, i) => ({
  ts: ((i * 7) % 5) * HOUR + i,
  agent_id: agents[(i * 3) % agents.length]!,
  event_type: i % 2 === 0 ? 'tool_response' : 'llm_response',
  tool_name: i % 2 === 0 ? tools[i % tools.length]! : null,
  provider: i % 2 === 0 ? null : 'openai',
  model: i % 2 === 0 ? null : `m${i % 3}`,
  is_error: i % 5 === 0 ? 1 : 0,
  cost_usd: i % 2 === 0 ? null : 0.001,
  duration_ms: i % 2 === 0 ? 10 + i : null,
  latency_ms: i % 2 === 0 ? null : 100 + 3 * i,
  input_tokens: null,
  output_tokens: null,
  complexity_tier: i % 2 === 0 ? null : 'simple',
  finish_reason: null,
}));

/** The rollup key an event adds to, as ingest derives it. */
const eventKey = (e: (typeof events)[number], span: Span): string =>
  rollupKey({
    hour: spanStart(e.ts, span),
    agent_id: e.agent_id,
    event_type: e.event_type,
    tool_name: e.tool_name ?? '',
    provider: e.provider ?? '',
    model: e.model ?? '',
    tier: e.complexity_tier ?? '',
  });

/** The upserts take their rows' locks in this order, so two batches over the same rows cannot deadlock. */
function assertOneRowAKeyInKeyOrder(keys: readonly string[]): void {
  assert.deepEqual(keys, [...new Set(keys)].sort(compareCodeUnits), 'one row a key, in key order');
}

test('a batch adds one rollup row per key, in key order (the lock order of the upserts), summing every event of the key', () => {
  for (const span of [HOURLY, DAILY]) {
    const rows = rollupDeltas(events as RollupSource[], span);
    assertOneRowAKeyInKeyOrder(rows.map(rollupKey));
    assert.equal(
      rows.reduce((sum, row) => sum + row.event_count, 0),
      events.length,
    );
    for (const row of rows) {
      const own = events.filter((e) => eventKey(e, span) === rollupKey(row));
      assert.equal(row.event_count, own.length);
      assert.equal(row.error_count, own.filter((e) => e.is_error === 1).length);
    }
  }
});

test('a batch adds one sketch row per key and bin, in key order (the lock order of the upserts), counting every timed event', () => {
  for (const span of [HOURLY, DAILY]) {
    const rows = sketchDeltas(events as SketchSource[], span);
    assertOneRowAKeyInKeyOrder(rows.map(sketchKey));
    assert.equal(
      rows.reduce((sum, row) => sum + row.count, 0),
      events.length,
      'each event has one timed value',
    );
  }
});
