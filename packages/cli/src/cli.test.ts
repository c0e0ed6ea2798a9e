import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, test } from 'node:test';
import { freePort } from './cluster.ts';

const bin = resolve(import.meta.dirname, '../bin/vigil.mjs');
const dataDirs: string[] = [];
after(() => dataDirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function dataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-cli-'));
  dataDirs.push(dir);
  return dir;
}

interface Running {
  child: ChildProcess;
  base: string;
  exited: Promise<number | null>;
}

async function startObserve(dir: string): Promise<Running> {
  const port = await freePort();
  const child = spawn(process.execPath, [bin, 'observe', '--port', String(port), '--data-dir', dir], {
    env: { ...process.env, LOG_LEVEL: 'warn', HOST: '127.0.0.1', DATABASE_URL: '' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((done) =>
    child.once('exit', (code) => {
      if (code !== 0) process.stderr.write(`vigil observe exited ${code}:\n${stderr}\n`);
      done(code);
    }),
  );
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 150; i++) {
    try {
      if ((await fetch(`${base}/api/health`)).ok) return { child, base, exited };
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  child.kill('SIGKILL');
  throw new Error('vigil observe did not become healthy');
}

describe('vigil CLI', () => {
  test('a bad configuration value stops start-up with a message naming the variable (exit 2)', () => {
    const result = spawnSync(process.execPath, [bin, 'observe'], {
      env: { ...process.env, OBSERVE_PORT: 'not-a-port' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(result.status, 2);
    assert.match(result.stderr, /OBSERVE_PORT/);
  });

  test('an invalid --port is a usage error', () => {
    const result = spawnSync(process.execPath, [bin, 'observe', '--port', '70000'], { encoding: 'utf8', timeout: 30_000 });
    assert.notEqual(result.status, 0);
    assert.match(result.stderr, /port/);
  });

  test('vigil observe serves on --port with its SQLite file under --data-dir, and SIGTERM lets an in-flight batch finish', async () => {
    const dir = dataDir();
    const first = await startObserve(dir);
    assert.ok(existsSync(join(dir, 'observe.db')), 'the SQLite file lives under --data-dir');
    const keyResponse = await fetch(`${first.base}/api/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'cli-test' }),
    });
    assert.equal(keyResponse.status, 201);
    const { key } = (await keyResponse.json()) as { key: string };
    const events = Array.from({ length: 1000 }, (_, i) => ({
      sessionId: 'shutdown',
      agentId: 'agent',
      eventType: 'custom',
      payload: { type: 'tick', data: { i, text: 'x'.repeat(200) } },
    }));
    const body = Buffer.from(JSON.stringify({ events }));
    // The request is provably in flight at SIGTERM: half its body is sent before the signal,
    // the rest after.
    const { port } = new URL(first.base);
    const response = new Promise<{ status: number; connection: string | undefined }>((done, fail) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/api/events',
          headers: { 'content-type': 'application/json', 'content-length': body.length, authorization: `Bearer ${key}` },
        },
        (res) => {
          res.resume();
          res.on('end', () => done({ status: res.statusCode ?? 0, connection: res.headers.connection }));
        },
      );
      req.on('error', fail);
      req.write(body.subarray(0, body.length / 2));
      setTimeout(() => {
        first.child.kill('SIGTERM');
        setTimeout(() => req.end(body.subarray(body.length / 2)), 300);
      }, 200);
    });
    const answered = await response;
    assert.equal(answered.status, 201, 'the request in flight at SIGTERM is answered');
    assert.equal(answered.connection, 'close', 'and its connection is closed so shutdown need not wait for keep-alive');
    const started = Date.now();
    assert.equal(await first.exited, 0);
    assert.ok(Date.now() - started < 5000, 'the process exits promptly once the request is done');

    const second = await startObserve(dir);
    try {
      const session = await fetch(`${second.base}/api/sessions/shutdown`, { headers: { authorization: `Bearer ${key}` } });
      assert.equal(session.status, 200);
      assert.equal(((await session.json()) as { eventCount: number }).eventCount, 1000);
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  });
});
