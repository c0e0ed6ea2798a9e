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
 * Test-only packages of the framework adapters whose current majors need a newer Node than 20 (ai 7,
 * Mastra, and what they and the OpenAI Agents SDK pull in): their tests run on Node 24 and skip on
 * older lines (docs/guide/framework-approvals.md), and no user of Vigil installs them from it.
 */
const NEWER_NODE_TEST_PACKAGES = new Set([
  'ai-v7',
  '@ai-sdk/openai-v4',
  '@ai-sdk/gateway',
  '@ai-sdk/provider',
  '@ai-sdk/provider-utils',
  '@ai-sdk/provider-v7',
  '@ai-sdk/provider-utils-v7',
  '@mastra/core',
  '@mastra/schema-compat',
  'posthog-node',
  'openai',
]);

test("every installed package accepts the first release of each supported Node line (no EBADENGINE), but the adapters' newer-Node test packages", () => {
  const firstReleases = new semver.Range(supported).set.map((comparators) => semver.minVersion(comparators.map(String).join(' '))!.version);
  const lock = readJson('package-lock.json') as { packages: Record<string, LockedPackage> };
  const refused: string[] = [];
  for (const [path, locked] of Object.entries(lock.packages)) {
    const range = Array.isArray(locked.engines) ? undefined : locked.engines?.node;
    // A package for another platform is not installed here, and npm does not check it.
    const installedHere = (locked.os ?? ['linux']).includes('linux') && (locked.cpu ?? ['x64']).includes('x64');
    if (path === '' || range === undefined || !installedHere) continue;
    if (locked.dev === true && NEWER_NODE_TEST_PACKAGES.has(path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length))) continue;
    for (const version of firstReleases) {
      if (!semver.satisfies(version, range)) refused.push(`${path}@${locked.version} wants node ${range}, refusing ${version}`);
    }
  }
  assert.deepEqual(refused, []);
});
