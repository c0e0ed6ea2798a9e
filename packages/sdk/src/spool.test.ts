/**
 * The disk spool of `@vigil/sdk/node` (spoolDir): what a crashed process left is read back (a torn
 * last record skipped, a batch already sent kept with its key), segments go once stored, one
 * process per directory, the size bound reports its drops, and an agent killed with SIGKILL loses
 * nothing: its next start sends what it had pushed.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startLiveServices, type LiveServices } from '@vigil/cli/testing';
import { ObserveClient, VigilSpoolError, type IncomingEvent, type VigilDeliveryError } from './node.ts';
import { exactlyOnceProblems, storedIndices } from './packed-harness.ts';
import { DiskSpool } from './spool.ts';

const dirs: string[] = [];
function spoolDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-spool-'));
  dirs.push(dir);
  return dir;
}

const tick = (sessionId: string, i: number): IncomingEvent => ({
  sessionId,
  agentId: 'spool-agent',
  eventType: 'custom',
  payload: { type: 'tick', data: { i } },
});

/** A process id that ran and is gone. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((done) => child.once('exit', done));
  return child.pid!;
}

after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('disk spool', () => {
  test('an earlier process’s spool is read back: a batch sent once keeps its key and events, settled events are gone, a torn last record is skipped', () => {
    const dir = spoolDir();
    writeFileSync(
      join(dir, 'segment-000001.jsonl'),
      [
        { e: 1, v: tick('a', 1) },
        { e: 2, v: tick('a', 2) },
        { e: 3, v: tick('a', 3) },
        { b: 'batch-stored', ids: [1] },
        { s: [1] },
        { b: 'batch-in-flight', ids: [2, 3] },
        { e: 4, v: tick('a', 4) },
      ]
        .map((record) => JSON.stringify(record))
        .join('\n') + '\n',
    );
    // Killed in the middle of writing event 5.
    appendFileSync(join(dir, 'segment-000001.jsonl'), JSON.stringify({ e: 5, v: tick('a', 5) }).slice(0, 30));
    const spool = new DiskSpool<IncomingEvent>(dir);
    const restored = spool.restore();
    assert.deepEqual(
      restored.batches.map((batch) => [batch.key, batch.entries.map((entry) => entry.id)]),
      [['batch-in-flight', [2, 3]]],
    );
    assert.deepEqual(
      restored.events.map((entry) => entry.event),
      [tick('a', 4)],
    );
    assert.equal(spool.outstanding, 3);
    // New records go to a new segment, never after the torn one; new ids follow the old.
    assert.equal(spool.append(tick('a', 6), JSON.stringify(tick('a', 6))), 5);
    assert.deepEqual(readdirSync(dir).sort(), ['segment-000001.jsonl', 'segment-000002.jsonl', 'spool.lock']);
    spool.settle([2, 3, 4]);
    assert.deepEqual(readdirSync(dir).sort(), ['segment-000002.jsonl', 'spool.lock'], 'the old segment goes once all its events are settled');
    spool.settle([5]);
    spool.release();
    assert.deepEqual(readdirSync(dir), [], 'nothing left: no segment, no lock');
  });

  test('one process per directory: a second spool in this process and a lock of a running process are refused; a dead owner’s lock is taken over', async () => {
    const dir = spoolDir();
    const first = new DiskSpool<IncomingEvent>(dir);
    assert.throws(() => new DiskSpool<IncomingEvent>(dir), VigilSpoolError);
    assert.throws(() => new ObserveClient({ baseUrl: 'http://127.0.0.1:9', spoolDir: dir }), VigilSpoolError);
    first.release();

    const other = spoolDir();
    writeFileSync(join(other, 'spool.lock'), String(process.ppid));
    assert.throws(
      () => new DiskSpool<IncomingEvent>(other),
      (error: unknown) => error instanceof VigilSpoolError && error.message.includes(`in use by process ${process.ppid}`),
    );
    writeFileSync(join(other, 'spool.lock'), String(await deadPid()));
    const takenOver = new DiskSpool<IncomingEvent>(other);
    takenOver.release();
  });

  test('maxSpoolBytes bounds the spool: events beyond it are dropped and reported (spool_full)', async () => {
    const reported: VigilDeliveryError[] = [];
    const client = new ObserveClient({
      baseUrl: 'http://127.0.0.1:9',
      spoolDir: spoolDir(),
      maxSpoolBytes: 1000,
      flushIntervalMs: 60_000,
      maxRetryTimeMs: 0,
      onError: (error) => reported.push(error as VigilDeliveryError),
    });
    for (let i = 0; i < 20; i++) client.track(tick('spool-full', i));
    assert.ok(reported.length > 0 && reported.every((error) => error.reason === 'spool_full' && error.count === 1));
    assert.equal(client.pendingEvents + reported.length, 20);
    await client.close({ timeoutMs: 1000 });
  });
});

describe('disk spool: an agent killed with SIGKILL', () => {
  let live: LiveServices;
  before(async () => {
    live = await startLiveServices();
  });
  after(async () => {
    await live?.close();
  });

  /** A plain node agent on the built @vigil/sdk/node with the spool in `dir`: pushes `count` events (unless 0), says so, then waits to be killed or closes. */
  function agent(dir: string, baseUrl: string, count: number, sessionId: string) {
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `
        import { ObserveClient } from '@vigil/sdk/node';
        const vigil = new ObserveClient({ baseUrl: process.env.OBSERVE, apiKey: process.env.KEY, spoolDir: process.env.SPOOL, onError: (e) => console.error('REPORTED ' + e.message) });
        for (let i = 0; i < ${count}; i++) vigil.track({ sessionId: '${sessionId}', agentId: 'spool-agent', eventType: 'custom', payload: { type: 'tick', data: { i } } });
        console.log('pushed');
        if (${count} === 0) console.log(JSON.stringify(await vigil.close()));
        else setInterval(() => undefined, 1000); // runs until killed
        `,
      ],
      {
        cwd: resolve(import.meta.dirname, '../../..'),
        env: { ...process.env, OBSERVE: baseUrl, KEY: live.observeKey, SPOOL: dir },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((done) => child.once('exit', done));
    return { child, exited, output: () => ({ stdout, stderr }) };
  }

  test('events pushed while observe was unreachable survive kill -9 and are sent, once each, by the next start', async () => {
    const dir = spoolDir();
    const sessionId = `spool-kill-${Date.now()}`;
    const crashed = agent(dir, 'http://127.0.0.1:9', 500, sessionId);
    for (let i = 0; i < 600 && !crashed.output().stdout.includes('pushed'); i++) await new Promise((done) => setTimeout(done, 50));
    assert.match(crashed.output().stdout, /pushed/, crashed.output().stderr);
    crashed.child.kill('SIGKILL');
    await crashed.exited;

    const restarted = agent(dir, live.observeUrl, 0, sessionId);
    assert.equal(await restarted.exited, 0, restarted.output().stderr);
    assert.deepEqual(JSON.parse(restarted.output().stdout.split('\n')[1]!), { stored: 500, dropped: 0, spooled: 0 });
    const indices = await storedIndices(live.observeUrl, live.observeKey, [sessionId]);
    assert.deepEqual(exactlyOnceProblems(indices, 500), { missing: [], duplicated: [], unexpected: [] });
    assert.equal(indices.length, 500);
    assert.deepEqual(readdirSync(dir), [], 'the spool is empty and unlocked');
  });
});
