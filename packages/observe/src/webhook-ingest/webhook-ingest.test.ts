import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { startTestGate, type TestGate } from '@vigil/gate/testing';
import { describeEachDatabase } from '@vigil/platform/testing';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { assertErrorBody, startTestObserve, type TestObserve } from '../testing.ts';
import type { Event } from '../events/index.ts';

const APPROVAL_SECRET = 'approval-gate-env-secret-0123456789';
const FORM_SECRET = 'form-service-env-secret-0123456789';
const NOW_ISO = '2026-11-22T10:00:00.000Z';
const INGEST = '/api/events/ingest';

const sign = (secret: string, body: string | Buffer): string => createHmac('sha256', secret).update(body).digest('hex');

/** An event as the API answers it. */
type StoredEvent = Event;

interface IngestAnswer {
  ok: true;
  eventId: string;
  eventType: string;
  sessionId: string;
}

interface SendOptions {
  /** Sign the body with this secret (X-Webhook-Signature). */
  secret?: string;
  /** Send exactly this signature header. */
  signature?: string;
  /** Send Authorization: Bearer <key>. */
  key?: string;
  headers?: Record<string, string>;
}

/** POST /api/events/ingest with exactly the given body text and only the given credentials. */
function send(observe: TestObserve, body: object | string, options: SendOptions = {}): Promise<LightMyRequestResponse> {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const headers: Record<string, string> = { 'content-type': 'application/json', ...options.headers };
  if (options.secret !== undefined) headers['x-webhook-signature'] = sign(options.secret, text);
  if (options.signature !== undefined) headers['x-webhook-signature'] = options.signature;
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  return observe.service.app.inject({ method: 'POST', url: INGEST, payload: text, headers } satisfies InjectOptions);
}

function assertCreated(response: LightMyRequestResponse, eventType: string, sessionId: string): IngestAnswer {
  assert.equal(response.statusCode, 201, response.body);
  const body = response.json() as IngestAnswer;
  assert.deepEqual(Object.keys(body).sort(), ['eventId', 'eventType', 'ok', 'sessionId']);
  assert.equal(body.ok, true);
  assert.equal(typeof body.eventId, 'string');
  assert.equal(body.eventType, eventType);
  assert.equal(body.sessionId, sessionId);
  return body;
}

async function getEvent(observe: TestObserve, id: string): Promise<StoredEvent> {
  const response = await observe.call({ method: 'GET', url: `/api/events/${id}` });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as StoredEvent;
}

async function eventTotal(observe: TestObserve): Promise<number> {
  const response = await observe.call({ method: 'GET', url: '/api/events?limit=1' });
  assert.equal(response.statusCode, 200, response.body);
  return (response.json() as { total: number }).total;
}

async function sessionOf(observe: TestObserve, id: string): Promise<{ id: string; agentId: string; eventCount: number } | null> {
  const response = await observe.call({ method: 'GET', url: `/api/sessions/${encodeURIComponent(id)}` });
  if (response.statusCode === 404) return null;
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as { id: string; agentId: string; eventCount: number };
}

async function timeline(observe: TestObserve, id: string): Promise<{ events: StoredEvent[]; chainValid: boolean }> {
  const response = await observe.call({ method: 'GET', url: `/api/sessions/${encodeURIComponent(id)}/timeline` });
  assert.equal(response.statusCode, 200, response.body);
  return response.json() as { events: StoredEvent[]; chainValid: boolean };
}

const approval = (event: string, data: Record<string, unknown>, context?: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  source: 'approval_gate',
  event,
  data,
  ...(context !== undefined && { context }),
  ...extra,
});
const form = (event: string, data: Record<string, unknown>, context?: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  source: 'form_service',
  event,
  data,
  ...(context !== undefined && { context }),
  ...extra,
});

await describeEachDatabase('POST /api/events/ingest: the mapping table', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend, { env: { APPROVAL_GATE_WEBHOOK_SECRET: APPROVAL_SECRET, FORM_SERVICE_WEBHOOK_SECRET: FORM_SECRET } });
  });
  after(() => observe.close());

  const rows: { source: 'approval_gate' | 'form_service'; event: string; eventType: string; data: Record<string, unknown> }[] = [
    {
      source: 'approval_gate',
      event: 'request.created',
      eventType: 'approval_requested',
      data: { requestId: 'r-1', action: 'payments.refund', params: { amount: 120 }, urgency: 'high' },
    },
    {
      source: 'approval_gate',
      event: 'request.approved',
      eventType: 'approval_granted',
      data: { requestId: 'r-1', action: 'payments.refund', decidedBy: 'api:admin', reason: 'routine' },
    },
    {
      source: 'approval_gate',
      event: 'request.denied',
      eventType: 'approval_denied',
      data: { requestId: 'r-2', action: 'drop.table', decidedBy: 'policy:p1' },
    },
    {
      source: 'approval_gate',
      event: 'request.expired',
      eventType: 'approval_expired',
      data: { requestId: 'r-3', action: 'send.invoice', decidedBy: 'system:expiry' },
    },
    {
      source: 'form_service',
      event: 'submission.created',
      eventType: 'form_submitted',
      data: { submissionId: 'f-1', formId: 'onboarding', formName: 'Onboarding', fieldCount: 4 },
    },
    {
      source: 'form_service',
      event: 'submission.completed',
      eventType: 'form_completed',
      data: { submissionId: 'f-1', formId: 'onboarding', completedBy: 'user:ann', durationMs: 5400 },
    },
    {
      source: 'form_service',
      event: 'submission.expired',
      eventType: 'form_expired',
      data: { submissionId: 'f-2', formId: 'survey', expiredAfterMs: 86_400_000 },
    },
  ];

  for (const row of rows) {
    test(`${row.source} ${row.event} becomes ${row.eventType}, signed, without an API key`, async () => {
      const secret = row.source === 'approval_gate' ? APPROVAL_SECRET : FORM_SECRET;
      const timestamp = '2026-11-22T09:30:00.000Z';
      const body = {
        source: row.source,
        event: row.event,
        data: row.data,
        timestamp,
        context: { service_session_id: `sess-${row.event}`, service_agent_id: 'agent-1' },
      };
      const answer = assertCreated(await send(observe, body, { secret }), row.eventType, `sess-${row.event}`);
      const stored = await getEvent(observe, answer.eventId);
      assert.equal(stored.eventType, row.eventType);
      assert.equal(stored.sessionId, `sess-${row.event}`);
      assert.equal(stored.agentId, 'agent-1');
      assert.equal(stored.timestamp, timestamp);
      assert.equal(stored.severity, 'info');
      assert.deepEqual(stored.payload, row.data, 'the payload is the webhook data');
      assert.deepEqual(stored.metadata, { webhook: { source: row.source, event: row.event } });
      assert.equal(stored.prevHash, null);
    });
  }

  test('generic: data.eventType custom with type and nested data becomes a custom event {type, data} (API key required)', async () => {
    const body = {
      source: 'generic',
      event: 'deploy.finished',
      data: { eventType: 'custom', type: 'deploy', data: { service: 'billing', ok: true } },
      context: { service_session_id: 'sess-generic', service_agent_id: 'ci' },
    };
    const answer = assertCreated(await send(observe, body, { key: observe.key }), 'custom', 'sess-generic');
    const stored = await getEvent(observe, answer.eventId);
    assert.equal(stored.eventType, 'custom');
    assert.deepEqual(stored.payload, { type: 'deploy', data: { service: 'billing', ok: true } });
    assert.equal(stored.agentId, 'ci');
    assert.equal(stored.timestamp, NOW_ISO, 'timestamp defaults to server time');
    assert.deepEqual(stored.metadata, { webhook: { source: 'generic', event: 'deploy.finished' } });
  });

  test("generic: any ingestible event type, validated by that type's payload schema", async () => {
    const body = {
      source: 'generic',
      event: 'tool.used',
      data: { eventType: 'tool_call', toolName: 'search', callId: 'c-1', arguments: { q: 'x' } },
      context: { service_session_id: 'sess-generic-tool' },
    };
    const answer = assertCreated(await send(observe, body, { key: observe.key }), 'tool_call', 'sess-generic-tool');
    assert.deepEqual((await getEvent(observe, answer.eventId)).payload, { toolName: 'search', callId: 'c-1', arguments: { q: 'x' } });

    const before = await eventTotal(observe);
    const bad = await send(observe, { ...body, data: { eventType: 'tool_call', toolName: 'search' } }, { key: observe.key });
    const error = assertErrorBody(bad, 400, 'tool_call without callId');
    assert.ok(
      (error.details as { path: string }[]).some((d) => d.path === 'data.callId'),
      JSON.stringify(error.details),
    );
    for (const eventType of ['eval_result', 'nope', 42]) {
      const response = await send(observe, { ...body, data: { eventType, type: 't', data: 1 } }, { key: observe.key });
      const answerBody = assertErrorBody(response, 400, `generic eventType ${String(eventType)}`);
      assert.equal((answerBody.details as { path: string }[])[0]!.path, 'data.eventType');
    }
    assertErrorBody(await send(observe, { ...body, data: { type: 't', data: 1 } }, { key: observe.key }), 400, 'generic without data.eventType');
    assert.equal(await eventTotal(observe), before, 'nothing stored');
  });

  test('generic without context.service_session_id goes to session generic:<event>, agent external', async () => {
    const body = { source: 'generic', event: 'nightly.report', data: { eventType: 'custom', type: 'report', data: { rows: 3 } } };
    const first = assertCreated(await send(observe, body, { key: observe.key }), 'custom', 'generic:nightly.report');
    const second = assertCreated(await send(observe, body, { key: observe.key }), 'custom', 'generic:nightly.report');
    assert.equal((await getEvent(observe, first.eventId)).agentId, 'external');
    assert.equal((await getEvent(observe, second.eventId)).prevHash, (await getEvent(observe, first.eventId)).hash);
  });

  test('generic needs an API key: none, a wrong one, or only a signature is 401', async () => {
    const before = await eventTotal(observe);
    const body = { source: 'generic', event: 'x', data: { eventType: 'custom', type: 't', data: 1 }, context: { service_session_id: 'sess-open' } };
    assertErrorBody(await send(observe, body), 401, 'no credentials');
    assertErrorBody(await send(observe, body, { key: 'vgl_wrong-key-0000000000000000000000000000' }), 401, 'wrong key');
    assertErrorBody(await send(observe, body, { secret: APPROVAL_SECRET }), 401, 'a signature is not a key');
    assertErrorBody(await send(observe, body, { secret: FORM_SECRET }), 401, 'a signature is not a key');
    assert.equal(await eventTotal(observe), before);
    assert.equal(await sessionOf(observe, 'sess-open'), null);
  });

  test('the signed sources need their signature even with a valid API key', async () => {
    const before = await eventTotal(observe);
    const body = approval('request.created', { requestId: 'r-key', action: 'a', params: {}, urgency: 'low' });
    assertErrorBody(await send(observe, body, { key: observe.key }), 401, 'key, no signature');
    assertErrorBody(
      await send(observe, body, { key: observe.key, signature: sign('other-secret-0123456789', JSON.stringify(body)) }),
      401,
      'key, bad signature',
    );
    assertCreated(await send(observe, body, { key: observe.key, secret: APPROVAL_SECRET }), 'approval_requested', 'approval:r-key');
    assert.equal(await eventTotal(observe), before + 1);
  });

  test('the route is documented in the OpenAPI description', async () => {
    const response = await observe.call({ method: 'GET', url: '/api/openapi.json' });
    assert.equal(response.statusCode, 200);
    const doc = response.json() as { paths: Record<string, Record<string, { requestBody?: unknown }>> };
    assert.ok(doc.paths[INGEST]?.post?.requestBody, 'body documented');
    const entry = observe.service.app.routeTable.find((r) => r.method === 'POST' && r.url === INGEST);
    assert.equal(entry?.auth, 'signature', 'credentials are required (key or signature), never public');
  });
});

await describeEachDatabase('POST /api/events/ingest: session correlation', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend, { env: { APPROVAL_GATE_WEBHOOK_SECRET: APPROVAL_SECRET, FORM_SERVICE_WEBHOOK_SECRET: FORM_SECRET } });
  });
  after(() => observe.close());

  test('service_session_id of an existing session joins its chain; the agent defaults to the session agent', async () => {
    const seeded = await observe.call({
      method: 'POST',
      url: '/api/events',
      payload: { events: [{ sessionId: 'sess-existing', agentId: 'agent-owner', eventType: 'session_started', payload: { agentName: 'Owner' } }] },
    });
    assert.equal(seeded.statusCode, 201, seeded.body);
    const body = approval(
      'request.created',
      { requestId: 'r-ex', action: 'deploy', params: { env: 'prod' }, urgency: 'normal' },
      { service_session_id: 'sess-existing' },
    );
    const answer = assertCreated(await send(observe, body, { secret: APPROVAL_SECRET }), 'approval_requested', 'sess-existing');
    const stored = await getEvent(observe, answer.eventId);
    assert.equal(stored.agentId, 'agent-owner');
    assert.equal(stored.seq, 1);
    const line = await timeline(observe, 'sess-existing');
    assert.equal(line.chainValid, true);
    assert.deepEqual(
      line.events.map((e) => e.eventType),
      ['session_started', 'approval_requested'],
    );
    assert.equal(line.events[1]!.prevHash, line.events[0]!.hash);
    assert.equal((await sessionOf(observe, 'sess-existing'))!.eventCount, 2);
  });

  test('service_agent_id wins over the session agent', async () => {
    const body = approval(
      'request.denied',
      { requestId: 'r-ex', action: 'deploy', decidedBy: 'api:ops' },
      { service_session_id: 'sess-existing', service_agent_id: 'agent-other' },
    );
    const answer = assertCreated(await send(observe, body, { secret: APPROVAL_SECRET }), 'approval_denied', 'sess-existing');
    assert.equal((await getEvent(observe, answer.eventId)).agentId, 'agent-other');
    assert.equal((await timeline(observe, 'sess-existing')).chainValid, true);
  });

  test('service_session_id of an unknown session creates it, with service_agent_id as its agent, else external', async () => {
    assert.equal(await sessionOf(observe, 'sess-new'), null);
    const withAgent = form(
      'submission.created',
      { submissionId: 's-1', formId: 'f', fieldCount: 2 },
      { service_session_id: 'sess-new', service_agent_id: 'agent-new' },
    );
    assertCreated(await send(observe, withAgent, { secret: FORM_SECRET }), 'form_submitted', 'sess-new');
    assert.equal((await sessionOf(observe, 'sess-new'))!.agentId, 'agent-new');

    const noAgent = form('submission.created', { submissionId: 's-2', formId: 'f', fieldCount: 2 }, { service_session_id: 'sess-new-anon' });
    const answer = assertCreated(await send(observe, noAgent, { secret: FORM_SECRET }), 'form_submitted', 'sess-new-anon');
    assert.equal((await getEvent(observe, answer.eventId)).agentId, 'external');
    assert.equal((await sessionOf(observe, 'sess-new-anon'))!.agentId, 'external');
  });

  test('null context fields count as absent; unknown context fields are ignored', async () => {
    const body = form(
      'submission.expired',
      { submissionId: 's-null', formId: 'f', expiredAfterMs: 1000 },
      { service_session_id: null, service_agent_id: null, trace: 'abc' },
    );
    const answer = assertCreated(await send(observe, body, { secret: FORM_SECRET }), 'form_expired', 'form:s-null');
    assert.equal((await getEvent(observe, answer.eventId)).agentId, 'external');
  });

  test("without a session id, an approval's lifecycle lands in session approval:<requestId>, agent carried by the session", async () => {
    const created = approval(
      'request.created',
      { requestId: 'r-life', action: 'payments.refund', params: { amount: 5 }, urgency: 'critical' },
      { service_agent_id: 'agent-pay' },
      { timestamp: '2026-11-22T09:00:00.000Z' },
    );
    const approved = approval(
      'request.approved',
      { requestId: 'r-life', action: 'payments.refund', decidedBy: 'api:ann' },
      {},
      { timestamp: '2026-11-22T09:05:00.000Z' },
    );
    const first = assertCreated(await send(observe, created, { secret: APPROVAL_SECRET }), 'approval_requested', 'approval:r-life');
    const second = assertCreated(await send(observe, approved, { secret: APPROVAL_SECRET }), 'approval_granted', 'approval:r-life');
    assert.equal((await getEvent(observe, first.eventId)).agentId, 'agent-pay');
    assert.equal((await getEvent(observe, second.eventId)).agentId, 'agent-pay', "no service_agent_id: the session's agent");
    const line = await timeline(observe, 'approval:r-life');
    assert.equal(line.chainValid, true);
    assert.deepEqual(
      line.events.map((e) => [e.eventType, e.seq, e.payload.requestId]),
      [
        ['approval_requested', 0, 'r-life'],
        ['approval_granted', 1, 'r-life'],
      ],
    );
    assert.equal(line.events[0]!.prevHash, null);
    assert.equal(line.events[1]!.prevHash, line.events[0]!.hash);

    // An unknown agent in a fresh correlation session: external.
    const other = approval('request.expired', { requestId: 'r-orphan', action: 'x', decidedBy: 'system:expiry' });
    const orphan = assertCreated(await send(observe, other, { secret: APPROVAL_SECRET }), 'approval_expired', 'approval:r-orphan');
    assert.equal((await getEvent(observe, orphan.eventId)).agentId, 'external');
  });

  test("request.redeemed (a receipt redeemed at the gate) becomes a custom approval_redeemed event in the request's session", async () => {
    const redeemed = approval('request.redeemed', { type: 'approval_redeemed', requestId: 'r-redeem', data: { requestId: 'r-redeem', action: 'pay' } });
    const answer = assertCreated(await send(observe, redeemed, { secret: APPROVAL_SECRET }), 'custom', 'approval:r-redeem');
    const stored = await getEvent(observe, answer.eventId);
    assert.equal(stored.payload.type, 'approval_redeemed');
    assert.deepEqual(stored.payload.data, { requestId: 'r-redeem', action: 'pay' });
    assert.deepEqual(stored.metadata, { webhook: { source: 'approval_gate', event: 'request.redeemed' } });
    // Another custom type from the gate has no request to correlate with: it goes to its event's session.
    const other = approval('request.redeemed', { type: 'something_else', requestId: 'r-other', data: {} });
    assertCreated(await send(observe, other, { secret: APPROVAL_SECRET }), 'custom', 'generic:request.redeemed');
  });

  test("without a session id, a form's lifecycle lands in session form:<submissionId>", async () => {
    assertCreated(
      await send(observe, form('submission.created', { submissionId: 'sub-9', formId: 'kyc', fieldCount: 7 }), { secret: FORM_SECRET }),
      'form_submitted',
      'form:sub-9',
    );
    assertCreated(
      await send(observe, form('submission.completed', { submissionId: 'sub-9', formId: 'kyc', completedBy: 'user:bo', durationMs: 12_000 }), {
        secret: FORM_SECRET,
      }),
      'form_completed',
      'form:sub-9',
    );
    const line = await timeline(observe, 'form:sub-9');
    assert.equal(line.chainValid, true);
    assert.deepEqual(
      line.events.map((e) => e.eventType),
      ['form_submitted', 'form_completed'],
    );
    assert.deepEqual(
      line.events.map((e) => e.agentId),
      ['external', 'external'],
    );
  });
});

await describeEachDatabase('POST /api/events/ingest: secrets and signatures', (backend) => {
  let observe: TestObserve;
  before(async () => {
    // Only the approval secret comes from the environment; the form secret is configured over the API.
    observe = await startTestObserve(backend, { env: { APPROVAL_GATE_WEBHOOK_SECRET: APPROVAL_SECRET } });
  });
  after(() => observe.close());

  const body = approval('request.created', { requestId: 'r-sig', action: 'a', params: null, urgency: 'low' }, { service_session_id: 'sess-sig' });
  const text = JSON.stringify(body);

  test('a missing, wrong or foreign signature is 401 and stores nothing', async () => {
    const before = await eventTotal(observe);
    const cases: [string, SendOptions][] = [
      ['no signature header', {}],
      ['empty signature', { signature: '' }],
      ['not hex', { signature: 'not-a-signature' }],
      ['wrong secret', { signature: sign('a-different-secret-0123456789', text) }],
      ['the form secret', { signature: sign(FORM_SECRET, text) }],
      ['truncated', { signature: sign(APPROVAL_SECRET, text).slice(0, 63) }],
      ['one digit off', { signature: sign(APPROVAL_SECRET, text).replace(/^./, (c) => (c === '0' ? '1' : '0')) }],
      ['prefixed', { signature: `sha256=${sign(APPROVAL_SECRET, text)}` }],
      ['signed over other bytes', { signature: sign(APPROVAL_SECRET, `${text} `) }],
    ];
    for (const [label, options] of cases) assertErrorBody(await send(observe, text, options), 401, label);
    // With a valid key but no signature: still 401 (the key does not stand in for the signature).
    assertErrorBody(await send(observe, text, { key: observe.key }), 401, 'key without signature');
    assert.equal(await eventTotal(observe), before);
    assert.equal(await sessionOf(observe, 'sess-sig'), null);
  });

  test('the signature covers the exact bytes: re-serialised JSON with other whitespace or key order fails', async () => {
    const before = await eventTotal(observe);
    const signature = sign(APPROVAL_SECRET, text);
    const pretty = JSON.stringify(body, null, 2);
    assertErrorBody(await send(observe, pretty, { signature }), 401, 'pretty-printed');
    const reordered = JSON.stringify({ event: body.event, source: body.source, context: body.context, data: body.data });
    assertErrorBody(await send(observe, reordered, { signature }), 401, 'reordered');
    // Signed as sent, any formatting is fine.
    assertCreated(await send(observe, pretty, { signature: sign(APPROVAL_SECRET, pretty) }), 'approval_requested', 'sess-sig');
    assert.equal(await eventTotal(observe), before + 1);
  });

  test('multi-byte UTF-8 is signed over its bytes; the hex digest is accepted in either case', async () => {
    const unicode = approval(
      'request.created',
      { requestId: 'r-ü', action: 'überweisung 💶', params: { note: 'ça va' }, urgency: 'normal' },
      { service_session_id: 'sess-sig' },
    );
    const bytes = Buffer.from(JSON.stringify(unicode), 'utf8');
    const response = await observe.service.app.inject({
      method: 'POST',
      url: INGEST,
      payload: bytes,
      headers: { 'content-type': 'application/json; charset=utf-8', 'x-webhook-signature': sign(APPROVAL_SECRET, bytes).toUpperCase() },
    });
    const answer = assertCreated(response, 'approval_requested', 'sess-sig');
    assert.equal((await getEvent(observe, answer.eventId)).payload.action, 'überweisung 💶');
  });

  test('a source without a configured secret is 500 and stores nothing; PUT /api/config configures it', async () => {
    const before = await eventTotal(observe);
    const submission = form('submission.created', { submissionId: 'sub-cfg', formId: 'f', fieldCount: 1 });
    const missing = assertErrorBody(await send(observe, submission, { secret: FORM_SECRET }), 500, 'no form secret');
    assert.match(missing.error as string, /secret/i);
    assert.equal(await eventTotal(observe), before);

    const configured = await observe.call({ method: 'PUT', url: '/api/config', payload: { formServiceWebhookSecret: FORM_SECRET } });
    assert.equal(configured.statusCode, 200, configured.body);
    assert.equal((configured.json() as { formServiceSecretSet: boolean }).formServiceSecretSet, true);
    assertCreated(await send(observe, submission, { secret: FORM_SECRET }), 'form_submitted', 'form:sub-cfg');
    assertErrorBody(await send(observe, submission, { secret: APPROVAL_SECRET }), 401, 'other source secret');
  });

  test('the stored secret wins over the environment; clearing it restores the environment secret', async () => {
    const stored = 'approval-gate-stored-secret-9876543210';
    const put = await observe.call({ method: 'PUT', url: '/api/config', payload: { approvalGateWebhookSecret: stored } });
    assert.equal(put.statusCode, 200, put.body);
    const before = await eventTotal(observe);
    const created = approval('request.created', { requestId: 'r-rot', action: 'a', params: {}, urgency: 'low' });
    assertErrorBody(await send(observe, created, { secret: APPROVAL_SECRET }), 401, 'environment secret after PUT');
    assert.equal(await eventTotal(observe), before);
    assertCreated(await send(observe, created, { secret: stored }), 'approval_requested', 'approval:r-rot');

    const cleared = await observe.call({ method: 'PUT', url: '/api/config', payload: { approvalGateWebhookSecret: null } });
    assert.equal(cleared.statusCode, 200, cleared.body);
    assert.equal((cleared.json() as { approvalGateSecretSet: boolean }).approvalGateSecretSet, true, 'the environment secret applies again');
    assertErrorBody(await send(observe, created, { secret: stored }), 401, 'stored secret after clearing');
    assertCreated(await send(observe, created, { secret: APPROVAL_SECRET }), 'approval_requested', 'approval:r-rot');
    assert.equal((await timeline(observe, 'approval:r-rot')).chainValid, true);
  });
});

await describeEachDatabase('POST /api/events/ingest: bad input is 400 and stores nothing', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend, {
      env: { APPROVAL_GATE_WEBHOOK_SECRET: APPROVAL_SECRET, FORM_SERVICE_WEBHOOK_SECRET: FORM_SECRET, BODY_LIMIT_BYTES: '65536' },
    });
  });
  after(() => observe.close());

  const created = { requestId: 'r-bad', action: 'a', params: {}, urgency: 'low' };

  test('each 400 case, signed correctly, answers the error body with the field path', async () => {
    const before = await eventTotal(observe);
    const cases: [string, string, string | null][] = [
      ['invalid JSON', '{"source":"approval_gate",', null],
      ['empty body', '', null],
      ['not an object', '[1,2]', ''],
      ['missing source', JSON.stringify({ event: 'request.created', data: created }), 'source'],
      ['unknown source', JSON.stringify({ source: 'github', event: 'push', data: {} }), 'source'],
      ['missing event', JSON.stringify({ source: 'approval_gate', data: created }), 'event'],
      ['event not a string', JSON.stringify({ source: 'approval_gate', event: 7, data: created }), 'event'],
      ['unknown event for the source', JSON.stringify(approval('request.confirmed', created)), 'event'],
      ['a form event from approval_gate', JSON.stringify(approval('submission.created', { submissionId: 's', formId: 'f', fieldCount: 1 })), 'event'],
      ['missing data', JSON.stringify({ source: 'approval_gate', event: 'request.created' }), 'data'],
      ['data not an object', JSON.stringify({ source: 'approval_gate', event: 'request.created', data: 'x' }), 'data'],
      ['data misses a field', JSON.stringify(approval('request.created', { requestId: 'r-bad', action: 'a', params: {} })), 'data.urgency'],
      ['data has a bad value', JSON.stringify(approval('request.created', { ...created, urgency: 'extreme' })), 'data.urgency'],
      ['outcome without decidedBy', JSON.stringify(approval('request.denied', { requestId: 'r-bad', action: 'a' })), 'data.decidedBy'],
      ['bad timestamp', JSON.stringify(approval('request.created', created, undefined, { timestamp: 'yesterday' })), 'timestamp'],
      ['timestamp not a string', JSON.stringify(approval('request.created', created, undefined, { timestamp: 1_700_000_000 })), 'timestamp'],
      ['session id too long', JSON.stringify(approval('request.created', created, { service_session_id: 'x'.repeat(300) })), 'context.service_session_id'],
      ['request id too long for a session name', JSON.stringify(approval('request.created', { ...created, requestId: 'r'.repeat(300) })), 'data.requestId'],
      ['U+0000 in a string', JSON.stringify(approval('request.created', { ...created, action: 'a\u0000b' })), 'data.action'],
      [
        '__proto__ key',
        '{"source":"approval_gate","event":"request.created","data":{"__proto__":{"x":1},"requestId":"r","action":"a","params":{},"urgency":"low"}}',
        null,
      ],
    ];
    for (const [label, text, path] of cases) {
      const response = await send(observe, text, { secret: APPROVAL_SECRET });
      const error = assertErrorBody(response, 400, label);
      if (path !== null) {
        const details = error.details as { path: string; message: string }[] | undefined;
        assert.ok(
          details?.some((d) => d.path === path),
          `${label}: details ${JSON.stringify(details)} name ${path}`,
        );
      }
    }
    assert.equal(await eventTotal(observe), before, 'nothing stored');
    assert.equal(await sessionOf(observe, 'approval:r-bad'), null);
  });

  test('the source is read before the signature; the rest only after it', async () => {
    // Unsigned bad input with a signed source: the signature fails first (nothing about the payload is disclosed).
    const unsigned = approval('request.created', { requestId: 'r-bad' });
    assertErrorBody(await send(observe, unsigned, { signature: 'f'.repeat(64) }), 401, 'bad payload, bad signature');
    // Without a source there is no secret to check against: 400.
    assertErrorBody(await send(observe, { event: 'request.created', data: created }, { signature: 'f'.repeat(64) }), 400, 'no source');
  });

  test('a body that is not JSON is refused with 415', async () => {
    const response = await observe.service.app.inject({
      method: 'POST',
      url: INGEST,
      payload: 'source=approval_gate',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-webhook-signature': sign(APPROVAL_SECRET, 'source=approval_gate') },
    });
    assertErrorBody(response, 415, 'form-encoded');
  });

  test('an over-size body is 413 (the body limit holds while the raw bytes are kept for the signature)', async () => {
    const before = await eventTotal(observe);
    const big = JSON.stringify(approval('request.created', { ...created, params: { blob: 'x'.repeat(observe.config.bodyLimitBytes) } }));
    assertErrorBody(await send(observe, big, { secret: APPROVAL_SECRET }), 413, 'over-size');
    assert.equal(await eventTotal(observe), before);
  });
});

await describeEachDatabase('POST /api/events/ingest with AUTH_DISABLED=true', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend, { env: { AUTH_DISABLED: 'true', APPROVAL_GATE_WEBHOOK_SECRET: APPROVAL_SECRET }, createKey: false });
  });
  after(() => observe.close());

  test('generic needs no key, but the signed sources still need their signature', async () => {
    assertCreated(await send(observe, { source: 'generic', event: 'e', data: { eventType: 'custom', type: 't', data: 1 } }), 'custom', 'generic:e');
    const body = approval('request.created', { requestId: 'r-dev', action: 'a', params: {}, urgency: 'low' });
    assertErrorBody(await send(observe, body), 401, 'no signature');
    assertCreated(await send(observe, body, { secret: APPROVAL_SECRET }), 'approval_requested', 'approval:r-dev');
  });
});

const INGEST_BATCH = '/api/events/ingest/batch';

/** POST /api/events/ingest/batch with exactly the given body text, signed with `secret` unless told otherwise. */
function sendBatch(observe: TestObserve, body: object | string, secret: string | null = APPROVAL_SECRET): Promise<LightMyRequestResponse> {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (secret !== null) headers['x-webhook-signature'] = sign(secret, text);
  return observe.service.app.inject({ method: 'POST', url: INGEST_BATCH, payload: text, headers });
}

await describeEachDatabase('POST /api/events/ingest/batch', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend, { env: { APPROVAL_GATE_WEBHOOK_SECRET: APPROVAL_SECRET, FORM_SERVICE_WEBHOOK_SECRET: FORM_SECRET } });
  });
  after(() => observe.close());

  const created = (requestId: string, sessionId: string): object => ({
    source: 'approval_gate',
    event: 'request.created',
    data: { requestId, action: 'deploy', params: {}, urgency: 'normal' },
    timestamp: NOW_ISO,
    context: { service_session_id: sessionId, service_agent_id: 'agent-b' },
  });

  test('each element becomes the event the single route makes; refused elements are answered in place and the rest stored', async () => {
    const before = await eventTotal(observe);
    const response = await sendBatch(observe, {
      source: 'approval_gate',
      events: [
        created('rb-1', 'sess-batch-1'),
        { ...created('rb-2', 'sess-batch-1'), event: 'request.unknown' },
        { ...created('rb-3', 'sess-batch-2'), source: 'form_service' },
        {
          source: 'approval_gate',
          event: 'request.approved',
          data: { requestId: 'rb-1', action: 'deploy', decidedBy: 'api:admin' },
          timestamp: NOW_ISO,
          context: { service_session_id: 'sess-batch-1' },
        },
      ],
    });
    assert.equal(response.statusCode, 201, response.body);
    const { results } = response.json() as { results: ({ ok: true; eventId: string; eventType: string; sessionId: string } | { ok: false; error: string })[] };
    assert.equal(results.length, 4);
    assert.deepEqual(
      results.map((r) => r.ok),
      [true, false, false, true],
    );
    assert.match((results[1] as { error: string }).error, /unknown event for source approval_gate/);
    assert.match((results[2] as { error: string }).error, /events\.2\.source: must be approval_gate/);
    const [first, , , approved] = results as { eventId: string; eventType: string; sessionId: string }[];
    assert.deepEqual([first!.eventType, first!.sessionId], ['approval_requested', 'sess-batch-1']);
    assert.deepEqual([approved!.eventType, approved!.sessionId], ['approval_granted', 'sess-batch-1']);
    assert.equal(await eventTotal(observe), before + 2);
    const stored = await getEvent(observe, first!.eventId);
    assert.deepEqual(stored.payload, { requestId: 'rb-1', action: 'deploy', params: {}, urgency: 'normal' });
    assert.equal(stored.agentId, 'agent-b');
    assert.deepEqual((stored.metadata as { webhook: unknown }).webhook, { source: 'approval_gate', event: 'request.created' });
    const line = await timeline(observe, 'sess-batch-1');
    assert.equal(line.chainValid, true);
    assert.deepEqual(
      line.events.map((e) => e.eventType),
      ['approval_requested', 'approval_granted'],
    );
  });

  test('the signature covers the whole batch: missing or wrong is 401 and stores nothing', async () => {
    const before = await eventTotal(observe);
    const body = { source: 'approval_gate', events: [created('rb-9', 'sess-batch-9')] };
    assertErrorBody(await sendBatch(observe, body, null), 401);
    assertErrorBody(await sendBatch(observe, body, FORM_SECRET), 401);
    assert.equal(await eventTotal(observe), before);
  });

  test('generic, an empty or over-long batch, or events that are not an array are 400', async () => {
    const before = await eventTotal(observe);
    assertErrorBody(await sendBatch(observe, { source: 'generic', events: [created('rb-8', 'sess-batch-8')] }), 400);
    assertErrorBody(await sendBatch(observe, { source: 'approval_gate', events: [] }), 400);
    assertErrorBody(await sendBatch(observe, { source: 'approval_gate', events: created('rb-8', 'sess-batch-8') }), 400);
    assertErrorBody(
      await sendBatch(observe, { source: 'approval_gate', events: Array.from({ length: 501 }, (_, i) => created(`rb-x${i}`, 'sess-batch-8')) }),
      400,
    );
    assert.equal(await eventTotal(observe), before);
  });

  test('the route is documented and needs its signature', async () => {
    const doc = (await observe.call({ method: 'GET', url: '/api/openapi.json' })).json() as {
      paths: Record<string, Record<string, { requestBody?: unknown }>>;
    };
    assert.ok(doc.paths[INGEST_BATCH]?.post?.requestBody, 'body documented');
    const entry = observe.service.app.routeTable.find((r) => r.method === 'POST' && r.url === INGEST_BATCH);
    assert.equal(entry?.auth, 'signature');
  });
});

await describeEachDatabase('approval gate → observe, end to end', (backend) => {
  let observe: TestObserve;
  let gate: TestGate;
  before(async () => {
    observe = await startTestObserve(backend, { env: { APPROVAL_GATE_WEBHOOK_SECRET: APPROVAL_SECRET } });
    await observe.service.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = observe.service.app.server.address() as AddressInfo;
    gate = await startTestGate(backend, { env: { OBSERVE_URL: `http://127.0.0.1:${port}`, OBSERVE_WEBHOOK_SECRET: APPROVAL_SECRET } });
  });
  after(async () => {
    await gate.close();
    await observe.close();
  });

  test('a request auto-denied by policy lands in the observe session as approval_requested then approval_denied', async () => {
    const policy = await gate.call({
      method: 'POST',
      url: '/api/policies',
      payload: { name: 'deny drops', priority: 1, rules: [{ match: { action: 'db.drop' }, decision: 'auto_deny' }] },
    });
    assert.equal(policy.statusCode, 201, policy.body);
    const policyId = (policy.json() as { id: string }).id;
    const response = await gate.call({
      method: 'POST',
      url: '/api/requests',
      payload: { action: 'db.drop', params: { table: 'users' }, urgency: 'high', context: { sessionId: 'sess-e2e', agentId: 'agent-e2e' } },
    });
    assert.equal(response.statusCode, 201, response.body);
    const request = response.json() as { id: string; status: string };
    assert.equal(request.status, 'denied');

    const deadline = Date.now() + 10_000;
    let events: StoredEvent[] = [];
    for (;;) {
      const listed = await observe.call({ method: 'GET', url: '/api/events?sessionId=sess-e2e&order=asc' });
      assert.equal(listed.statusCode, 200, listed.body);
      events = (listed.json() as { events: StoredEvent[] }).events;
      const types = new Set(events.map((e) => e.eventType));
      if (types.has('approval_requested') && types.has('approval_denied')) break;
      if (Date.now() > deadline) assert.fail(`observe did not receive both events: ${JSON.stringify(events.map((e) => e.eventType))}`);
      await gate.service.context.outbox.deliverDue();
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const requested = events.find((e) => e.eventType === 'approval_requested')!;
    const denied = events.find((e) => e.eventType === 'approval_denied')!;
    assert.deepEqual(requested.payload, { requestId: request.id, action: 'db.drop', params: { table: 'users' }, urgency: 'high' });
    assert.equal(denied.payload.requestId, request.id);
    assert.equal(denied.payload.action, 'db.drop');
    assert.equal(denied.payload.decidedBy, `policy:${policyId}`);
    for (const event of [requested, denied]) {
      assert.equal(event.agentId, 'agent-e2e');
      assert.equal(event.sessionId, 'sess-e2e');
      assert.deepEqual((event.metadata as { webhook: { source: string } }).webhook.source, 'approval_gate');
    }
    const line = await timeline(observe, 'sess-e2e');
    assert.equal(line.chainValid, true);
    assert.equal(line.events.length, 2);

    // Every observe delivery of the gate was accepted with 201 (the gate records it just after the response).
    for (;;) {
      const rows = await gate.service.context.database.db
        .selectFrom('deliveries')
        .select(['status', 'response_status'])
        .where('kind', '=', 'observe')
        .execute();
      assert.equal(rows.length, 2);
      if (rows.every((row) => row.status === 'delivered')) {
        for (const row of rows) assert.equal(row.response_status, 201);
        break;
      }
      assert.ok(
        rows.every((row) => row.status !== 'failed'),
        JSON.stringify(rows),
      );
      if (Date.now() > deadline) assert.fail(`gate deliveries not recorded as delivered: ${JSON.stringify(rows)}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  });
});
