// Rate limits per key: in memory, or shared through Redis.
export { MemoryRateLimiter, type RateLimiter, RedisRateLimiter } from './limiter.ts';
