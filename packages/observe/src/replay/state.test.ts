import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  LLM_HISTORY_LIMIT,
  matchesReplayFilter,
  pairEvents,
  REPLAY_EVENT_TYPES,
  ReplayState,
  summarize,
  TOOL_RESULTS_LIMIT,
  toReplayEvent,
  WARNINGS_LIMIT,
  type ReplayEvent,
  type ReplayEventType,
} from './state.ts';

const T0 = Date.parse('2026-11-22T09:00:00.000Z');

let seq = 0;
function ev(eventType: string, payload: Record<string, unknown>, options: { at?: number; severity?: string } = {}): ReplayEvent {
  const n = seq++;
  return toReplayEvent({
    id: `e${n}`,
    seq: n,
    eventType,
    severity: options.severity ?? 'info',
    ts: T0 + (options.at ?? n * 1000),
    payloadJson: JSON.stringify(payload),
    writtenBy: null,
  });
}

const toolCall = (callId: string, toolName = 'search', at?: number) => ev('tool_call', { callId, toolName, arguments: {} }, { at });
const toolResponse = (callId: string, toolName = 'search', at?: number) =>
  ev('tool_response', { callId, toolName, result: { ok: callId }, durationMs: 10 }, { at });
const toolError = (callId: string, toolName = 'search', at?: number) => ev('tool_error', { callId, toolName, error: 'boom', durationMs: 20 }, { at });
const llmCall = (callId: string, at?: number) =>
  ev('llm_call', { callId, provider: 'openai', model: 'gpt-4o-mini', messages: [{ role: 'user', content: callId }] }, { at });
const llmResponse = (callId: string, costUsd = 0.001, at?: number) =>
  ev(
    'llm_response',
    {
      callId,
      provider: 'openai',
      model: 'gpt-4o-mini',
      completion: `re:${callId}`,
      finishReason: 'stop',
      usage: { inputTokens: 1, outputTokens: 1 },
      costUsd,
      latencyMs: 50,
    },
    { at },
  );
const approvalRequested = (requestId: string, at?: number) => ev('approval_requested', { requestId, action: 'pay', params: {}, urgency: 'high' }, { at });
const approvalGranted = (requestId: string, at?: number) => ev('approval_granted', { requestId, action: 'pay', decidedBy: 'api:admin' }, { at });

function replay(events: ReplayEvent[]): ReturnType<ReplayState['context']>[] {
  const state = new ReplayState(events.length);
  return events.map((e) => {
    state.advance(e);
    return state.context();
  });
}

describe('replay state (pure)', () => {
  test('pairs requests with outcomes both ways, FIFO for a reused id, and leaves orphans unpaired', () => {
    const events = [
      toolCall('c1'), // 0
      llmCall('l1'), // 1
      toolResponse('c1'), // 2
      llmResponse('l1'), // 3
      toolResponse('ghost'), // 4: no call
      toolCall('dup'), // 5
      toolCall('dup'), // 6
      toolError('dup'), // 7 pairs with 5
      toolResponse('dup'), // 8 pairs with 6
      approvalRequested('r1'), // 9
      approvalGranted('r1'), // 10
      ev('form_submitted', { submissionId: 'f1', formId: 'x', fieldCount: 1 }), // 11
      ev('form_completed', { submissionId: 'f1', formId: 'x', completedBy: 'u', durationMs: 1 }), // 12
      toolCall('never'), // 13: no outcome
    ];
    assert.deepEqual([...pairEvents(events)], [2, 3, 0, 1, -1, 7, 8, 5, 6, 10, 9, 12, 11, -1]);
  });

  test('context: counts, cumulative cost (one definition), elapsed time, errors', () => {
    const events = [
      ev('session_started', {}, { at: 0 }),
      llmCall('l1', 1000),
      llmResponse('l1', 0.25, 3000),
      ev('cost_tracked', { provider: 'openai', model: 'm', inputTokens: 1, outputTokens: 1, totalTokens: 2, costUsd: 0.5 }, { at: 4000 }),
      ev('custom', { type: 'x', data: { costUsd: 99 } }, { at: 5000 }), // not a spend event
      toolCall('c1', 'search', 6000),
      toolError('c1', 'search', 6500), // error event by type
      ev('custom', { type: 'crash', data: {} }, { at: 7000, severity: 'critical' }), // error event by severity
    ];
    const contexts = replay(events);
    assert.equal(contexts[0]!.eventIndex, 0);
    assert.equal(contexts[0]!.totalEvents, 8);
    assert.equal(contexts[0]!.elapsedMs, 0);
    assert.equal(contexts[1]!.cumulativeCostUsd, 0);
    assert.equal(contexts[2]!.cumulativeCostUsd, 0.25);
    assert.equal(contexts[3]!.cumulativeCostUsd, 0.75);
    assert.equal(contexts[4]!.cumulativeCostUsd, 0.75);
    assert.equal(contexts[2]!.elapsedMs, 3000);
    assert.equal(contexts[7]!.elapsedMs, 7000);
    assert.deepEqual(contexts[4]!.eventCounts, { session_started: 1, llm_call: 1, llm_response: 1, cost_tracked: 1, custom: 1 });
    assert.deepEqual(contexts[7]!.eventCounts, { session_started: 1, llm_call: 1, llm_response: 1, cost_tracked: 1, custom: 2, tool_call: 1, tool_error: 1 });
    assert.deepEqual(
      contexts.map((c) => c.errorCount),
      [0, 0, 0, 0, 0, 0, 1, 2],
    );
  });

  test('llmHistory: entry at the call, completed by the response, orphan responses, capped at the last 50', () => {
    const contexts = replay([llmCall('l1'), llmResponse('l1', 0.01), llmResponse('orphan', 0.02)]);
    assert.deepEqual(contexts[0]!.llmHistory, [
      { callId: 'l1', provider: 'openai', model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'l1' }], response: null, costUsd: null, latencyMs: null },
    ]);
    assert.deepEqual(contexts[1]!.llmHistory, [
      { callId: 'l1', provider: 'openai', model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'l1' }], response: 're:l1', costUsd: 0.01, latencyMs: 50 },
    ]);
    assert.deepEqual(contexts[2]!.llmHistory[1], {
      callId: 'orphan',
      provider: 'openai',
      model: 'gpt-4o-mini',
      messages: null,
      response: 're:orphan',
      costUsd: 0.02,
      latencyMs: 50,
    });
    assert.equal(contexts[2]!.warnings[0]!.code, 'unmatched_llm_response');

    const many: ReplayEvent[] = [llmCall('early')];
    for (let i = 0; i < 60; i++) many.push(llmCall(`l${i}`), llmResponse(`l${i}`));
    many.push(llmResponse('early')); // its call left the window long ago
    const state = new ReplayState(many.length);
    for (const e of many) state.advance(e);
    const history = state.context().llmHistory;
    assert.equal(history.length, LLM_HISTORY_LIMIT);
    assert.deepEqual(
      history.map((h) => h.callId),
      Array.from({ length: 50 }, (_, i) => `l${i + 10}`),
    );
    assert.ok(history.every((h) => h.response !== null));
    assert.equal(state.context().warnings.length, 0, 'the late response still paired with its call');
  });

  test('toolResults: ok / error entries, capped at the last 50', () => {
    const contexts = replay([toolCall('a'), toolResponse('a'), toolCall('b', 'fetch'), toolError('b', 'fetch')]);
    assert.deepEqual(contexts[3]!.toolResults, [
      { callId: 'a', toolName: 'search', ok: true, result: { ok: 'a' }, error: null, durationMs: 10 },
      { callId: 'b', toolName: 'fetch', ok: false, result: null, error: 'boom', durationMs: 20 },
    ]);
    const events: ReplayEvent[] = [];
    for (let i = 0; i < 70; i++) events.push(toolCall(`t${i}`), toolResponse(`t${i}`));
    const state = new ReplayState(events.length);
    for (const e of events) state.advance(e);
    const results = state.context().toolResults;
    assert.equal(results.length, TOOL_RESULTS_LIMIT);
    assert.equal(results[0]!.callId, 't20');
    assert.equal(results[49]!.callId, 't69');
  });

  test('pendingApprovals appear at the request and clear at the outcome, in request order', () => {
    const contexts = replay([
      approvalRequested('r1', 0),
      approvalRequested('r2', 1000),
      approvalGranted('r1', 5000),
      ev('approval_denied', { requestId: 'r2', action: 'pay', decidedBy: 'u' }, { at: 6000 }),
      ev('approval_expired', { requestId: 'r3', action: 'pay', decidedBy: 'system:expiry' }, { at: 7000 }),
    ]);
    assert.deepEqual(contexts[0]!.pendingApprovals, [{ requestId: 'r1', action: 'pay', urgency: 'high', requestedAt: new Date(T0).toISOString() }]);
    assert.deepEqual(
      contexts[1]!.pendingApprovals.map((a) => a.requestId),
      ['r1', 'r2'],
    );
    assert.deepEqual(
      contexts[2]!.pendingApprovals.map((a) => a.requestId),
      ['r2'],
    );
    assert.deepEqual(contexts[3]!.pendingApprovals, []);
    assert.deepEqual(
      contexts[4]!.warnings.map((w) => w.code),
      ['unmatched_approval_outcome'],
    );
  });

  test('warnings: warn severity, unmatched outcomes, duplicate open requests; capped at the last 50', () => {
    const events = [
      ev('custom', { type: 'slow', data: {} }, { severity: 'warn' }),
      toolResponse('nobody'),
      toolError('nobody2'),
      llmResponse('nobody3'),
      toolCall('x'),
      toolCall('x'),
    ];
    const contexts = replay(events);
    assert.deepEqual(
      contexts[5]!.warnings.map((w) => [w.eventIndex, w.eventId, w.code]),
      [
        [0, events[0]!.id, 'warn_event'],
        [1, events[1]!.id, 'unmatched_tool_result'],
        [2, events[2]!.id, 'unmatched_tool_result'],
        [3, events[3]!.id, 'unmatched_llm_response'],
        [5, events[5]!.id, 'duplicate_request'],
      ],
    );
    assert.ok(contexts[5]!.warnings.every((w) => w.message.length > 0));
    const noisy = Array.from({ length: 80 }, () => ev('custom', { type: 'slow', data: {} }, { severity: 'warn' }));
    const last = replay(noisy).at(-1)!;
    assert.equal(last.warnings.length, WARNINGS_LIMIT);
    assert.equal(last.warnings[0]!.eventIndex, 30);
  });

  test('a clone (checkpoint) resumed anywhere renders exactly what replaying from step 0 renders', () => {
    // A pseudo-random mix of every kind of event, with ids reused and outcomes missing.
    let x = 42;
    const rand = (n: number): number => {
      x = (x * 1103515245 + 12345) % 2147483648;
      return x % n;
    };
    const events: ReplayEvent[] = [];
    for (let i = 0; i < 400; i++) {
      const id = `k${rand(30)}`;
      const make = [toolCall, toolResponse, toolError, llmCall, (c: string) => llmResponse(c), approvalRequested, approvalGranted][rand(7)]!;
      events.push(rand(10) === 0 ? ev('custom', { type: 't', data: {} }, { severity: rand(2) ? 'warn' : 'error' }) : make(id));
    }
    const reference = new ReplayState(events.length);
    const expected = events.map((e) => {
      reference.advance(e);
      return reference.contextJson();
    });
    for (const at of [0, 1, 57, 199, 200, 333]) {
      const state = new ReplayState(events.length);
      for (let i = 0; i < at; i++) state.advance(events[i]!);
      const checkpoint = state.clone();
      // Advancing the original further must not leak into the checkpoint.
      for (let i = at; i < events.length; i++) state.advance(events[i]!);
      const resumed = checkpoint.clone();
      for (let i = at; i < events.length; i++) {
        resumed.advance(events[i]!);
        assert.equal(resumed.contextJson(), expected[i], `step ${i} resumed from ${at}`);
      }
    }
    assert.deepEqual(JSON.parse(expected[399]!), reference.context());
  });

  test('summary over the whole session', () => {
    const events = [
      ev('session_started', {}, { at: 0 }),
      llmCall('l1', 1000),
      llmResponse('l1', 0.1, 2000),
      llmResponse('solo', 0.2, 2500), // counted: an LLM call logged by its response only
      ev('cost_tracked', { provider: 'anthropic', model: 'claude-x', inputTokens: 1, outputTokens: 1, totalTokens: 2, costUsd: 0.3 }, { at: 3000 }),
      toolCall('c1', 'search', 4000),
      toolError('c1', 'search', 4100),
      toolCall('c2', 'fetch', 5000),
      ev('session_ended', { reason: 'completed' }, { at: 9000 }),
    ];
    assert.deepEqual(summarize(events, pairEvents(events)), {
      totalCost: 0.6,
      totalLlmCalls: 2,
      totalToolCalls: 2,
      totalErrors: 1,
      models: ['claude-x', 'gpt-4o-mini'],
      tools: ['fetch', 'search'],
    });
    assert.deepEqual(summarize([], new Int32Array(0)), {
      totalCost: 0,
      totalLlmCalls: 0,
      totalToolCalls: 0,
      totalErrors: 0,
      models: [],
      tools: [],
    });
  });

  test('eventTypes filter values, including error, decision and observation', () => {
    const sample: Record<string, ReplayEvent> = {
      session_started: ev('session_started', {}),
      session_ended: ev('session_ended', { reason: 'completed' }),
      llm_call: llmCall('l'),
      llm_response: llmResponse('l'),
      llm_response_error: ev('llm_response', { callId: 'z', finishReason: 'error', costUsd: 0, latencyMs: 1 }, { severity: 'error' }),
      tool_call: toolCall('c'),
      tool_response: toolResponse('c'),
      tool_error: toolError('c'),
      approval_requested: approvalRequested('r'),
      approval_granted: approvalGranted('r'),
      form_submitted: ev('form_submitted', { submissionId: 's', formId: 'f', fieldCount: 1 }),
      eval_result: ev('eval_result', { method: 'compliance', score: 1, passed: true }),
      custom: ev('custom', { type: 'x', data: {} }),
      cost_tracked: ev('cost_tracked', { costUsd: 0, provider: 'p', model: 'm', inputTokens: 0, outputTokens: 0, totalTokens: 0 }),
      alert_triggered: ev('alert_triggered', { alertRuleId: 'a' }, { severity: 'warn' }),
      alert_resolved: ev('alert_resolved', { alertRuleId: 'a' }),
    };
    const kept = (value: ReplayEventType): string[] =>
      Object.entries(sample)
        .filter(([, e]) => matchesReplayFilter(e, new Set([value])))
        .map(([name]) => name);
    assert.deepEqual(kept('error'), ['llm_response_error', 'tool_error']);
    assert.deepEqual(kept('decision'), ['approval_requested', 'approval_granted', 'form_submitted', 'eval_result']);
    assert.deepEqual(kept('observation'), ['custom', 'cost_tracked', 'alert_triggered', 'alert_resolved']);
    assert.deepEqual(kept('llm_response'), ['llm_response', 'llm_response_error']);
    for (const value of ['session_started', 'session_ended', 'llm_call', 'tool_call', 'tool_response', 'custom'] as const) {
      assert.deepEqual(kept(value), [value]);
    }
    assert.equal(REPLAY_EVENT_TYPES.length, 10);
    assert.ok(matchesReplayFilter(sample.tool_error!, new Set(['tool_call', 'error'])));
    assert.ok(!matchesReplayFilter(sample.tool_error!, new Set(['tool_call', 'tool_response'])));
  });
});
