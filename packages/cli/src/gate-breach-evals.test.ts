/**
 * End to end: the approval service reports a policy hard deny to the observability service's
 * guardrail-breach endpoint, which chains it as a failed compliance verdict in the agent's session;
 * and a down observability service never delays or fails the deny. Both services are the real apps
 * listening on local ports, configured as in production (same INTERNAL_SERVICE_TOKEN, OBSERVE_URL).
 */
import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startTestGate, TEST_ADMIN_KEY, type TestGate } from '@vigil/gate/testing';
import { startTestObserve, type TestObserve } from '@vigil/observe/testing';
import { describeEachDatabase } from '@vigil/platform/testing';

type Json = Record<string, any>;

const SERVICE_TOKEN = 'e2e-internal-service-token-0123456789';
const WEBHOOK_SECRET = 'e2e-approval-gate-webhook-secret';

async function listen(app: TestObserve['service']['app'] | TestGate['service']['app']): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 });
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
}

async function api(base: string, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: Json }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text ? (JSON.parse(text) as Json) : {} };
}

await describeEachDatabase('gate hard deny → observe guardrail breach (both services listening)', (backend) => {
  let observe: TestObserve;
  let gate: TestGate;
  let observeUrl: string;
  let gateUrl: string;
  let observeOpen = true;
  let policyId: string;

  before(async () => {
    observe = await startTestObserve(backend, { env: { INTERNAL_SERVICE_TOKEN: SERVICE_TOKEN, APPROVAL_GATE_WEBHOOK_SECRET: WEBHOOK_SECRET } });
    observeUrl = await listen(observe.service.app);
    gate = await startTestGate(backend, {
      env: { OBSERVE_URL: observeUrl, OBSERVE_WEBHOOK_SECRET: WEBHOOK_SECRET, INTERNAL_SERVICE_TOKEN: SERVICE_TOKEN },
    });
    gateUrl = await listen(gate.service.app);
    const policy = await api(gateUrl, TEST_ADMIN_KEY, 'POST', '/api/policies', {
      name: 'no destructive database calls',
      priority: 1,
      rules: [{ match: { action: 'db.drop_table' }, decision: 'auto_deny' }],
    });
    assert.equal(policy.status, 201, JSON.stringify(policy.json));
    policyId = policy.json.id;
  });
  after(async () => {
    await gate.close();
    if (observeOpen) await observe.close();
  });

  test('a policy auto_deny is denied at once and lands as a failed eval_result in the agent’s session; the chain verifies', async () => {
    const created = await api(gateUrl, TEST_ADMIN_KEY, 'POST', '/api/requests', {
      action: 'db.drop_table',
      params: { table: 'customers' },
      context: { sessionId: 'e2e-session', agentId: 'e2e-agent' },
    });
    assert.equal(created.status, 201, JSON.stringify(created.json));
    assert.equal(created.json.status, 'denied');
    assert.equal(created.json.decidedBy, `policy:${policyId}`);

    // The report is fire-and-forget on the gate side: poll observe briefly.
    let verdict: Json | undefined;
    const deadline = Date.now() + 10_000;
    while (!verdict) {
      const timeline = await api(observeUrl, observe.key, 'GET', '/api/sessions/e2e-session/timeline');
      if (timeline.status === 200) verdict = (timeline.json.events as Json[]).find((e) => e.eventType === 'eval_result');
      if (!verdict) {
        if (Date.now() > deadline) assert.fail(`no eval_result in e2e-session: ${JSON.stringify(timeline.json)}`);
        await sleep(25);
      }
    }
    assert.equal(verdict.agentId, 'e2e-agent');
    assert.equal(verdict.payload.method, 'deterministic');
    assert.equal(verdict.payload.score, 0);
    assert.equal(verdict.payload.passed, false);
    assert.equal(verdict.payload.breach.source, 'approval_gate');
    assert.equal(verdict.payload.breach.tool, 'db.drop_table');
    assert.ok(String(verdict.payload.breach.ruleId).includes(policyId), verdict.payload.breach.ruleId);
    assert.equal(verdict.payload.violations.length, 1);
    assert.equal(verdict.payload.violations[0].ruleId, verdict.payload.breach.ruleId);

    const session = await api(observeUrl, observe.key, 'GET', '/api/sessions/e2e-session');
    assert.equal(session.status, 200);
    assert.equal(session.json.agentId, 'e2e-agent');
    const audit = await api(observeUrl, observe.key, 'GET', '/api/audit/verify?sessionId=e2e-session');
    assert.equal(audit.status, 200);
    assert.equal(audit.json.valid, true);
    assert.ok(audit.json.eventCount >= 1);
  });

  test('with observe down (its port now accepts connections and never answers), a new hard deny still answers 201 denied promptly', async (t) => {
    await observe.close();
    observeOpen = false;
    // A blocking report would wait for the gate's 3 s breach timeout here; a refused port would fail fast either way.
    const received: string[] = [];
    const sockets = new Set<Socket>();
    const blackHole = createServer((socket) => {
      sockets.add(socket);
      socket.on('data', (chunk: Buffer) => received.push(chunk.toString('utf8')));
      socket.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => blackHole.listen(Number(new URL(observeUrl).port), '127.0.0.1', () => resolve()));
    t.after(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => blackHole.close(resolve));
    });
    const started = performance.now();
    const created = await api(gateUrl, TEST_ADMIN_KEY, 'POST', '/api/requests', {
      action: 'db.drop_table',
      context: { sessionId: 'e2e-session-2', agentId: 'e2e-agent' },
    });
    const elapsed = performance.now() - started;
    assert.equal(created.status, 201, JSON.stringify(created.json));
    assert.equal(created.json.status, 'denied');
    assert.ok(elapsed < 2000, `the deny took ${Math.round(elapsed)} ms`);
    // The report did go out (and hangs) while the deny was already answered.
    const deadline = Date.now() + 5000;
    while (!received.join('').includes('POST /api/internal/eval/guardrail-breach')) {
      if (Date.now() > deadline) assert.fail('the breach report was not sent');
      await sleep(20);
    }
    const read = await api(gateUrl, TEST_ADMIN_KEY, 'GET', `/api/requests/${created.json.id}`);
    assert.equal(read.status, 200);
    assert.equal(read.json.status, 'denied');
  });
});
