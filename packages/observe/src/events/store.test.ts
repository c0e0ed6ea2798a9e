import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EventRow } from './tables.ts';
import { eventJson, toEvent } from './store.ts';

const row: EventRow = {
  id: '01a201b0-7cbb-78aa-bca1-53233445752b',
  session_id: 'quote " back\\slash \u2028 line',
  session_start: 0,
  seq: 7,
  agent_id: 'agent/ü',
  event_type: 'custom',
  severity: 'warn',
  ts: Date.parse('2026-11-22T10:00:00.123Z'),
  payload: '{"data":{"a":[1,2.5,null],"s":"x\\"y"},"type":"t"}',
  metadata: '{}',
  prev_hash: null,
  hash: Buffer.from('ab'.repeat(32), 'hex'),
  written_by: 'key:01a2',
  is_error: 0,
  cost_usd: null,
  duration_ms: null,
  latency_ms: null,
  tool_name: null,
  call_id: null,
  provider: null,
  model: null,
  input_tokens: null,
  output_tokens: null,
  complexity_tier: null,
  finish_reason: null,
};

test('eventJson splices stored JSON into exactly the object toEvent builds', () => {
  assert.deepEqual(JSON.parse(eventJson(row)), toEvent(row));
  const chained = { ...row, prev_hash: Buffer.from('cd'.repeat(32), 'hex') };
  assert.deepEqual(JSON.parse(eventJson(chained)), toEvent(chained));
  // Hashes are stored as bytes and shown in hex.
  assert.equal(toEvent(chained).hash, 'ab'.repeat(32));
  assert.equal(toEvent(chained).prevHash, 'cd'.repeat(32));
  assert.equal(toEvent(chained).writtenBy, 'key:01a2');
  const unrecorded = { ...row, written_by: null };
  assert.deepEqual(JSON.parse(eventJson(unrecorded)), toEvent(unrecorded));
  assert.equal(toEvent(unrecorded).writtenBy, null);
});
