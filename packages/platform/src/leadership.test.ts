// Leadership by a PostgreSQL session advisory lock (leadership.ts): one leader per schema and role,
// the lead passing on when the leader's session ends, wake-ups reaching the leader from a follower.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import type { DatabaseConfig } from './config.ts';
import { openDatabase, type Database } from './db.ts';
import { electLeader, leadershipNames, type Leadership } from './leadership.ts';
import { postgresReachable, TEST_POSTGRES_URL } from './test-services.ts';

const skip = (await postgresReachable()) ? false : `no PostgreSQL at ${TEST_POSTGRES_URL}`;

async function waitUntil(what: string, probe: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('leadership by a PostgreSQL session advisory lock', { skip }, () => {
  const schema = `leadership_${randomBytes(6).toString('hex')}`;
  const config: DatabaseConfig = { kind: 'postgres', url: TEST_POSTGRES_URL, schema };
  const opened: Database<unknown>[] = [];
  const elected: Leadership[] = [];

  after(async () => {
    for (const leadership of elected) await leadership.stop();
    for (const database of opened) await database.close();
    const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await client.connect();
    await client.query(`drop schema if exists "${schema}" cascade`);
    await client.end();
  });

  async function instance(role: string, config_ = config): Promise<{ leadership: Leadership; wakes: () => number }> {
    const database = await openDatabase<unknown>(config_);
    opened.push(database);
    let wakes = 0;
    const leadership = await electLeader({ database: config_, db: database.db, role, onWake: () => (wakes += 1) });
    elected.push(leadership);
    return { leadership, wakes: () => wakes };
  }

  test('one of two instances leads; a follower wakes it; its session ended, the other takes the lead at its next check', async () => {
    const a = await instance('test-role');
    const b = await instance('test-role');
    assert.equal(await a.leadership.check(), true);
    assert.equal(await b.leadership.check(), false, 'the lock is held');
    assert.equal(await b.leadership.check(), false, 'still held at the next check');
    assert.equal(await a.leadership.check(), true, 'the leader keeps it');

    await b.leadership.wake();
    await waitUntil('the leader to be woken', () => a.wakes() === 1);
    assert.equal(b.wakes(), 0, 'a follower is not woken');

    // The leader's session ends (as when its process dies): the lock frees with it.
    await a.leadership.stop();
    assert.equal(a.leadership.leading(), false);
    await waitUntil('the other instance to lead', () => b.leadership.check());
    await a.leadership.wake();
    await waitUntil('the new leader to be woken', () => b.wakes() === 1);
  });

  test('another role, or the same role in another schema, has a leader of its own', async () => {
    const other = `${schema}_other`;
    const first = await instance('role-a');
    const secondRole = await instance('role-b');
    const otherSchema = await instance('role-a', { kind: 'postgres', url: TEST_POSTGRES_URL, schema: other });
    try {
      assert.equal(await first.leadership.check(), true);
      assert.equal(await secondRole.leadership.check(), true);
      assert.equal(await otherSchema.leadership.check(), true);
      assert.notEqual(leadershipNames(schema, 'role-a').key, leadershipNames(other, 'role-a').key);
    } finally {
      const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
      await client.connect();
      await client.query(`drop schema if exists "${other}" cascade`);
      await client.end();
    }
  });
});

test('SQLite: the one process leads, and a wake-up runs at once', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-leadership-'));
  const config: DatabaseConfig = { kind: 'sqlite', file: join(dir, 'test.db'), synchronous: 'NORMAL' };
  const database = await openDatabase<unknown>(config);
  try {
    let wakes = 0;
    const leadership = await electLeader({ database: config, db: database.db, role: 'test-role', onWake: () => (wakes += 1) });
    assert.equal(await leadership.check(), true);
    await leadership.wake();
    assert.equal(wakes, 1);
  } finally {
    await database.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
