/**
 * The PostgreSQL and Redis the tests use, and whether they answer. Free of node:test, so that
 * `npm run chaos` (a plain script) can use it too; testing.ts re-exports it.
 */
import { connect } from 'node:net';
import pg from 'pg';

/** PostgreSQL used by the tests; trust auth on this machine and in CI. */
export const TEST_POSTGRES_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const servicesRequired = process.env.REQUIRE_SERVICES === '1';

/** Redis used by the tests (the rate limiter, the dependency faults). */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

let postgresProbe: Promise<boolean> | null = null;

/** Whether the test PostgreSQL answers (asked once per process). */
export function postgresReachable(): Promise<boolean> {
  postgresProbe ??= postgresAnswers(TEST_POSTGRES_URL);
  return postgresProbe;
}

/** Whether a PostgreSQL answers at `url` (also the bench's check of its PostgreSQL). */
export async function postgresAnswers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** PING over a raw socket: true when a Redis answers +PONG within a second. */
export function redisReachable(url = TEST_REDIS_URL): Promise<boolean> {
  const target = new URL(url);
  return new Promise((resolve) => {
    const socket = connect({ host: target.hostname, port: Number(target.port || 6379) });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (data) => done(data.toString().startsWith('+PONG')));
  });
}

/**
 * The skip reason of a suite that needs this service (false: it is reachable, run). With
 * REQUIRE_SERVICES=1 (CI) an unreachable service fails the run instead of skipping.
 */
export function serviceSkip(service: string, reachable: boolean): string | false {
  if (reachable) return false;
  if (servicesRequired) throw new Error(`REQUIRE_SERVICES=1 but ${service} is not reachable`);
  return `${service} not reachable`;
}
