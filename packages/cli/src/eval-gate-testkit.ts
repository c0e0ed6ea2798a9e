/** Test helpers shared by the eval-gate test files: the real CLI in a child process, free ports. */
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';

export const vigilBin = resolve(import.meta.dirname, '../bin/vigil.mjs');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * The real `vigil eval-gate` in its own process, as CI runs it (CI=true, no VIGIL_* unless given),
 * spawned asynchronously so servers in the test process keep answering it. `undefined` removes a variable.
 */
export function runCli(args: string[], env: Record<string, string | undefined> = {}, timeoutMs = 60_000): Promise<CliResult> {
  const childEnv: NodeJS.ProcessEnv = { ...process.env, CI: 'true' };
  delete childEnv.VIGIL_URL;
  delete childEnv.VIGIL_API_KEY;
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) delete childEnv[name];
    else childEnv[name] = value;
  }
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [vigilBin, 'eval-gate', ...args], { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`vigil eval-gate ${args.join(' ')} did not exit within ${timeoutMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`));
    }, timeoutMs);
    child.on('error', fail);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}

export { freePort } from './cluster.ts';
