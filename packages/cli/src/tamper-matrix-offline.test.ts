/**
 * Issue 40's offline column of the tamper matrix: with a checkpoint saved before the tampering,
 * `vigil verify BUNDLE --checkpoint SAVED` (a real process, no server) on a fresh export
 * (`?since=` the saved size) must report a cut tail (with and without the head moved back), a deleted
 * session (request) and a rebuilt log, naming what is missing — from the map of heads the saved
 * checkpoint commits (docs/audit.md, "Session heads"). Both services, both databases.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { appendLeaves, type Checkpoint } from '@vigil/platform';
import { describeEachDatabase, type TestBackend } from '@vigil/platform/testing';
import type { ObserveSchema } from '@vigil/observe';
import { ago, custom, ingestEvents, started } from '@vigil/observe/testing';
import { startTestGate, type GateSchema, type TestGate } from '@vigil/gate/testing';
import { world, type World } from './tamper-observe-testkit.ts';
import { runVerify } from './verify-testkit.ts';

/** Runs `run` in a world made for it, then closes its service and removes its folder. */
async function inWorld<W extends { dir: string }>(make: () => Promise<W>, close: (w: W) => Promise<void>, run: (w: W) => Promise<void>): Promise<void> {
  const w = await make();
  try {
    await run(w);
  } finally {
    await close(w);
    rmSync(w.dir, { recursive: true, force: true });
  }
}

const savedSize = (file: string, checkpoint: Checkpoint) => {
  writeFileSync(file, JSON.stringify(checkpoint));
  return checkpoint.treeSize;
};

/** A fresh export of one scope since the saved size, written to a file; the verdict of `vigil verify FILE --checkpoint SAVED`. */
async function verifyOffline(
  call: (path: string) => Promise<{ statusCode: number; body: string }>,
  dir: string,
  scope: string,
  id: string,
  saved: string,
  since: number,
  key: string,
) {
  const response = await call(`/api/audit/export?${scope}=${encodeURIComponent(id)}&since=${since}`);
  assert.equal(response.statusCode, 200, response.body);
  const bundle = join(dir, `${id}.json`);
  writeFileSync(bundle, response.body);
  return runVerify<{ valid: boolean; findings: { check: string; message: string; sessionId?: string; requestId?: string }[]; notes: string[] }>(
    [bundle, '--checkpoint', saved],
    key,
  );
}

await describeEachDatabase('tamper matrix, offline: vigil verify BUNDLE --checkpoint SAVED on a fresh export (observe)', (backend) => {
  const db = (w: World) => w.observe.service.context.database.db;
  const offline = async (w: World, sessionId: string) => {
    const since = JSON.parse(readFileSync(w.saved, 'utf8')) as Checkpoint;
    return verifyOffline(async (url) => w.observe.call({ method: 'GET', url }), w.dir, 'sessionId', sessionId, w.saved, since.treeSize, w.observe.key);
  };
  const withWorld = (run: (w: World) => Promise<void>) =>
    inWorld(
      () => world(backend),
      (w) => w.observe.close(),
      run,
    );

  test('untouched: the bundle proves the session complete at the saved checkpoint (exit 0)', () =>
    withWorld(async (w) => {
      const result = await offline(w, 't-a');
      assert.equal(result.status, 0, `${result.stderr}\n${JSON.stringify(result.report)}`);
      assert.deepEqual(result.report.findings, []);
    }));

  test('the last 3 events cut, head left: exit 1 naming the missing seqs', () =>
    withWorld(async (w) => {
      await db(w)
        .deleteFrom('events')
        .where(
          'id',
          'in',
          w.acks.a.slice(3).map((ack) => ack.id),
        )
        .execute();
      const result = await offline(w, 't-a');
      assert.equal(result.status, 1, `${result.stderr}\n${JSON.stringify(result.report)}`);
      assert.ok(
        result.report.findings.some((f) => f.check === 'missing' && f.sessionId === 't-a' && f.message.includes('seq 3–5 are missing')),
        JSON.stringify(result.report.findings),
      );
    }));

  test('the last 3 events cut and the head moved back (the issue’s attack): exit 1 naming the missing seqs', () =>
    withWorld(async (w) => {
      await db(w)
        .deleteFrom('events')
        .where(
          'id',
          'in',
          w.acks.a.slice(3).map((ack) => ack.id),
        )
        .execute();
      await db(w).updateTable('sessions').set({ last_seq: 2, last_hash: w.acks.a[2]!.hash }).where('id', '=', 't-a').execute();
      const result = await offline(w, 't-a');
      assert.equal(result.status, 1, `${result.stderr}\n${JSON.stringify(result.report)}`);
      assert.deepEqual(
        result.report.findings.map((f) => f.check),
        ['missing'],
        'the chain itself checks: only the committed head tells',
      );
      assert.match(result.report.findings[0]!.message, /committed session t-a's head at seq 5 .*ends at seq 2: seq 3–5 are missing/);
    }));

  test('a whole session deleted: its export proves it missing (exit 1)', () =>
    withWorld(async (w) => {
      await db(w).deleteFrom('events').where('session_id', '=', 't-b').execute();
      await db(w).deleteFrom('sessions').where('id', '=', 't-b').execute();
      const result = await offline(w, 't-b');
      assert.equal(result.status, 1, `${result.stderr}\n${JSON.stringify(result.report)}`);
      assert.ok(
        result.report.findings.some((f) => f.check === 'missing' && /session t-b is missing/.test(f.message)),
        JSON.stringify(result.report.findings),
      );
    }));

  test('a whole session deleted with its map entries: the bucket no longer matches the saved map (exit 1)', () =>
    withWorld(async (w) => {
      await db(w).deleteFrom('events').where('session_id', '=', 't-b').execute();
      await db(w).deleteFrom('sessions').where('id', '=', 't-b').execute();
      await db(w).deleteFrom('audit_head_entries').where('scope_id', '=', 't-b').execute();
      const result = await offline(w, 't-b');
      assert.equal(result.status, 1, `${result.stderr}\n${JSON.stringify(result.report)}`);
      assert.ok(
        result.report.findings.some((f) => f.check === 'heads' && /not the ones the map root commits/.test(f.message)),
        JSON.stringify(result.report.findings),
      );
    }));

  test('the log rebuilt without a session and grown past the saved size: exit 1', () =>
    withWorld(async (w) => {
      const database = w.observe.service.context.database;
      await db(w).deleteFrom('events').where('session_id', '=', 't-b').execute();
      await db(w).deleteFrom('sessions').where('id', '=', 't-b').execute();
      const kept = await db(w).selectFrom('audit_log_leaves').selectAll().where('scope_id', '!=', 't-b').orderBy('idx').execute();
      for (const table of ['audit_log_leaves', 'audit_log_nodes', 'audit_checkpoints', 'audit_head_entries', 'audit_head_buckets', 'audit_head_maps'] as const)
        await db(w).deleteFrom(table).execute();
      await db(w).updateTable('audit_log_head').set({ size: 0 }).execute();
      await db(w).updateTable('audit_log_built').set({ size: 0 }).execute();
      const events = new Map((await db(w).selectFrom('events').select(['id', 'hash']).execute()).map((e) => [e.id, e.hash]));
      await database.db.transaction().execute((trx) =>
        appendLeaves<ObserveSchema>(
          trx,
          database.dialect,
          kept.map((leaf) => ({ itemId: leaf.item_id, scopeId: leaf.scope_id!, kind: 'event', data: events.get(leaf.item_id)! })),
        ),
      );
      // Agents go on sending: the rebuilt log grows past the saved size, and the service signs it.
      await ingestEvents(w.observe, [started('t-d', 'agent-t', ago(5)), ...Array.from({ length: 14 }, (_, i) => custom('t-d', 'agent-t', ago(4.9 - i / 100)))]);
      assert.equal((await w.observe.call({ method: 'POST', url: '/api/audit/checkpoint' })).statusCode, 201);
      // Leaf S − 1 of the rebuilt log is no heads leaf: the bundle cannot show the session complete, nor the log consistent.
      const result = await offline(w, 't-a');
      assert.equal(result.status, 1, `${result.stderr}\n${JSON.stringify(result.report)}`);
      const checks = result.report.findings.map((f) => f.check);
      assert.ok(checks.includes('consistency') && (checks.includes('completeness') || checks.includes('heads')), JSON.stringify(result.report.findings));
    }));

  test('a session removed by retention after the saved checkpoint: its signed tombstone accounts for it (exit 0)', () =>
    withWorld(async (w) => {
      await ingestEvents(w.observe, [started('t-old', 'agent-t', ago(3 * 24 * 60)), custom('t-old', 'agent-t', ago(3 * 24 * 60 - 1))]);
      const since = savedSize(w.saved, (await w.observe.call({ method: 'POST', url: '/api/audit/checkpoint' })).json<Checkpoint>());
      assert.equal((await w.observe.call({ method: 'PUT', url: '/api/config', payload: { retentionDays: 1 } })).statusCode, 200);
      await w.observe.service.jobs.retention.tick();
      const result = await verifyOffline(async (url) => w.observe.call({ method: 'GET', url }), w.dir, 'sessionId', 't-old', w.saved, since, w.observe.key);
      assert.equal(result.status, 0, `${result.stderr}\n${JSON.stringify(result.report)}`);
      assert.match(JSON.stringify(result.report.notes), /removed by retention after the saved checkpoint: signed tombstone/);
    }));
});

interface GateWorld {
  gate: TestGate;
  saved: string;
  since: number;
  ids: Record<'a' | 'b' | 'c', string>;
  entries: Record<'a' | 'b' | 'c', { id: string; seq: number; hash: string }[]>;
  dir: string;
}

async function gateWorld(backend: TestBackend): Promise<GateWorld> {
  const gate = await startTestGate(backend);
  const ok = async <T>(method: 'GET' | 'POST', url: string, payload?: Record<string, unknown>, status = 200): Promise<T> => {
    const response = await gate.call({ method, url, ...(payload === undefined ? {} : { payload }) });
    assert.equal(response.statusCode, status, `${method} ${url}: ${response.body}`);
    return response.json<T>();
  };
  const request = async (action: string) => {
    const { id } = await ok<{ id: string }>('POST', '/api/requests', { action }, 201);
    await ok('POST', `/api/requests/${id}/decide`, { decision: 'approved' });
    await ok('POST', `/api/requests/${id}/confirm`, { result: { done: true } });
    return id;
  };
  const ids = { a: await request('deploy.a'), b: await request('deploy.b'), c: await request('deploy.c') };
  const trail = (id: string) => ok<{ id: string; seq: number; hash: string }[]>('GET', `/api/requests/${id}/audit`);
  const entries = { a: await trail(ids.a), b: await trail(ids.b), c: await trail(ids.c) };
  const dir = mkdtempSync(join(tmpdir(), 'vigil-offline-gate-'));
  const saved = join(dir, 'saved.json');
  const since = savedSize(saved, await ok<Checkpoint>('POST', '/api/audit/checkpoint', undefined, 201));
  return { gate, saved, since, ids, entries, dir };
}

await describeEachDatabase('tamper matrix, offline: vigil verify BUNDLE --checkpoint SAVED on a fresh export (gate)', (backend) => {
  const db = (w: GateWorld) => w.gate.service.context.database.db;
  const offline = (w: GateWorld, id: string) =>
    verifyOffline(async (url) => w.gate.call({ method: 'GET', url }), w.dir, 'requestId', id, w.saved, w.since, 'unused');
  const withWorld = (run: (w: GateWorld) => Promise<void>) =>
    inWorld(
      () => gateWorld(backend),
      (w) => w.gate.close(),
      run,
    );

  test('untouched: valid (exit 0)', () =>
    withWorld(async (w) => {
      const result = await offline(w, w.ids.a);
      assert.equal(result.status, 0, `${result.stderr}\n${JSON.stringify(result.report)}`);
    }));

  for (const moved of [false, true])
    test(`the last entry cut${moved ? ' and the head moved back' : ', head left'}: exit 1 naming the missing seq`, () =>
      withWorld(async (w) => {
        await db(w).deleteFrom('audit_entries').where('id', '=', w.entries.a[2]!.id).execute();
        if (moved) await db(w).updateTable('requests').set({ audit_head_seq: 1, audit_head_hash: w.entries.a[1]!.hash }).where('id', '=', w.ids.a).execute();
        const result = await offline(w, w.ids.a);
        assert.equal(result.status, 1, `${result.stderr}\n${JSON.stringify(result.report)}`);
        assert.ok(
          result.report.findings.some((f) => f.check === 'missing' && f.requestId === w.ids.a && f.message.includes('seq 2–2 are missing')),
          JSON.stringify(result.report.findings),
        );
      }));

  test('a whole request deleted, entries and row: exit 1 naming it', () =>
    withWorld(async (w) => {
      await db(w).deleteFrom('audit_entries').where('request_id', '=', w.ids.c).execute();
      await db(w).deleteFrom('requests').where('id', '=', w.ids.c).execute();
      const result = await offline(w, w.ids.c);
      assert.equal(result.status, 1, `${result.stderr}\n${JSON.stringify(result.report)}`);
      assert.ok(
        result.report.findings.some((f) => f.check === 'missing' && f.message.includes(`request ${w.ids.c} is missing`)),
        JSON.stringify(result.report.findings),
      );
    }));

  test('the log rebuilt without a request and grown past the saved size: exit 1', () =>
    withWorld(async (w) => {
      const database = w.gate.service.context.database;
      await db(w).deleteFrom('audit_entries').where('request_id', '=', w.ids.c).execute();
      await db(w).deleteFrom('requests').where('id', '=', w.ids.c).execute();
      const kept = await db(w).selectFrom('audit_log_leaves').selectAll().where('scope_id', 'in', [w.ids.a, w.ids.b]).orderBy('idx').execute();
      for (const table of ['audit_log_leaves', 'audit_log_nodes', 'audit_checkpoints', 'audit_head_entries', 'audit_head_buckets', 'audit_head_maps'] as const)
        await db(w).deleteFrom(table).execute();
      await db(w).updateTable('audit_log_head').set({ size: 0 }).execute();
      await db(w).updateTable('audit_log_built').set({ size: 0 }).execute();
      const hashes = new Map(
        (await db(w).selectFrom('audit_entries').select(['id', 'hash']).execute()).map((e) => [
          e.id,
          Buffer.isBuffer(e.hash) ? e.hash : Buffer.from(e.hash as unknown as string, 'hex'),
        ]),
      );
      await database.db.transaction().execute((trx) =>
        appendLeaves<GateSchema>(
          trx,
          database.dialect,
          kept.map((leaf) => ({ itemId: leaf.item_id, scopeId: leaf.scope_id!, kind: 'entry', data: hashes.get(leaf.item_id)! })),
        ),
      );
      for (let i = 0; i < 4; i += 1) {
        const response = await w.gate.call({ method: 'POST', url: '/api/requests', payload: { action: `later.${i}` } });
        assert.equal(response.statusCode, 201, response.body);
      }
      assert.equal((await w.gate.call({ method: 'POST', url: '/api/audit/checkpoint' })).statusCode, 201);
      const result = await offline(w, w.ids.a);
      assert.equal(result.status, 1, `${result.stderr}\n${JSON.stringify(result.report)}`);
      const checks = result.report.findings.map((f) => f.check);
      assert.ok(checks.includes('consistency') && (checks.includes('completeness') || checks.includes('heads')), JSON.stringify(result.report.findings));
    }));
});
