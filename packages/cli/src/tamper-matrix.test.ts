/**
 * Issue 18's tamper matrix, events of a session (the cases in tamper-observe-testkit.ts): an attacker
 * with write access to the database tampers after the auditor saved a checkpoint; `vigil verify`
 * and, where it can, the server's own check report it. Whole sessions, the rebuilt log, derived
 * data and retention: tamper-matrix-sessions.test.ts.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { CASES, registerCases, world } from './tamper-observe-testkit.ts';
import { runVerify } from './verify-testkit.ts';

const EVENT_CASES = CASES.slice(
  0,
  CASES.findIndex((c) => c.name === 'a whole session deleted'),
);

await describeEachDatabase('tamper matrix: vigil verify with a saved checkpoint', (backend) => {
  test('untouched, the audit is valid (exit 0), with and without --deep', async () => {
    const w = await world(backend);
    try {
      for (const deep of [false, true]) {
        const result = await runVerify(['--url', w.url, '--checkpoint', w.saved, ...(deep ? ['--deep'] : [])], w.observe.key);
        assert.equal(result.status, 0, `${result.stderr}\n${JSON.stringify(result.report.findings)}`);
        assert.equal(result.report.valid, true);
      }
    } finally {
      await w.observe.close();
      rmSync(w.dir, { recursive: true, force: true });
    }
  });

  registerCases(backend, EVENT_CASES);
});
