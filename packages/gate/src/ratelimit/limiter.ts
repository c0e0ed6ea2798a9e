import type { Redis } from 'ioredis';

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Milliseconds until the window frees a slot (0 when one is free now). */
  resetMs: number;
}

/** A sliding window of one minute per key. One small interface; memory and Redis implement it. */
export interface RateLimiter {
  consume(keyId: string, limit: number, now: number): Promise<RateDecision>;
  /** `ok`/`error` for deep health; undefined when there is no external store to check. */
  check?(): Promise<'ok' | 'error'>;
  close(): Promise<void>;
}

export const WINDOW_MS = 60_000;

/** Per-process sliding window log: exact, and enough for one instance. */
export class MemoryRateLimiter implements RateLimiter {
  private readonly windows = new Map<string, number[]>();

  async consume(keyId: string, limit: number, now: number): Promise<RateDecision> {
    const hits = (this.windows.get(keyId) ?? []).filter((t) => t > now - WINDOW_MS);
    const allowed = hits.length < limit;
    if (allowed) hits.push(now);
    this.windows.set(keyId, hits);
    const oldest = hits[0];
    const resetMs = hits.length < limit || oldest === undefined ? 0 : oldest + WINDOW_MS - now;
    return { allowed, limit, remaining: Math.max(0, limit - hits.length), resetMs };
  }

  async close(): Promise<void> {
    this.windows.clear();
  }
}

// One atomic script: trim the window, count, admit if below the limit, and report the reset.
const SLIDING_WINDOW = `
local key = KEYS[1]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
local allowed = 0
if count < limit then
  redis.call('ZADD', key, now, ARGV[4])
  count = count + 1
  allowed = 1
end
redis.call('PEXPIRE', key, window)
local reset = 0
if count >= limit then
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  reset = tonumber(oldest[2]) + window - now
end
return {allowed, count, reset}
`;

/**
 * Sliding window in Redis, shared by every instance. While Redis is unreachable the gate keeps
 * serving with a per-instance window (availability over a shared budget) and deep health says so.
 */
export class RedisRateLimiter implements RateLimiter {
  private sequence = 0;
  private readonly fallback = new MemoryRateLimiter();

  constructor(
    private readonly redis: Redis,
    private readonly onFallback: (error: unknown) => void,
  ) {
    redis.defineCommand('vigilSlidingWindow', { numberOfKeys: 1, lua: SLIDING_WINDOW });
  }

  async consume(keyId: string, limit: number, now: number): Promise<RateDecision> {
    const member = `${now}:${process.pid}:${this.sequence++}:${Math.random()}`;
    try {
      const [allowed, count, reset] = (await (
        this.redis as unknown as {
          vigilSlidingWindow(key: string, ...args: (string | number)[]): Promise<[number, number, number]>;
        }
      ).vigilSlidingWindow(`vigil:gate:rate:${keyId}`, now, WINDOW_MS, limit, member)) as [number, number, number];
      return { allowed: allowed === 1, limit, remaining: Math.max(0, limit - count), resetMs: Math.max(0, reset) };
    } catch (error) {
      this.onFallback(error);
      return this.fallback.consume(keyId, limit, now);
    }
  }

  /**
   * Waits (at most `timeoutMs`) for the connection, so the first requests share the budget and
   * the first deep health check sees Redis; on timeout the gate starts on the fallback.
   */
  async connected(timeoutMs: number): Promise<boolean> {
    if (this.redis.status === 'ready') return true;
    return new Promise((resolve) => {
      const done = (ready: boolean) => {
        clearTimeout(timer);
        this.redis.off('ready', onReady);
        resolve(ready);
      };
      const onReady = () => done(true);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.redis.on('ready', onReady);
    });
  }

  async check(): Promise<'ok' | 'error'> {
    try {
      return (await this.redis.ping()) === 'PONG' ? 'ok' : 'error';
    } catch {
      return 'error';
    }
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
