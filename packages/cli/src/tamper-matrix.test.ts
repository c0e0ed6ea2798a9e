/**
 * Issue 18's tamper matrix: an attacker with write access to the database, who knows the published
 * hash recipe, tampers in each of the ways below after the auditor saved a checkpoint. `vigil
 * verify --url --checkpoint SAVED` (a real process, `--deep` for derived data) must report every
 * one, naming where; the server's own checks (GET /api/audit/verify) must report every one that
 * does not need the saved checkpoint. A retention run is reported as retention, not tampering.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { startTestGate, relinkAuditChain, TEST_ADMIN_KEY, type TestGate } from '@vigil/gate/testing';
import { appendLeaves, type Checkpoint } from '@vigil/platform';
import { describeEachDatabase, type TestBackend } from '@vigil/platform/testing';
import type { ObserveSchema } from '@vigil/observe';
import { ago, custom, ingestEvents, insertEventCopy, relinkChain, started, startTestObserve, type EventAck, type TestObserve } from '@vigil/observe/testing';
import type { Finding } from './verify/input.ts';

const bin = resolve(import.meta.dirname, '../bin/vigil.mjs');


interface Report {
  valid: boolean;
  findings: Finding[];
  notes: string[];
}

function runVerify<R = Report>(args: readonly string[], apiKey: string): Promise<{ status: number | null; report: R; stderr: string }> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [bin, 'verify', ...args, '--json'], { env: { ...process.env, VIGIL_API_KEY: apiKey }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('close', (status) => done({ status, report: (stdout.trim() === '' ? { valid: false, findings: [], notes: [] } : JSON.parse(stdout)) as R, stderr }));
  });
}

const llmResponse = (sessionId: string, timestamp: string, costUsd: number) => ({
  sessionId,
  agentId: 'agent-t',
  eventType: 'llm_response',
  timestamp,
  payload: { callId: `l-${timestamp}`, provider: 'openai', model: 'gpt-4o-mini', completion: 'ok', finishReason: 'stop', usage: { inputTokens: 420, outputTokens: 96 }, costUsd, latencyMs: 850 },
});

/** One world per case: three sessions, a checkpoint saved outside the service, then the tampering. */
interface World {
  observe: TestObserve;
  url: string;
  saved: string;
  /** Acknowledged events of each session, in seq order. */
  acks: Record<'a' | 'b' | 'c', EventAck[]>;
  dir: string;
}

async function world(backend: TestBackend): Promise<World> {
  const observe = await startTestObserve(backend);
  await observe.service.app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(observe.service.app.server.address() as AddressInfo).port}`;
  const session = (id: string, minutes: number) => [
    started(id, 'agent-t', ago(minutes)),
    custom(id, 'agent-t', ago(minutes - 0.1)),
    llmResponse(id, ago(minutes - 0.2), 0.002),
    custom(id, 'agent-t', ago(minutes - 0.3)),
    llmResponse(id, ago(minutes - 0.4), 0.003),
    custom(id, 'agent-t', ago(minutes - 0.5)),
  ];
  const a = await ingestEvents(observe, session('t-a', 90));
  const b = await ingestEvents(observe, session('t-b', 80));
  const c = await ingestEvents(observe, session('t-c', 70));
  const response = await observe.call({ method: 'POST', url: '/api/audit/checkpoint' });
  assert.equal(response.statusCode, 201, response.body);
  const dir = mkdtempSync(join(tmpdir(), 'vigil-tamper-'));
  const saved = join(dir, 'saved-checkpoint.json');
  writeFileSync(saved, JSON.stringify(response.json<Checkpoint>()));
  return { observe, url, saved, acks: { a, b, c }, dir };
}

async function serverVerdict(observe: TestObserve, sessionId: string): Promise<{ valid: boolean; brokenAt: { seq: number; reason: string } | null } | 404> {
  const response = await observe.call({ method: 'GET', url: `/api/audit/verify?sessionId=${sessionId}` });
  if (response.statusCode === 404) return 404;
  assert.equal(response.statusCode, 200, response.body);
  return response.json();
}

interface Case {
  name: string;
  tamper(w: World): Promise<void>;
  /** Where `vigil verify` must point: a finding with this session (and seq / event, when given). */
  where: { sessionId: string; seq?: number; eventId?: (w: World) => string; check?: string };
  /** The server's own check of the session reports it (no saved checkpoint needed). */
  online: boolean;
  deep?: boolean;
}

const db = (w: World) => w.observe.service.context.database.db;

const CASES: Case[] = [
  {
    name: 'payload edited',
    tamper: (w) => db(w).updateTable('events').set({ payload: '{"forged":true}' }).where('id', '=', w.acks.a[1]!.id).execute().then(() => undefined),
    where: { sessionId: 't-a', seq: 1 },
    online: true,
  },
  {
    name: 'timestamp edited',
    tamper: async (w) => {
      await db(w).updateTable('events').set({ ts: Date.parse(ago(200)) }).where('id', '=', w.acks.a[2]!.id).execute();
    },
    where: { sessionId: 't-a', seq: 2 },
    online: true,
  },
  {
    name: 'severity edited',
    tamper: async (w) => {
      await db(w).updateTable('events').set({ severity: 'debug' }).where('id', '=', w.acks.b[3]!.id).execute();
    },
    where: { sessionId: 't-b', seq: 3 },
    online: true,
  },
  {
    name: 'an event deleted',
    tamper: async (w) => {
      await db(w).deleteFrom('events').where('id', '=', w.acks.a[2]!.id).execute();
    },
    where: { sessionId: 't-a', eventId: (w) => w.acks.a[2]!.id },
    online: true,
  },
  {
    name: 'two events swapped',
    tamper: async (w) => {
      const [x, y] = [w.acks.b[1]!.id, w.acks.b[3]!.id];
      await db(w).updateTable('events').set({ seq: 99 }).where('id', '=', x).execute();
      await db(w).updateTable('events').set({ seq: 1 }).where('id', '=', y).execute();
      await db(w).updateTable('events').set({ seq: 3 }).where('id', '=', x).execute();
    },
    where: { sessionId: 't-b', seq: 1 },
    online: true,
  },
  {
    name: 'an event moved to another session',
    tamper: async (w) => {
      await db(w).updateTable('events').set({ session_id: 't-c', seq: 6 }).where('id', '=', w.acks.b[5]!.id).execute();
    },
    where: { sessionId: 't-b', seq: 5 },
    online: true,
  },
  {
    name: 'renumbered after a deletion',
    tamper: async (w) => {
      await db(w).deleteFrom('events').where('id', '=', w.acks.c[2]!.id).execute();
      for (const ack of w.acks.c.slice(3)) await db(w).updateTable('events').set((eb) => ({ seq: eb('seq', '-', 1) })).where('id', '=', ack.id).execute();
    },
    where: { sessionId: 't-c' },
    online: true,
  },
  {
    name: 'tail truncated, head left',
    tamper: async (w) => {
      await db(w).deleteFrom('events').where('id', 'in', [w.acks.a[4]!.id, w.acks.a[5]!.id]).execute();
    },
    where: { sessionId: 't-a', eventId: (w) => w.acks.a[4]!.id },
    online: true,
  },
  {
    name: 'tail truncated and head rewritten',
    tamper: async (w) => {
      await db(w).deleteFrom('events').where('id', 'in', [w.acks.a[4]!.id, w.acks.a[5]!.id]).execute();
      await db(w).updateTable('sessions').set({ last_seq: 3, last_hash: w.acks.a[3]!.hash }).where('id', '=', 't-a').execute();
    },
    where: { sessionId: 't-a', eventId: (w) => w.acks.a[4]!.id },
    online: false,
  },
  {
    name: 'chain and head rewritten after an edit',
    tamper: async (w) => {
      await db(w).updateTable('events').set({ payload: '{"forged":true}' }).where('id', '=', w.acks.b[2]!.id).execute();
      await relinkChain(w.observe.service.context.database, 't-b');
    },
    where: { sessionId: 't-b', seq: 2 },
    online: true,
  },
  {
    name: 'a forged event appended with a correct hash and head',
    tamper: async (w) => {
      const last = w.acks.c[5]!;
      const row = await db(w).selectFrom('events').selectAll().where('id', '=', last.id).executeTakeFirstOrThrow();
      await insertEventCopy(w.observe.service.context.database, last.id, { id: 'forged-append', seq: 6, ts: row.ts + 1, payload: '{"data":{"forged":true},"type":"step"}' });
      await relinkChain(w.observe.service.context.database, 't-c');
    },
    where: { sessionId: 't-c', seq: 6 },
    online: true,
  },
  {
    name: 'an event stored past the head',
    tamper: async (w) => {
      await insertEventCopy(w.observe.service.context.database, w.acks.a[5]!.id, { id: 'past-head', seq: 6 });
    },
    where: { sessionId: 't-a', seq: 6 },
    online: true,
  },
  {
    name: 'a whole session deleted',
    tamper: async (w) => {
      await db(w).deleteFrom('events').where('session_id', '=', 't-b').execute();
      await db(w).deleteFrom('sessions').where('id', '=', 't-b').execute();
    },
    where: { sessionId: 't-b' },
    online: false,
  },
  {
    name: 'a whole session deleted and the log rebuilt without it',
    tamper: async (w) => {
      const database = w.observe.service.context.database;
      await db(w).deleteFrom('events').where('session_id', '=', 't-b').execute();
      await db(w).deleteFrom('sessions').where('id', '=', 't-b').execute();
      const kept = await db(w).selectFrom('audit_log_leaves').selectAll().where('scope_id', '!=', 't-b').orderBy('idx').execute();
      await db(w).deleteFrom('audit_log_leaves').execute();
      await db(w).deleteFrom('audit_log_nodes').execute();
      await db(w).deleteFrom('audit_checkpoints').execute();
      await db(w).updateTable('audit_log_head').set({ size: 0 }).execute();
      await db(w).updateTable('audit_log_built').set({ size: 0 }).execute();
      const events = new Map((await db(w).selectFrom('events').select(['id', 'hash']).execute()).map((e) => [e.id, e.hash]));
      await database.db.transaction().execute((trx) =>
        appendLeaves<ObserveSchema>(trx, database.dialect, kept.map((leaf) => ({ itemId: leaf.item_id, scopeId: leaf.scope_id!, data: Buffer.from(events.get(leaf.item_id)!, 'hex') }))),
      );
      // The service signs the rebuilt log, as its checkpoint job would.
      assert.equal((await w.observe.call({ method: 'POST', url: '/api/audit/checkpoint' })).statusCode, 201);
    },
    // The old leaves are gone, so no session can be named: the saved checkpoint is what the new log fails.
    where: { sessionId: '', check: 'consistency' },
    online: false,
  },
  {
    name: "an event's derived cost edited",
    tamper: async (w) => {
      await db(w).updateTable('events').set({ cost_usd: 9 }).where('id', '=', w.acks.a[2]!.id).execute();
    },
    where: { sessionId: 't-a', eventId: (w) => w.acks.a[2]!.id },
    online: false,
    deep: true,
  },
  {
    name: "the session row's counters and cost edited",
    tamper: async (w) => {
      await db(w).updateTable('sessions').set({ error_count: 0, total_cost_usd: 0, event_count: 2 }).where('id', '=', 't-c').execute();
    },
    where: { sessionId: 't-c' },
    online: false,
    deep: true,
  },
  {
    name: 'an hourly rollup edited',
    tamper: async (w) => {
      await db(w).updateTable('event_rollups').set({ cost_usd: 100 }).where('event_type', '=', 'llm_response').execute();
    },
    where: { sessionId: '' },
    online: false,
    deep: true,
  },
];

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

  for (const tamper of CASES) {
    test(`${tamper.name}: detected${tamper.online ? ', by the server too' : ''}`, async () => {
      const w = await world(backend);
      try {
        await tamper.tamper(w);
        if (tamper.online) {
          const verdict = await serverVerdict(w.observe, tamper.where.sessionId);
          assert.notEqual(verdict, 404);
          assert.equal((verdict as { valid: boolean }).valid, false, 'the server reports it without a saved checkpoint');
        }
        const result = await runVerify(['--url', w.url, '--checkpoint', w.saved, ...(tamper.deep ? ['--deep'] : [])], w.observe.key);
        assert.equal(result.status, 1, `exit 1 (tampered): ${result.stderr}\n${JSON.stringify(result.report)}`);
        assert.equal(result.report.valid, false);
        const { sessionId, seq, eventId, check } = tamper.where;
        const expectedEvent = eventId?.(w);
        const pointed = result.report.findings.some(
          (finding) =>
            (check === undefined || finding.check === check) &&
            (sessionId === '' || finding.sessionId === sessionId || finding.message.includes(sessionId)) &&
            (seq === undefined || finding.seq === seq || finding.message.includes(`seq ${seq}`)) &&
            (expectedEvent === undefined || finding.eventId === expectedEvent || finding.message.includes(expectedEvent)),
        );
        assert.ok(pointed, `a finding names ${JSON.stringify({ sessionId, seq, eventId: expectedEvent })}: ${JSON.stringify(result.report.findings)}`);
      } finally {
        await w.observe.close();
        rmSync(w.dir, { recursive: true, force: true });
      }
    });
  }

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
  assert.deepEqual(entries.a.map((entry) => entry.seq), [0, 1, 2]);
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
      await gateDb(w).insertInto('audit_entries').values({ ...last, id: 'forged-entry', seq: 3, ts: last.ts + 1, event: 'approved', details: '{"reason":"forged"}' }).execute();
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
      assert.match(result.report.summary, /^VALID: 9 leaves \(9 entries in 3 requests\)/);
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
