import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { describeEachDatabase, redisReachable, serviceSkip } from '@vigil/platform/testing';
import type { LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import { buildGateService, type GateService } from '../app.ts';
import { assertGateError, startTestGate, TEST_ADMIN_KEY, type TestGate } from '../testing.ts';
import { MemoryRateLimiter, RedisRateLimiter, WINDOW_MS, type RateLimiter } from './limiter.ts';

/** The Redis the tests use: REDIS_URL of the environment, else the local default. */
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const SECOND = 1000;

const redisSkip = serviceSkip(`Redis at ${REDIS_URL}`, await redisReachable(REDIS_URL));

function rateHeaders(response: LightMyRequestResponse): { limit?: string; remaining?: string; reset?: string; retryAfter?: string } {
  const h = response.headers;
  const text = (v: unknown) => (v === undefined ? undefined : String(v));
  return {
    limit: text(h['x-ratelimit-limit']),
    remaining: text(h['x-ratelimit-remaining']),
    reset: text(h['x-ratelimit-reset']),
    retryAfter: text(h['retry-after']),
  };
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** Polls deep health until it is 200 (at most 3 s): what a load balancer's readiness probe does. */
async function waitForDeepHealth(service: GateService): Promise<void> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const response = await service.app.inject({ method: 'GET', url: '/health?deep=true' });
    if (response.statusCode === 200) return;
    if (Date.now() > deadline) assert.fail(`deep health never became ok: ${response.body}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const list = (gate: TestGate, key: string) => gate.call({ method: 'GET', url: '/api/requests' }, key);

/** The behaviour every limiter must give through the HTTP API (memory and Redis alike). */
function rateLimitBehaviour(start: () => Promise<TestGate>): void {
  let gate: TestGate;
  before(async () => {
    gate = await start();
  });
  after(() => gate.close());

  test('a key with rateLimit 3: headers count down 2, 1, 0, the 4th is 429 rate_limited with Retry-After, and 60 s later requests pass again', async () => {
    const key = await gate.createKey(['request:read'], 3);
    const seen: string[] = [];
    for (const expected of ['2', '1', '0']) {
      const response = await list(gate, key);
      assert.equal(response.statusCode, 200, response.body);
      const h = rateHeaders(response);
      assert.equal(h.limit, '3');
      assert.equal(h.remaining, expected);
      assert.match(h.reset ?? '', /^\d+$/, 'X-RateLimit-Reset is whole seconds');
      assert.equal(h.retryAfter, undefined, 'Retry-After only on 429');
      seen.push(h.reset!);
    }
    // Two slots still free: nothing to wait for. Full: the oldest hit frees its slot in 60 s.
    assert.equal(seen[0], '0');
    assert.equal(seen[2], '60');

    const limited = await list(gate, key);
    assertGateError(limited, 429, 'rate_limited', '4th request');
    const h = rateHeaders(limited);
    assert.equal(h.limit, '3');
    assert.equal(h.remaining, '0');
    assert.equal(h.reset, '60');
    assert.equal(h.retryAfter, '60');

    // A refused request does not use up budget: still limited 59.999 s later, free at 60 s.
    gate.clock.advance(60 * SECOND - 1);
    const almost = await list(gate, key);
    assertGateError(almost, 429, 'rate_limited', 'just before the window frees');
    assert.equal(rateHeaders(almost).retryAfter, '1');
    gate.clock.advance(1);
    const again = await list(gate, key);
    assert.equal(again.statusCode, 200, again.body);
    assert.equal(rateHeaders(again).remaining, '2');
  });

  test('the window slides: a hit 30 s old still counts and frees its slot at 60 s, not earlier and not all at once', async () => {
    const key = await gate.createKey(['request:read'], 3);
    assert.equal((await list(gate, key)).statusCode, 200); // t = 0
    gate.clock.advance(30 * SECOND); // t = 30 s
    assert.equal(rateHeaders(await list(gate, key)).remaining, '1');
    const third = await list(gate, key);
    assert.equal(third.statusCode, 200);
    assert.equal(rateHeaders(third).remaining, '0');
    assert.equal(rateHeaders(third).reset, '30', 'the hit at t = 0 frees its slot in 30 s');

    const limited = await list(gate, key);
    assertGateError(limited, 429, 'rate_limited', 'the hit 30 s old still counts');
    assert.equal(rateHeaders(limited).retryAfter, '30');

    gate.clock.advance(30 * SECOND - 1); // t = 59.999 s
    assertGateError(await list(gate, key), 429, 'rate_limited', 'at 59.999 s');
    gate.clock.advance(1); // t = 60 s: only the hit of t = 0 has left the window
    const freed = await list(gate, key);
    assert.equal(freed.statusCode, 200, freed.body);
    assert.equal(rateHeaders(freed).remaining, '0');
    const next = await list(gate, key);
    assertGateError(next, 429, 'rate_limited', 'a fixed window would have reset every slot');
    assert.equal(rateHeaders(next).retryAfter, '30', 'the two hits of t = 30 s free at t = 90 s');

    gate.clock.advance(30 * SECOND); // t = 90 s
    const later = await list(gate, key);
    assert.equal(later.statusCode, 200, later.body);
    assert.equal(rateHeaders(later).remaining, '1');
  });

  test('each key has its own budget; a 429 on one key does not touch another', async () => {
    const a = await gate.createKey(['request:read'], 1);
    const b = await gate.createKey(['request:read'], 1);
    assert.equal((await list(gate, a)).statusCode, 200);
    assertGateError(await list(gate, a), 429, 'rate_limited', 'key a');
    const other = await list(gate, b);
    assert.equal(other.statusCode, 200, other.body);
    assert.equal(rateHeaders(other).remaining, '0');
  });

  test('a key without rateLimit gets no rate-limit headers and is never limited', async () => {
    const key = await gate.createKey(['request:read'], null);
    for (let i = 0; i < 20; i += 1) {
      const response = await list(gate, key);
      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(rateHeaders(response), { limit: undefined, remaining: undefined, reset: undefined, retryAfter: undefined });
    }
    // The bootstrap admin key has no limit either.
    const admin = await gate.call({ method: 'GET', url: '/api/requests' }, TEST_ADMIN_KEY);
    assert.equal(admin.headers['x-ratelimit-limit'], undefined);
  });

  test('a rate limit set by PATCH applies from the next request', async () => {
    const created = (await gate.call({ method: 'POST', url: '/api/api-keys', payload: { name: 'later-limited', scopes: ['request:read'] } })).json() as {
      id: string;
      key: string;
    };
    assert.equal((await list(gate, created.key)).headers['x-ratelimit-limit'], undefined);
    const patched = await gate.call({ method: 'PATCH', url: `/api/api-keys/${created.id}`, payload: { rateLimit: 1 } });
    assert.equal(patched.statusCode, 200, patched.body);
    const first = await list(gate, created.key);
    assert.equal(first.statusCode, 200);
    assert.equal(rateHeaders(first).limit, '1');
    assertGateError(await list(gate, created.key), 429, 'rate_limited', 'after PATCH');
  });
}

await describeEachDatabase('gate rate limits (in-memory limiter)', (backend) => {
  rateLimitBehaviour(() => startTestGate(backend));
});

await describeEachDatabase('gate rate limits (Redis)', (backend) => {
  describe('with REDIS_URL', { skip: redisSkip }, () => {
    rateLimitBehaviour(() => startTestGate(backend, { env: { REDIS_URL } }));

    test('two gate instances on one database and one Redis share the budget of a key', async () => {
      const gate = await startTestGate(backend, { env: { REDIS_URL } });
      let second: GateService | undefined;
      try {
        second = await buildGateService({ ...gate.config }, { runJobs: false, clock: gate.clock });
        const key = await gate.createKey(['request:read'], 3);
        for (const remaining of ['2', '1', '0']) {
          const response = await list(gate, key);
          assert.equal(response.statusCode, 200, response.body);
          assert.equal(rateHeaders(response).remaining, remaining);
        }
        const viaB = await second.app.inject({ method: 'GET', url: '/api/requests', headers: { authorization: `Bearer ${key}` } });
        // B serves from the moment buildGateService resolved: its very first request must already use the shared budget.
        assertGateError(viaB, 429, 'rate_limited', 'instance B (just built) after 3 requests through A');
        assert.equal(viaB.headers['x-ratelimit-limit'], '3');
        assert.equal(viaB.headers['retry-after'], '60');

        // B also spends from the shared budget once the window frees.
        gate.clock.advance(60 * SECOND);
        const b1 = await second.app.inject({ method: 'GET', url: '/api/requests', headers: { authorization: `Bearer ${key}` } });
        assert.equal(b1.statusCode, 200, b1.body);
        assert.equal(b1.headers['x-ratelimit-remaining'], '2');
        assert.equal(rateHeaders(await list(gate, key)).remaining, '1', 'A sees the hit made through B');
      } finally {
        await second?.app.close();
        await gate.close();
      }
    });

    test('the hits of a limited key are kept in Redis, where every instance sees them', async () => {
      const gate = await startTestGate(backend, { env: { REDIS_URL } });
      const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
      try {
        // Once the instance is serving (its readiness probe says so), every hit goes to Redis.
        await waitForDeepHealth(gate.service);
        const key = await gate.createKey(['request:read'], 5);
        const row = await gate.service.context.database.db.selectFrom('api_keys').select('id').where('key_hash', '=', sha256(key)).executeTakeFirstOrThrow();
        for (let i = 0; i < 3; i += 1) assert.equal((await list(gate, key)).statusCode, 200);
        assert.equal(await redis.zcard(`vigil:gate:rate:${row.id}`), 3);
        const ttl = await redis.pttl(`vigil:gate:rate:${row.id}`);
        assert.ok(ttl > 0 && ttl <= WINDOW_MS, `the window key expires with the window (pttl ${ttl})`);
      } finally {
        redis.disconnect();
        await gate.close();
      }
    });

    test('deep health reports redis ok when REDIS_URL is set', async () => {
      const gate = await startTestGate(backend, { env: { REDIS_URL } });
      try {
        // The first probe after start-up: Redis is up, so the answer is ok (an instance must not report degraded while it is fine).
        const response = await gate.service.app.inject({ method: 'GET', url: '/health?deep=true' });
        assert.equal(response.statusCode, 200, response.body);
        assert.deepEqual(response.json(), { status: 'ok', timestamp: '2026-11-22T10:00:00.000Z', checks: { database: 'ok', redis: 'ok' } });
      } finally {
        await gate.close();
      }
    });
  });
});

await describeEachDatabase('gate health', (backend) => {
  test('GET /health answers {status: ok, timestamp} without checks', async () => {
    const gate = await startTestGate(backend);
    try {
      const response = await gate.service.app.inject({ method: 'GET', url: '/health' });
      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(response.json(), { status: 'ok', timestamp: '2026-11-22T10:00:00.000Z' });
      gate.clock.advance(1500);
      const later = await gate.service.app.inject({ method: 'GET', url: '/health?deep=false' });
      assert.deepEqual(later.json(), { status: 'ok', timestamp: '2026-11-22T10:00:01.500Z' });
    } finally {
      await gate.close();
    }
  });

  test('GET /health?deep=true without Redis checks the database only', async () => {
    const gate = await startTestGate(backend);
    try {
      const response = await gate.service.app.inject({ method: 'GET', url: '/health?deep=true' });
      assert.equal(response.statusCode, 200, response.body);
      assert.deepEqual(response.json(), { status: 'ok', timestamp: '2026-11-22T10:00:00.000Z', checks: { database: 'ok' } });
    } finally {
      await gate.close();
    }
  });

  test('GET /health?deep=true with REDIS_URL on a closed port is 503 degraded with redis: error', async () => {
    const gate = await startTestGate(backend, { env: { REDIS_URL: 'redis://127.0.0.1:1' } });
    try {
      const response = await gate.service.app.inject({ method: 'GET', url: '/health?deep=true' });
      assert.equal(response.statusCode, 503, response.body);
      assert.deepEqual(response.json(), { status: 'degraded', timestamp: '2026-11-22T10:00:00.000Z', checks: { database: 'ok', redis: 'error' } });
      // Shallow health stays ok: it checks nothing.
      const shallow = await gate.service.app.inject({ method: 'GET', url: '/health' });
      assert.equal(shallow.statusCode, 200);
    } finally {
      await gate.close();
    }
  });
});

describe('MemoryRateLimiter', () => {
  const T0 = Date.parse('2026-11-22T10:00:00.000Z');

  test('admits up to the limit in a window, then refuses with the time until the oldest hit leaves', async () => {
    const limiter = new MemoryRateLimiter();
    assert.deepEqual(await limiter.consume('k', 3, T0), { allowed: true, limit: 3, remaining: 2, resetMs: 0 });
    assert.deepEqual(await limiter.consume('k', 3, T0 + 1000), { allowed: true, limit: 3, remaining: 1, resetMs: 0 });
    assert.deepEqual(await limiter.consume('k', 3, T0 + 2000), { allowed: true, limit: 3, remaining: 0, resetMs: 58_000 });
    assert.deepEqual(await limiter.consume('k', 3, T0 + 10_000), { allowed: false, limit: 3, remaining: 0, resetMs: 50_000 });
    // The hit of T0 leaves the window exactly 60 s later; the others stay.
    assert.equal((await limiter.consume('k', 3, T0 + WINDOW_MS - 1)).allowed, false);
    assert.deepEqual(await limiter.consume('k', 3, T0 + WINDOW_MS), { allowed: true, limit: 3, remaining: 0, resetMs: 1000 });
    assert.equal((await limiter.consume('k', 3, T0 + WINDOW_MS)).allowed, false);
    await limiter.close();
  });

  test('refused calls are not counted', async () => {
    const limiter = new MemoryRateLimiter();
    assert.equal((await limiter.consume('k', 1, T0)).allowed, true);
    for (let i = 1; i <= 50; i += 1) assert.equal((await limiter.consume('k', 1, T0 + i * 1000)).allowed, false);
    assert.equal((await limiter.consume('k', 1, T0 + WINDOW_MS)).allowed, true);
  });

  test('keys are independent', async () => {
    const limiter = new MemoryRateLimiter();
    assert.equal((await limiter.consume('a', 1, T0)).allowed, true);
    assert.equal((await limiter.consume('a', 1, T0)).allowed, false);
    assert.equal((await limiter.consume('b', 1, T0)).allowed, true);
  });

  test('a raised limit admits more at once; close() forgets every window', async () => {
    const limiter = new MemoryRateLimiter();
    assert.equal((await limiter.consume('k', 1, T0)).allowed, true);
    assert.equal((await limiter.consume('k', 1, T0)).allowed, false);
    assert.deepEqual(await limiter.consume('k', 2, T0), { allowed: true, limit: 2, remaining: 0, resetMs: WINDOW_MS });
    await limiter.close();
    assert.deepEqual(await limiter.consume('k', 1, T0), { allowed: true, limit: 1, remaining: 0, resetMs: WINDOW_MS });
  });

  test('has no external check (deep health lists no redis for it)', () => {
    const limiter: RateLimiter = new MemoryRateLimiter();
    assert.equal(limiter.check, undefined);
  });
});

describe('RedisRateLimiter', { skip: redisSkip }, () => {
  const T0 = Date.parse('2026-11-22T10:00:00.000Z');
  let redis: Redis;
  before(() => {
    redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 1 });
  });
  after(() => redis.disconnect());

  test('gives the same decisions as the in-memory window, and two limiters on one Redis share them', async () => {
    const fallbacks: unknown[] = [];
    const a = new RedisRateLimiter(redis, (e) => fallbacks.push(e));
    const b = new RedisRateLimiter(redis, (e) => fallbacks.push(e));
    const key = `test-${process.pid}-${Date.now()}-${Math.random()}`;
    assert.deepEqual(await a.consume(key, 3, T0), { allowed: true, limit: 3, remaining: 2, resetMs: 0 });
    assert.deepEqual(await b.consume(key, 3, T0 + 1000), { allowed: true, limit: 3, remaining: 1, resetMs: 0 });
    assert.deepEqual(await a.consume(key, 3, T0 + 2000), { allowed: true, limit: 3, remaining: 0, resetMs: 58_000 });
    assert.deepEqual(await b.consume(key, 3, T0 + 10_000), { allowed: false, limit: 3, remaining: 0, resetMs: 50_000 });
    assert.equal((await a.consume(key, 3, T0 + WINDOW_MS - 1)).allowed, false);
    assert.deepEqual(await b.consume(key, 3, T0 + WINDOW_MS), { allowed: true, limit: 3, remaining: 0, resetMs: 1000 });
    assert.equal(await a.check(), 'ok');
    assert.deepEqual(fallbacks, [], 'Redis answered every call');
    await redis.del(`vigil:gate:rate:${key}`);
  });
});

describe('RedisRateLimiter without Redis', () => {
  const T0 = Date.parse('2026-11-22T10:00:00.000Z');

  test('with Redis unreachable it falls back to a per-instance window and reports the failure', async () => {
    const down = new Redis('redis://127.0.0.1:1', { maxRetriesPerRequest: 1, enableOfflineQueue: false, lazyConnect: true });
    down.on('error', () => undefined);
    const fallbacks: unknown[] = [];
    const limiter = new RedisRateLimiter(down, (e) => fallbacks.push(e));
    try {
      assert.equal((await limiter.consume('k', 1, T0)).allowed, true);
      assert.equal((await limiter.consume('k', 1, T0)).allowed, false);
      assert.equal(fallbacks.length, 2);
      assert.equal(await limiter.check(), 'error');
    } finally {
      await limiter.close();
    }
  });
});
