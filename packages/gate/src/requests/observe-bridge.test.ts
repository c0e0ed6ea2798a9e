import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeEachDatabase, REFUSED_URL, sendJson, TestHttpServer, type ReceivedRequest } from '@vigil/platform/testing';
import { startTestGate, type TestGate } from '../testing.ts';

const OBSERVE_SECRET = 'observe-approval-gate-secret-01';
const SERVICE_TOKEN = 'internal-service-token-0123456789';
const INGEST = '/api/events/ingest';
const INGEST_BATCH = '/api/events/ingest/batch';
/** An action the stand-in observe refuses as a batch element (as observe refuses an invalid one). */
const REFUSED_ACTION = 'refused.by.observe';
const BREACH = '/api/internal/eval/guardrail-breach';
const ADMIN_ACTOR = 'api:admin (GATE_ADMIN_KEY)';

interface IngestBody {
  source: string;
  event: string;
  data: Record<string, unknown>;
  timestamp: string;
  context: Record<string, unknown>;
}

interface BreachBody {
  sessionId: string;
  agentId: string;
  breach: { ruleId: string; ruleType?: string; tool?: string; reason?: string; source: string };
}

function validSignature(header: string | string[] | undefined, body: string): boolean {
  if (typeof header !== 'string') return false;
  const expected = createHmac('sha256', OBSERVE_SECRET).update(body).digest('hex');
  return header.length === expected.length && timingSafeEqual(Buffer.from(header), Buffer.from(expected));
}

/** Whether an ingest call carries the signature observe checks (hex HMAC-SHA256 of the raw body). */
const signed = (r: ReceivedRequest): boolean => validSignature(r.headers['x-webhook-signature'], r.body);

/**
 * A stand-in for observe: a real HTTP server that checks ingest signatures and the service token as
 * observe does. `single-only` is an observe without the batch route (404 there).
 */
class FakeObserve extends TestHttpServer {
  constructor(private readonly mode: 'ok' | 'hang' | 'single-only' = 'ok') {
    super((request, res) => {
      if (mode === 'hang') return;
      if (request.url === INGEST_BATCH && mode !== 'single-only') {
        if (!signed(request)) return sendJson(res, 401, { error: 'invalid webhook signature' });
        const { events } = JSON.parse(request.body) as { events: IngestBody[] };
        return sendJson(res, 200, {
          results: events.map((e) =>
            e.data.action === REFUSED_ACTION
              ? { ok: false, error: 'Validation failed' }
              : { ok: true, eventId: 'e1', eventType: 'approval_requested', sessionId: 's1' },
          ),
        });
      }
      if (request.url === INGEST) {
        return signed(request)
          ? sendJson(res, 201, { ok: true, eventId: 'e1', eventType: 'approval_requested', sessionId: 's1' })
          : sendJson(res, 401, { error: 'invalid webhook signature' });
      }
      if (request.url === BREACH) {
        return request.headers.authorization === `Bearer ${SERVICE_TOKEN}`
          ? sendJson(res, 201, { recorded: true, eventId: 'e2' })
          : sendJson(res, 401, { error: 'unauthorized' });
      }
      sendJson(res, 404, { error: 'not found' });
    });
  }

  /** Every event observe accepted, from single and batch requests alike, with the request that carried it. */
  ingested(requestId?: string): (IngestBody & { captured: ReceivedRequest })[] {
    return this.requests
      .flatMap((r) => {
        if (r.url === INGEST) return [{ ...(JSON.parse(r.body) as IngestBody), captured: r }];
        if (r.url === INGEST_BATCH && this.mode !== 'single-only') {
          const { events } = JSON.parse(r.body) as { events: IngestBody[] };
          return events.filter((e) => e.data.action !== REFUSED_ACTION).map((e) => ({ ...e, captured: r }));
        }
        return [];
      })
      .filter((b) => requestId === undefined || b.data.requestId === requestId);
  }

  breaches(): (BreachBody & { captured: ReceivedRequest })[] {
    return this.requests.filter((r) => r.url === BREACH).map((r) => ({ ...(JSON.parse(r.body) as BreachBody), captured: r }));
  }
}

async function eventually<T>(what: string, read: () => T | undefined, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

interface ObserveRow {
  status: string;
  attempts: number;
  body: string;
  last_error: string | null;
}

/** The observe outbox rows once every one satisfies `settled` (deliveries run in the background). */
async function observeRowsSettled(gate: TestGate, settled: (row: ObserveRow) => boolean): Promise<ObserveRow[]> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const rows = await gate.service.context.database.db
      .selectFrom('deliveries')
      .select(['status', 'attempts', 'body', 'last_error'])
      .where('kind', '=', 'observe')
      .execute();
    if (rows.length > 0 && rows.every(settled)) return rows;
    if (Date.now() > deadline) assert.fail(`observe rows not settled: ${JSON.stringify(rows)}`);
    await sleep(20);
  }
}

function observeEnv(observe: { url: string } | string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    OBSERVE_URL: typeof observe === 'string' ? observe : observe.url,
    OBSERVE_WEBHOOK_SECRET: OBSERVE_SECRET,
    INTERNAL_SERVICE_TOKEN: SERVICE_TOKEN,
    ...extra,
  };
}

async function createRequest(gate: TestGate, payload: object): Promise<{ id: string; status: string; decidedBy: string | null }> {
  const response = await gate.call({ method: 'POST', url: '/api/requests', payload });
  assert.equal(response.statusCode, 201, response.body);
  return response.json() as { id: string; status: string; decidedBy: string | null };
}

async function createPolicy(gate: TestGate, action: string, decision: 'auto_deny' | 'auto_approve'): Promise<string> {
  const response = await gate.call({
    method: 'POST',
    url: '/api/policies',
    payload: { name: `${decision} ${action}`, priority: 1, rules: [{ match: { action }, decision }] },
  });
  assert.equal(response.statusCode, 201, response.body);
  return (response.json() as { id: string }).id;
}

await describeEachDatabase('gate → observe forwarding', (backend) => {
  let observe: FakeObserve;
  let gate: TestGate;
  before(async () => {
    observe = await new FakeObserve().start();
    gate = await startTestGate(backend, { env: observeEnv(observe) });
  });
  after(async () => {
    await gate.close();
    await observe.stop();
  });

  test('request.created is POSTed in a batch to /api/events/ingest/batch, signed with X-Webhook-Signature, with the session and agent from the context', async () => {
    const created = await createRequest(gate, {
      action: 'payments.refund',
      params: { amount: 120, currency: 'EUR' },
      context: { sessionId: 'sess-1', agentId: 'agent-1', ticket: 'T-9' },
      urgency: 'high',
    });
    const [event] = await eventually('request.created at observe', () => {
      const seen = observe.ingested(created.id);
      return seen.length >= 1 ? seen : undefined;
    });
    const { captured, ...body } = event!;
    assert.equal(captured.method, 'POST');
    assert.match(String(captured.headers['content-type']), /^application\/json/);
    assert.equal(captured.headers['x-webhook-signature'], createHmac('sha256', OBSERVE_SECRET).update(captured.body).digest('hex'));
    assert.equal(signed(captured), true);
    assert.deepEqual(body, {
      source: 'approval_gate',
      event: 'request.created',
      data: { requestId: created.id, action: 'payments.refund', params: { amount: 120, currency: 'EUR' }, urgency: 'high' },
      timestamp: new Date(gate.clock.now()).toISOString(),
      context: { service_session_id: 'sess-1', service_agent_id: 'agent-1' },
    });
    // Observe answered 201: the outbox row is delivered after one attempt.
    const deadline = Date.now() + 5000;
    for (;;) {
      const rows = await gate.service.context.database.db
        .selectFrom('deliveries')
        .select(['status', 'attempts', 'body'])
        .where('kind', '=', 'observe')
        .execute();
      const mine = rows.filter((r) => (JSON.parse(r.body) as IngestBody).data.requestId === created.id);
      if (mine.length === 1 && mine[0]!.status === 'delivered') {
        assert.equal(mine[0]!.attempts, 1);
        break;
      }
      if (Date.now() > deadline) assert.fail(`observe row not delivered: ${JSON.stringify(mine)}`);
      await sleep(20);
    }
  });

  test('approved and denied decisions are forwarded as request.approved / request.denied with {requestId, action, decidedBy, reason?}', async () => {
    const context = { sessionId: 'sess-2', agentId: 'agent-2' };
    const approved = await createRequest(gate, { action: 'deploy', context });
    const denied = await createRequest(gate, { action: 'drop.table', context });
    await eventually('both created', () => (observe.ingested(approved.id).length && observe.ingested(denied.id).length ? true : undefined));

    gate.clock.advance(1000);
    assert.equal(
      (await gate.call({ method: 'POST', url: `/api/requests/${approved.id}/decide`, payload: { decision: 'approved', reason: 'routine' } })).statusCode,
      200,
    );
    assert.equal((await gate.call({ method: 'POST', url: `/api/requests/${denied.id}/decide`, payload: { decision: 'denied' } })).statusCode, 200);

    const approvedEvent = await eventually('request.approved', () => observe.ingested(approved.id).find((e) => e.event === 'request.approved'));
    assert.equal(signed(approvedEvent.captured), true);
    assert.equal(approvedEvent.source, 'approval_gate');
    assert.deepEqual(approvedEvent.data, { requestId: approved.id, action: 'deploy', decidedBy: ADMIN_ACTOR, reason: 'routine' });
    assert.deepEqual(approvedEvent.context, { service_session_id: 'sess-2', service_agent_id: 'agent-2' });
    assert.equal(approvedEvent.timestamp, new Date(gate.clock.now()).toISOString());

    const deniedEvent = await eventually('request.denied', () => observe.ingested(denied.id).find((e) => e.event === 'request.denied'));
    assert.equal(signed(deniedEvent.captured), true);
    assert.deepEqual(deniedEvent.data, { requestId: denied.id, action: 'drop.table', decidedBy: ADMIN_ACTOR });
    assert.deepEqual(deniedEvent.context, { service_session_id: 'sess-2', service_agent_id: 'agent-2' });

    // Observe knows no request.decided: only the mapped names are sent.
    for (const e of observe.ingested()) assert.ok(['request.created', 'request.approved', 'request.denied', 'request.expired'].includes(e.event), e.event);
  });

  test('expiry is forwarded as request.expired with decidedBy system:expiry', async () => {
    const expiring = await createRequest(gate, {
      action: 'send.invoice',
      context: { sessionId: 'sess-3', agentId: 'agent-3' },
      expiresAt: new Date(gate.clock.now() + 60_000).toISOString(),
    });
    await eventually('created', () => (observe.ingested(expiring.id).length ? true : undefined));
    gate.clock.advance(61_000);
    assert.equal(await gate.service.jobs.expiry.tick(), true);
    const expired = await eventually('request.expired', () => observe.ingested(expiring.id).find((e) => e.event === 'request.expired'));
    assert.equal(signed(expired.captured), true);
    assert.equal(expired.source, 'approval_gate');
    assert.equal(expired.data.requestId, expiring.id);
    assert.equal(expired.data.action, 'send.invoice');
    assert.equal(expired.data.decidedBy, 'system:expiry');
    if ('reason' in expired.data) assert.equal(typeof expired.data.reason, 'string');
    assert.deepEqual(
      Object.keys(expired.data).filter((k) => !['requestId', 'action', 'decidedBy', 'reason'].includes(k)),
      [],
    );
    assert.deepEqual(expired.context, { service_session_id: 'sess-3', service_agent_id: 'agent-3' });
  });

  test('confirm is not forwarded', async () => {
    const created = await createRequest(gate, { action: 'restart.service', context: { sessionId: 'sess-4' } });
    assert.equal((await gate.call({ method: 'POST', url: `/api/requests/${created.id}/decide`, payload: { decision: 'approved' } })).statusCode, 200);
    await eventually('request.approved', () => observe.ingested(created.id).find((e) => e.event === 'request.approved'));
    const confirm = await gate.call({ method: 'POST', url: `/api/requests/${created.id}/confirm`, payload: { result: { ok: true } } });
    assert.equal(confirm.statusCode, 200, confirm.body);
    await sleep(300);
    assert.deepEqual(
      observe.ingested(created.id).map((e) => e.event),
      ['request.created', 'request.approved'],
    );
    const rows = await gate.service.context.database.db.selectFrom('deliveries').select(['event', 'body']).where('kind', '=', 'observe').execute();
    const mine = rows.filter((r) => (JSON.parse(r.body) as IngestBody).data.requestId === created.id);
    assert.deepEqual(mine.map((r) => r.event).sort(), ['request.approved', 'request.created'], 'no observe row queued for confirm');
  });

  test('a request whose agent records its events in its session (context.recordedByAgent) is not forwarded; without a session id it is', async () => {
    const recorded = await createRequest(gate, { action: 'agent.records', context: { sessionId: 'sess-sdk', agentId: 'agent-sdk', recordedByAgent: true } });
    const sessionless = await createRequest(gate, { action: 'agent.records', context: { recordedByAgent: true } });
    for (const id of [recorded.id, sessionless.id]) {
      assert.equal((await gate.call({ method: 'POST', url: `/api/requests/${id}/decide`, payload: { decision: 'approved' } })).statusCode, 200);
    }
    await eventually('the sessionless request forwarded', () => observe.ingested(sessionless.id).find((e) => e.event === 'request.approved'));
    await sleep(300);
    assert.deepEqual(observe.ingested(recorded.id), []);
    const rows = await gate.service.context.database.db.selectFrom('deliveries').select(['body']).where('kind', '=', 'observe').execute();
    assert.equal(rows.filter((r) => (JSON.parse(r.body) as IngestBody).data.requestId === recorded.id).length, 0, 'no observe row queued');
    assert.deepEqual(
      observe.ingested(sessionless.id).map((e) => e.event),
      ['request.created', 'request.approved'],
    );
  });

  test('without a session id in the context, no correlation is invented', async () => {
    const created = await createRequest(gate, { action: 'noop', context: { note: 'x' } });
    const [event] = await eventually('created', () => {
      const seen = observe.ingested(created.id);
      return seen.length ? seen : undefined;
    });
    assert.equal(event!.context.service_session_id, undefined);
    assert.equal(event!.context.service_agent_id, undefined);
  });

  test('a policy auto_deny with context.sessionId is reported to the guardrail-breach endpoint with the service token', async () => {
    const policyId = await createPolicy(gate, 'rm.rf', 'auto_deny');
    const created = await createRequest(gate, { action: 'rm.rf', params: { path: '/' }, context: { sessionId: 'sess-9', agentId: 'agent-9' } });
    assert.equal(created.status, 'denied');
    assert.equal(created.decidedBy, `policy:${policyId}`);

    const breach = await eventually('breach report', () => observe.breaches().find((b) => b.sessionId === 'sess-9'));
    assert.equal(breach.captured.method, 'POST');
    assert.equal(breach.captured.headers.authorization, `Bearer ${SERVICE_TOKEN}`);
    assert.match(String(breach.captured.headers['content-type']), /^application\/json/);
    assert.deepEqual(
      Object.keys(breach)
        .filter((k) => k !== 'captured')
        .sort(),
      ['agentId', 'breach', 'sessionId'],
    );
    assert.equal(breach.sessionId, 'sess-9');
    assert.equal(breach.agentId, 'agent-9');
    assert.equal(typeof breach.breach.ruleId, 'string');
    assert.ok(breach.breach.ruleId.includes(policyId), `ruleId ${breach.breach.ruleId} names the policy`);
    assert.equal(typeof breach.breach.source, 'string');
    assert.ok(breach.breach.source.length > 0);
    if (breach.breach.tool !== undefined) assert.equal(breach.breach.tool, 'rm.rf');
    if (breach.breach.ruleType !== undefined) assert.equal(typeof breach.breach.ruleType, 'string');
    if (breach.breach.reason !== undefined) assert.equal(typeof breach.breach.reason, 'string');
    assert.deepEqual(
      Object.keys(breach.breach).filter((k) => !['ruleId', 'ruleType', 'tool', 'reason', 'source'].includes(k)),
      [],
      'only the fields observe accepts',
    );

    // The deny is also an ingested approval event.
    const denied = await eventually('request.denied', () => observe.ingested(created.id).find((e) => e.event === 'request.denied'));
    assert.equal(denied.data.decidedBy, `policy:${policyId}`);
    assert.equal(signed(denied.captured), true);
  });

  test('auto_deny without a session id, and auto_approve, are not reported as breaches', async () => {
    await createPolicy(gate, 'format.disk', 'auto_deny');
    await createPolicy(gate, 'list.files', 'auto_approve');
    const before = observe.breaches().length;
    const noSession = await createRequest(gate, { action: 'format.disk', context: { agentId: 'agent-5' } });
    assert.equal(noSession.status, 'denied');
    const approved = await createRequest(gate, { action: 'list.files', context: { sessionId: 'sess-5', agentId: 'agent-5' } });
    assert.equal(approved.status, 'approved');
    await eventually('both decisions ingested', () =>
      observe.ingested(noSession.id).some((e) => e.event === 'request.denied') && observe.ingested(approved.id).some((e) => e.event === 'request.approved')
        ? true
        : undefined,
    );
    await sleep(200);
    assert.equal(observe.breaches().length, before);
  });

  test('every forwarded delivery was accepted by observe (signatures valid, rows delivered)', async () => {
    const deadline = Date.now() + 5000;
    let rows: { status: string; attempts: number }[] = [];
    for (;;) {
      rows = await gate.service.context.database.db.selectFrom('deliveries').select(['status', 'attempts']).where('kind', '=', 'observe').execute();
      if (rows.every((r) => r.status === 'delivered') || Date.now() > deadline) break;
      await sleep(20);
    }
    assert.ok(rows.length > 0);
    assert.deepEqual(
      rows.filter((r) => r.status !== 'delivered'),
      [],
    );
    for (const r of observe.requests.filter((x) => x.url === INGEST || x.url === INGEST_BATCH)) assert.equal(signed(r), true);
  });
});

await describeEachDatabase('gate → observe when observe is down or slow', (backend) => {
  test('observe down (connection refused): an auto_deny still answers 201 denied promptly', async () => {
    const gate = await startTestGate(backend, { env: observeEnv(REFUSED_URL) });
    try {
      await createPolicy(gate, 'rm.rf', 'auto_deny');
      const started = Date.now();
      const created = await createRequest(gate, { action: 'rm.rf', context: { sessionId: 'sess-d', agentId: 'agent-d' } });
      assert.equal(created.status, 'denied');
      assert.ok(Date.now() - started < 1000, `took ${Date.now() - started} ms`);
      // The failed forwards stay queued for retry in the outbox.
      const deadline = Date.now() + 3000;
      let rows: { status: string; attempts: number }[] = [];
      while (Date.now() < deadline) {
        rows = await gate.service.context.database.db.selectFrom('deliveries').select(['status', 'attempts']).where('kind', '=', 'observe').execute();
        if (rows.length > 0 && rows.every((r) => r.attempts >= 1)) break;
        await sleep(20);
      }
      assert.ok(rows.length >= 2, 'created and denied are queued for observe');
      for (const row of rows) assert.equal(row.status, 'pending');
      const read = await gate.call({ method: 'GET', url: `/api/requests/${created.id}` });
      assert.equal((read.json() as { status: string }).status, 'denied');
    } finally {
      await gate.close();
    }
  });

  test('observe hanging: an auto_deny still answers 201 denied promptly', async () => {
    const observe = await new FakeObserve('hang').start();
    const gate = await startTestGate(backend, { env: observeEnv(observe, { WEBHOOK_TIMEOUT_MS: '500' }) });
    try {
      await createPolicy(gate, 'rm.rf', 'auto_deny');
      const started = Date.now();
      const created = await createRequest(gate, { action: 'rm.rf', context: { sessionId: 'sess-h', agentId: 'agent-h' } });
      const elapsed = Date.now() - started;
      assert.equal(created.status, 'denied');
      assert.ok(elapsed < 1000, `took ${elapsed} ms`);
      // The breach report did go out (and is still unanswered).
      const breach = await eventually('breach sent', () => observe.breaches()[0]);
      assert.equal(breach.sessionId, 'sess-h');
      // A second request is not held up by the first one's hanging reports either.
      const again = Date.now();
      const second = await createRequest(gate, { action: 'rm.rf', context: { sessionId: 'sess-h2' } });
      assert.equal(second.status, 'denied');
      assert.ok(Date.now() - again < 1000);
    } finally {
      await observe.stop();
      await gate.close();
    }
  });

  test('an OBSERVE_URL with a base path keeps it: POST {OBSERVE_URL}/api/events/ingest/batch and {OBSERVE_URL}/api/internal/eval/guardrail-breach', async () => {
    const observe = await new FakeObserve().start();
    const gate = await startTestGate(backend, { env: observeEnv(`${observe.url}/observe`) });
    try {
      await createPolicy(gate, 'rm.rf', 'auto_deny');
      await createRequest(gate, { action: 'rm.rf', context: { sessionId: 'sess-p', agentId: 'agent-p' } });
      // created and denied share one batch (one transaction), beside the breach report.
      const sent = (path: string): boolean => observe.requests.some((r) => r.url === `/observe${path}`);
      await eventually('the events and the breach report', () => (sent(INGEST_BATCH) && sent(BREACH) ? true : undefined));
      await sleep(100);
      assert.deepEqual(
        [...new Set(observe.requests.map((r) => r.url))].sort(),
        [`/observe${BREACH}`, `/observe${INGEST_BATCH}`].sort(),
        'the base path of OBSERVE_URL was dropped',
      );
    } finally {
      await gate.close();
      await observe.stop();
    }
  });

  test('without INTERNAL_SERVICE_TOKEN no breach is reported, but the events are still forwarded', async () => {
    const observe = await new FakeObserve().start();
    const gate = await startTestGate(backend, { env: { OBSERVE_URL: observe.url, OBSERVE_WEBHOOK_SECRET: OBSERVE_SECRET } });
    try {
      await createPolicy(gate, 'rm.rf', 'auto_deny');
      const created = await createRequest(gate, { action: 'rm.rf', context: { sessionId: 'sess-t', agentId: 'agent-t' } });
      assert.equal(created.status, 'denied');
      await eventually('request.denied forwarded', () => observe.ingested(created.id).find((e) => e.event === 'request.denied'));
      await sleep(200);
      assert.equal(observe.breaches().length, 0);
    } finally {
      await gate.close();
      await observe.stop();
    }
  });

  test('many creations share batch requests; each row is delivered after one attempt', async () => {
    const observe = await new FakeObserve().start();
    const gate = await startTestGate(backend, { env: observeEnv(observe) });
    try {
      const created = await Promise.all(
        Array.from({ length: 40 }, (_, i) => createRequest(gate, { action: 'batch.me', context: { sessionId: `sess-b${i}` } })),
      );
      await eventually('every creation ingested once', () => (created.every((c) => observe.ingested(c.id).length === 1) ? true : undefined));
      const batches = observe.requests.filter((r) => r.url === INGEST_BATCH);
      assert.ok(batches.length < created.length, `${batches.length} requests for ${created.length} events`);
      for (const r of batches) assert.equal(signed(r), true);
      const rows = await observeRowsSettled(gate, (r) => r.status === 'delivered');
      assert.equal(rows.length, created.length);
      for (const row of rows) assert.deepEqual([row.status, row.attempts], ['delivered', 1]);
    } finally {
      await gate.close();
      await observe.stop();
    }
  });

  test('a batch request carries at most 1 MiB of bodies: large events are split over several requests, none lost', async () => {
    const observe = await new FakeObserve().start();
    const gate = await startTestGate(backend, { env: observeEnv(observe) });
    try {
      const blob = 'x'.repeat(400_000);
      const created = await Promise.all(
        Array.from({ length: 4 }, (_, i) => createRequest(gate, { action: 'big.one', params: { blob }, context: { sessionId: `sess-l${i}` } })),
      );
      await eventually('every large event ingested once', () => (created.every((c) => observe.ingested(c.id).length === 1) ? true : undefined));
      for (const r of observe.requests.filter((x) => x.url === INGEST_BATCH))
        assert.ok(Buffer.byteLength(r.body) < 1024 * 1024 + 1000, `${Buffer.byteLength(r.body)} bytes`);
      assert.ok(observe.requests.filter((x) => x.url === INGEST_BATCH).length >= 2);
    } finally {
      await gate.close();
      await observe.stop();
    }
  });

  test('an element observe refuses stays queued for its own retry; the rest of its batch is delivered', async () => {
    const observe = await new FakeObserve().start();
    const gate = await startTestGate(backend, { env: observeEnv(observe) });
    try {
      const [good, refused] = await Promise.all([
        createRequest(gate, { action: 'fine', context: { sessionId: 'sess-r1' } }),
        createRequest(gate, { action: REFUSED_ACTION, context: { sessionId: 'sess-r2' } }),
      ]);
      const rows = await observeRowsSettled(gate, (r) => r.attempts >= 1);
      const byRequest = new Map(rows.map((r) => [(JSON.parse(r.body) as IngestBody).data.requestId, r]));
      assert.deepEqual([byRequest.get(good.id)!.status, byRequest.get(good.id)!.attempts], ['delivered', 1]);
      const left = byRequest.get(refused.id)!;
      assert.deepEqual([left.status, left.attempts], ['pending', 1]);
      assert.match(String(left.last_error), /observe refused the event/);
    } finally {
      await gate.close();
      await observe.stop();
    }
  });

  test('an observe without the batch route: the events reach it one by one on retry, none lost', async () => {
    const observe = await new FakeObserve('single-only').start();
    const gate = await startTestGate(backend, { env: observeEnv(observe) });
    try {
      const created = await Promise.all(
        Array.from({ length: 3 }, (_, i) => createRequest(gate, { action: 'old.observe', context: { sessionId: `sess-o${i}` } })),
      );
      await observeRowsSettled(gate, (r) => r.attempts >= 1);
      assert.deepEqual(observe.ingested(), []);
      // Past the first backoff (2 s), the scanner sends each row to /api/events/ingest.
      gate.clock.advance(3000);
      await gate.service.context.outbox.deliverDue();
      const rows = await observeRowsSettled(gate, (r) => r.status === 'delivered');
      for (const row of rows) assert.deepEqual([row.status, row.attempts], ['delivered', 2]);
      for (const c of created) assert.equal(observe.ingested(c.id).length, 1);
      for (const r of observe.requests.filter((x) => x.url === INGEST)) assert.equal(signed(r), true);
    } finally {
      await gate.close();
      await observe.stop();
    }
  });
});
