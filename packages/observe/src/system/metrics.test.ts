import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { describeEachDatabase, parsePrometheusText, promtoolCheckMetrics, promtoolSkip, sampleValue } from '@vigil/platform/testing';
import { assertErrorShape, startTestObserve, type TestObserve } from '../testing.ts';

const TOKEN = 'metrics-token-0123456789abcdef';

await describeEachDatabase('GET /metrics (observe) over real HTTP', (backend) => {
  let observe: TestObserve;
  let base: string;

  before(async () => {
    observe = await startTestObserve(backend, { env: { METRICS_TOKEN: TOKEN } });
    const address = await observe.service.app.listen({ host: '127.0.0.1', port: 0 });
    base = address;
  });
  after(() => observe.close());

  const post = (events: unknown[]) =>
    fetch(`${base}/api/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${observe.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ events }),
    });
  const scrape = async (headers: Record<string, string> = {}) => {
    const response = await fetch(`${base}/metrics`, { headers });
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    return parsePrometheusText(await response.text());
  };

  test('requests, latency histograms, ingest, queues, pool and process metrics move with real traffic', async () => {
    const before = await scrape();
    const route = { method: 'POST', route: '/api/events', status_class: '2xx' };
    const eventsBefore = sampleValue(before, 'vigil_ingest_events_total') ?? 0;
    for (const sessionId of ['m1', 'm2']) {
      const response = await post([
        { sessionId, agentId: 'metrics-agent', eventType: 'session_started', payload: {} },
        { sessionId, agentId: 'metrics-agent', eventType: 'custom', payload: { type: 'step', data: { text: 'hello world' } } },
      ]);
      assert.equal(response.status, 201, await response.text());
    }
    assert.equal((await fetch(`${base}/api/sessions/m1`, { headers: { authorization: `Bearer ${observe.key}` } })).status, 200);
    assert.equal((await fetch(`${base}/api/sessions/m1`)).status, 401);

    const after = await scrape();
    assert.equal((sampleValue(after, 'http_requests_total', route) ?? 0) - (sampleValue(before, 'http_requests_total', route) ?? 0), 2);
    assert.equal(
      (sampleValue(after, 'http_request_duration_seconds_count', route) ?? 0) - (sampleValue(before, 'http_request_duration_seconds_count', route) ?? 0),
      2,
    );
    assert.ok(sampleValue(after, 'http_request_duration_seconds_bucket', { ...route, le: '+Inf' })! >= 2);
    // The route template, never the id in the URL.
    assert.equal(sampleValue(after, 'http_requests_total', { method: 'GET', route: '/api/sessions/:id', status_class: '2xx' }), 1);
    assert.equal(sampleValue(after, 'http_requests_total', { method: 'GET', route: '/api/sessions/:id', status_class: '4xx' }), 1);
    assert.equal(after.filter((s) => s.labels.route === '/api/sessions/m1').length, 0);
    assert.equal((sampleValue(after, 'vigil_ingest_events_total') ?? 0) - eventsBefore, 4);
    assert.ok((sampleValue(after, 'vigil_ingest_batches_total') ?? 0) >= 2);
    // Jobs do not run in tests, so the ingest transaction's embedding work stays queued and due.
    assert.ok(sampleValue(after, 'vigil_queue_depth', { queue: 'embeddings' })! >= 4);
    assert.ok(sampleValue(after, 'vigil_queue_lag_seconds', { queue: 'embeddings' })! >= 0);
    assert.equal(sampleValue(after, 'vigil_queue_depth', { queue: 'alert_deliveries' }), 0);
    assert.ok(sampleValue(after, 'process_cpu_user_seconds_total') !== undefined, 'default process metrics');
    if (backend.kind === 'postgres') assert.ok(sampleValue(after, 'vigil_db_pool_connections', { state: 'total' })! >= 1);
    else assert.equal(sampleValue(after, 'vigil_db_pool_connections', { state: 'total' }), undefined, 'SQLite has no pool');
  });

  test('the scrape passes `promtool check metrics`: no lint finding on any name, type or help text', { skip: promtoolSkip() }, async () => {
    const response = await fetch(`${base}/metrics`);
    assert.equal(response.status, 200);
    const lint = promtoolCheckMetrics(await response.text());
    assert.deepEqual(lint, { status: 0, output: '' });
  });

  test('admitted from an allowed address or with METRICS_TOKEN; refused 401 otherwise, API keys included', async () => {
    const outsider = { method: 'GET' as const, url: '/metrics', remoteAddress: '203.0.113.7' };
    assertErrorShape((await observe.service.app.inject(outsider)).json(), 401);
    assertErrorShape((await observe.service.app.inject({ ...outsider, headers: { authorization: `Bearer ${observe.key}` } })).json(), 401, 'an API key');
    assertErrorShape((await observe.service.app.inject({ ...outsider, headers: { authorization: 'Bearer wrong-token-0123456789' } })).json(), 401);
    const byToken = await observe.service.app.inject({ ...outsider, headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(byToken.statusCode, 200);
    assert.match(byToken.body, /http_requests_total/);
    await scrape(); // loopback, no token
  });
});

await describeEachDatabase('GET /metrics with METRICS_ALLOW_IPS=none', (backend) => {
  let observe: TestObserve;
  before(async () => {
    observe = await startTestObserve(backend, { env: { METRICS_ALLOW_IPS: 'none', METRICS_TOKEN: TOKEN, AUTH_DISABLED: 'true' } });
  });
  after(() => observe.close());

  test('even loopback needs the token (and AUTH_DISABLED does not open it)', async () => {
    const base = await observe.service.app.listen({ host: '127.0.0.1', port: 0 });
    const refused = await fetch(`${base}/metrics`);
    assert.equal(refused.status, 401);
    assertErrorShape(await refused.json(), 401);
    assert.equal((await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).status, 200);
  });
});
