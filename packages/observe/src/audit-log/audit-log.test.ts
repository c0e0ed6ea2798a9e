import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  hashBytes,
  hashHex,
  keyIdOf,
  leafHash,
  loadSigningKey,
  migrateToLatest,
  rootOf,
  sha256Hex,
  verifyCheckpoint as verifySigned,
  verifyConsistency,
  verifyInclusion,
  type Checkpoint,
} from '@vigil/platform';
import { describeEachDatabase, dropAuditLogTables, expectedHeadsLeaf, storeHashesAsHex } from '@vigil/platform/testing';
import { sql } from 'kysely';
import { observeMigrations } from '../migrations.ts';
import { ago, assertErrorBody, clockOf, custom, ingestEvents, started, startTestObserve, type EventAck, type TestObserve } from '../testing.ts';
import { chainHashOfCanonical, writerLeafBody } from '../events/index.ts';
import { OBSERVE_LOG } from './index.ts';

const verifyCheckpoint = (checkpoint: Checkpoint, publicKey: Buffer): boolean => verifySigned(OBSERVE_LOG, checkpoint, publicKey);

const leafOf = (ack: EventAck): Buffer => leafHash(Buffer.from(ack.hash, 'hex'));

/**
 * The leaves a start writes before any event (the first key's creation is a change leaf), as acks:
 * the change row's id and the SHA-256 of its text, which its leaf is computed over.
 */
async function changeAcks(observe: TestObserve): Promise<EventAck[]> {
  const response = await observe.call({ method: 'GET', url: '/api/audit/leaves?from=0&limit=1000' });
  assert.equal(response.statusCode, 200, response.body);
  const { leaves } = response.json<{ leaves: { eventId: string; change?: string | null }[] }>();
  return leaves.map((leaf) => {
    assert.equal(typeof leaf.change, 'string', 'only change leaves precede the events');
    return { id: leaf.eventId, hash: sha256Hex(leaf.change!) };
  });
}
const buffers = (hexes: readonly string[]): Buffer[] => hexes.map((h) => Buffer.from(h, 'hex'));

/**
 * The heads leaf a checkpoint of `treeSize` leaves ends with (docs/audit.md, "Session heads"): a
 * heads leaf of this log naming its own index, whose root is the map of every session's recorded
 * head, recomputed here from GET /api/audit/heads.
 */
async function headsLeafOf(observe: TestObserve, treeSize: number): Promise<Buffer> {
  const response = await observe.call({ method: 'GET', url: '/api/audit/heads?limit=1000' });
  const { sessions } = response.json<{ sessions: Record<string, unknown>[] }>();
  return expectedHeadsLeaf(observe.service.context.database.db as never, OBSERVE_LOG, treeSize, sessions, 'sessionId');
}
/** The writer leaf after events a credential wrote in one transaction: SHA-256(0x00 || its canonical JSON). */
const writerLeafOf = (events: readonly EventAck[], writer: string): Buffer =>
  leafHash(
    Buffer.from(
      writerLeafBody(
        OBSERVE_LOG,
        writer,
        events.map((ack) => ack.hash),
      ),
      'utf8',
    ),
  );

/**
 * The leaves a log's rows must be, computed from the acknowledged events alone: each event's leaf,
 * each change's (a setup ack), and each other leaf of no scope the writer leaf of the events since the previous one.
 */
function expectedLeaves(rows: readonly { item_id: string; scope_id: string | null }[], byId: ReadonlyMap<string, EventAck>, writer: string): Buffer[] {
  let since: EventAck[] = [];
  return rows.map((row) => {
    const ack = byId.get(row.item_id);
    if (ack !== undefined) {
      // An event's leaf, or (no scope) a change's: both the leaf of their 32-byte hash.
      if (row.scope_id !== null) since.push(ack);
      return leafOf(ack);
    }
    const leaf = writerLeafOf(since, writer);
    since = [];
    return leaf;
  });
}

await describeEachDatabase('audit log', (backend) => {
  let observe: TestObserve;
  /** Every acknowledged event, in the order the test committed them (one request at a time). */
  const acks: EventAck[] = [];
  /** Every leaf of the log as it must be (events' and writer leaves), and each event's leaf index. */
  const logged: Buffer[] = [];
  const indexOf = new Map<string, number>();
  const idx = (ack: EventAck): number => indexOf.get(ack.id)!;
  /** A request's events, committed alone: their leaves, then their writer leaf. */
  const record = (batch: readonly EventAck[]): void => {
    for (const ack of batch) {
      indexOf.set(ack.id, logged.length);
      logged.push(leafOf(ack));
      acks.push(ack);
    }
    logged.push(writerLeafOf(batch, observe.keyWriter));
  };
  let publicKey: Buffer;

  before(async () => {
    observe = await startTestObserve(backend);
    // The leaves before any event log changes (the first key's creation).
    for (const change of await changeAcks(observe)) logged.push(leafOf(change));
    const key = await observe.call({ method: 'GET', url: '/api/audit/public-key' });
    assert.equal(key.statusCode, 200, key.body);
    publicKey = Buffer.from((key.json() as { publicKey: string }).publicKey, 'base64');
  });
  after(() => observe.close());

  const get = async <T>(url: string): Promise<T> => {
    const response = await observe.call({ method: 'GET', url });
    assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
    return response.json() as T;
  };
  const checkpointNow = async (): Promise<Checkpoint> => {
    const response = await observe.call({ method: 'POST', url: '/api/audit/checkpoint' });
    assert.equal(response.statusCode, 201, response.body);
    const checkpoint = response.json() as Checkpoint;
    // A new checkpoint ends with its heads leaf.
    if (checkpoint.treeSize === logged.length + 1) logged.push(await headsLeafOf(observe, checkpoint.treeSize));
    return checkpoint;
  };
  const inclusion = (eventId: string, treeSize: number) =>
    get<{ leafIndex: number; leafHash: string; treeSize: number; proof: string[] }>(`/api/audit/inclusion?eventId=${eventId}&treeSize=${treeSize}`);

  test('leaves are the events in commit order, across batches and sessions; a signed checkpoint commits to them', async () => {
    record(await ingestEvents(observe, [started('log-a', 'agent', ago(30)), started('log-b', 'agent', ago(30)), custom('log-a', 'agent', ago(29))]));
    record(await ingestEvents(observe, [custom('log-b', 'agent', ago(28)), custom('log-c', 'agent', ago(28)), custom('log-a', 'agent', ago(27))]));
    record(await ingestEvents(observe, [custom('log-c', 'agent', ago(26))]));
    const leaves = await observe.service.context.database.db
      .selectFrom('audit_log_leaves')
      .select(['idx', 'item_id', 'scope_id', 'leaf_hash'])
      .orderBy('idx')
      .execute();
    assert.deepEqual(
      leaves.filter((l) => l.scope_id !== null).map((l) => [Number(l.idx), l.item_id]),
      acks.map((ack) => [idx(ack), ack.id]),
    );
    assert.deepEqual(
      leaves.map((l) => l.scope_id),
      [null, 'log-a', 'log-b', 'log-a', null, 'log-b', 'log-c', 'log-a', null, 'log-c', null],
      "the first key's creation (a change leaf), then each event's leaf names its session; each request's writer leaf follows its events",
    );
    assert.deepEqual(
      leaves.map((l) => l.leaf_hash),
      logged,
      "each event's leaf is SHA-256(0x00 || event hash), stored as its 32 bytes; a writer leaf hashes the canonical JSON naming the key and its events",
    );

    const checkpoint = await checkpointNow();
    assert.equal(checkpoint.treeSize, logged.length);
    // The root recomputed from the acknowledged hashes alone: nothing of the server's own bookkeeping is trusted.
    assert.equal(checkpoint.rootHash, rootOf(logged).toString('hex'));
    assert.ok(verifyCheckpoint(checkpoint, publicKey));
    assert.equal(checkpoint.keyId, keyIdOf(publicKey));
    assert.ok(!verifyCheckpoint({ ...checkpoint, treeSize: checkpoint.treeSize - 1 }, publicKey), 'the signature covers the tree size');
    assert.deepEqual(await get('/api/audit/checkpoint'), checkpoint);
    // Signing again at the same size answers the same checkpoint.
    assert.deepEqual(await checkpointNow(), checkpoint);
  });

  test('every event has an inclusion proof that verifies against the signed root', async () => {
    const checkpoint = await get<Checkpoint>('/api/audit/checkpoint');
    for (const ack of acks) {
      const index = idx(ack);
      const proof = await get<{ leafIndex: number; leafHash: string; treeSize: number; proof: string[] }>(`/api/audit/inclusion?eventId=${ack.id}`);
      assert.equal(proof.leafIndex, index);
      assert.equal(proof.treeSize, checkpoint.treeSize);
      assert.ok(verifyInclusion(index, checkpoint.treeSize, leafOf(ack), buffers(proof.proof), Buffer.from(checkpoint.rootHash, 'hex')), `event ${index}`);
    }
  });

  test('concurrent batches and a later checkpoint: consistency with the earlier one, proofs at either size', async () => {
    const first = await get<Checkpoint>('/api/audit/checkpoint');
    const batches = await Promise.all(
      Array.from({ length: 6 }, (_, i) => ingestEvents(observe, [custom(`log-p${i % 3}`, 'agent', ago(20)), custom(`log-q${i}`, 'agent', ago(20))])),
    );
    const leaves = await observe.service.context.database.db.selectFrom('audit_log_leaves').select(['idx', 'item_id', 'scope_id']).orderBy('idx').execute();
    // One writer leaf per transaction: concurrent requests of one key may share one (group commit).
    const writerLeaves = leaves.slice(first.treeSize).filter((l) => l.scope_id === null).length;
    assert.ok(writerLeaves >= 1 && writerLeaves <= 6, `${writerLeaves} writer leaves`);
    assert.equal(leaves.length, first.treeSize + 12 + writerLeaves);
    // Each request's events are contiguous leaves (one transaction), whatever order the requests committed in.
    for (const batch of batches) {
      const at = leaves.findIndex((l) => l.item_id === batch[0]!.id);
      assert.deepEqual(
        leaves.slice(at, at + batch.length).map((l) => l.item_id),
        batch.map((ack) => ack.id),
      );
    }
    const byId = new Map(batches.flat().map((ack) => [ack.id, ack]));
    const added = leaves.slice(first.treeSize);
    logged.push(...expectedLeaves(added, byId, observe.keyWriter));
    for (const leaf of added)
      if (leaf.scope_id !== null) {
        indexOf.set(leaf.item_id, Number(leaf.idx));
        acks.push(byId.get(leaf.item_id)!);
      }

    const second = await checkpointNow();
    assert.equal(second.rootHash, rootOf(logged).toString('hex'));
    const { proof } = await get<{ proof: string[] }>(`/api/audit/consistency?from=${first.treeSize}&to=${second.treeSize}`);
    assert.ok(verifyConsistency(first.treeSize, second.treeSize, Buffer.from(first.rootHash, 'hex'), Buffer.from(second.rootHash, 'hex'), buffers(proof)));
    assert.ok(
      !verifyConsistency(first.treeSize, second.treeSize, rootOf(logged.slice(1, first.treeSize + 1)), Buffer.from(second.rootHash, 'hex'), buffers(proof)),
    );
    assert.deepEqual(await get(`/api/audit/checkpoint?treeSize=${first.treeSize}`), first);

    const old = await inclusion(acks[2]!.id, first.treeSize);
    assert.ok(verifyInclusion(idx(acks[2]!), first.treeSize, leafOf(acks[2]!), buffers(old.proof), Buffer.from(first.rootHash, 'hex')));
    const last = acks.at(-1)!;
    const recent = await inclusion(last.id, second.treeSize);
    assert.ok(verifyInclusion(idx(last), second.treeSize, leafOf(last), buffers(recent.proof), Buffer.from(second.rootHash, 'hex')));
  });

  test('a tampered event, or a tampered leaf, fails its proof against the signed checkpoint', async () => {
    const checkpoint = await get<Checkpoint>('/api/audit/checkpoint');
    const root = Buffer.from(checkpoint.rootHash, 'hex');
    const db = observe.service.context.database.db;
    const victim = acks[3]!;
    // An attacker with database access rewrites the event and its chain hash: the stored event no longer matches its leaf.
    const forgedHash = 'f'.repeat(64);
    await db
      .updateTable('events')
      .set({ hash: hashBytes(forgedHash), payload: '{"type":"forged","data":{}}' })
      .where('id', '=', victim.id)
      .execute();
    const stored = await get<{ hash: string }>(`/api/events/${victim.id}`);
    assert.equal(stored.hash, forgedHash);
    const proof = await inclusion(victim.id, checkpoint.treeSize);
    assert.ok(!verifyInclusion(idx(victim), checkpoint.treeSize, leafHash(Buffer.from(stored.hash, 'hex')), buffers(proof.proof), root));
    // ...and rewrites the leaf too: the proofs of its neighbours, which carry it, no longer reach the signed root.
    await db
      .updateTable('audit_log_leaves')
      .set({ leaf_hash: leafHash(Buffer.from(forgedHash, 'hex')) })
      .where('item_id', '=', victim.id)
      .execute();
    const neighbour = await inclusion(acks[2]!.id, checkpoint.treeSize);
    assert.ok(!verifyInclusion(idx(acks[2]!), checkpoint.treeSize, leafOf(acks[2]!), buffers(neighbour.proof), root));
    const own = await inclusion(victim.id, checkpoint.treeSize);
    assert.ok(!verifyInclusion(idx(victim), checkpoint.treeSize, Buffer.from(own.leafHash, 'hex'), buffers(own.proof), root));
    // ...or writes a leaf back as its hex text (SQLite columns take any type): proofs are still answered, and still fail.
    await db
      .updateTable('audit_log_leaves')
      .set({ leaf_hash: leafOf(acks[2]!).toString('hex') as unknown as Buffer })
      .where('item_id', '=', acks[2]!.id)
      .execute();
    // (acks[0]'s proof carries that leaf inside a node: a leaf of the wrong type as a proof's own entry is not a hash at all.)
    const beside = await inclusion(acks[0]!.id, checkpoint.treeSize);
    assert.ok(!verifyInclusion(idx(acks[0]!), checkpoint.treeSize, leafOf(acks[0]!), buffers(beside.proof), root));
  });

  test('the checkpoint job signs one when the log grew since the last, and none otherwise', async () => {
    const job = observe.service.jobs.auditCheckpoint;
    const latest = await get<Checkpoint>('/api/audit/checkpoint');
    assert.ok(await job.tick());
    assert.deepEqual(await get('/api/audit/checkpoint'), latest, 'no new events: no new checkpoint');
    record(await ingestEvents(observe, [custom('log-c', 'agent', ago(15))]));
    clockOf(observe).advance(60_000);
    assert.ok(await job.tick());
    const signed = await get<Checkpoint>('/api/audit/checkpoint');
    assert.equal(signed.treeSize, latest.treeSize + 3, 'the event, its writer leaf and the heads leaf');
    logged.push(await headsLeafOf(observe, signed.treeSize));
    assert.equal(signed.rootHash, rootOf(logged).toString('hex'));
    assert.ok(verifyCheckpoint(signed, publicKey));
  });

  test('errors: unknown event, missing checkpoint, sizes beyond the log', async () => {
    const size = logged.length;
    assertErrorBody(await observe.call({ method: 'GET', url: `/api/audit/inclusion?eventId=nope&treeSize=${size}` }), 404);
    assertErrorBody(await observe.call({ method: 'GET', url: '/api/audit/checkpoint?treeSize=999999' }), 404);
    assertErrorBody(await observe.call({ method: 'GET', url: `/api/audit/consistency?from=2&to=1` }), 400);
    assertErrorBody(await observe.call({ method: 'GET', url: `/api/audit/consistency?from=1&to=${size + 1}` }), 400);
    assertErrorBody(await observe.call({ method: 'GET', url: `/api/audit/inclusion?eventId=${acks.at(-1)!.id}&treeSize=2` }), 400);
    const empty = await get<{ proof: string[] }>(`/api/audit/consistency?from=${size}&to=${size}`);
    assert.deepEqual(empty.proof, []);
  });

  test('a checkpoint is signed after AUDIT_CHECKPOINT_EVENTS events', async () => {
    const counted = await startTestObserve(backend, { env: { AUDIT_CHECKPOINT_EVENTS: '3' } });
    try {
      const setup = await changeAcks(counted);
      const events = await ingestEvents(counted, [started('cp-a', 'agent', ago(10)), custom('cp-a', 'agent', ago(9)), custom('cp-a', 'agent', ago(8))]);
      let checkpoint: Checkpoint | undefined;
      for (let i = 0; i < 100 && checkpoint === undefined; i += 1) {
        const response = await counted.call({ method: 'GET', url: '/api/audit/checkpoint' });
        if (response.statusCode === 200) checkpoint = response.json() as Checkpoint;
        else await sleep(20);
      }
      // Counted are the events: the change leaf before them, their writer leaf and the heads leaf are in the tree all the same.
      assert.equal(checkpoint?.treeSize, setup.length + 5);
      assert.equal(
        checkpoint?.rootHash,
        rootOf([
          ...setup.map(leafOf),
          ...events.map(leafOf),
          writerLeafOf(events, counted.keyWriter),
          await headsLeafOf(counted, checkpoint.treeSize),
        ]).toString('hex'),
      );
    } finally {
      await counted.close();
    }
  });
});

await describeEachDatabase("audit log: the server's own checks", (backend) => {
  test("the server's verification checks every event against its leaf: a forged append or a rewritten chain is reported without a saved checkpoint", async () => {
    const observe = await startTestObserve(backend);
    after(() => observe.close());
    const db = observe.service.context.database.db;
    const [first, second] = await ingestEvents(observe, [started('leaf-a', 'agent', ago(12)), custom('leaf-a', 'agent', ago(11))]);
    const verify = () =>
      observe
        .call({ method: 'GET', url: '/api/audit/verify?sessionId=leaf-a' })
        .then((r) => r.json() as { valid: boolean; brokenAt: { seq: number; eventId: string; reason: string } | null });
    assert.equal((await verify()).valid, true);
    // The spec's chainValid of the timeline and the replay reports the same verdict.
    const chainValid = async (): Promise<[boolean, boolean]> => {
      const timeline = await observe.call({ method: 'GET', url: '/api/sessions/leaf-a/timeline' });
      const replay = await observe.call({ method: 'GET', url: '/api/sessions/leaf-a/replay' });
      assert.equal(timeline.statusCode, 200, timeline.body);
      assert.equal(replay.statusCode, 200, replay.body);
      return [timeline.json<{ chainValid: boolean }>().chainValid, replay.json<{ chainValid: boolean }>().chainValid];
    };
    assert.deepEqual(await chainValid(), [true, true]);

    // A forger who knows the recipe appends an event with a correct hash and moves the session's head: only the log lacks it.
    const source = await db.selectFrom('events').selectAll().where('id', '=', second!.id).executeTakeFirstOrThrow();
    const forged = { ...source, id: 'forged-append', seq: 2, prev_hash: hashHex(source.hash), ts: source.ts + 1 };
    const forgedHash = chainHashOfCanonical(
      {
        id: forged.id,
        seq: 2,
        timestamp: new Date(forged.ts).toISOString(),
        sessionId: 'leaf-a',
        agentId: forged.agent_id,
        eventType: forged.event_type,
        severity: forged.severity,
        prevHash: forged.prev_hash,
      },
      forged.payload,
      forged.metadata,
    );
    await db
      .insertInto('events')
      .values({ ...forged, prev_hash: source.hash, hash: hashBytes(forgedHash) })
      .execute();
    await db.updateTable('sessions').set({ last_seq: 2, last_hash: forgedHash }).where('id', '=', 'leaf-a').execute();
    let verdict = await verify();
    assert.equal(verdict.valid, false);
    assert.deepEqual([verdict.brokenAt?.seq, verdict.brokenAt?.eventId], [2, 'forged-append']);
    assert.match(verdict.brokenAt!.reason, /no leaf in the audit log/);
    assert.deepEqual(await chainValid(), [false, false]);
    await db.deleteFrom('events').where('id', '=', 'forged-append').execute();
    await db.updateTable('sessions').set({ last_seq: 1, last_hash: second!.hash }).where('id', '=', 'leaf-a').execute();
    assert.equal((await verify()).valid, true);

    // The first event edited, and the chain and head rewritten after it: every hash links, but the leaves recorded others.
    const row = await db.selectFrom('events').selectAll().where('id', '=', first!.id).executeTakeFirstOrThrow();
    const payload = '{"forged":true}';
    const link = {
      id: row.id,
      seq: 0,
      timestamp: new Date(row.ts).toISOString(),
      sessionId: 'leaf-a',
      agentId: row.agent_id,
      eventType: row.event_type,
      severity: row.severity,
      prevHash: null,
    };
    const newFirst = chainHashOfCanonical(link, payload, row.metadata);
    await db
      .updateTable('events')
      .set({ payload, hash: hashBytes(newFirst) })
      .where('id', '=', first!.id)
      .execute();
    const next = await db.selectFrom('events').selectAll().where('id', '=', second!.id).executeTakeFirstOrThrow();
    const newSecond = chainHashOfCanonical(
      { ...link, id: next.id, seq: 1, timestamp: new Date(next.ts).toISOString(), eventType: next.event_type, severity: next.severity, prevHash: newFirst },
      next.payload,
      next.metadata,
    );
    await db
      .updateTable('events')
      .set({ prev_hash: hashBytes(newFirst), hash: hashBytes(newSecond) })
      .where('id', '=', second!.id)
      .execute();
    await db.updateTable('sessions').set({ last_hash: newSecond }).where('id', '=', 'leaf-a').execute();
    verdict = await verify();
    assert.equal(verdict.valid, false);
    assert.deepEqual([verdict.brokenAt?.seq, verdict.brokenAt?.eventId], [0, first!.id]);
    assert.match(verdict.brokenAt!.reason, /does not match the leaf the audit log recorded/);
    assert.deepEqual(await chainValid(), [false, false]);
  });
});

await describeEachDatabase('audit log: instances and migration', (backend) => {
  test('two instances on one database append one log: every event once, each batch contiguous, one root', async () => {
    const first = await startTestObserve(backend);
    const second = await startTestObserve(backend, { database: first.config.database, createKey: false });
    try {
      const setup = await changeAcks(first);
      // The second instance, called with the key created through the first.
      const viaSecond: TestObserve = {
        ...second,
        key: first.key,
        call: (request) => second.service.app.inject({ ...request, headers: { authorization: `Bearer ${first.key}` } }),
      };
      const batches = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          ingestEvents(i % 2 === 0 ? first : viaSecond, [
            started(`mi-${i}`, 'agent', ago(5)),
            custom(`mi-${i}`, 'agent', ago(4)),
            custom(`mi-shared`, 'agent', ago(4)),
          ]),
        ),
      );
      const leaves = await first.service.context.database.db.selectFrom('audit_log_leaves').select(['idx', 'item_id', 'scope_id']).orderBy('idx').execute();
      assert.deepEqual(
        leaves.map((l) => Number(l.idx)),
        leaves.map((_, i) => i),
      );
      assert.deepEqual(
        leaves
          .filter((l) => l.scope_id !== null)
          .map((l) => l.item_id)
          .sort(),
        batches
          .flat()
          .map((ack) => ack.id)
          .sort(),
      );
      for (const batch of batches) {
        const at = leaves.findIndex((l) => l.item_id === batch[0]!.id);
        assert.deepEqual(
          leaves.slice(at, at + batch.length).map((l) => l.item_id),
          batch.map((ack) => ack.id),
        );
      }
      const byId = new Map([...setup, ...batches.flat()].map((ack) => [ack.id, ack]));
      const response = await viaSecond.call({ method: 'POST', url: '/api/audit/checkpoint' });
      assert.equal(response.statusCode, 201, response.body);
      const signed = response.json() as Checkpoint;
      assert.equal(signed.rootHash, rootOf([...expectedLeaves(leaves, byId, first.keyWriter), await headsLeafOf(first, signed.treeSize)]).toString('hex'));
    } finally {
      await second.close();
      await first.close();
    }
  });

  test('migrations 0016-0017 (and 0022) make the events stored before them the first leaves, in (timestamp, session, seq) order', async () => {
    const observe = await startTestObserve(backend);
    try {
      await ingestEvents(observe, [started('old-b', 'agent', ago(50)), started('old-a', 'agent', ago(50)), custom('old-a', 'agent', ago(60))]);
      const database = observe.service.context.database;
      const db = database.db;
      // Back to a database from before 0016: its tables gone, its steps not applied, the events' hashes hex text (before 0022).
      await dropAuditLogTables(db);
      await storeHashesAsHex(db, database.dialect, 'events', ['hash', 'prev_hash']);
      await sql`delete from schema_migrations where name in ('0016_audit_log', '0017_audit_log_witnesses', '0022_binary_hashes', '0026_audit_log_sessions_and_key_certificates', '0030_audit_leaf_kinds', '0033_audit_checkpoint_notes')`.execute(
        db,
      );
      await migrateToLatest(database, observeMigrations);
      const events = await db.selectFrom('events').select(['id', 'hash', 'ts', 'session_id', 'seq']).execute();
      events.sort((a, b) => a.ts - b.ts || (a.session_id < b.session_id ? -1 : a.session_id > b.session_id ? 1 : 0) || a.seq - b.seq);
      const leaves = await db.selectFrom('audit_log_leaves').select(['idx', 'item_id', 'scope_id']).orderBy('idx').execute();
      assert.deepEqual(
        leaves.map((l) => l.item_id),
        events.map((e) => e.id),
      );
      assert.deepEqual(
        leaves.map((l) => l.scope_id),
        events.map((e) => e.session_id),
      );
      // The backfilled log goes on growing from there.
      await ingestEvents(observe, [custom('old-b', 'agent', ago(1))]);
      const all = [
        ...events,
        await db
          .selectFrom('events')
          .select(['id', 'hash', 'ts', 'session_id', 'seq'])
          .where('session_id', '=', 'old-b')
          .where('seq', '=', 1)
          .executeTakeFirstOrThrow(),
      ];
      const response = await observe.call({ method: 'POST', url: '/api/audit/checkpoint' });
      assert.equal(response.statusCode, 201, response.body);
      // The backfilled events have no writer leaf; the new one has.
      const added = all.at(-1)!;
      const writerLeaf = leafHash(Buffer.from(writerLeafBody(OBSERVE_LOG, observe.keyWriter, [hashHex(added.hash)]), 'utf8'));
      const signed = response.json() as Checkpoint;
      assert.equal(signed.rootHash, rootOf([...all.map((e) => leafHash(e.hash)), writerLeaf, await headsLeafOf(observe, signed.treeSize)]).toString('hex'));
    } finally {
      await observe.close();
    }
  });
});

test('the signing key: created once in the data directory, or given as PEM or base64 DER', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-audit-key-'));
  const created = loadSigningKey(undefined, dir);
  assert.equal(loadSigningKey(undefined, dir).keyId, created.keyId);
  assert.equal(created.keyId, keyIdOf(created.publicKey));
  assert.equal(created.keyId.length, 32);
  const { privateKey } = generateKeyPairSync('ed25519');
  const pem = privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
  const der = (privateKey.export({ format: 'der', type: 'pkcs8' }) as Buffer).toString('base64');
  assert.equal(loadSigningKey(pem, dir).keyId, loadSigningKey(der, dir).keyId);
  assert.notEqual(loadSigningKey(pem, dir).keyId, created.keyId);
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ format: 'pem', type: 'pkcs8' }) as string;
  assert.throws(() => loadSigningKey(rsa, dir), /Ed25519/);
});
