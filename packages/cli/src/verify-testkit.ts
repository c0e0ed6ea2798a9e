// What the vigil verify tests share: the command as a real process.
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import type { Finding } from './verify/input.ts';

const bin = resolve(import.meta.dirname, '../bin/vigil.mjs');

export interface Report {
  valid: boolean;
  findings: Finding[];
  notes: string[];
}

/** Runs `vigil verify ARGS --json` with the API key; the parsed report (empty when the command printed none). */
export function runVerify<R = Report>(args: readonly string[], apiKey: string): Promise<{ status: number | null; report: R; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [bin, 'verify', ...args, '--json'], {
      env: { ...process.env, VIGIL_API_KEY: apiKey },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (status) =>
      done({ status, report: (stdout.trim() === '' ? { valid: false, findings: [], notes: [] } : JSON.parse(stdout)) as R, stderr }),
    );
  });
}

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** `vigil verify ARGS` as a real process, its output as text; asynchronous, so an in-process server keeps answering. */
export function verifyText(args: readonly string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [bin, 'verify', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (status) => done({ status, stdout, stderr }));
  });
}
