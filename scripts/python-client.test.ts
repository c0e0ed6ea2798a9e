// The Python client (python/): its unittest suite runs against the real observe and gate listening
// on local ports, and what it sent is then read back from observe here, so a suite that passed
// without storing anything would still fail. Also keeps python/vigil/prices.json, the client's copy
// of @vigil/pricing, in step with the table.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { PriceTable } from '@vigil/pricing';
import { startLiveServices, type LiveServices } from '@vigil/cli/testing';
import { PYTHON_PRICES_FILE, pythonPricesJson } from './python-prices.ts';

const PYTHON_ROOT = fileURLToPath(new URL('../python/', import.meta.url));

test('python/vigil/prices.json is the current @vigil/pricing table (npm run generate:python-prices rewrites it)', () => {
  assert.equal(readFileSync(PYTHON_PRICES_FILE, 'utf8'), pythonPricesJson(), 'python/vigil/prices.json is out of date: run npm run generate:python-prices');
});

function pythonSkip(): string | false {
  const probe = spawnSync('python3', ['-c', 'import sys; assert sys.version_info >= (3, 9)'], { encoding: 'utf8' });
  if (probe.status === 0) return false;
  if (process.env.REQUIRE_SERVICES === '1') throw new Error(`REQUIRE_SERVICES=1 but python3 >= 3.9 is not available: ${probe.error?.message ?? probe.stderr}`);
  return 'python3 >= 3.9 not found';
}

/** Runs a command without blocking the event loop (the services under test run in this process). */
function run(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

interface StoredEvent {
  eventType: string;
  severity: string;
  payload: Record<string, unknown>;
  metadata: Record<string, unknown>;
}

describe('the Python client against a running Vigil', { skip: pythonSkip() }, () => {
  let live: LiveServices;
  const prefix = `py-${randomUUID().slice(0, 8)}`;

  before(async () => {
    live = await startLiveServices();
  });
  after(() => live?.close());

  async function observeGet<T>(path: string): Promise<T> {
    const response = await fetch(`${live.observeUrl}${path}`, { headers: { authorization: `Bearer ${live.observeKey}` } });
    assert.equal(response.status, 200, `${path}: ${await response.clone().text()}`);
    return (await response.json()) as T;
  }

  const events = async (sessionId: string): Promise<StoredEvent[]> =>
    (await observeGet<{ events: StoredEvent[] }>(`/api/events?sessionId=${encodeURIComponent(sessionId)}&order=asc&limit=500`)).events;

  test('python3 -m unittest passes, and observe holds the sessions, tools, costs and approvals it sent', async () => {
    const agentKey = await live.gateKey('python-agent', ['request:create', 'request:read']);
    const { code, output } = await run('python3', ['-m', 'unittest', 'discover', '-s', 'tests', '-v'], {
      cwd: PYTHON_ROOT,
      env: {
        ...process.env,
        VIGIL_URL: live.observeUrl,
        VIGIL_API_KEY: live.observeKey,
        VIGIL_GATE_URL: live.gateUrl,
        VIGIL_GATE_API_KEY: agentKey,
        VIGIL_GATE_ADMIN_KEY: live.gateAdminKey,
        VIGIL_TEST_PREFIX: prefix,
        PYTHONDONTWRITEBYTECODE: '1',
      },
      timeoutMs: 110_000,
    });
    assert.equal(code, 0, output);
    assert.match(output, /^OK$/m, output);
    assert.doesNotMatch(output, /skipped/, `no suite may be skipped here:\n${output}`);

    // The session context manager with sync, async and failing tools.
    const ok = await events(`${prefix}-ok`);
    assert.deepEqual(
      ok.map((e) => e.eventType),
      ['session_started', 'tool_call', 'tool_response', 'tool_call', 'tool_response', 'tool_call', 'tool_error', 'session_ended'],
    );
    const session = await observeGet<{ status: string; toolCallCount: number; errorCount: number }>(`/api/sessions/${prefix}-ok`);
    assert.equal(session.status, 'completed');
    assert.equal(session.toolCallCount, 3);
    assert.equal((await observeGet<{ status: string }>(`/api/sessions/${prefix}-raise`)).status, 'error');

    // Cost computed in Python from prices.json equals the TypeScript table's.
    const llm = (await events(`${prefix}-llm`)).filter((e) => e.eventType === 'llm_response');
    assert.equal(llm.length, 3);
    assert.equal(llm[0]!.payload.costUsd, PriceTable.fromDefaults().costUsd('gpt-4o', 'openai', 1000, 500));
    assert.equal(llm[1]!.metadata.costUnpriced, true);

    // Sent by the atexit hook of an interpreter that never called close().
    assert.deepEqual(
      (await events(`${prefix}-exit`)).map((e) => e.eventType),
      ['session_started', 'custom'],
    );
    // Batching, and the refused event dropped while its batch's others were stored.
    assert.equal((await events(`${prefix}-batch`)).length, 12);
    assert.deepEqual(
      (await events(`${prefix}-refused`)).map((e) => e.payload.data),
      [1, 2],
    );

    // Gate decisions recorded in the ambient session.
    const decided = async (name: string) => (await events(`${prefix}-approval-${name}`)).map((e) => e.eventType).slice(1, 3);
    assert.deepEqual(await decided('auto'), ['approval_requested', 'approval_granted']);
    assert.deepEqual(await decided('deny'), ['approval_requested', 'approval_denied']);
    assert.deepEqual(await decided('human'), ['approval_requested', 'approval_denied']);
  });
});
