import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase, parsePrometheusText, promtoolCheckMetrics, promtoolSkip, sampleValue } from '@vigil/platform/testing';
import { assertGateError, startTestGate, type TestGate } from '../testing.ts';

const TOKEN = 'metrics-token-0123456789abcdef';

await describeEachDatabase('GET /metrics (gate) over real HTTP', (backend) => {
  let gate: TestGate;
  let base: string;

  before(async () => {
    gate = await startTestGate(backend, { env: { METRICS_TOKEN: TOKEN } });
    base = await gate.service.app.listen({ host: '127.0.0.1', port: 0 });
  });
  after(() => gate.close());

  const scrape = async () => {
    const response = await fetch(`${base}/metrics`);
    assert.equal(response.status, 200);
    return parsePrometheusText(await response.text());
  };

  test('requests per route, rate-limit refusals, webhook delivery queue, process metrics', async () => {
    const limited = await gate.createKey(['request:read'], 1, 'one-per-minute');
    const statuses: number[] = [];
    for (let i = 0; i < 3; i += 1) statuses.push((await fetch(`${base}/api/requests`, { headers: { authorization: `Bearer ${limited}` } })).status);
    assert.deepEqual(statuses, [200, 429, 429]);
    const samples = await scrape();
    assert.equal(sampleValue(samples, 'vigil_rate_limit_refusals_total'), 2);
    assert.equal(sampleValue(samples, 'http_requests_total', { method: 'GET', route: '/api/requests', status_class: '2xx' }), 1);
    assert.equal(sampleValue(samples, 'http_requests_total', { method: 'GET', route: '/api/requests', status_class: '4xx' }), 2);
    assert.equal(sampleValue(samples, 'http_request_duration_seconds_count', { method: 'GET', route: '/api/requests', status_class: '4xx' }), 2);
    assert.equal(sampleValue(samples, 'vigil_queue_depth', { queue: 'webhook_deliveries' }), 0);
    assert.equal(sampleValue(samples, 'vigil_queue_lag_seconds', { queue: 'webhook_deliveries' }), 0);
    assert.ok(sampleValue(samples, 'process_resident_memory_bytes')! > 0);
    if (backend.kind === 'postgres') assert.ok(sampleValue(samples, 'vigil_db_pool_connections', { state: 'idle' }) !== undefined);
  });

  test('the scrape passes `promtool check metrics`: no lint finding on any name, type or help text', { skip: promtoolSkip() }, async () => {
    const response = await fetch(`${base}/metrics`);
    assert.equal(response.status, 200);
    const lint = promtoolCheckMetrics(await response.text());
    assert.deepEqual(lint, { status: 0, output: '' });
  });

  test('the webhook delivery queue: depth while a delivery waits, lag once it is overdue', async () => {
    const hook = await gate.call({ method: 'POST', url: '/api/webhooks', payload: { url: 'https://example.test/hooks/metrics', events: ['request.created'] } });
    assert.equal(hook.statusCode, 201, hook.body);
    const created = await gate.call({ method: 'POST', url: '/api/requests', payload: { action: 'deploy' } });
    assert.equal(created.statusCode, 201, created.body);
    // The first attempt (no such host) fails in the background and is retried later: pending either way.
    assert.equal(sampleValue(await scrape(), 'vigil_queue_depth', { queue: 'webhook_deliveries' }), 1);
    // Wait for that attempt to be recorded: it schedules the retry from the clock's time when it fails.
    const hookId = (JSON.parse(hook.body) as { id: string }).id;
    for (let tries = 0; ; tries += 1) {
      const listed = await gate.call({ method: 'GET', url: `/api/webhooks/${hookId}/deliveries` });
      const [delivery] = (JSON.parse(listed.body) as { deliveries: Array<{ attempts: number }> }).deliveries;
      if ((delivery?.attempts ?? 0) >= 1) break;
      assert.ok(tries < 200, 'the first attempt is recorded');
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    gate.clock.advance(10 * 60_000);
    const lag = sampleValue(await scrape(), 'vigil_queue_lag_seconds', { queue: 'webhook_deliveries' })!;
    assert.ok(lag > 590 && lag <= 600, `lag ${lag}`);
  });

  test('refused 401 from another address without METRICS_TOKEN, even with the admin key', async () => {
    const outsider = { method: 'GET' as const, url: '/metrics', remoteAddress: '198.51.100.4' };
    assertGateError(await gate.service.app.inject(outsider), 401, 'unauthorized');
    assertGateError(await gate.call(outsider), 401, 'unauthorized', 'the admin key');
    assert.equal((await gate.service.app.inject({ ...outsider, headers: { authorization: `Bearer ${TOKEN}` } })).statusCode, 200);
  });
});
