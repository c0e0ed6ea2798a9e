// The composite CI action (action.yml at the repository root): its inputs are the documented ones,
// the key reaches the CLI only as VIGIL_API_KEY, and the step's script (run by bash as a runner
// would) fails exactly when the pass rate measured by the real observe service is below min-pass-rate.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ObserveFixture } from './eval-gate-observe-fixture.ts';

const root = resolve(import.meta.dirname, '../../..');
const action = readFileSync(resolve(root, 'action.yml'), 'utf8');

/** The names under `inputs:` (two-space keys until the next top-level key). */
function inputNames(): string[] {
  const block = action.split(/^inputs:\n/m)[1]!.split(/^\S/m)[0]!;
  return [...block.matchAll(/^ {2}([a-z-]+):$/gm)].map((m) => m[1]!);
}

/** The `env:` mapping and `run: |` script of the step named `vigil eval-gate`. */
function evalGateStep(): { env: Record<string, string>; script: string } {
  const step = action.split(/^ {4}- name: vigil eval-gate\n/m)[1]!;
  const env: Record<string, string> = {};
  const envBlock = step.split(/^ {6}env:\n/m)[1]!.split(/^ {6}\S/m)[0]!;
  for (const [, name, value] of envBlock.matchAll(/^ {8}([A-Z_]+): (.+)$/gm)) env[name!] = value!;
  const script = step
    .split(/^ {6}run: \|\n/m)[1]!
    .split('\n')
    .map((line) => line.slice(8))
    .join('\n');
  return { env, script };
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The step's script under bash with the environment the runner derives from the inputs. */
function runStep(inputs: Record<string, string>): Promise<Run> {
  const { env, script } = evalGateStep();
  const childEnv: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, GITHUB_ACTION_PATH: root };
  for (const [name, value] of Object.entries(env)) {
    const input = /^\$\{\{ inputs\.([a-z-]+) \}\}$/.exec(value)?.[1];
    childEnv[name] = input === undefined ? value.replace(/^'(.*)'$/, '$1') : (inputs[input] ?? '');
  }
  return new Promise((done, fail) => {
    const child = spawn('bash', ['-c', script], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', fail);
    child.on('close', (code) => done({ code, stdout, stderr }));
  });
}

describe('the eval-gate composite action', () => {
  test('has the documented inputs; the key is handed over only as VIGIL_API_KEY', () => {
    const names = inputNames();
    for (const name of ['server-url', 'api-key', 'evaluator-id', 'session-ids', 'min-pass-rate', 'dataset-id', 'agent-id', 'webhook-url']) {
      assert.ok(names.includes(name), `input ${name}`);
    }
    const { env, script } = evalGateStep();
    assert.equal(env.VIGIL_API_KEY, '${{ inputs.api-key }}');
    assert.deepEqual(
      Object.entries(env)
        .filter(([, value]) => value.includes('inputs.api-key'))
        .map(([name]) => name),
      ['VIGIL_API_KEY'],
    );
    assert.doesNotMatch(script, /--api-key|\$\{\{/, 'no key flag, no input spliced into the script');
    assert.deepEqual(
      script.split('\n').filter((line) => line.includes('VIGIL_API_KEY')),
      ['if [ -n "$VIGIL_API_KEY" ]; then echo "::add-mask::$VIGIL_API_KEY"; fi'],
      'the script only masks the key',
    );
  });

  describe('its step against the real observe service', () => {
    let observe: ObserveFixture;
    let evaluatorId = '';
    before(async () => {
      observe = await ObserveFixture.start();
      await observe.ingestSession('clean-1', 'ci-agent', ['search']);
      await observe.ingestSession('dirty-1', 'ci-agent', ['search', 'delete_db']);
      evaluatorId = await observe.createNoDeleteEvaluator();
    });
    after(async () => {
      await observe?.close();
    });

    const inputs = (minPassRate: string) => ({
      'server-url': observe.base,
      'api-key': observe.key,
      'evaluator-id': evaluatorId,
      'session-ids': 'clean-1,dirty-1',
      'min-pass-rate': minPassRate,
    });

    test('passes at a pass rate equal to min-pass-rate and fails below it', async () => {
      const pass = await runStep(inputs('0.5'));
      assert.equal(pass.code, 0, pass.stderr);
      assert.match(pass.stdout, /^pass rate 0\.50 \(1\/2\), required 0\.50: PASS$/m);
      assert.ok(pass.stdout.includes(`::add-mask::${observe.key}`), 'the key is masked in the log');
      const fail = await runStep(inputs('0.6'));
      assert.notEqual(fail.code, 0, 'the step fails');
      assert.equal(fail.code, 1, fail.stderr);
      assert.match(fail.stdout, /^pass rate 0\.50 \(1\/2\), required 0\.60: FAIL$/m);
    });
  });
});
