import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { sqliteBackend } from '@vigil/platform/testing';
import { startTestObserve, type TestObserve } from '@vigil/observe/testing';
import { verifyText as verify, type CliResult } from './verify-testkit.ts';

function noStackTrace(result: CliResult): void {
  assert.doesNotMatch(result.stderr + result.stdout, /\n\s+at .+:\d+:\d+/, 'no stack trace');
}

// Usage errors do not depend on the database: one SQLite service answers the cases that need one.
let observe: TestObserve;
let url = '';
const dir = mkdtempSync(join(tmpdir(), 'vigil-verify-usage-'));
const file = (name: string, content: unknown): string => {
  const path = join(dir, name);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
};

before(async () => {
  observe = await startTestObserve(sqliteBackend);
  await observe.service.app.listen({ host: '127.0.0.1', port: 0 });
  url = `http://127.0.0.1:${(observe.service.app.server.address() as AddressInfo).port}`;
});
after(async () => {
  await observe.close();
  rmSync(dir, { recursive: true, force: true });
});

test('unreadable input and bad flags: exit 2, a message and no stack trace', async () => {
  const cases: [string[], RegExp][] = [
    [[join(dir, 'nothing-here.json')], /cannot read the bundle/],
    [[file('not-json.json', '{ nope')], /is not JSON/],
    [[file('not-bundle.json', { format: 'other' })], /format is not "vigil-audit-bundle\/1"/],
    [['--bogus'], /unknown option/],
    [[], /give a bundle file to verify, or --url/],
    [[file('a3.json', '{}'), '--public-key', 'not a key'], /--public-key is neither base64/],
    [[file('a4.json', '{}'), '--deep'], /--deep audits the whole log/],
    [['--url', 'ftp://x'], /not an http\(s\) URL/],
    [['--api-key', 'x', '--url', url], /VIGIL_API_KEY/],
  ];
  for (const [args, message] of cases) {
    const result = await verify(args);
    assert.equal(result.status, 2, `${args.join(' ')}: ${result.stdout}${result.stderr}`);
    assert.match(result.stderr, message);
    noStackTrace(result);
  }
  const unauthorised = await verify(['--url', url]);
  assert.equal(unauthorised.status, 2);
  assert.match(unauthorised.stderr, /401/);
});
