// examples/claude-agent-sdk.ts and examples/claude-code/.claude/settings.json, run as a user runs
// them, against local stand-ins: the real gate and observe, a fake Anthropic API, Claude Code offline.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { startLiveServices, type LiveServices } from '@vigil/cli/testing';
import { CLAUDE_BINARY, ClaudeProject, FakeAnthropic, runClaude } from './claude-harness.ts';
import { GateClient, ObserveClient } from './index.ts';

const root = resolve(import.meta.dirname, '../../..');
const SETTINGS = join(root, 'examples/claude-code/.claude/settings.json');

let live: LiveServices;
let gate: GateClient;
let gateKey: string;
const cleanups: Array<() => unknown> = [];

before(async () => {
  live = await startLiveServices();
  gate = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
  gateKey = await live.gateKey('claude-example', ['request:create', 'request:read']);
  await gate.createPolicy({ name: 'examples', rules: [{ match: { action: 'Bash', command: { $regex: '^date' } }, decision: 'auto_approve' }] });
});
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  await live?.close();
});

async function fakeModel(command: string): Promise<FakeAnthropic> {
  const fake = await new FakeAnthropic('Bash', { command, description: 'example step' }).start();
  cleanups.push(() => fake.stop());
  return fake;
}

function project(settings?: object): ClaudeProject {
  const made = new ClaudeProject(settings);
  cleanups.push(() => made.remove());
  return made;
}

test('examples/claude-agent-sdk.ts: the gate approves the Bash call, it runs, the session records request, decision and call', async () => {
  const fake = await fakeModel('date > today.txt');
  const dir = project();
  // The agent runs in its own project directory: tsx is named by its path, not looked up from there.
  const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), join(root, 'examples/claude-agent-sdk.ts')], {
    cwd: dir.dir,
    env: dir.env(fake.url, {
      VIGIL_URL: live.observeUrl,
      VIGIL_API_KEY: live.observeKey,
      VIGIL_GATE_URL: live.gateUrl,
      VIGIL_GATE_API_KEY: gateKey,
      CLAUDE_CODE_PATH: CLAUDE_BINARY,
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((done) => child.once('exit', done));
  assert.equal(code, 0, `${stdout}\n${stderr}`);
  assert.match(stdout, /Result: done/);
  assert.doesNotMatch(stdout, /Denied:/);
  assert.match(readFileSync(join(dir.dir, 'today.txt'), 'utf8'), /\d{4}/);
  const sessionId = /Session ([0-9a-f-]{36}) started/.exec(stdout)![1]!;
  const observe = new ObserveClient({ baseUrl: live.observeUrl, apiKey: live.observeKey });
  const { events } = await observe.getTimeline(sessionId);
  assert.deepEqual(
    events.map((event) => event.eventType).filter((type) => type !== 'custom'),
    ['session_started', 'approval_requested', 'approval_granted', 'tool_call', 'tool_response', 'session_ended'],
  );
  await observe.close();
});

test('examples/claude-code/.claude/settings.json, as docs/guide/claude-code.md shows it: Claude Code asks the gate with the key from the environment', async () => {
  const text = readFileSync(SETTINGS, 'utf8');
  assert.ok(readFileSync(join(root, 'docs/guide/claude-code.md'), 'utf8').includes(text.trim()), 'the guide shows the example settings verbatim');
  const fake = await fakeModel('date > today.txt');
  const dir = project(JSON.parse(text.replace('http://localhost:3000', live.gateUrl)) as object);
  const result = await runClaude(dir, dir.env(fake.url, { VIGIL_GATE_API_KEY: gateKey }), 'write the date');
  assert.deepEqual(result.permission_denials, []);
  assert.match(readFileSync(join(dir.dir, 'today.txt'), 'utf8'), /\d{4}/);
  const [request] = await gate.listRequests({ action: 'Bash' });
  assert.equal(request?.status, 'approved');
  assert.equal(request?.params.command, 'date > today.txt');
});
