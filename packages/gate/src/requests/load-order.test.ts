// The requests feature uses the audit trail, whose list filters on the requests' STATUSES while it
// loads: whichever of the two a process imports first, both must load (index.ts exports the tables first).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

for (const first of ['./requests/index.ts', './audit-trail/index.ts']) {
  test(`a process that imports ${first} first loads the gate's features`, () => {
    const url = new URL(`../${first}`, import.meta.url).href;
    const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', `await import(${JSON.stringify(url)});`], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
  });
}
