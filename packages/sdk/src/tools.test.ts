import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startLiveServices, type LiveServices } from '@vigil/cli/testing';
import { ApprovalDeniedError, GateClient, ObserveClient, currentSession, traceTool, withApproval, type VigilSession } from './node.ts';

let live: LiveServices;
let observe: ObserveClient;
let agentGate: GateClient;
let admin: GateClient;

before(async () => {
  live = await startLiveServices();
  observe = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey, flushIntervalMs: 50 });
  admin = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
  agentGate = new GateClient({ baseUrl: live.gateUrl, apiKey: await live.gateKey('tools-agent', ['request:create', 'request:read']) });
  await admin.createPolicy({
    name: 'tools-test',
    priority: 10,
    rules: [
      { match: { action: 'small_refund' }, decision: 'auto_approve' },
      { match: { action: { $regex: '^delete_' } }, decision: 'auto_deny' },
      { match: { action: 'pay' }, decision: 'route_to_human' },
    ],
  });
});

after(async () => {
  await observe?.close();
  await live?.close();
});

async function stored(sessionId: string) {
  return (await observe.listEvents({ sessionId, order: 'asc', limit: 500 })).events;
}

describe('ambient sessions', () => {
  test('withSession makes the session ambient across awaits, keeps concurrent sessions apart, and ends it completed', async () => {
    const search = traceTool('search', async (query: string) => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      return { hits: [query.toUpperCase()] };
    });
    const ids: string[] = [];
    const results = await Promise.all(
      ['a', 'b'].map((name) =>
        observe.withSession({ agentId: `ambient-${name}` }, async (session) => {
          ids.push(session.id);
          assert.equal(currentSession(), session);
          await search(`${name}-1`);
          await search(`${name}-2`);
          return name;
        }),
      ),
    );
    assert.deepEqual(results, ['a', 'b']);
    assert.equal(currentSession(), undefined, 'outside withSession nothing is ambient');
    for (const [i, name] of ['a', 'b'].entries()) {
      const events = await stored(ids[i]!);
      assert.deepEqual(
        events.map((e) => e.eventType),
        ['session_started', 'tool_call', 'tool_response', 'tool_call', 'tool_response', 'session_ended'],
      );
      assert.deepEqual(
        events.filter((e) => e.eventType === 'tool_call').map((e) => e.payload.arguments),
        [`${name}-1`, `${name}-2`],
        'each session holds only its own calls',
      );
      assert.deepEqual(events[2]!.payload.result, { hits: [`${name.toUpperCase()}-1`] });
      assert.ok((events[2]!.payload.durationMs as number) >= 15);
      assert.equal((await observe.getSession(ids[i]!)).status, 'completed');
    }
  });

  test('withSession ends the session with reason error when the work throws, and rethrows', async () => {
    let id = '';
    await assert.rejects(
      observe.withSession({ agentId: 'ambient-fail' }, (session) => {
        id = session.id;
        throw new Error('planner crashed');
      }),
      /planner crashed/,
    );
    const events = await stored(id);
    assert.deepEqual(events.at(-1)!.payload, {
      reason: 'error',
      summary: 'planner crashed',
      totalToolCalls: 0,
      totalDurationMs: events.at(-1)!.payload.totalDurationMs,
    });
  });

  test('traceTool records a failing tool as tool_error (severity error, its code) and rethrows; an explicit session wins over the ambient one', async () => {
    const explicit = observe.startSession({ agentId: 'explicit' });
    const failing = traceTool(
      'charge_card',
      async (_amount: number, _currency: string) => {
        throw Object.assign(new Error('card declined'), { code: 'DECLINED' });
      },
      { session: explicit, serverName: 'payments' },
    );
    let ambientId = '';
    await observe.withSession({ agentId: 'ambient-other' }, async (session) => {
      ambientId = session.id;
      await assert.rejects(failing(25, 'EUR'), /card declined/);
    });
    await explicit.end();
    const events = await stored(explicit.id);
    const call = events.find((e) => e.eventType === 'tool_call')!;
    assert.deepEqual(call.payload.arguments, [25, 'EUR'], 'several arguments are recorded as their list');
    assert.equal(call.payload.serverName, 'payments');
    const error = events.find((e) => e.eventType === 'tool_error')!;
    assert.equal(error.severity, 'error');
    assert.equal(error.payload.error, 'card declined');
    assert.equal(error.payload.errorCode, 'DECLINED');
    assert.deepEqual(
      (await stored(ambientId)).map((e) => e.eventType),
      ['session_started', 'session_ended'],
    );
  });

  test('outside any session a traced tool still runs, unrecorded', async () => {
    const double = traceTool('double', (n: number) => n * 2);
    assert.equal(await double(21), 42);
  });
});

describe('withApproval', () => {
  async function inSession<T>(agentId: string, fn: (session: VigilSession) => Promise<T>): Promise<{ id: string; result: T | Error }> {
    let id = '';
    let result: T | Error;
    try {
      result = await observe.withSession({ agentId }, (session) => {
        id = session.id;
        return fn(session);
      });
    } catch (error) {
      result = error as Error;
    }
    return { id, result };
  }

  test('an approved action runs as a tool call after approval_requested and approval_granted, and the gate is told it ran', async () => {
    let requestId = '';
    const { id, result } = await inSession('approver', () =>
      withApproval(agentGate, 'small_refund', { orderId: '1042', amount: 20 }, (outcome) => {
        requestId = outcome.id;
        return { refundId: 'rf_1' };
      }),
    );
    assert.deepEqual(result, { refundId: 'rf_1' });
    const events = await stored(id);
    assert.deepEqual(
      events.map((e) => e.eventType),
      ['session_started', 'approval_requested', 'approval_granted', 'custom', 'tool_call', 'tool_response', 'session_ended'],
    );
    assert.deepEqual(events[1]!.payload, { requestId, action: 'small_refund', params: { orderId: '1042', amount: 20 }, urgency: 'normal' });
    assert.equal(events[2]!.payload.requestId, requestId);
    assert.match(String(events[2]!.payload.decidedBy), /policy/);
    assert.deepEqual(events[3]!.payload, { type: 'approval_redeemed', data: { requestId, action: 'small_refund' } });
    assert.equal(events[4]!.payload.toolName, 'small_refund');
    await agentGate.flush(); // runApproved confirms off the call path
    const request = await admin.getRequest(requestId);
    assert.deepEqual(request.context, { sessionId: id, agentId: 'approver', recordedByAgent: true });
    assert.notEqual(request.confirmedAt, null);
    assert.deepEqual(request.executionResult, { ok: true, result: { refundId: 'rf_1' } });
  });

  test('a denied action does not run: approval_denied (warn) is recorded and ApprovalDeniedError thrown', async () => {
    let ran = false;
    const { id, result } = await inSession('denied', () =>
      withApproval(agentGate, 'delete_database', { name: 'prod' }, () => {
        ran = true;
      }),
    );
    assert.equal(ran, false);
    assert.ok(result instanceof ApprovalDeniedError);
    assert.equal(result.outcome.status, 'denied');
    const events = await stored(id);
    assert.deepEqual(
      events.map((e) => e.eventType),
      ['session_started', 'approval_requested', 'approval_denied', 'session_ended'],
    );
    assert.equal(events[2]!.severity, 'warn');
    assert.equal(events[2]!.payload.requestId, result.requestId);
  });

  test('a request routed to a human waits for the decision, and a failed action is confirmed as failed', async () => {
    const decider = new GateClient({ baseUrl: live.gateUrl, apiKey: await live.gateKey('supervisor', ['request:read', 'request:decide']) });
    let pendingId = '';
    const { id, result } = await inSession('waiter', () =>
      withApproval(
        agentGate,
        'pay',
        { amount: 2500 },
        () => {
          throw new Error('bank offline');
        },
        {
          urgency: 'high',
          wait: {
            pollIntervalMs: 20,
            onPending: (request) => {
              pendingId = request.id;
              void decider.decide(request.id, 'approved', 'invoice checked');
            },
          },
        },
      ),
    );
    assert.match(String(result), /bank offline/);
    const events = await stored(id);
    assert.deepEqual(
      events.map((e) => e.eventType),
      ['session_started', 'approval_requested', 'approval_granted', 'custom', 'tool_call', 'tool_error', 'session_ended'],
    );
    assert.equal(events[1]!.payload.urgency, 'high');
    assert.deepEqual(
      { decidedBy: events[2]!.payload.decidedBy, reason: events[2]!.payload.reason },
      { decidedBy: 'api:supervisor', reason: 'invoice checked' },
    );
    await agentGate.flush(); // runApproved confirms off the call path
    const request = await admin.getRequest(pendingId);
    assert.deepEqual(request.executionResult, { ok: false, error: 'bank offline' });
  });
});
