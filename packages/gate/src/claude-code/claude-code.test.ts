// The Claude Code routes' wire shapes and refusals (the end-to-end runs of Claude Code itself are
// packages/sdk/src/claude-code.test.ts): each answer branch, bad input, scope, expiry while waiting.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeEachDatabase } from '@vigil/platform/testing';
import { gateConfigFromEnvironment } from '../config.ts';
import { assertGateError, startTestGate, type TestGate } from '../testing.ts';

const HOOK = '/api/hooks/claude-code';
const PROMPT = '/api/claude-code/permission-prompt';

function hookInput(event: 'PreToolUse' | 'PermissionRequest', command: string, extra: Record<string, unknown> = {}) {
  return {
    session_id: 'sess-1',
    transcript_path: '/home/u/.claude/projects/p/sess-1.jsonl',
    cwd: '/work/project',
    permission_mode: 'default',
    hook_event_name: event,
    tool_name: 'Bash',
    tool_input: { command, description: 'step' },
    tool_use_id: 'toolu_01',
    ...extra,
  };
}

await describeEachDatabase('Claude Code routes', (backend) => {
  let gate: TestGate;
  let hookKey: string;
  before(async () => {
    gate = await startTestGate(backend);
    hookKey = await gate.createKey(['request:create'], null, 'claude-hook');
    const created = await gate.call({
      method: 'POST',
      url: '/api/policies',
      payload: {
        name: 'claude',
        rules: [
          { match: { action: 'Bash', command: { $regex: '^ls' } }, decision: 'auto_approve' },
          { match: { action: 'Bash', command: { $regex: '^rm' } }, decision: 'auto_deny' },
          { match: { action: 'Bash' }, decision: 'route_to_human' },
        ],
      },
    });
    assert.equal(created.statusCode, 201, created.body);
  });
  after(() => gate.close());

  const post = (url: string, payload: unknown, key = hookKey) => gate.call({ method: 'POST', url, payload: payload as object }, key);

  test('PreToolUse: a policy approval is allow, a policy denial deny, each with the reason naming the request', async () => {
    const allowed = await post(HOOK, hookInput('PreToolUse', 'ls -la'));
    assert.equal(allowed.statusCode, 200, allowed.body);
    const allow = allowed.json().hookSpecificOutput;
    assert.equal(allow.hookEventName, 'PreToolUse');
    assert.equal(allow.permissionDecision, 'allow');
    assert.match(allow.permissionDecisionReason, /^Approved in Vigil by policy:\S+ \(request \S+\)/);

    const denied = (await post(HOOK, hookInput('PreToolUse', 'rm -rf /'))).json().hookSpecificOutput;
    assert.equal(denied.permissionDecision, 'deny');
    assert.match(denied.permissionDecisionReason, /^Denied in Vigil by policy:/);

    const id = /\(request (\S+)\)/.exec(denied.permissionDecisionReason)![1]!;
    const request = (await gate.call({ method: 'GET', url: `/api/requests/${id}` })).json();
    assert.equal(request.action, 'Bash');
    assert.deepEqual(request.params, { command: 'rm -rf /', description: 'step' });
    assert.deepEqual(request.context, {
      via: 'claude-code',
      claudeCode: { sessionId: 'sess-1', toolUseId: 'toolu_01', cwd: '/work/project', hookEvent: 'PreToolUse' },
    });
  });

  test('PreToolUse with no human in time: the configured pending answer (ask by default, defer, deny)', async () => {
    for (const [query, expected] of [
      ['', 'ask'],
      ['?pending=defer', 'defer'],
      ['?pending=deny', 'deny'],
    ] as const) {
      const output = (await post(`${HOOK}${query}`, hookInput('PreToolUse', 'make deploy'))).json().hookSpecificOutput;
      assert.equal(output.permissionDecision, expected, query);
      assert.match(output.permissionDecisionReason, /^Waiting for a human to decide in Vigil \(request \S+\)$/);
    }
  });

  test('PreToolUse waits for a human: the decision made meanwhile is the answer', async () => {
    const answer = post(`${HOOK}?wait=10`, hookInput('PreToolUse', 'make release'));
    let pendingId: string | undefined;
    while (pendingId === undefined) {
      // A pause between reads: the waiting route polls on a timer, which a loop of in-process calls would starve.
      await sleep(20);
      const list = (await gate.call({ method: 'GET', url: '/api/requests?status=pending&action=Bash' })).json() as Array<{
        id: string;
        params: { command: string };
      }>;
      pendingId = list.find((item) => item.params.command === 'make release')?.id;
    }
    const decided = await gate.call({ method: 'POST', url: `/api/requests/${pendingId}/decide`, payload: { decision: 'denied', reason: 'not on Sunday' } });
    assert.equal(decided.statusCode, 200, decided.body);
    const output = (await answer).json().hookSpecificOutput;
    assert.equal(output.permissionDecision, 'deny');
    assert.match(output.permissionDecisionReason, /^Denied in Vigil by api:admin \(GATE_ADMIN_KEY\) \(request \S+\): not on Sunday$/);
  });

  test('a request that expires while the hook waits is denied', async () => {
    const answer = post(`${HOOK}?wait=10&expires=60`, hookInput('PreToolUse', 'make migrate'));
    let found = false;
    while (!found) {
      await sleep(20);
      const list = (await gate.call({ method: 'GET', url: '/api/requests?status=pending&action=Bash' })).json() as Array<{ params: { command: string } }>;
      found = list.some((item) => item.params.command === 'make migrate');
    }
    gate.clock.advance(61_000);
    const output = (await answer).json().hookSpecificOutput;
    assert.equal(output.permissionDecision, 'deny');
    assert.match(output.permissionDecisionReason, /expired without a decision; the call is denied$/);
  });

  test('PermissionRequest: allow carries the input, deny the message; pending is no decision (Claude Code asks) or deny', async () => {
    const allowed = (await post(HOOK, hookInput('PermissionRequest', 'ls'))).json();
    assert.deepEqual(allowed.hookSpecificOutput, {
      hookEventName: 'PermissionRequest',
      decision: { behavior: 'allow', updatedInput: { command: 'ls', description: 'step' } },
    });
    const denied = (await post(HOOK, hookInput('PermissionRequest', 'rm x'))).json().hookSpecificOutput;
    assert.equal(denied.decision.behavior, 'deny');
    assert.match(denied.decision.message, /^Denied in Vigil by policy:/);
    const pending = (await post(HOOK, hookInput('PermissionRequest', 'make it'))).json();
    assert.equal(pending.hookSpecificOutput, undefined);
    assert.match(pending.systemMessage, /^Waiting for a human/);
    const refused = (await post(`${HOOK}?pending=deny`, hookInput('PermissionRequest', 'make it'))).json().hookSpecificOutput;
    assert.equal(refused.decision.behavior, 'deny');
  });

  test('the permission prompt tool route: allow with exactly the input, deny with the message (pending after wait included)', async () => {
    const input = { command: 'ls', description: 'step' };
    assert.deepEqual((await post(PROMPT, { tool_name: 'Bash', input, tool_use_id: 'toolu_9' })).json(), { behavior: 'allow', updatedInput: input });
    const denied = (await post(PROMPT, { tool_name: 'Bash', input: { command: 'rm -rf /' } })).json();
    assert.equal(denied.behavior, 'deny');
    assert.match(denied.message, /^Denied in Vigil by policy:/);
    const pending = (await post(`${PROMPT}?wait=0`, { tool_name: 'Bash', input: { command: 'make it' } })).json();
    assert.equal(pending.behavior, 'deny');
    assert.match(pending.message, /^Waiting for a human/);
  });

  test('CLAUDE_CODE_PROMPT_WAIT_SECONDS is how long the prompt tool waits without ?wait=', async () => {
    const short = await startTestGate(backend, { env: { CLAUDE_CODE_PROMPT_WAIT_SECONDS: '0.3' } });
    try {
      const policy = { name: 'human', rules: [{ match: { action: 'Bash' }, decision: 'route_to_human' }] };
      assert.equal((await short.call({ method: 'POST', url: '/api/policies', payload: policy })).statusCode, 201);
      const started = performance.now();
      const pending = (await short.call({ method: 'POST', url: PROMPT, payload: { tool_name: 'Bash', input: { command: 'make it' } } })).json();
      const waited = performance.now() - started;
      assert.equal(pending.behavior, 'deny');
      assert.match(pending.message, /^Waiting for a human/);
      assert.ok(waited >= 290 && waited < 10_000, `waited ${Math.round(waited)} ms, the configured 300 ms`);
    } finally {
      await short.close();
    }
    assert.throws(() => gateConfigFromEnvironment({ CLAUDE_CODE_PROMPT_WAIT_SECONDS: '601' }), /CLAUDE_CODE_PROMPT_WAIT_SECONDS/);
  });

  test('bad input is a 400 naming the problem; a key without request:create is 403; no key 401', async () => {
    for (const [url, payload] of [
      [HOOK, { ...hookInput('PreToolUse', 'ls'), hook_event_name: 'PostToolUse' }],
      [HOOK, { ...hookInput('PreToolUse', 'ls'), tool_input: 'ls' }],
      [HOOK, { ...hookInput('PreToolUse', 'ls'), tool_name: '' }],
      [`${HOOK}?wait=601`, hookInput('PreToolUse', 'ls')],
      [`${HOOK}?pending=allow`, hookInput('PreToolUse', 'ls')],
      [PROMPT, { tool_name: 'Bash' }],
    ] as const) {
      assertGateError(await post(url, payload), 400, 'bad_request', `${url} ${JSON.stringify(payload).slice(0, 80)}`);
    }
    const reader = await gate.createKey(['request:read'], null, 'reader');
    assertGateError(await post(HOOK, hookInput('PreToolUse', 'ls'), reader), 403, 'forbidden');
    assertGateError(await gate.service.app.inject({ method: 'POST', url: HOOK, payload: hookInput('PreToolUse', 'ls') }), 401, 'unauthorized');
  });
});
