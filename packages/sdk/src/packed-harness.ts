/**
 * Test kit for @vigil/sdk as a user gets it: `npm pack` of @vigil/sdk and @vigil/pricing installed
 * into an empty folder outside the monorepo, plain `node` agents run there, and what observe stored
 * read back by the index each event carries (exactly-once checks).
 *
 * The tarballs are packed with --ignore-scripts: `prepack` would rebuild dist/ (deleting it first)
 * under the feet of tests running at the same time; `npm test` builds both packages beforehand.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PRICING_DIR, SDK_DIR } from '../scripts/built.ts';
import { ObserveClient } from './index.ts';

const run = promisify(execFile);

/** What `npm pack --json` says about one tarball. */
export interface Packed {
  filename: string;
  size: number;
  unpackedSize: number;
  files: { path: string }[];
}

/**
 * The environment for npm and node in the install folder: none of the npm_* settings of an
 * enclosing `npm test` (they name this workspace) and no NODE_OPTIONS (so no tsx loader).
 */
export function cleanEnvironment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!/^npm_/i.test(name) && name !== 'NODE_OPTIONS' && !name.startsWith('VIGIL_')) env[name] = value;
  }
  return { ...env, ...extra };
}

export async function npm(args: string[], cwd: string): Promise<string> {
  const { stdout } = await run('npm', args, { cwd, env: cleanEnvironment(), maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

async function pack(packageDir: string, destination: string): Promise<Packed> {
  const [packed] = JSON.parse(await npm(['pack', '--json', '--ignore-scripts', '--pack-destination', destination], packageDir)) as Packed[];
  return packed!;
}

/** Packs both packages into `workDir` and installs the tarballs into a new npm project, `appDir`. */
export async function installPackedSdk(): Promise<{ workDir: string; appDir: string; packed: Record<'sdk' | 'pricing', Packed> }> {
  const workDir = mkdtempSync(join(tmpdir(), 'vigil-pack-'));
  const appDir = mkdtempSync(join(tmpdir(), 'vigil-install-'));
  const [pricing, sdk] = await Promise.all([pack(PRICING_DIR, workDir), pack(SDK_DIR, workDir), npm(['init', '-y'], appDir)]);
  await npm(['install', join(workDir, sdk.filename), join(workDir, pricing.filename), '--no-audit', '--no-fund', '--prefer-offline'], appDir);
  return { workDir, appDir, packed: { sdk, pricing } };
}

/** A plain `node` process running `source` (written to `file` in `appDir`), its output kept. */
export class AgentProcess {
  readonly child: ChildProcess;
  stdout = '';
  stderr = '';
  readonly exited: Promise<number | null>;

  constructor(appDir: string, file: string, source: string, env: Record<string, string>) {
    writeFileSync(join(appDir, file), source);
    this.child = spawn(process.execPath, [file], { cwd: appDir, env: cleanEnvironment(env), stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (chunk: Buffer) => (this.stdout += chunk.toString()));
    this.child.stderr!.on('data', (chunk: Buffer) => (this.stderr = (this.stderr + chunk.toString()).slice(-20_000)));
    this.exited = new Promise((done) => this.child.once('exit', done));
  }

  /** The last line the process wrote that starts with `prefix`, without the prefix. */
  lastLine(prefix: string): string | undefined {
    const lines = this.stdout.split('\n').filter((line) => line.startsWith(prefix));
    return lines.at(-1)?.slice(prefix.length);
  }
}

/** Observe's largest page of GET /api/events. */
const PAGE = 500;

/** The `payload.data.i` of every event stored in the sessions (all pages). */
export async function storedIndices(baseUrl: string, apiKey: string, sessionIds: readonly string[]): Promise<number[]> {
  const client = new ObserveClient({ baseUrl, apiKey });
  const indices: number[] = [];
  for (const sessionId of sessionIds) {
    for (let offset = 0; ; offset += PAGE) {
      const page = await client.listEvents({ sessionId, order: 'asc', limit: PAGE, offset });
      for (const event of page.events) indices.push((event.payload.data as { i: number }).i);
      if (!page.hasMore) break;
    }
  }
  return indices;
}

/** How the stored indices differ from exactly once each of 0 … count-1: the missing, the stored twice, the unexpected. */
export function exactlyOnceProblems(indices: readonly number[], count: number): { missing: number[]; duplicated: number[]; unexpected: number[] } {
  const seen = new Map<number, number>();
  for (const i of indices) seen.set(i, (seen.get(i) ?? 0) + 1);
  const missing = [...Array(count).keys()].filter((i) => !seen.has(i));
  const duplicated = [...seen].filter(([, n]) => n > 1).map(([i]) => i);
  const unexpected = [...seen.keys()].filter((i) => !Number.isInteger(i) || i < 0 || i >= count);
  return { missing: missing.slice(0, 20), duplicated: duplicated.slice(0, 20), unexpected: unexpected.slice(0, 20) };
}
