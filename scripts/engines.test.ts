// The Node versions Vigil supports (root package.json `engines`): every workspace package states the
// same, and every package npm installs accepts each supported line from its first release on, so
// `npm ci` prints no EBADENGINE warning on any of them.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import semver from 'semver';

const ROOT = resolve(import.meta.dirname, '..');
const readJson = (path: string) => JSON.parse(readFileSync(join(ROOT, path), 'utf8')) as Record<string, unknown>;
const supported = (readJson('package.json').engines as { node: string }).node;

interface LockedPackage {
  version: string;
  dev?: boolean;
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  engines?: { node?: string } | string[];
  os?: string[];
  cpu?: string[];
}

test('the supported Node lines are 20, 22 and 24, and every workspace package states them', () => {
  const lines = new semver.Range(supported).set.map((comparators) => semver.minVersion(comparators.map(String).join(' '))!.major);
  assert.deepEqual(lines, [20, 22, 24]);
  assert.ok(semver.satisfies(process.version, supported), `this Node (${process.version}) is one Vigil supports (${supported})`);
  for (const workspace of readJson('package.json').workspaces as string[]) {
    assert.equal((readJson(`${workspace}/package.json`).engines as { node?: string } | undefined)?.node, supported, `${workspace}/package.json engines.node`);
  }
});

/**
 * The framework adapters' test packages whose current majors need a newer Node than 20 (ai 7 and its
 * provider, Mastra, the OpenAI Agents SDK's openai 7): their tests run on Node 24 and skip on older
 * lines (docs/guide/framework-approvals.md), and no user of Vigil installs them from it. They and
 * the dev-only packages they pull in are exempt.
 */
const NEWER_NODE_TEST_ROOTS = ['node_modules/ai-v7', 'node_modules/@ai-sdk/openai-v4', 'node_modules/@mastra/core', 'node_modules/@openai/agents'];

/** Where `name` resolves from the package at `from` (Node's lookup: its own node_modules, then each parent's). */
function resolveFrom(packages: Record<string, LockedPackage>, from: string, name: string): string | undefined {
  for (let base = from; ;) {
    if (packages[`${base}/node_modules/${name}`]) return `${base}/node_modules/${name}`;
    const cut = base.lastIndexOf('/node_modules/');
    if (cut < 0) return packages[`node_modules/${name}`] ? `node_modules/${name}` : undefined;
    base = base.slice(0, cut);
  }
}

/** The lock paths of `roots` and of everything they depend on. */
function closureOf(packages: Record<string, LockedPackage>, roots: readonly string[]): Set<string> {
  const seen = new Set<string>();
  const queue = roots.filter((root) => packages[root]);
  while (queue.length > 0) {
    const path = queue.pop()!;
    if (seen.has(path)) continue;
    seen.add(path);
    const { dependencies = {}, optionalDependencies = {}, peerDependencies = {} } = packages[path]!;
    for (const name of Object.keys({ ...dependencies, ...optionalDependencies, ...peerDependencies })) {
      const resolved = resolveFrom(packages, path, name);
      if (resolved !== undefined) queue.push(resolved);
    }
  }
  return seen;
}

test("every installed package accepts the first release of each supported Node line (no EBADENGINE), but the adapters' newer-Node test packages", () => {
  const firstReleases = new semver.Range(supported).set.map((comparators) => semver.minVersion(comparators.map(String).join(' '))!.version);
  const lock = readJson('package-lock.json') as { packages: Record<string, LockedPackage> };
  const refused: string[] = [];
  const newerNodeTestPackages = closureOf(lock.packages, NEWER_NODE_TEST_ROOTS);
  for (const [path, locked] of Object.entries(lock.packages)) {
    const range = Array.isArray(locked.engines) ? undefined : locked.engines?.node;
    // A package for another platform is not installed here, and npm does not check it.
    const installedHere = (locked.os ?? ['linux']).includes('linux') && (locked.cpu ?? ['x64']).includes('x64');
    if (path === '' || range === undefined || !installedHere) continue;
    if (locked.dev === true && newerNodeTestPackages.has(path)) continue;
    for (const version of firstReleases) {
      if (!semver.satisfies(version, range)) refused.push(`${path}@${locked.version} wants node ${range}, refusing ${version}`);
    }
  }
  assert.deepEqual(refused, []);
});
