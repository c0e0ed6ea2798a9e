/**
 * Issue 18's tamper matrix for the gate's audit log: the approval gate's audit entries tampered in
 * the database after the auditor saved a checkpoint; `vigil verify` (a real process) must report
 * each, naming the request and entry (the observe half is tamper-matrix.test.ts).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { startTestGate, relinkAuditChain, TEST_ADMIN_KEY, type TestGate } from '@vigil/gate/testing';
import type { Checkpoint } from '@vigil/platform';
import { describeEachDatabase, type TestBackend } from '@vigil/platform/testing';
import { runVerify } from './verify-testkit.ts';

/** The gate's log: findings name the request and the audit entry (`requestId`, `entryId`). */
interface GateReport {
  valid: boolean;
  summary: string;
  findings: { check: string; message: string; requestId?: string; seq?: number; entryId?: string; leafIndex?: number }[];
  notes: string[];
}

interface GateEntry {
  id: string;
  seq: number;
  hash: string;
}

/** Three approval requests (created, approved, confirmed: seq 0–2), a checkpoint saved outside the gate, then the tampering. */
interface GateWorld {
  gate: TestGate;
  url: string;
  saved: string;
  ids: Record<'a' | 'b' | 'c', string>;
  entries: Record<'a' | 'b' | 'c', GateEntry[]>;
  dir: string;
}

async function gateWorld(backend: TestBackend): Promise<GateWorld> {
  const gate = await startTestGate(backend);
  await gate.service.app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(gate.service.app.server.address() as AddressInfo).port}`;
  const ok = async <T>(method: 'GET' | 'POST', path: string, payload?: unknown, status = 200): Promise<T> => {
    const response = await gate.call({ method, url: path, ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }) });
    assert.equal(response.statusCode, status, `${method} ${path}: ${response.body}`);
    return response.json<T>();
  };
  const request = async (action: string) => {
    const { id } = await ok<{ id: string }>('POST', '/api/requests', { action }, 201);
    await ok('POST', `/api/requests/${id}/decide`, { decision: 'approved' });
    await ok('POST', `/api/requests/${id}/confirm`, { result: { done: true } });
    return id;
  };
  const ids = { a: await request('deploy.a'), b: await request('deploy.b'), c: await request('deploy.c') };
  const trail = (id: string) => ok<GateEntry[]>('GET', `/api/requests/${id}/audit`);
  const entries = { a: await trail(ids.a), b: await trail(ids.b), c: await trail(ids.c) };
  assert.deepEqual(
    entries.a.map((entry) => entry.seq),
    [0, 1, 2],
  );
  const checkpoint = await ok<Checkpoint>('POST', '/api/audit/checkpoint', undefined, 201);
  const dir = mkdtempSync(join(tmpdir(), 'vigil-gate-tamper-'));
  const saved = join(dir, 'saved-checkpoint.json');
  writeFileSync(saved, JSON.stringify(checkpoint));
  return { gate, url, saved, ids, entries, dir };
}

interface GateCase {
  name: string;
  tamper(w: GateWorld): Promise<void>;
  /** Where `vigil verify` must point: a finding naming this request (and seq / entry, when given). */
  where: { request: 'a' | 'b' | 'c'; seq?: number; entryId?: (w: GateWorld) => string; check?: string };
  /** GET /api/requests/:id/audit/verify reports it too (the request row is still there). */
  online: boolean;
}

const gateDb = (w: GateWorld) => w.gate.service.context.database.db;

const GATE_CASES: GateCase[] = [
  {
    name: "an entry's details edited",
    tamper: async (w) => {
      await gateDb(w).updateTable('audit_entries').set({ details: '{"reason":"forged"}' }).where('id', '=', w.entries.a[1]!.id).execute();
    },
    where: { request: 'a', seq: 1, entryId: (w) => w.entries.a[1]!.id },
    online: true,
  },
  {
    name: 'an entry deleted',
    tamper: async (w) => {
      await gateDb(w).deleteFrom('audit_entries').where('id', '=', w.entries.a[1]!.id).execute();
    },
    where: { request: 'a', entryId: (w) => w.entries.a[1]!.id, check: 'entry-deleted' },
    online: true,
  },
  {
    name: "a request's chain and head rewritten after an edit",
    tamper: async (w) => {
      await gateDb(w).updateTable('audit_entries').set({ actor: 'api:someone-else' }).where('id', '=', w.entries.b[1]!.id).execute();
      await relinkAuditChain(w.gate.service.context.database, w.ids.b);
    },
    where: { request: 'b', seq: 1, entryId: (w) => w.entries.b[1]!.id },
    online: true,
  },
  {
    name: "a whole request's entries deleted",
    tamper: async (w) => {
      await gateDb(w).deleteFrom('audit_entries').where('request_id', '=', w.ids.c).execute();
    },
    where: { request: 'c' },
    online: true,
  },
  {
    name: 'a whole request deleted, entries and row',
    tamper: async (w) => {
      await gateDb(w).deleteFrom('audit_entries').where('request_id', '=', w.ids.c).execute();
      await gateDb(w).deleteFrom('requests').where('id', '=', w.ids.c).execute();
    },
    where: { request: 'c', check: 'request-deleted' },
    online: false,
  },
  {
    name: 'a forged entry appended with a correct hash and head',
    tamper: async (w) => {
      const last = await gateDb(w).selectFrom('audit_entries').selectAll().where('id', '=', w.entries.c[2]!.id).executeTakeFirstOrThrow();
      await gateDb(w)
        .insertInto('audit_entries')
        .values({ ...last, id: 'forged-entry', seq: 3, ts: last.ts + 1, event: 'approved', details: '{"reason":"forged"}' })
        .execute();
      await relinkAuditChain(w.gate.service.context.database, w.ids.c);
    },
    where: { request: 'c', seq: 3, entryId: () => 'forged-entry' },
    online: true,
  },
];

await describeEachDatabase('tamper matrix: vigil verify of the gate', (backend) => {
  test('untouched, the whole-gate audit with a saved checkpoint is valid (exit 0); --deep is a usage error (exit 2) that says why', async () => {
    const w = await gateWorld(backend);
    try {
      const result = await runVerify<GateReport>(['--url', w.url, '--checkpoint', w.saved], TEST_ADMIN_KEY);
      assert.equal(result.status, 0, `${result.stderr}\n${JSON.stringify(result.report)}`);
      assert.equal(result.report.valid, true);
      // One leaf logs the start-up admin key's creation, the last is the saved checkpoint's heads leaf.
      assert.match(result.report.summary, /^VALID: 11 leaves \(9 entries in 3 requests\)/);
      const deep = await runVerify<GateReport>(['--url', w.url, '--checkpoint', w.saved, '--deep'], TEST_ADMIN_KEY);
      assert.equal(deep.status, 2);
      assert.match(deep.stderr, /--deep .*the vigil-gate log has none/);
    } finally {
      await w.gate.close();
      rmSync(w.dir, { recursive: true, force: true });
    }
  });

  test("a request's bundle verifies (exit 0); an entry edited in it is named by request, seq and entry (exit 1)", async () => {
    const w = await gateWorld(backend);
    try {
      const response = await w.gate.call({ method: 'GET', url: `/api/audit/export?requestId=${w.ids.a}` });
      assert.equal(response.statusCode, 200, response.body);
      const bundle = response.json<{ format: string; log: string; requestId: string; entries: string[] }>();
      assert.equal(bundle.format, 'vigil-audit-bundle/1');
      assert.equal(bundle.log, 'vigil-gate');
      assert.equal(bundle.requestId, w.ids.a);
      assert.equal(bundle.entries.length, 3);
      const file = join(w.dir, 'bundle.json');
      writeFileSync(file, response.body);
      const valid = await runVerify<GateReport>([file, '--checkpoint', w.saved, '--url', w.url], TEST_ADMIN_KEY);
      assert.equal(valid.status, 0, `${valid.stderr}\n${JSON.stringify(valid.report)}`);
      assert.match(valid.report.summary, new RegExp(`^VALID: request ${w.ids.a}, 3 entries chained to its head`));

      bundle.entries[1] = bundle.entries[1]!.replace('"event":"approved"', '"event":"denied"');
      writeFileSync(file, JSON.stringify(bundle));
      const edited = await runVerify<GateReport>([file], TEST_ADMIN_KEY);
      assert.equal(edited.status, 1, `${edited.stderr}\n${JSON.stringify(edited.report)}`);
      const inclusion = edited.report.findings.find((finding) => finding.check === 'inclusion');
      assert.deepEqual(
        { requestId: inclusion?.requestId, seq: inclusion?.seq, entryId: inclusion?.entryId },
        { requestId: w.ids.a, seq: 1, entryId: w.entries.a[1]!.id },
        JSON.stringify(edited.report.findings),
      );
    } finally {
      await w.gate.close();
      rmSync(w.dir, { recursive: true, force: true });
    }
  });

  for (const tamper of GATE_CASES) {
    test(`${tamper.name}: detected${tamper.online ? ', by the gate too' : ''}`, async () => {
      const w = await gateWorld(backend);
      try {
        await tamper.tamper(w);
        const requestId = w.ids[tamper.where.request];
        if (tamper.online) {
          const response = await w.gate.call({ method: 'GET', url: `/api/requests/${requestId}/audit/verify` });
          assert.equal(response.statusCode, 200, response.body);
          assert.equal(response.json<{ valid: boolean }>().valid, false, 'the gate reports it without a saved checkpoint');
        }
        const result = await runVerify<GateReport>(['--url', w.url, '--checkpoint', w.saved], TEST_ADMIN_KEY);
        assert.equal(result.status, 1, `exit 1 (tampered): ${result.stderr}\n${JSON.stringify(result.report)}`);
        assert.equal(result.report.valid, false);
        const { seq, check } = tamper.where;
        const entryId = tamper.where.entryId?.(w);
        const pointed = result.report.findings.some(
          (finding) =>
            (check === undefined || finding.check === check) &&
            (finding.requestId === requestId || finding.message.includes(requestId)) &&
            (seq === undefined || finding.seq === seq || finding.message.includes(`seq ${seq}`)) &&
            (entryId === undefined || finding.entryId === entryId || finding.message.includes(entryId)),
        );
        assert.ok(pointed, `a finding names ${JSON.stringify({ requestId, seq, entryId, check })}: ${JSON.stringify(result.report.findings)}`);
      } finally {
        await w.gate.close();
        rmSync(w.dir, { recursive: true, force: true });
      }
    });
  }
});
