/**
 * Issue 18's tamper matrix, whole sessions, the log itself and derived data (the cases in
 * tamper-observe-testkit.ts from "a whole session deleted" on), and a retention run that must not be
 * reported as tampering.
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { ago, custom, ingestEvents, started } from '@vigil/observe/testing';
import { CASES, registerCases, serverVerdict, world } from './tamper-observe-testkit.ts';
import { runVerify } from './verify-testkit.ts';

const SESSION_CASES = CASES.slice(CASES.findIndex((c) => c.name === 'a whole session deleted'));

await describeEachDatabase('tamper matrix: sessions, the log and derived data, with a saved checkpoint', (backend) => {
  registerCases(backend, SESSION_CASES);

  test('a retention run is reported as retention, not tampering (exit 0)', async () => {
    const w = await world(backend);
    try {
      const old = await ingestEvents(w.observe, [started('t-old', 'agent-t', ago(3 * 24 * 60)), custom('t-old', 'agent-t', ago(3 * 24 * 60 - 1))]);
      assert.equal(old.length, 2);
      // The saved checkpoint covers the old session too.
      const response = await w.observe.call({ method: 'POST', url: '/api/audit/checkpoint' });
      writeFileSync(w.saved, response.body);
      assert.equal((await w.observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 1 } })).statusCode, 200);
      await w.observe.service.jobs.retention.tick();
      assert.equal(await serverVerdict(w.observe, 't-old'), 404, 'the session is gone');
      const result = await runVerify(['--url', w.url, '--checkpoint', w.saved, '--deep'], w.observe.key);
      assert.equal(result.status, 0, `${result.stderr}\n${JSON.stringify(result.report)}`);
      assert.match(JSON.stringify(result.report.notes), /2 logged events were deleted by retention \(1 signed tombstone/);
      assert.deepEqual(result.report.findings, []);
    } finally {
      await w.observe.close();
      rmSync(w.dir, { recursive: true, force: true });
    }
  });
});
