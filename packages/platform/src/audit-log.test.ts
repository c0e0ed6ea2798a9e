import assert from 'node:assert/strict';
import { afterEach, beforeEach, test } from 'node:test';
import { sql } from 'kysely';
import { addCheckpointNotes, AuditLog, buildNodes, indexLeavesByScope, keyLeavesByIndex, type AuditLogTables } from './audit-log.ts';
import { ManualClock } from './clock.ts';
import { migrateToLatest, openDatabase, type Database } from './db.ts';
import { leafHash, rootOf, splitPoint, verifyConsistency, verifyInclusion } from './merkle.ts';
import { AUDIT_LOG_TEST_STEPS, describeEachDatabase, testAuditLog } from './testing.ts';

// The RFC's audit path applied literally to the leaf hashes: what the stored-node proofs must equal.
function referencePath(m: number, leaves: readonly Buffer[]): Buffer[] {
  if (leaves.length <= 1) return [];
  const k = splitPoint(leaves.length);
  return m < k ? [...referencePath(m, leaves.slice(0, k)), rootOf(leaves.slice(k))] : [...referencePath(m - k, leaves.slice(k)), rootOf(leaves.slice(0, k))];
}

const hex = (hashes: readonly Buffer[]) => hashes.map((hash) => hash.toString('hex'));

await describeEachDatabase('audit log: roots and proofs from the stored nodes (levels ≥ 4) and the leaves below them', (backend) => {
  let database: Database<AuditLogTables>;
  let log: AuditLog<AuditLogTables>;
  // Sizes around the 16-leaf blocks whose inner nodes are not stored, and odd build boundaries.
  const appended = [1, 2, 13, 1, 16, 3, 31, 40, 1];
  const leaves: Buffer[] = [];

  beforeEach(async () => {
    const config = backend.freshDatabase();
    database = await openDatabase<AuditLogTables>(config);
    // As a service's migrations make it: the log's tables, then its hashes stored as bytes.
    await migrateToLatest(database, AUDIT_LOG_TEST_STEPS);
    log = testAuditLog(database, config.dataDir);
    leaves.length = 0;
    let n = 0;
    for (const count of appended) {
      const batch = Array.from({ length: count }, () => ({ itemId: `item-${n}`, scopeId: 's', kind: 'item', data: Buffer.from(`item ${n++}`) }));
      await database.db.transaction().execute((trx) => log.append(trx, batch));
      leaves.push(...batch.map((leaf) => leafHash(leaf.data)));
      // Build after each append, so that builds stop mid-block and resume from a frontier of unstored nodes.
      await buildNodes(database, leaves.length);
    }
  });
  afterEach(async () => {
    await log.stop();
    await database.close();
  });

  test('only nodes of 16 leaves and more are stored', async () => {
    const levels = await database.db.selectFrom('audit_log_nodes').select('level').distinct().orderBy('level').execute();
    assert.deepEqual(
      levels.map((row) => row.level),
      [4, 5, 6],
    );
  });

  test('every root, inclusion proof and consistency proof equals the RFC computed from the leaves', async () => {
    for (let size = 1; size <= leaves.length; size += 1) {
      const root = rootOf(leaves.slice(0, size));
      assert.equal((await log.rootAt(size)).toString('hex'), root.toString('hex'), `root at ${size}`);
      for (const index of [0, 7, 15, 16, size - 1].filter((i) => i < size)) {
        const path = await log.inclusionPath(index, size);
        assert.deepEqual(hex(path), hex(referencePath(index, leaves.slice(0, size))), `path of ${index} at ${size}`);
        assert.ok(verifyInclusion(index, size, leaves[index]!, path, root));
      }
      for (const from of [1, 5, 16, 17, size]) {
        if (from > size) continue;
        const proof = await log.consistencyPath(from, size);
        assert.ok(verifyConsistency(from, size, rootOf(leaves.slice(0, from)), root, proof), `consistency ${from} → ${size}`);
      }
    }
  });

  test('inclusion proofs of many leaves at once equal the one-by-one proofs', async () => {
    const size = leaves.length;
    const indices = Array.from({ length: size }, (_, i) => i);
    const paths = await log.inclusionPaths(indices, size);
    for (const index of indices) assert.deepEqual(hex(paths[index]!), hex(referencePath(index, leaves)), `path of ${index}`);
  });
});

await describeEachDatabase("the integrator's leader: when a round signs", (backend) => {
  let database: Database<AuditLogTables>;
  let log: AuditLog<AuditLogTables>;
  const clock = new ManualClock(Date.parse('2026-11-30T00:00:00.000Z'));
  let n = 0;

  beforeEach(async () => {
    const config = backend.freshDatabase();
    database = await openDatabase<AuditLogTables>(config);
    await migrateToLatest(database, { ...AUDIT_LOG_TEST_STEPS, '0004_checkpoint_notes': addCheckpointNotes });
    log = testAuditLog(database, config.dataDir, { clock, checkpointEvents: 10, checkpointIntervalMs: 60_000 });
  });
  afterEach(async () => {
    await log.stop();
    await database.close();
  });

  const append = (count: number) =>
    database.db.transaction().execute((trx) =>
      log.append(
        trx,
        Array.from({ length: count }, () => ({ itemId: `item-${n}`, scopeId: null, kind: 'item', data: Buffer.from(`item ${n++}`) })),
      ),
    );
  const signedSize = async () => (await log.findCheckpoint())?.treeSize ?? 0;

  test('the whole log grown by checkpointEvents, or grown since a checkpoint of the interval, is signed; a trickle between is not', async () => {
    await append(3);
    await log.integrate(false);
    assert.equal(await signedSize(), 3, 'the first leaves are signed at once');

    await append(4);
    await log.integrate(false);
    assert.equal(await signedSize(), 3, 'four leaves a second after a checkpoint wait');

    await append(6);
    await log.integrate(false);
    assert.equal(await signedSize(), 13, 'ten leaves since the checkpoint are signed');

    await append(1);
    clock.advance(59_000);
    await log.integrate(false);
    assert.equal(await signedSize(), 13);
    clock.advance(1_000);
    await log.integrate(false);
    assert.equal(await signedSize(), 14, 'one leaf is signed once the latest checkpoint is an interval old');

    await append(1);
    await log.integrate(true);
    assert.equal(await signedSize(), 15, 'an instance that asks is answered at once');
  });
});

await describeEachDatabase("the leaves keyed by their index (the gate's 0027)", (backend) => {
  test('the same rows, indexes and root, and the log goes on; on SQLite the index is the rowid, with no index of its own', async () => {
    const config = backend.freshDatabase();
    const database = await openDatabase<AuditLogTables>(config);
    const log = testAuditLog(database, config.dataDir);
    try {
      const before = { ...AUDIT_LOG_TEST_STEPS, '0004_scope_index': indexLeavesByScope };
      await migrateToLatest(database, before);
      const append = (from: number, count: number) =>
        database.db.transaction().execute((trx) =>
          log.append(
            trx,
            Array.from({ length: count }, (_, i) => ({
              itemId: `item-${from + i}`,
              scopeId: `s-${(from + i) % 3}`,
              kind: 'item',
              data: Buffer.from(`item ${from + i}`),
            })),
          ),
        );
      await append(0, 40);
      const rows = async () => (await sql`select * from audit_log_leaves order by idx`.execute(database.db)).rows;
      const indexes = async () =>
        database.dialect === 'sqlite'
          ? (
              await sql<{ name: string }>`select name from sqlite_schema where type = 'index' and tbl_name = 'audit_log_leaves' order by name`.execute(
                database.db,
              )
            ).rows.map((row) => row.name)
          : [];
      const stored = await rows();
      const root = (await log.rootAt(40)).toString('hex');
      if (database.dialect === 'sqlite')
        assert.deepEqual(await indexes(), ['audit_log_leaves_item', 'audit_log_leaves_scope', 'sqlite_autoindex_audit_log_leaves_1']);

      await migrateToLatest(database, { ...before, '0005_leaves_keyed_by_index': keyLeavesByIndex });
      assert.deepEqual(await rows(), stored);
      if (database.dialect === 'sqlite') {
        assert.deepEqual(await indexes(), ['audit_log_leaves_item', 'audit_log_leaves_scope']);
        const { rows: apart } = await sql<{ n: number }>`select count(*) as n from audit_log_leaves where rowid <> idx`.execute(database.db);
        assert.equal(Number(apart[0]!.n), 0);
      }
      assert.equal((await log.rootAt(40)).toString('hex'), root);
      await append(40, 5);
      assert.equal(await log.size(), 45);
      // The item index still refuses a second leaf of an item.
      await assert.rejects(append(44, 1));
    } finally {
      await log.stop();
      await database.close();
    }
  });
});
