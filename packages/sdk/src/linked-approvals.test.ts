/**
 * Approvals with the two services linked as `npm start` links them (the gate forwards request
 * events to observe): every approval fact is in the agent's session once, and the session's seqs
 * follow its timeline. An agent on the SDK records its approvals itself; a request made without
 * the SDK is recorded by the gate's forwarding.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { eventually, startLiveServices, type LiveServices } from '@vigil/cli/testing';
import { GateClient, ObserveClient, traceTool, withApproval } from './node.ts';

let live: LiveServices;
let observe: ObserveClient;
let admin: GateClient;

before(async () => {
  live = await startLiveServices({ linked: true });
  // The SDK's default batching (1 s): the gate's copies used to arrive before the agent's queued events.
  observe = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey });
  admin = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
  await admin.createPolicy({ name: 'refunds need a human', priority: 10, rules: [{ match: { action: 'refund' }, decision: 'route_to_human' }] });
});

after(async () => {
  await observe?.close();
  await live?.close();
});

const APPROVAL_TYPES = ['approval_requested', 'approval_granted', 'approval_denied', 'approval_expired'];

/** The session's timeline once its approval events are all stored (forwarded copies arrive in the background). */
async function timelineWith(sessionId: string, approvalEvents: number) {
  await eventually(
    () => observe.getTimeline(sessionId),
    (timeline) => timeline.events.filter((e) => APPROVAL_TYPES.includes(e.eventType)).length >= approvalEvents,
    10_000,
    `${approvalEvents} approval events in ${sessionId}`,
  );
  // Whatever could still be on its way (a duplicate forwarded copy) has arrived by now.
  await sleep(300);
  return observe.getTimeline(sessionId);
}

/** Timeline order (timestamp, then seq) is seq order: 0, 1, 2, … with no gap. */
function assertSeqsFollowTimeline(events: { seq: number; eventType: string; timestamp: string }[]): void {
  assert.deepEqual(
    events.map((e) => e.seq),
    events.map((_, i) => i),
    events.map((e) => `#${e.seq} ${e.timestamp} ${e.eventType}`).join('\n'),
  );
}

test('an SDK agent loop (traced tools, withApproval, a human deciding) records each approval event once, in seq order', async () => {
  const agentGate = new GateClient({ baseUrl: live.gateUrl, apiKey: await live.gateKey('refund-agent', ['request:create', 'request:read']) });
  const lookup = traceTool('lookup_order', async (orderId: string) => {
    await sleep(20);
    return { orderId, amount: 349 };
  });
  let sessionId = '';
  let requestId = '';
  const refund = await observe.withSession({ agentId: 'refund-agent', tags: ['refunds'] }, async (session) => {
    sessionId = session.id;
    const order = await lookup('1042');
    return withApproval(agentGate, 'refund', order, (outcome) => ({ refundId: `rf_${outcome.id}` }), {
      toolName: 'issue_refund',
      wait: {
        pollIntervalMs: 20,
        onPending: (request) => {
          requestId = request.id;
          void sleep(200).then(() => admin.decide(request.id, 'approved', 'damaged on delivery'));
        },
      },
    });
  });
  assert.equal(refund.refundId, `rf_${requestId}`);

  const { events, chainValid } = await timelineWith(sessionId, 2);
  assert.equal(chainValid, true);
  assert.deepEqual(
    events.map((e) => e.eventType),
    ['session_started', 'tool_call', 'tool_response', 'approval_requested', 'approval_granted', 'custom', 'tool_call', 'tool_response', 'session_ended'],
  );
  assertSeqsFollowTimeline(events);
  const [requested, granted] = events.filter((e) => APPROVAL_TYPES.includes(e.eventType));
  assert.equal(requested!.payload.requestId, requestId);
  assert.deepEqual(granted!.payload, { requestId, action: 'refund', decidedBy: 'api:admin (GATE_ADMIN_KEY)', reason: 'damaged on delivery' });
  // The receipt's redemption, recorded once by the agent (the gate forwards no copy).
  assert.deepEqual(
    events.filter((e) => e.eventType === 'custom').map((e) => e.payload),
    [{ type: 'approval_redeemed', data: { requestId, action: 'refund' } }],
  );

  // The gate's side links to the session: the request names it and its tags (tag budgets cover it), and says the agent records its events.
  const request = await admin.getRequest(requestId);
  assert.deepEqual(request.context, { tags: ['refunds'], sessionId, agentId: 'refund-agent', recordedByAgent: true });
});

test('a request made without the SDK (plain HTTP, context naming the session) is recorded once, by the gate', async () => {
  const sessionId = `plain-http-${Date.now()}`;
  const events = [{ sessionId, agentId: 'curl-agent', eventType: 'session_started', payload: {} }];
  const posted = await fetch(`${live.observeUrl}/api/events`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${live.observeKey}` },
    body: JSON.stringify({ events }),
  });
  assert.equal(posted.status, 201, await posted.text());
  const created = await fetch(`${live.gateUrl}/api/requests`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${live.gateAdminKey}` },
    body: JSON.stringify({ action: 'refund', params: { orderId: '7' }, context: { sessionId, agentId: 'curl-agent' } }),
  });
  assert.equal(created.status, 201);
  const { id } = (await created.json()) as { id: string };
  await admin.decide(id, 'denied', 'not eligible');

  const { events: stored, chainValid } = await timelineWith(sessionId, 2);
  assert.equal(chainValid, true);
  assert.deepEqual(
    stored.map((e) => [e.eventType, e.payload.requestId ?? null, e.agentId]),
    [
      ['session_started', null, 'curl-agent'],
      ['approval_requested', id, 'curl-agent'],
      ['approval_denied', id, 'curl-agent'],
    ],
  );
  assertSeqsFollowTimeline(stored);
});
