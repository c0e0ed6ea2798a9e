// Claude Code (its real native binary, offline) asking the gate through its HTTP hooks and its
// --permission-prompt-tool (the gate's MCP server), on both databases (docs/guide/claude-code.md).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { dropSchemas, eventually, newSchemaName, POSTGRES_URL, servicesSkipReason, startLiveServices, type LiveServices } from '@vigil/cli/testing';
import { ClaudeProject, FakeAnthropic, runClaude, type ClaudeResult } from './claude-harness.ts';
import { GateClient } from './index.ts';

/** The hook of docs/guide/claude-code.md, with the gate's URL and query. */
function hookSettings(event: 'PreToolUse' | 'PermissionRequest', url: string): object {
  return {
    hooks: {
      [event]: [
        {
          matcher: '*',
          hooks: [
            { type: 'http', url, headers: { Authorization: 'Bearer $VIGIL_GATE_KEY' }, allowedEnvVars: ['VIGIL_GATE_KEY'], timeout: 60, onFailure: 'block' },
          ],
        },
      ],
    },
  };
}

const pgSkip = await servicesSkipReason(false);
const schema = newSchemaName('claude_code');
const backends: Array<[string, Record<string, string>, string | false]> = [
  ['sqlite', {}, false],
  ['postgres', { DATABASE_URL: POSTGRES_URL, GATE_DB_SCHEMA: schema }, pgSkip],
];
after(() => (pgSkip ? undefined : dropSchemas(schema)));

for (const [database, gateEnv, skip] of backends) {
  describe(`Claude Code asks the gate [${database}]`, { skip, timeout: 600_000 }, () => {
    let live: LiveServices;
    let gate: GateClient;
    let hookKey: string;
    const projects: ClaudeProject[] = [];
    const fakes: FakeAnthropic[] = [];

    before(async () => {
      live = await startLiveServices({ gateEnv });
      gate = new GateClient({ baseUrl: live.gateUrl, apiKey: live.gateAdminKey });
      // The hook's key may only create requests (the routes it calls need no more).
      hookKey = await live.gateKey('claude-code-hook', ['request:create']);
      await gate.createPolicy({
        name: 'claude-code tests',
        rules: [
          { match: { action: 'Bash', 'params.command': { $regex: '^echo auto' } }, decision: 'auto_approve' },
          { match: { action: 'Bash', 'params.command': { $regex: '^rm ' } }, decision: 'auto_deny' },
          { match: { action: 'Bash' }, decision: 'route_to_human' },
        ],
      });
    });
    after(async () => {
      for (const project of projects) project.remove();
      for (const fake of fakes) await fake.stop();
      await live?.close();
    });

    /** Claude Code in a fresh project whose model runs `command` with Bash once. */
    async function claude(
      command: string,
      settings: object | undefined,
      args: string[] = [],
      gateKey = hookKey,
    ): Promise<{ result: ClaudeResult; project: ClaudeProject; fake: FakeAnthropic }> {
      const fake = await new FakeAnthropic('Bash', { command, description: 'test step' }).start();
      fakes.push(fake);
      const project = new ClaudeProject(settings);
      projects.push(project);
      const result = await runClaude(project, project.env(fake.url, { VIGIL_GATE_KEY: gateKey }), 'run the step', args);
      return { result, project, fake };
    }

    async function requestFor(command: string) {
      const [item] = await eventually(
        () => gate.listRequests({ action: 'Bash' }),
        (items) => items.some((entry) => entry.params.command === command),
        // Claude Code starts in seconds, more on a loaded machine.
        90_000,
        `a request for ${command}`,
      ).then((items) => items.filter((entry) => entry.params.command === command));
      return gate.getRequest(item!.id);
    }

    test('a policy approves at once: the command runs, the request holds Claude’s ids', async () => {
      const { result, project, fake } = await claude('echo auto > ran.txt', hookSettings('PreToolUse', `${live.gateUrl}/api/hooks/claude-code`));
      assert.equal(result.is_error, false);
      assert.deepEqual(result.permission_denials, []);
      assert.equal(readFileSync(join(project.dir, 'ran.txt'), 'utf8'), 'auto\n');
      assert.equal(fake.toolResults[0]?.isError, false);
      const request = await requestFor('echo auto > ran.txt');
      assert.equal(request.status, 'approved');
      assert.deepEqual(request.params, { command: 'echo auto > ran.txt', description: 'test step' });
      const ids = (request.context as { via: string; claudeCode: Record<string, string> }).claudeCode;
      assert.equal((request.context as { via: string }).via, 'claude-code');
      assert.equal(ids.sessionId, result.session_id);
      assert.equal(ids.toolUseId, fake.toolResults[0]?.toolUseId);
      assert.equal(ids.cwd, project.dir);
      assert.equal(ids.hookEvent, 'PreToolUse');
    });

    test('a policy denies: the call is in permission_denials, Claude is told why, nothing ran', async () => {
      const { result, project, fake } = await claude('rm -rf ./data', hookSettings('PreToolUse', `${live.gateUrl}/api/hooks/claude-code`));
      assert.deepEqual(
        result.permission_denials.map((denial) => [denial.tool_name, denial.tool_input.command]),
        [['Bash', 'rm -rf ./data']],
      );
      const request = await requestFor('rm -rf ./data');
      assert.equal(request.status, 'denied');
      assert.match(fake.toolResults[0]!.content, new RegExp(`Denied in Vigil by policy:.*\\(request ${request.id}\\)`));
      assert.equal(existsSync(join(project.dir, 'data')), false);
    });

    test('a human approves through the API while the hook waits: the command runs', async () => {
      const command = 'echo human > ran.txt';
      const run = claude(command, hookSettings('PreToolUse', `${live.gateUrl}/api/hooks/claude-code?wait=120`));
      const pending = await requestFor(command);
      assert.equal(pending.status, 'pending');
      await gate.decide(pending.id, 'approved', 'looked at it');
      const { result, project } = await run;
      assert.deepEqual(result.permission_denials, []);
      assert.equal(readFileSync(join(project.dir, 'ran.txt'), 'utf8'), 'human\n');
      assert.match((await gate.getRequest(pending.id)).decidedBy!, /^api:/);
    });

    test('the request expires while the hook waits: denied with the reason', async () => {
      const command = 'echo expiring > ran.txt';
      const { result, project, fake } = await claude(command, hookSettings('PreToolUse', `${live.gateUrl}/api/hooks/claude-code?wait=20&expires=1`));
      assert.equal(result.permission_denials.length, 1);
      const request = await requestFor(command);
      assert.equal(request.status, 'expired');
      assert.match(fake.toolResults[0]!.content, /expired without a decision; the call is denied/);
      assert.equal(existsSync(join(project.dir, 'ran.txt')), false);
    });

    test('no human in time in a -p run: the call is deferred (the run stops, the request stays pending)', async () => {
      const command = 'echo later > ran.txt';
      const { result, project } = await claude(command, hookSettings('PreToolUse', `${live.gateUrl}/api/hooks/claude-code?pending=defer`));
      assert.equal(result.terminal_reason, 'tool_deferred');
      assert.equal(result.deferred_tool_use?.input.command, command);
      assert.equal((await requestFor(command)).status, 'pending');
      assert.equal(existsSync(join(project.dir, 'ran.txt')), false);
    });

    test('fail closed: an unreachable gate or a wrong key blocks the call', async () => {
      const down = await claude('echo auto > ran.txt', hookSettings('PreToolUse', 'http://127.0.0.1:9/api/hooks/claude-code'));
      assert.equal(down.result.permission_denials.length + (down.fake.toolResults[0]?.isError ? 1 : 0) > 0, true);
      assert.equal(existsSync(join(down.project.dir, 'ran.txt')), false);
      const badKey = await claude('echo auto > ran.txt', hookSettings('PreToolUse', `${live.gateUrl}/api/hooks/claude-code`), [], 'gk_wrong');
      assert.equal(existsSync(join(badKey.project.dir, 'ran.txt')), false);
      assert.equal(badKey.fake.toolResults[0]?.isError, true);
    });

    test('the PermissionRequest hook: approved → allow with the input, denied → deny with the message', async () => {
      const approved = await claude('echo auto > ran.txt', hookSettings('PermissionRequest', `${live.gateUrl}/api/hooks/claude-code`));
      assert.deepEqual(approved.result.permission_denials, []);
      assert.equal(readFileSync(join(approved.project.dir, 'ran.txt'), 'utf8'), 'auto\n');
      const denied = await claude('rm -rf ./cache', hookSettings('PermissionRequest', `${live.gateUrl}/api/hooks/claude-code`));
      assert.equal(denied.result.permission_denials.length, 1);
      assert.match(denied.fake.toolResults[0]!.content, /Denied in Vigil by policy:/);
    });

    test('--permission-prompt-tool through the gate’s MCP server: a policy approves, a policy denies, a human approves', async () => {
      const mcpConfig = JSON.stringify({
        mcpServers: { vigil: { type: 'http', url: `${live.gateUrl}/mcp`, headers: { Authorization: `Bearer ${hookKey}` } } },
      });
      const args = ['--mcp-config', mcpConfig, '--strict-mcp-config', '--permission-prompt-tool', 'mcp__vigil__claude_code_permission_prompt'];
      const approved = await claude('echo auto > ran.txt', undefined, args);
      assert.deepEqual(approved.result.permission_denials, []);
      assert.equal(readFileSync(join(approved.project.dir, 'ran.txt'), 'utf8'), 'auto\n');

      const denied = await claude('rm -rf ./tmp', undefined, args);
      assert.equal(denied.result.permission_denials.length, 1);
      const request = await requestFor('rm -rf ./tmp');
      assert.match(denied.fake.toolResults[0]!.content, new RegExp(`Denied in Vigil by policy:.*\\(request ${request.id}\\)`));

      const command = 'echo prompted > ran.txt';
      const run = claude(command, undefined, args);
      const pending = await requestFor(command);
      await gate.decide(pending.id, 'approved');
      const human = await run;
      assert.deepEqual(human.result.permission_denials, []);
      assert.equal(readFileSync(join(human.project.dir, 'ran.txt'), 'utf8'), 'prompted\n');
    });
  });
}
