/**
 * The lock folder that keeps the services' build (build.mjs) and the dashboard's to one process
 * at a time: a second taker waits for the release; a holder that died is taken over at once, a
 * live one once its folder is older than the wait (a build hung that long is taken as stale).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { acquireBuildLock } from '../build-lock.mjs';

const root = mkdtempSync(join(tmpdir(), 'vigil-build-lock-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const lockPath = () => join(root, `lock-${n++}`);

test('a second taker waits until the first releases; the lock names its holder and is gone after release', async () => {
  const lock = lockPath();
  const release = await acquireBuildLock(lock, { waitMs: 10_000, pollMs: 10, what: 'test' });
  assert.equal(readFileSync(join(lock, 'pid'), 'utf8'), String(process.pid));
  let secondHolds = false;
  const second = acquireBuildLock(lock, { waitMs: 10_000, pollMs: 10, what: 'test' }).then((releaseSecond) => {
    secondHolds = true;
    return releaseSecond;
  });
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(secondHolds, false, 'waits while the first holds it');
  release();
  (await second)();
  assert.equal(existsSync(lock), false);
});

test("a lock whose holder's process is gone is taken over at once", async () => {
  const lock = lockPath();
  const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  mkdirSync(lock);
  writeFileSync(join(lock, 'pid'), gone.stdout);
  const release = await acquireBuildLock(lock, { waitMs: 60_000, pollMs: 10, what: 'test' });
  assert.equal(readFileSync(join(lock, 'pid'), 'utf8'), String(process.pid));
  release();
});

test("a live holder's lock is waited for, and taken over as stale once the folder is older than the wait", async () => {
  const lock = lockPath();
  mkdirSync(lock);
  writeFileSync(join(lock, 'pid'), String(process.pid));
  const started = Date.now();
  const release = await acquireBuildLock(lock, { waitMs: 300, pollMs: 10, what: 'test' });
  assert.ok(Date.now() - started >= 250, `waited ${Date.now() - started} ms first`);
  release();
});
