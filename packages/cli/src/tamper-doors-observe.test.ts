/**
 * Issue 36's doors on observe that issue 18's matrix (tamper-observe-testkit.ts) left open, each as
 * the forger walks through it, after the auditor saved a checkpoint: retention decided by a derived
 * column.
 */
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { test } from 'node:test';
import { describeEachDatabase } from '@vigil/platform/testing';
import { clockOf, relinkChain } from '@vigil/observe/testing';
import { serverVerdict, world, type World } from './tamper-observe-testkit.ts';
import { runVerify } from './verify-testkit.ts';

const YEARS_AGO = Date.parse('2020-01-01T00:00:00.000Z');

async function tombstones(w: World): Promise<number> {
  const row = await w.observe.service.context.database.db
    .selectFrom('audit_tombstones')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

async function withWorld(backend: Parameters<typeof world>[0], body: (w: World) => Promise<void>): Promise<void> {
  const w = await world(backend);
  try {
    // A genuine one-day retention (the setting's own genuineness is another door).
    assert.equal((await w.observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 1 } })).statusCode, 200);
    await body(w);
  } finally {
    await w.observe.close();
    rmSync(w.dir, { recursive: true, force: true });
  }
}

await describeEachDatabase('tamper doors (issue 36): observe', (backend) => {
  test("retention: a live session's last_event_at set years back does not make the server delete it; verify --deep names the column", async () => {
    await withWorld(backend, async (w) => {
      const { db } = w.observe.service.context.database;
      await db.updateTable('sessions').set({ last_event_at: YEARS_AGO }).where('id', '=', 't-a').execute();
      await w.observe.service.jobs.retention.tick();
      assert.equal(await tombstones(w), 0, 'no tombstone signed');
      const metrics = await (await fetch(`${w.url}/metrics`)).text();
      assert.match(metrics, /^vigil_retention_sessions_kept_total 1$/m, 'the operator sees the kept session');
      const verdict = await serverVerdict(w.observe, 't-a');
      assert.notEqual(verdict, 404, 'the session is still there');
      assert.equal((verdict as { valid: boolean }).valid, true);
      const result = await runVerify(['--url', w.url, '--checkpoint', w.saved, '--deep'], w.observe.key);
      assert.equal(result.status, 1, `${result.stderr}\n${JSON.stringify(result.report)}`);
      assert.ok(
        result.report.findings.some((f) => f.check === 'derived' && f.sessionId === 't-a' && f.message.includes('last_event_at')),
        JSON.stringify(result.report.findings),
      );
      assert.doesNotMatch(JSON.stringify(result.report.notes), /deleted by retention/);
    });
  });

  test("retention: the session's timestamps set back and its chain relinked are not confirmed either (the audit log's leaves differ)", async () => {
    await withWorld(backend, async (w) => {
      const { db } = w.observe.service.context.database;
      const events = await db.selectFrom('events').select(['id', 'ts']).where('session_id', '=', 't-b').execute();
      for (const [i, event] of events.entries())
        await db
          .updateTable('events')
          .set({ ts: YEARS_AGO + i })
          .where('id', '=', event.id)
          .execute();
      await db
        .updateTable('sessions')
        .set({ last_event_at: YEARS_AGO + events.length - 1, started_at: YEARS_AGO })
        .where('id', '=', 't-b')
        .execute();
      await relinkChain(w.observe.service.context.database, 't-b');
      await w.observe.service.jobs.retention.tick();
      assert.equal(await tombstones(w), 0, 'no tombstone signed');
      assert.notEqual(await serverVerdict(w.observe, 't-b'), 404, 'the session is still there');
    });
  });

  test('retention still deletes a session whose chain confirms it expired, beside one it keeps', async () => {
    await withWorld(backend, async (w) => {
      const { db } = w.observe.service.context.database;
      await db.updateTable('sessions').set({ last_event_at: YEARS_AGO }).where('id', '=', 't-a').execute();
      // Three days on, every session is expired by its chain; t-a's column still disagrees with it.
      clockOf(w.observe).advance(3 * 86_400_000);
      await w.observe.service.jobs.retention.tick();
      assert.equal(await serverVerdict(w.observe, 't-b'), 404);
      assert.equal(await serverVerdict(w.observe, 't-c'), 404);
      assert.notEqual(await serverVerdict(w.observe, 't-a'), 404, 't-a is kept: its column is not its chain');
      assert.equal(await tombstones(w), 2);
    });
  });
});
