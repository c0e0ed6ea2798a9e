import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import type { FixtureRequest } from './threads.fixture.ts';
import { ThreadClient, ThreadRequestError, type ThreadClientOptions } from './threads.ts';

type FixtureClient = ThreadClient<FixtureRequest, { echo: string; threadId: number }>;

const fixture = (options: Partial<ThreadClientOptions> = {}): FixtureClient =>
  new ThreadClient(new URL('./threads.fixture.ts', import.meta.url), { name: 'fixture', idleMs: 60_000, ...options });

/** Runs `body` with a fixture client, closed after it whatever happens. */
async function withFixture(options: Partial<ThreadClientOptions>, body: (client: FixtureClient) => Promise<void>): Promise<void> {
  const client = fixture(options);
  try {
    await body(client);
  } finally {
    await client.close();
  }
}

describe('ThreadClient', () => {
  test("answers each request with the thread's result, a refusal as ThreadRequestError, and keeps the thread", async () => {
    await withFixture({}, async (client) => {
      const first = await client.ask({ echo: 'a' });
      assert.equal(first.echo, 'a');
      await assert.rejects(client.ask({ fail: 'no such thing' }), (error: Error) => error instanceof ThreadRequestError && error.message === 'no such thing');
      const answers = await Promise.all(['b', 'c', 'd'].map((echo) => client.ask({ echo })));
      assert.deepEqual(
        answers.map((answer) => answer.echo),
        ['b', 'c', 'd'],
      );
      assert.ok(
        answers.every((answer) => answer.threadId === first.threadId),
        'one thread served them all',
      );
    });
  });

  test('a thread that does not answer in time, or exits, fails its request (not as a refusal); the next request starts another thread', async () => {
    await withFixture({ timeoutMs: 1500 }, async (client) => {
      const before = await client.ask({ echo: 'a' });
      await assert.rejects(
        client.ask({ hang: true }),
        (error: Error) => !(error instanceof ThreadRequestError) && error.message === 'the fixture thread did not answer in 1.5 s',
      );
      const after = await client.ask({ echo: 'b' });
      assert.notEqual(after.threadId, before.threadId);
      await assert.rejects(client.ask({ exit: 3 }), { message: 'the fixture thread exited with code 3' });
      assert.notEqual((await client.ask({ echo: 'c' })).threadId, after.threadId);
    });
  });

  test('a thread idle for idleMs is ended, and the next request starts another', async () => {
    await withFixture({ idleMs: 100 }, async (client) => {
      const first = await client.ask({ echo: 'a' });
      assert.equal((await client.ask({ echo: 'b' })).threadId, first.threadId, 'not idle yet');
      await sleep(400);
      assert.notEqual((await client.ask({ echo: 'c' })).threadId, first.threadId);
    });
  });

  test('close fails the requests with the thread and those waiting their turn, and every later one', async () => {
    const client = fixture({ maxInFlight: 1 });
    await client.ask({ echo: 'warm' });
    const running = assert.rejects(client.ask({ hang: true }), { message: 'the fixture thread was closed' });
    const waiting = assert.rejects(client.ask({ echo: 'queued' }), { message: 'the fixture thread is closed' });
    await sleep(50);
    await client.close();
    await running;
    await waiting;
    await assert.rejects(client.ask({ echo: 'late' }), { message: 'the fixture thread is closed' });
  });
});
