import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as delay } from 'node:timers/promises';
import { postgresBinaries, serviceSkip, sqliteBackend, startReplicaPair, type ReplicaPair } from '@vigil/platform/testing';
import { observeConfigFromEnvironment } from './config.ts';
import { ingestEvents, startTestObserve, TEST_NOW, type TestObserve } from './testing.ts';

// READ_DATABASE_URL against a real streaming replica (pg_basebackup of a primary of the test's
// own): read routes use the replica, their writer's reads and verification the primary.
const bin = postgresBinaries();
const skip = serviceSkip('PostgreSQL server programs (pg_config --bindir, pg_basebackup)', bin !== null);

const event = (sessionId: string) => ({
  sessionId,
  agentId: 'replicated',
  eventType: 'session_started',
  timestamp: new Date(TEST_NOW).toISOString(),
  payload: {},
});

describe('read replicas (READ_DATABASE_URL) [postgres]', { skip }, () => {
  let pair: ReplicaPair;
  let observe: TestObserve;
  let other: string;
  const get = (url: string, key: string) => observe.call({ method: 'GET', url, headers: { authorization: `Bearer ${key}` } });
  /** Waits until the replica has replayed every write so far, and the service has polled it since. */
  const replicated = async () => {
    for (let i = 0; i < 200 && !(await pair.caughtUp()); i++) await delay(25);
    await delay(150);
  };

  before(async () => {
    pair = await startReplicaPair(bin!);
    observe = await startTestObserve(sqliteBackend, {
      database: { kind: 'postgres', url: pair.primaryUrl, schema: 'observe_replica', readUrl: pair.replicaUrl },
    });
    const created = await observe.call({ method: 'POST', url: '/api/keys', payload: { name: 'other reader' } });
    assert.equal(created.statusCode, 201, created.body);
    other = (created.json() as { key: string }).key;
    await ingestEvents(observe, [event('before-pause')]);
    await replicated();
  });
  after(async () => {
    await observe?.close();
    pair?.close();
  });

  test('another caller reads from the replica: a write it has not replayed is not there yet, and is once replayed', async () => {
    assert.equal((await get('/api/sessions/before-pause', other)).statusCode, 200);
    await pair.pauseApplying();
    await ingestEvents(observe, [event('while-paused')]);
    assert.equal((await get('/api/sessions/while-paused', other)).statusCode, 404, 'served by the paused replica');
    await pair.resumeApplying();
    await replicated();
    assert.equal((await get('/api/sessions/while-paused', other)).statusCode, 200);
  });

  test('the writer reads its own write at once (read-your-writes), and verification reads the primary', async () => {
    await pair.pauseApplying();
    try {
      await ingestEvents(observe, [event('mine')]);
      assert.equal((await get('/api/sessions/mine', observe.key)).statusCode, 200, 'the writer is held on the primary');
      const verified = (await get('/api/audit/verify?sessionId=mine', other)).json() as { valid: boolean; eventCount: number };
      assert.deepEqual([verified.valid, verified.eventCount], [true, 1], 'verification sees the latest write');
      assert.equal((await get('/api/sessions/mine', other)).statusCode, 404, 'another caller still reads the replica');
    } finally {
      await pair.resumeApplying();
    }
    await replicated();
    assert.equal((await get('/api/sessions/mine', other)).statusCode, 200);
  });

  test('a replica that stops answering: reads are served by the primary', async () => {
    await pair.pauseApplying();
    await ingestEvents(observe, [event('after-replica')]);
    assert.equal((await get('/api/sessions/after-replica', other)).statusCode, 404);
    pair.stopReplica();
    const read = await get('/api/sessions/after-replica', other);
    assert.equal(read.statusCode, 200, read.body);
  });
});

test('READ_DATABASE_URL needs DATABASE_URL: it names a replica of it', () => {
  assert.throws(() => observeConfigFromEnvironment({ READ_DATABASE_URL: 'postgres://127.0.0.1:5433/x' }), /READ_DATABASE_URL: is a replica of DATABASE_URL/);
});
