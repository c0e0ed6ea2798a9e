import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { ManualClock } from '@vigil/platform';
import { observeConfigFromEnvironment } from '../config.ts';
import { describeEachDatabase, TestHttpServer, sendJson, type TestBackend } from '@vigil/platform/testing';
import type { LightMyRequestResponse } from 'fastify';
import { buildObserveService, type ObserveService } from '../app.ts';

const INDEX = '<!doctype html><html><head><script type="module" src="/assets/app-3f2a1b.js"></script></head><body><div id="root"></div></body></html>';
const SCRIPT = 'console.log("vigil");';

function builtDashboard(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-dashboard-'));
  mkdirSync(join(dir, 'assets'));
  writeFileSync(join(dir, 'index.html'), INDEX);
  writeFileSync(join(dir, 'assets', 'app-3f2a1b.js'), SCRIPT);
  writeFileSync(join(dir, 'assets', 'app-3f2a1b.css'), 'body{margin:0}');
  writeFileSync(join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
  writeFileSync(join(dir, 'secret.env'), 'NOT=served');
  return dir;
}

async function startObserve(backend: TestBackend, dir: string, gateUrl: string, gateTimeoutMs?: number): Promise<ObserveService> {
  const { dataDir, ...database } = backend.freshDatabase();
  const config = { ...observeConfigFromEnvironment({ LOG_LEVEL: 'silent', GATE_URL: gateUrl }, { dataDir }), database };
  return buildObserveService(config, { clock: new ManualClock(Date.parse('2026-11-22T10:00:00.000Z')), runJobs: false, dashboard: { dir, gateTimeoutMs } });
}

function assertObserveError(response: LightMyRequestResponse, status: number, context: string): void {
  assert.equal(response.statusCode, status, `${context}: ${response.body}`);
  const body = response.json() as { error: string; status: number };
  assert.equal(body.status, status, context);
  assert.equal(typeof body.error, 'string', context);
}

await describeEachDatabase('dashboard files served by observe', (backend) => {
  let observe: ObserveService;
  let dir: string;
  before(async () => {
    dir = builtDashboard();
    observe = await startObserve(backend, dir, 'http://127.0.0.1:9');
  });
  after(async () => {
    await observe.app.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const get = (url: string) => observe.app.inject({ method: 'GET', url });
  // What a browser sends when it navigates to a page.
  const navigate = (url: string) => observe.app.inject({ method: 'GET', url, headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });

  test('GET / is the app: HTML, revalidated on every load, with a same-origin content security policy', async () => {
    const response = await get('/');
    assert.equal(response.statusCode, 200);
    assert.equal(response.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(response.headers['cache-control'], 'no-cache');
    assert.match(String(response.headers['content-security-policy']), /default-src 'self'/);
    assert.match(String(response.headers['content-security-policy']), /frame-ancestors 'none'/);
    assert.equal(response.headers['x-content-type-options'], 'nosniff');
    assert.equal(response.body, INDEX);
  });

  test('browser navigations to client-side routes get the app (deep links and reloads work)', async () => {
    for (const url of ['/sessions', '/sessions/run-1?tab=replay', '/approvals/0190abcd', '/gate', '/assets', '/healthy', '/v1x']) {
      const response = await navigate(url);
      assert.equal(response.statusCode, 200, url);
      assert.equal(response.body, INDEX, url);
    }
  });

  test('a program (no text/html in Accept) gets the 404 error body, never the app', async () => {
    for (const url of ['/sessions', '/nope']) {
      assertObserveError(await get(url), 404, url);
      assertObserveError(await observe.app.inject({ method: 'GET', url, headers: { accept: 'application/json' } }), 404, `${url} (JSON)`);
    }
  });

  test('/health, /metrics and /v1 are the API’s paths: unknown ones are the 404 error body, even for a browser', async () => {
    for (const url of ['/health', '/health/deep', '/metrics/x', '/v1', '/v1/logs', '/api/nope']) {
      assertObserveError(await navigate(url), 404, url);
      assertObserveError(await get(url), 404, url);
    }
  });

  test('hashed assets are served with their content type and cached for a year; root files for an hour', async () => {
    const script = await get('/assets/app-3f2a1b.js');
    assert.equal(script.statusCode, 200);
    assert.equal(script.headers['content-type'], 'text/javascript; charset=utf-8');
    assert.equal(script.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.equal(script.body, SCRIPT);
    const style = await get('/assets/app-3f2a1b.css');
    assert.equal(style.headers['content-type'], 'text/css; charset=utf-8');
    const icon = await get('/favicon.svg');
    assert.equal(icon.headers['content-type'], 'image/svg+xml');
    assert.equal(icon.headers['cache-control'], 'public, max-age=3600');
    // Only known kinds of root files are served as files; anything else is the app.
    assert.equal((await navigate('/secret.env')).body, INDEX);
    const head = await observe.app.inject({ method: 'HEAD', url: '/assets/app-3f2a1b.js' });
    assert.equal(head.statusCode, 200);
  });

  test('a missing asset or a path leaving the assets folder is observe’s 404 error body', async () => {
    for (const url of ['/assets/missing.js', '/assets/..%2findex.html', '/assets/..%2f..%2fsecret.env', '/assets/']) {
      assertObserveError(await get(url), 404, url);
    }
    // Dot segments the router resolves itself land outside /assets: the app, never a file.
    for (const url of ['/assets/%2e%2e/secret.env', '/assets/../secret.env']) {
      const response = await navigate(url);
      assert.ok(response.statusCode === 404 || response.body === INDEX, `${url}: ${response.body}`);
      assert.ok(!response.body.includes('NOT=served'), url);
    }
  });

  test('/api is untouched: unknown API routes are observe’s 404, known ones still need a key', async () => {
    for (const url of ['/api', '/api/', '/api/nope', '/api/sessions/x/nope']) assertObserveError(await get(url), 404, url);
    assertObserveError(await observe.app.inject({ method: 'POST', url: '/api/nope', payload: {} }), 404, 'POST /api/nope');
    assertObserveError(await observe.app.inject({ method: 'POST', url: '/anything', payload: {} }), 404, 'POST /anything');
    assertObserveError(await get('/api/sessions'), 401, 'GET /api/sessions without a key');
    assert.equal((await get('/api/health')).statusCode, 200);
  });
});

await describeEachDatabase('dashboard not built yet', (backend) => {
  test('GET / explains how to build it (503, HTML), and the API keeps working', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'vigil-dashboard-empty-'));
    const observe = await startObserve(backend, empty, 'http://127.0.0.1:9');
    try {
      for (const url of ['/', '/sessions']) {
        const response = await observe.app.inject({ method: 'GET', url, headers: { accept: 'text/html' } });
        assert.equal(response.statusCode, 503, url);
        assert.equal(response.headers['content-type'], 'text/html; charset=utf-8');
        assert.match(response.body, /npm run build/);
      }
      assert.equal((await observe.app.inject({ method: 'GET', url: '/api/health' })).statusCode, 200);
    } finally {
      await observe.app.close();
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

await describeEachDatabase('the dashboard’s gate proxy (/gate/api/* → GATE_URL/api/*)', (backend) => {
  let gate: TestHttpServer;
  let observe: ObserveService;
  let dir: string;
  before(async () => {
    // A stand-in gate that records what reaches it and answers like the gate does.
    gate = await new TestHttpServer((request, res) => {
      if (request.url.startsWith('/api/slow')) return; // never answers
      res.setHeader('x-ratelimit-limit', '50');
      res.setHeader('x-ratelimit-remaining', '49');
      res.setHeader('x-ratelimit-reset', '60');
      res.setHeader('set-cookie', 'tracking=1');
      if (request.headers.authorization !== 'Bearer gk_right') {
        sendJson(res, 401, { error: { code: 'unauthorized', message: 'Missing or invalid API key' } });
        return;
      }
      sendJson(res, request.method === 'POST' ? 201 : 200, { method: request.method, url: request.url, body: request.body });
    }).start();
    dir = builtDashboard();
    observe = await startObserve(backend, dir, `${gate.url}/`, 300);
  });
  after(async () => {
    await observe.app.close();
    await gate.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('forwards method, path, query, the exact body bytes and the credential; answers the gate’s status, body and rate-limit headers', async () => {
    const raw = '{"action":"deploy",  "params":{"note":"caf\u00e9 ☕"}}';
    const response = await observe.app.inject({
      method: 'POST',
      url: '/gate/api/requests/abc%2Fdef/decide?x=1&y=a%20b',
      headers: { authorization: 'Bearer gk_right', 'content-type': 'application/json', cookie: 'session=secret' },
      payload: raw,
    });
    assert.equal(response.statusCode, 201, response.body);
    assert.deepEqual(response.json(), { method: 'POST', url: '/api/requests/abc%2Fdef/decide?x=1&y=a%20b', body: raw });
    assert.equal(response.headers['x-ratelimit-limit'], '50');
    assert.equal(response.headers['x-ratelimit-remaining'], '49');
    assert.equal(response.headers['cache-control'], 'no-store');
    assert.equal(response.headers['set-cookie'], undefined, 'only the listed response headers come back');
    const received = gate.requests.at(-1)!;
    assert.equal(received.headers.cookie, undefined, 'cookies are not forwarded');
    assert.equal(received.headers['content-type'], 'application/json');

    for (const method of ['GET', 'PUT', 'PATCH', 'DELETE'] as const) {
      const answer = await observe.app.inject({ method, url: '/gate/api/policies/p1', headers: { authorization: 'Bearer gk_right' } });
      assert.equal(answer.statusCode, 200, method);
      assert.equal((answer.json() as { method: string }).method, method);
    }
  });

  test('the gate’s own errors come back unchanged, and observe never asks for its own key on these routes', async () => {
    const anonymous = await observe.app.inject({ method: 'GET', url: '/gate/api/requests' });
    assert.equal(anonymous.statusCode, 401);
    assert.deepEqual(anonymous.json(), { error: { code: 'unauthorized', message: 'Missing or invalid API key' } });
    assert.equal(gate.requests.at(-1)!.headers.authorization, undefined);
  });

  test('an unreachable gate is a 502 and a silent one a 504, in the gate’s error body, naming the address', async () => {
    const silent = await observe.app.inject({ method: 'GET', url: '/gate/api/slow', headers: { authorization: 'Bearer gk_right' } });
    assert.equal(silent.statusCode, 504, silent.body);
    assert.equal((silent.json() as { error: { code: string } }).error.code, 'gateway_timeout');

    const unreachable = await startObserve(backend, dir, 'http://127.0.0.1:9');
    try {
      const down = await unreachable.app.inject({ method: 'GET', url: '/gate/api/requests' });
      assert.equal(down.statusCode, 502);
      const body = down.json() as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'bad_gateway');
      assert.match(body.error.message, /http:\/\/127\.0\.0\.1:9/);
    } finally {
      await unreachable.app.close();
    }
  });
});
