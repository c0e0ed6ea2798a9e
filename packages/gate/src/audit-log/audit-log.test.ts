import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { leafHash, migrateToLatest, rootOf, sha256Hex, verifyCheckpoint, verifyConsistency, verifyInclusion, type Checkpoint } from '@vigil/platform';
import { describeEachDatabase, dropAuditLogTables, expectedHeadsLeaf } from '@vigil/platform/testing';
import type { InjectOptions } from 'fastify';
import { sql } from 'kysely';
import { buildGateService, type GateService } from '../app.ts';
import type { AuditEntry } from '../audit-trail/index.ts';
import { auditEntryHash } from '../stored-formats/index.ts';
import { gateMigrations } from '../migrations.ts';
import { assertGateError, startTestGate, TEST_ADMIN_KEY, type TestGate } from '../testing.ts';
import { GATE_LOG } from './index.ts';

interface Proof {
  entryId: string;
  leafIndex: number;
  leafHash: string;
  treeSize: number;
  proof: string[];
}

interface Verdict {
  valid: boolean;
  brokenAt: number | null;
  reason: string | null;
}

/** An entry as the API shows it, with the request it belongs to. */
type LoggedEntry = AuditEntry & { requestId: string };

const leafOf = (entry: { hash: string; leaf?: Buffer }): Buffer => entry.leaf ?? leafHash(Buffer.from(entry.hash, 'hex'));

/** The heads leaf ending a checkpoint of `treeSize` leaves, as a logged entry of no request (its leaf recomputed from GET /api/audit/heads). */
async function headsEntry(gate: TestGate, treeSize: number): Promise<LoggedEntry> {
  const { requests } = (await gate.call({ method: 'GET', url: '/api/audit/heads?limit=1000' })).json<{ requests: Record<string, unknown>[] }>();
  const leaf = await expectedHeadsLeaf(gate.service.context.database.db as never, GATE_LOG, treeSize, requests, 'requestId');
  return { id: `heads-${treeSize - 1}`, hash: '', leaf, requestId: null } as unknown as LoggedEntry;
}
const buffers = (hexes: readonly string[]): Buffer[] => hexes.map((h) => Buffer.from(h, 'hex'));
const T0 = Date.parse('2026-11-22T10:00:00.000Z');

function helpers(gate: TestGate) {
  const ok = async <T>(options: InjectOptions, status = 200): Promise<T> => {
    const response = await gate.call(options);
    assert.equal(response.statusCode, status, `${options.method} ${options.url}: ${response.body}`);
    return response.json() as T;
  };
  return {
    ok,
    create: async (action: string, extra: Record<string, unknown> = {}) =>
      (await ok<{ id: string }>({ method: 'POST', url: '/api/requests', payload: { action, ...extra } }, 201)).id,
    trail: async (id: string): Promise<LoggedEntry[]> =>
      (await ok<AuditEntry[]>({ method: 'GET', url: `/api/requests/${id}/audit` })).map((e) => ({ ...e, requestId: id })),
    checkpointNow: () => ok<Checkpoint>({ method: 'POST', url: '/api/audit/checkpoint' }, 201),
    leaves: () => gate.service.context.database.db.selectFrom('audit_log_leaves').select(['idx', 'item_id', 'scope_id', 'leaf_hash']).orderBy('idx').execute(),
    /** The change leaves (the admin key's creation, policy changes…) in leaf order, as entries: no request, the SHA-256 of the change row's text. */
    changes: async (): Promise<LoggedEntry[]> =>
      (await ok<{ leaves: { entryId: string; change?: string | null }[] }>({ method: 'GET', url: '/api/audit/leaves?limit=1000' })).leaves
        .filter((leaf) => typeof leaf.change === 'string')
        .map((leaf) => ({ id: leaf.entryId, hash: sha256Hex(leaf.change!), requestId: null }) as unknown as LoggedEntry),
  };
}

await describeEachDatabase('gate audit log', (backend) => {
  let gate: TestGate;
  let api: ReturnType<typeof helpers>;
  let witnessFile: string;
  let publicKey: Buffer;
  /** Every entry, in the order the test committed them (one call at a time). */
  const logged: LoggedEntry[] = [];

  before(async () => {
    witnessFile = join(mkdtempSync(join(tmpdir(), 'vigil-gate-witness-')), 'checkpoints.jsonl');
    gate = await startTestGate(backend, { env: { AUDIT_WITNESS_FILE: witnessFile } });
    api = helpers(gate);
    const key = await api.ok<{ log: string; publicKey: string }>({ method: 'GET', url: '/api/audit/public-key' });
    assert.equal(key.log, GATE_LOG);
    publicKey = Buffer.from(key.publicKey, 'base64');
  });
  after(() => gate.close());

  test('leaves are the entries in commit order across creation, policy decisions, decide, confirm and expiry; the signed root is recomputed from the API alone', async () => {
    const decided = await api.create('deploy');
    const expiring = await api.create('deploy', { expiresAt: new Date(gate.clock.now() + 5000).toISOString() });
    await api.ok(
      { method: 'POST', url: '/api/policies', payload: { name: 'auto', priority: 1, rules: [{ match: { action: 'read_logs' }, decision: 'auto_approve' }] } },
      201,
    );
    const auto = await api.create('read_logs');
    await api.ok({ method: 'POST', url: `/api/requests/${decided}/decide`, payload: { decision: 'approved' } });
    await api.ok({ method: 'POST', url: `/api/requests/${decided}/confirm`, payload: { result: { done: true } } });
    gate.clock.advance(6000);
    assert.ok(await gate.service.jobs.expiry.tick());

    const trails = new Map([decided, expiring, auto].map((id) => [id, [] as LoggedEntry[]]));
    for (const id of trails.keys()) trails.set(id, await api.trail(id));
    const entry = (id: string, event: string): LoggedEntry => trails.get(id)!.find((e) => e.event === event)!;
    // The admin key's creation at start-up and the policy's creation are change leaves, in commit order.
    const [adminKey, policy] = await api.changes();
    logged.push(
      adminKey!,
      entry(decided, 'created'),
      entry(expiring, 'created'),
      policy!,
      entry(auto, 'created'),
      entry(auto, 'approved'),
      entry(decided, 'approved'),
      entry(decided, 'confirmed'),
      entry(expiring, 'expired'),
    );
    const leaves = await api.leaves();
    assert.deepEqual(
      leaves.map((l) => [Number(l.idx), l.item_id, l.scope_id]),
      logged.map((e, i) => [i, e.id, e.requestId]),
    );
    assert.deepEqual(
      leaves.map((l) => l.leaf_hash.toString('hex')),
      logged.map((e) => leafOf(e).toString('hex')),
      'each leaf is SHA-256(0x00 || entry hash)',
    );

    const checkpoint = await api.checkpointNow();
    logged.push(await headsEntry(gate, checkpoint.treeSize));
    assert.equal(checkpoint.treeSize, logged.length);
    assert.equal(checkpoint.rootHash, rootOf(logged.map(leafOf)).toString('hex'));
    assert.ok(verifyCheckpoint(GATE_LOG, checkpoint, publicKey));
    assert.ok(!verifyCheckpoint('vigil-observe', checkpoint, publicKey), "observe's log name does not verify a gate checkpoint");
    assert.ok(!verifyCheckpoint(GATE_LOG, { ...checkpoint, treeSize: checkpoint.treeSize - 1 }, publicKey));
    assert.deepEqual(await api.ok({ method: 'GET', url: '/api/audit/checkpoint' }), checkpoint);
    assert.deepEqual(await api.checkpointNow(), checkpoint, 'the same size answers the same checkpoint');
  });

  test("every entry's inclusion proof verifies against the signed root", async () => {
    const checkpoint = await api.ok<Checkpoint>({ method: 'GET', url: '/api/audit/checkpoint' });
    for (const [index, entry] of logged.entries()) {
      // The heads leaf logs no entry: its inclusion is the bundle's (tamper-matrix-offline.test.ts in the CLI).
      if (entry.id.startsWith('heads-')) continue;
      const proof = await api.ok<Proof>({ method: 'GET', url: `/api/audit/inclusion?entryId=${entry.id}` });
      assert.deepEqual([proof.entryId, proof.leafIndex, proof.treeSize, proof.leafHash], [entry.id, index, checkpoint.treeSize, leafOf(entry).toString('hex')]);
      assert.ok(verifyInclusion(index, checkpoint.treeSize, leafOf(entry), buffers(proof.proof), Buffer.from(checkpoint.rootHash, 'hex')), `entry ${index}`);
    }
  });

  test('a later checkpoint is consistent with the earlier one; old proofs still answer at the old size', async () => {
    const first = await api.ok<Checkpoint>({ method: 'GET', url: '/api/audit/checkpoint' });
    const id = await api.create('restart');
    await api.ok({ method: 'POST', url: `/api/requests/${id}/decide`, payload: { decision: 'denied', reason: 'not now' } });
    logged.push(...(await api.trail(id)));
    const second = await api.checkpointNow();
    logged.push(await headsEntry(gate, second.treeSize));
    assert.equal(second.treeSize, first.treeSize + 3);
    assert.equal(second.rootHash, rootOf(logged.map(leafOf)).toString('hex'));
    const { proof } = await api.ok<{ proof: string[] }>({ method: 'GET', url: `/api/audit/consistency?from=${first.treeSize}&to=${second.treeSize}` });
    const [firstRoot, secondRoot] = [Buffer.from(first.rootHash, 'hex'), Buffer.from(second.rootHash, 'hex')];
    assert.ok(verifyConsistency(first.treeSize, second.treeSize, firstRoot, secondRoot, buffers(proof)));
    assert.ok(!verifyConsistency(first.treeSize, second.treeSize, rootOf(logged.slice(1, first.treeSize + 1).map(leafOf)), secondRoot, buffers(proof)));
    const old = await api.ok<Proof>({ method: 'GET', url: `/api/audit/inclusion?entryId=${logged[2]!.id}&treeSize=${first.treeSize}` });
    assert.ok(verifyInclusion(2, first.treeSize, leafOf(logged[2]!), buffers(old.proof), firstRoot));
  });

  test('the checkpoint job signs one when the log grew, none otherwise', async () => {
    const job = gate.service.jobs.auditCheckpoint;
    const latest = await api.ok<Checkpoint>({ method: 'GET', url: '/api/audit/checkpoint' });
    gate.clock.advance(60_000);
    assert.ok(await job.tick());
    assert.deepEqual(await api.ok({ method: 'GET', url: '/api/audit/checkpoint' }), latest, 'no new entry: no new checkpoint');
    logged.push(...(await api.trail(await api.create('scale'))));
    gate.clock.advance(60_000);
    assert.ok(await job.tick());
    const signed = await api.ok<Checkpoint>({ method: 'GET', url: '/api/audit/checkpoint' });
    logged.push(await headsEntry(gate, signed.treeSize));
    assert.equal(signed.treeSize, latest.treeSize + 2);
    assert.equal(signed.rootHash, rootOf(logged.map(leafOf)).toString('hex'));
    assert.ok(verifyCheckpoint(GATE_LOG, signed, publicKey));
  });

  test("the witness file holds every one of the gate's checkpoints, in order", async () => {
    const lines = readFileSync(witnessFile, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; log: string; checkpoint: Checkpoint; publicKey: string });
    assert.deepEqual(
      lines.map((l) => l.checkpoint.treeSize),
      [10, 13, 15],
    );
    for (const line of lines) {
      assert.deepEqual([line.type, line.log, line.publicKey], ['audit.checkpoint', GATE_LOG, publicKey.toString('base64')]);
      assert.deepEqual(line.checkpoint, await api.ok({ method: 'GET', url: `/api/audit/checkpoint?treeSize=${line.checkpoint.treeSize}` }));
      assert.ok(verifyCheckpoint(GATE_LOG, line.checkpoint, publicKey));
    }
  });

  test("errors in the gate's error body: unknown entry, missing checkpoint, bad sizes", async () => {
    const size = logged.length;
    assertGateError(await gate.call({ method: 'GET', url: `/api/audit/inclusion?entryId=no-such-entry&treeSize=${size}` }), 404, 'not_found', 'unknown entry');
    assertGateError(await gate.call({ method: 'GET', url: '/api/audit/inclusion' }), 400, 'bad_request', 'no entryId');
    assertGateError(await gate.call({ method: 'GET', url: '/api/audit/checkpoint?treeSize=999999' }), 404, 'not_found', 'no checkpoint at that size');
    assertGateError(await gate.call({ method: 'GET', url: '/api/audit/consistency?from=2&to=1' }), 400, 'bad_request', 'from after to');
    assertGateError(await gate.call({ method: 'GET', url: `/api/audit/consistency?from=1&to=${size + 1}` }), 400, 'bad_request', 'beyond the log');
    assertGateError(await gate.call({ method: 'GET', url: '/api/audit/consistency?from=-1&to=2' }), 400, 'bad_request', 'negative size');
    assertGateError(
      await gate.call({ method: 'GET', url: `/api/audit/inclusion?entryId=${logged.filter((e) => !e.id.startsWith('heads-')).at(-1)!.id}&treeSize=2` }),
      400,
      'bad_request',
      'leaf past the size',
    );
    assert.deepEqual((await api.ok<{ proof: string[] }>({ method: 'GET', url: `/api/audit/consistency?from=${size}&to=${size}` })).proof, []);
  });

  test('verify reports an entry forged into the database with a correct chain hash and moved head: it has no leaf', async () => {
    const id = await api.create('deploy');
    const [created] = await api.trail(id);
    const db = gate.service.context.database.db;
    const forged = {
      id: 'forged-entry',
      requestId: id,
      action: 'deploy',
      seq: 1,
      timestamp: new Date(T0 + 1).toISOString(),
      event: 'approved',
      actor: 'api:forger',
      actorKeyId: null,
      actorKeyName: null,
      details: null,
    };
    const hash = auditEntryHash(forged, created!.hash);
    await sql`insert into audit_entries (id, request_id, action, ts, event, actor, details, seq, prev_hash, hash)
              values (${forged.id}, ${id}, 'deploy', ${T0 + 1}, 'approved', 'api:forger', null, 1, ${created!.hash}, ${hash})`.execute(db);
    await sql`update requests set audit_head_seq = 1, audit_head_hash = ${hash} where id = ${id}`.execute(db);
    const verdict = await api.ok<Verdict>({ method: 'GET', url: `/api/requests/${id}/audit/verify` });
    assert.equal(verdict.valid, false);
    assert.equal(verdict.brokenAt, 1);
    assert.match(verdict.reason!, /no leaf in the audit log/);
    assert.deepEqual(
      (await api.trail(id)).map((e) => [e.seq, e.chainValid]),
      [
        [0, true],
        [1, false],
      ],
    );
  });

  test("verify reports a chain and head rewritten from an entry onward: the entry's leaf no longer matches its hash", async () => {
    const id = await api.create('deploy');
    await api.ok({ method: 'POST', url: `/api/requests/${id}/decide`, payload: { decision: 'approved' } });
    const [, approved] = await api.trail(id);
    const db = gate.service.context.database.db;
    const rewritten = auditEntryHash({ ...approved!, action: 'deploy', actor: 'api:forger', details: approved!.details ?? null }, approved!.prevHash);
    await sql`update audit_entries set actor = 'api:forger', hash = ${rewritten} where id = ${approved!.id}`.execute(db);
    await sql`update requests set audit_head_hash = ${rewritten} where id = ${id}`.execute(db);
    const verdict = await api.ok<Verdict>({ method: 'GET', url: `/api/requests/${id}/audit/verify` });
    assert.deepEqual([verdict.valid, verdict.brokenAt], [false, 1]);
    assert.match(verdict.reason!, /leaf .* is not its hash/);
    assert.deepEqual(
      (await api.trail(id)).map((e) => e.chainValid),
      [true, false],
    );
  });
});

await describeEachDatabase('gate audit log: instances, counting and migration', (backend) => {
  test('a checkpoint is signed after AUDIT_CHECKPOINT_EVENTS entries committed through the instance', async () => {
    const gate = await startTestGate(backend, { env: { AUDIT_CHECKPOINT_EVENTS: '3' } });
    try {
      const api = helpers(gate);
      const first = await api.create('deploy');
      await api.create('deploy');
      assertGateError(await gate.call({ method: 'GET', url: '/api/audit/checkpoint' }), 404, 'not_found', 'two entries: no checkpoint yet');
      await api.ok({ method: 'POST', url: `/api/requests/${first}/decide`, payload: { decision: 'approved' } });
      let checkpoint: Checkpoint | undefined;
      for (let i = 0; i < 100 && checkpoint === undefined; i += 1) {
        const response = await gate.call({ method: 'GET', url: '/api/audit/checkpoint' });
        if (response.statusCode === 200) checkpoint = response.json() as Checkpoint;
        else await sleep(20);
      }
      // Counted are the entries: the admin key's change leaf before them and the heads leaf after are in the tree all the same.
      assert.equal(checkpoint?.treeSize, 5);
      assert.equal(checkpoint?.rootHash, rootOf((await api.leaves()).map((l) => l.leaf_hash)).toString('hex'));
    } finally {
      await gate.close();
    }
  });

  test('concurrent creations and decides (across two instances on PostgreSQL) append one contiguous log every entry is in once', async () => {
    const gate = await startTestGate(backend);
    const other: GateService | null = backend.kind === 'postgres' ? await buildGateService({ ...gate.config }, { runJobs: false, clock: gate.clock }) : null;
    try {
      const api = helpers(gate);
      const via = (index: number, options: InjectOptions) =>
        (other !== null && index % 2 === 1 ? other.app : gate.service.app).inject({ ...options, headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } });
      const created = await Promise.all(
        Array.from({ length: 12 }, (_, i) => via(i, { method: 'POST', url: '/api/requests', payload: { action: `deploy-${i % 3}` } })),
      );
      const ids = created.map((r) => (r.json() as { id: string }).id);
      // Every request decided twice at once (one wins), and new requests created meanwhile.
      const responses = await Promise.all([
        ...ids.flatMap((id, i) =>
          [0, 1].map((j) => via(i + j, { method: 'POST', url: `/api/requests/${id}/decide`, payload: { decision: j === 0 ? 'approved' : 'denied' } })),
        ),
        ...Array.from({ length: 6 }, (_, i) => via(i, { method: 'POST', url: '/api/requests', payload: { action: 'late' } })),
      ]);
      const decides = responses.slice(0, ids.length * 2).map((r) => r.statusCode);
      assert.equal(decides.filter((status) => status === 200).length, ids.length, decides.join(','));
      const all = [...ids, ...responses.slice(ids.length * 2).map((r) => (r.json() as { id: string }).id)];
      const requestEntries = (await Promise.all(all.map((id) => api.trail(id)))).flat();
      assert.equal(requestEntries.length, ids.length * 2 + 6);
      const entries = [...(await api.changes()), ...requestEntries];

      const leaves = await api.leaves();
      assert.deepEqual(
        leaves.map((l) => Number(l.idx)),
        entries.map((_, i) => i),
        'contiguous from 0',
      );
      assert.deepEqual(leaves.map((l) => l.item_id).sort(), entries.map((e) => e.id).sort(), 'every entry once');
      const byId = new Map(entries.map((e) => [e.id, e]));
      const position = new Map(leaves.map((l) => [l.item_id, Number(l.idx)]));
      for (const entry of entries.filter((e) => e.seq > 0)) {
        const previous = entries.find((e) => e.requestId === entry.requestId && e.seq === entry.seq - 1)!;
        assert.ok(position.get(previous.id)! < position.get(entry.id)!, 'a chain is in the log in its own order');
      }
      const checkpoint = (
        await (other ?? gate.service).app.inject({ method: 'POST', url: '/api/audit/checkpoint', headers: { authorization: `Bearer ${TEST_ADMIN_KEY}` } })
      ).json() as Checkpoint;
      assert.equal(
        checkpoint.rootHash,
        rootOf([...leaves.map((l) => leafOf(byId.get(l.item_id)!)), leafOf(await headsEntry(gate, checkpoint.treeSize))]).toString('hex'),
      );
      for (const id of all) assert.equal((await api.ok<Verdict>({ method: 'GET', url: `/api/requests/${id}/audit/verify` })).valid, true);
    } finally {
      await other?.app.close();
      await gate.close();
    }
  });

  test('migrations 0006 and 0009 make the entries stored before them the first leaves (as bytes), in (timestamp, request, seq) order', async () => {
    const gate = await startTestGate(backend);
    try {
      const api = helpers(gate);
      const first = await api.create('deploy');
      gate.clock.advance(1000);
      const second = await api.create('deploy');
      await api.ok({ method: 'POST', url: `/api/requests/${first}/decide`, payload: { decision: 'approved' } });
      await api.ok(
        { method: 'POST', url: '/api/policies', payload: { name: 'auto', priority: 1, rules: [{ match: { action: 'read_logs' }, decision: 'auto_deny' }] } },
        201,
      );
      await api.create('read_logs');
      const database = gate.service.context.database;
      const db = database.db;
      // Back to a database from before 0006: the log's tables gone, its steps (and the conversion of its hashes to bytes) not applied.
      await dropAuditLogTables(db);
      await sql`delete from schema_migrations where name in ('0006_audit_log', '0009_binary_audit_log_hashes', '0010_audit_key_certificates', '0016_audit_leaf_kinds_and_requests', '0017_audit_checkpoint_notes')`.execute(
        db,
      );
      await migrateToLatest(database, gateMigrations);
      await gate.service.context.auditLog.registerKey();

      const entries = await db.selectFrom('audit_entries').select(['id', 'request_id', 'hash', 'ts', 'seq']).execute();
      entries.sort((a, b) => Number(a.ts) - Number(b.ts) || (a.request_id < b.request_id ? -1 : a.request_id > b.request_id ? 1 : 0) || a.seq - b.seq);
      const leaves = await api.leaves();
      assert.equal(leaves.length, 5);
      assert.deepEqual(
        leaves.map((l) => [l.item_id, l.scope_id, l.leaf_hash.toString('hex')]),
        entries.map((e) => [e.id, e.request_id, leafOf(e).toString('hex')]),
      );
      for (const id of [first, second]) assert.equal((await api.ok<Verdict>({ method: 'GET', url: `/api/requests/${id}/audit/verify` })).valid, true);

      // The backfilled log goes on growing from there.
      await api.ok({ method: 'POST', url: `/api/requests/${second}/decide`, payload: { decision: 'denied' } });
      const all = [...entries, (await api.trail(second)).at(-1)!];
      const checkpoint = await api.checkpointNow();
      assert.equal(checkpoint.rootHash, rootOf([...all, await headsEntry(gate, checkpoint.treeSize)].map(leafOf)).toString('hex'));
    } finally {
      await gate.close();
    }
  });
});
