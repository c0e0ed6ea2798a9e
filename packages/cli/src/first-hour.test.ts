/**
 * The first hour, through real processes: `vigil up` makes one product of the two services, the
 * console is for people, a fresh start listens on loopback, and a start that cannot work says why
 * in one line (exit 1) instead of a stack trace.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, test } from 'node:test';
import { eventually } from './testing.ts';
import { freePort } from './cluster.ts';

const bin = resolve(import.meta.dirname, '../bin/vigil.mjs');
const dirs: string[] = [];
after(() => dirs.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-first-hour-'));
  dirs.push(dir);
  return dir;
}

interface Run {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number | null>;
}

/** `vigil <args>` as a user runs it (no PostgreSQL unless `env` says so). */
function run(args: string[], env: Record<string, string>): Run {
  const child = spawn(process.execPath, [bin, ...args], {
    env: { ...process.env, DATABASE_URL: '', REDIS_URL: '', HOST: '', LOG_FORMAT: '', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

/** Waits for `base` to answer its health route (observe: /api/health; the gate: /health). */
async function healthy(base: string, running: Run, path = '/api/health'): Promise<void> {
  await eventually(
    async () => {
      if (running.child.exitCode !== null) throw new Error(`exited ${running.child.exitCode}: ${running.stderr()}`);
      return fetch(`${base}${path}`)
        .then((r) => r.ok)
        .catch(() => false);
    },
    (ok) => ok,
    30_000,
    `${base} healthy (stdout: ${running.stdout().slice(-2000)} stderr: ${running.stderr().slice(-2000)})`,
  );
}

async function stop(running: Run): Promise<void> {
  if (running.child.exitCode === null) running.child.kill('SIGTERM');
  await running.exited;
}

async function json<T>(url: string, { key, ...init }: RequestInit & { key?: string } = {}): Promise<T> {
  const response = await fetch(url, {
    ...init,
    headers: { 'content-type': 'application/json', ...(key === undefined ? {} : { authorization: `Bearer ${key}` }) },
  });
  const text = await response.text();
  assert.ok(response.ok, `${init.method ?? 'GET'} ${url}: ${response.status} ${text}`);
  return JSON.parse(text) as T;
}

describe('vigil up: one product', () => {
  test('approvals of a request naming a session join its timeline; a policy deny reaches it as a breach; the link secrets are made once', async () => {
    const dataDir = tempDir();
    const [observePort, gatePort] = [await freePort(), await freePort()];
    const env = { OBSERVE_PORT: String(observePort), GATE_PORT: String(gatePort) };
    const observe = `http://127.0.0.1:${observePort}`;
    const gate = `http://127.0.0.1:${gatePort}`;
    let up = run(['up', '--data-dir', dataDir], env);
    try {
      await healthy(observe, up);
      await healthy(gate, up, '/health');
      // The once-only admin key stands alone on its line, between rules.
      const banner = await eventually(
        async () => up.stdout(),
        (out) => /^ {4}gk_\S+$/m.test(out),
        10_000,
        'the admin key banner',
      );
      const gateKey = /^ {4}(gk_\S+)$/m.exec(banner)![1]!;
      assert.match(banner, /={20,}\n.*shown only this once:\n\n {4}gk_\S+\n\n.*\n={20,}/);

      // Paths that mean what they say: the APIs' prefixes are 404 error bodies; only a browser navigation gets the dashboard.
      for (const path of ['/health', '/metrics/nope', '/v1/nope', '/api/nope']) {
        const response = await fetch(`${observe}${path}`, { headers: { accept: 'text/html' } });
        assert.equal(response.status, 404, path);
        assert.equal(((await response.json()) as { status: number }).status, 404, path);
      }
      const page = await fetch(`${observe}/sessions`, { headers: { accept: 'text/html,application/xhtml+xml' } });
      assert.equal(page.status, 200);
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
      await page.arrayBuffer();
      assert.equal((await fetch(`${observe}/sessions`, { headers: { accept: 'application/json' } })).status, 404);
      const gateUnknown = await fetch(`${gate}/api/nope`);
      assert.equal(gateUnknown.status, 404);
      assert.equal(((await gateUnknown.json()) as { error: { code: string } }).error.code, 'not_found');

      const { key: observeKey } = await json<{ key: string }>(`${observe}/api/keys`, { method: 'POST', body: JSON.stringify({ name: 'first' }) });
      await json(`${observe}/api/events`, {
        method: 'POST',
        key: observeKey,
        body: JSON.stringify({
          events: [{ sessionId: 'run-1', agentId: 'billing-bot', eventType: 'tool_call', payload: { toolName: 'lookup', callId: 'c1', arguments: {} } }],
        }),
      });

      const request = await json<{ id: string }>(`${gate}/api/requests`, {
        method: 'POST',
        key: gateKey,
        body: JSON.stringify({ action: 'refund', params: { amount: 40 }, context: { sessionId: 'run-1', agentId: 'billing-bot' } }),
      });
      await json(`${gate}/api/requests/${request.id}/decide`, { method: 'POST', key: gateKey, body: JSON.stringify({ decision: 'approved' }) });
      const timeline = () =>
        json<{ events: { eventType: string; payload: Record<string, unknown> }[] }>(`${observe}/api/sessions/run-1/timeline`, { key: observeKey });
      const granted = await eventually(timeline, (t) => t.events.some((e) => e.eventType === 'approval_granted'), 15_000, 'the approval in the timeline');
      assert.equal(granted.events.find((e) => e.eventType === 'approval_granted')!.payload.requestId, request.id);

      // A policy's auto_deny is reported to observe with the generated service token.
      await json(`${gate}/api/policies`, {
        method: 'POST',
        key: gateKey,
        body: JSON.stringify({ name: 'No wires', priority: 1, rules: [{ match: { action: 'wire_transfer' }, decision: 'auto_deny' }] }),
      });
      await json(`${gate}/api/requests`, {
        method: 'POST',
        key: gateKey,
        body: JSON.stringify({ action: 'wire_transfer', context: { sessionId: 'run-1', agentId: 'billing-bot' } }),
      });
      const breached = await eventually(timeline, (t) => JSON.stringify(t.events).includes('approval_policy'), 15_000, 'the policy breach in the timeline');
      assert.ok(breached.events.some((e) => e.eventType === 'approval_denied' || JSON.stringify(e.payload).includes('wire_transfer')));

      const secretsFile = join(dataDir, 'service-link.json');
      const secrets = readFileSync(secretsFile, 'utf8');
      assert.equal(statSync(secretsFile).mode & 0o777, 0o600);
      await stop(up);
      // A restart keeps the same secrets (a request forwarded by the earlier run stays verifiable).
      up = run(['up', '--data-dir', dataDir], env);
      await healthy(observe, up);
      assert.equal(readFileSync(secretsFile, 'utf8'), secrets);
    } finally {
      await stop(up);
    }
  });
});

describe('a console for humans, safe by default', () => {
  test('by default the service listens on 127.0.0.1 and logs JSON when not on a terminal; LOG_FORMAT=pretty gives short lines', async () => {
    const port = await freePort();
    const plain = run(['observe', '--port', String(port), '--data-dir', tempDir()], {});
    try {
      await healthy(`http://127.0.0.1:${port}`, plain);
      const line = await eventually(
        async () => plain.stdout(),
        (out) => out.includes('listening on'),
        10_000,
        'the listening line',
      );
      const listening = line.split('\n').find((l) => l.includes('listening on'))!;
      const entry = JSON.parse(listening) as { msg: string; service: string };
      assert.equal(entry.service, 'observe');
      assert.match(entry.msg, new RegExp(`^listening on http://127\\.0\\.0\\.1:${port} `));
      assert.equal(plain.stderr().includes('!!'), false, 'no bootstrap warning on loopback');
    } finally {
      await stop(plain);
    }
    const prettyPort = await freePort();
    const pretty = run(['observe', '--port', String(prettyPort), '--data-dir', tempDir()], { LOG_FORMAT: 'pretty' });
    try {
      await healthy(`http://127.0.0.1:${prettyPort}`, pretty);
      const out = await eventually(
        async () => pretty.stdout(),
        (text) => text.includes('listening on'),
        10_000,
        'the listening line',
      );
      const listening = out.split('\n').find((l) => l.includes('listening on'))!;
      assert.match(listening, /^\[\d\d:\d\d:\d\d\] INFO: observe listening on http:\/\/127\.0\.0\.1:\d+ /);
      assert.throws(() => JSON.parse(listening));
    } finally {
      await stop(pretty);
    }
  });

  test('listening beyond loopback with no key yet: a loud warning at start, gone once a key exists', async () => {
    const port = await freePort();
    const dataDir = tempDir();
    const exposed = run(['observe', '--port', String(port), '--data-dir', dataDir], { HOST: '0.0.0.0' });
    try {
      await healthy(`http://127.0.0.1:${port}`, exposed);
      const warning = await eventually(
        async () => exposed.stderr(),
        (err) => err.includes('!!'),
        10_000,
        'the warning',
      );
      assert.match(warning, new RegExp(`!! observe listens on 0\\.0\\.0\\.0:${port} and has no API key yet`));
      assert.equal((await json<{ firstKeyBootstrap: string }>(`http://127.0.0.1:${port}/api/health`)).firstKeyBootstrap, 'exposed');
      await json(`http://127.0.0.1:${port}/api/keys`, { method: 'POST', body: JSON.stringify({ name: 'first' }) });
      assert.equal((await json<{ firstKeyBootstrap: string }>(`http://127.0.0.1:${port}/api/health`)).firstKeyBootstrap, 'closed');
    } finally {
      await stop(exposed);
    }
    const again = run(['observe', '--port', String(port), '--data-dir', dataDir], { HOST: '0.0.0.0' });
    try {
      await healthy(`http://127.0.0.1:${port}`, again);
      await eventually(
        async () => again.stdout(),
        (out) => out.includes('listening on'),
        10_000,
        'the listening line',
      );
      assert.equal(again.stderr().includes('!!'), false, 'a key exists: no warning');
    } finally {
      await stop(again);
    }
  });
});

describe('a start that cannot work: one clear line, exit 1', () => {
  const oneLine = async (running: Run, pattern: RegExp): Promise<void> => {
    assert.equal(await running.exited, 1, running.stderr());
    const lines = running.stderr().trim().split('\n');
    assert.equal(lines.length, 1, running.stderr());
    assert.match(lines[0]!, pattern);
    assert.doesNotMatch(running.stderr() + running.stdout(), /^\s+at /m, 'no stack trace');
  };

  test('the port is already in use', async () => {
    const blocker: Server = await new Promise((done) => {
      const server = createServer().listen(0, '127.0.0.1', () => done(server));
    });
    const { port } = blocker.address() as { port: number };
    try {
      await oneLine(
        run(['observe', '--port', String(port), '--data-dir', tempDir()], {}),
        new RegExp(`^vigil observe: port ${port} on 127\\.0\\.0\\.1 is already in use: .*OBSERVE_PORT`),
      );
      await oneLine(run(['gate', '--port', String(port), '--data-dir', tempDir()], {}), new RegExp(`^vigil gate: port ${port} .* already in use: .*GATE_PORT`));
    } finally {
      blocker.close();
    }
  });

  test('the data directory cannot be used', async () => {
    const notADirectory = join(tempDir(), 'a-file');
    writeFileSync(notADirectory, 'not a directory');
    await oneLine(
      run(['observe', '--port', String(await freePort()), '--data-dir', notADirectory], {}),
      /^vigil observe: cannot use the data directory .*a-file: /,
    );
  });

  test('the database cannot be reached (and its password is not printed)', async () => {
    const closedPort = await freePort();
    await oneLine(
      run(['gate', '--port', String(await freePort()), '--data-dir', tempDir()], {
        DATABASE_URL: `postgres://vigil:s3cret-pw@127.0.0.1:${closedPort}/test`,
        DATABASE_CONNECT_TIMEOUT_MS: '2000',
      }),
      new RegExp(`^vigil gate: cannot reach PostgreSQL at postgres://vigil:\\*\\*\\*@127\\.0\\.0\\.1:${closedPort}/test: `),
    );
  });
});
