/**
 * The map of heads as a service keeps it (audit-heads.ts): each checkpoint's heads leaf commits
 * every scope's recorded head, recomputed here from the scopes' rows; the map doubles its buckets
 * past 8 scopes per bucket (the rebucketing commit included), every proof verifies at the leaf it
 * names (also at a leaf written under fewer buckets), an instance without the last tree in memory
 * commits the same root, and a map stored before it could grow is rekeyed by the migration step.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { sql } from 'kysely';
import {
  addHeadBucketTexts,
  commitScopeHeads,
  createHeadMapTables,
  headProofAt,
  prepareScopeHeads,
  rekeyHeadMap,
  type HeadMapCache,
  type HeadMapDraft,
} from './audit-heads.ts';
import { HeadsThread } from './audit-heads-threaded.ts';
import { byScope, headBucketHash, headBucketOf, headEntryText, headInBucket, HeadMapTree, headsLeafText, parseHeadsLeaf } from './audit-heads-format.ts';
import { addCheckpointNotes, addKeyCertificates, addLeafKinds, appendLeaves, createAuditLogTables, type AuditLogTables } from './audit-log.ts';
import { migrateToLatest, openDatabase, type Database, type MigrationStep } from './db.ts';
import { storeHashesAsBytes } from './stored-hash.ts';
import { describeEachDatabase, expectedHeadsLeaf, testAuditLog } from './testing.ts';

const LOG = 'vigil-heads-test';

interface ScopeRow {
  id: string;
  last_seq: number;
  last_hash: string | null;
}
type Tables = AuditLogTables & { scopes: ScopeRow };

const steps: Record<string, MigrationStep> = {
  '0001_audit_log': createAuditLogTables,
  async '0002_leaf_kinds'(db, dialect) {
    await storeHashesAsBytes(db, dialect, 'audit_log_leaves', ['leaf_hash']);
    await storeHashesAsBytes(db, dialect, 'audit_log_nodes', ['hash']);
    await db.schema.createTable('admin_changes').addColumn('id', 'text').execute();
    await addKeyCertificates(db);
    await addLeafKinds(db, 'item');
  },
  async '0003_head_map'(db) {
    await createHeadMapTables(db);
    await db.schema
      .createTable('scopes')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('last_seq', 'bigint', (c) => c.notNull())
      .addColumn('last_hash', 'text')
      .execute();
  },
};
const growth: Record<string, MigrationStep> = { '0004_head_map_growth': rekeyHeadMap, '0005_head_bucket_texts': addHeadBucketTexts };

const hashOf = (id: string, seq: number) => `${id}:${seq}`.padEnd(64, '0').slice(0, 64);

await describeEachDatabase('the map of heads: growing buckets, proofs, and the rekeying migration', (backend) => {
  let database: Database<Tables>;

  beforeEach(async () => {
    database = await openDatabase<Tables>(backend.freshDatabase());
  });
  afterEach(async () => {
    await database.close();
  });

  /** Sets the scopes' heads (null: the scope's row deleted) and appends one leaf per scope, as a service's writes do. */
  async function write(changes: ReadonlyMap<string, number | null>): Promise<void> {
    await database.db.transaction().execute(async (trx) => {
      const upserts = [...changes].flatMap(([id, seq]) => (seq === null ? [] : [{ id, last_seq: seq, last_hash: hashOf(id, seq) }]));
      for (let i = 0; i < upserts.length; i += 500)
        await trx
          .insertInto('scopes')
          .values(upserts.slice(i, i + 500))
          .onConflict((oc) => oc.column('id').doUpdateSet((eb) => ({ last_seq: eb.ref('excluded.last_seq'), last_hash: eb.ref('excluded.last_hash') })))
          .execute();
      const removed = [...changes].flatMap(([id, seq]) => (seq === null ? [id] : []));
      if (removed.length > 0) await trx.deleteFrom('scopes').where('id', 'in', removed).execute();
      const leaves = [...changes.keys()].map((id, i) => ({
        itemId: `${id}-${Date.now()}-${i}-${Math.random()}`,
        scopeId: id,
        kind: 'item',
        data: Buffer.from(id),
      }));
      for (let i = 0; i < leaves.length; i += 500) await appendLeaves<Tables>(trx, database.dialect, leaves.slice(i, i + 500));
    });
  }

  const SOURCE = { table: 'scopes', headSeq: 'last_seq', headHash: 'last_hash' };

  function commit(cache: { current?: HeadMapCache }, draft?: HeadMapDraft): Promise<number> {
    return commitScopeHeads(
      database,
      LOG,
      SOURCE,
      (trx, data, itemId) => appendLeaves(trx, database.dialect, [{ itemId, scopeId: null, kind: 'heads', data }]),
      {
        cache,
        draft,
      },
    );
  }

  /** The leaf ending a checkpoint of `size` must commit every scope row's head; answers its bucket count. */
  async function assertCommitsEveryHead(size: number): Promise<number> {
    const rows = await database.db.selectFrom('scopes').selectAll().execute();
    const heads = rows.map((row) => ({ scope: row.id, headSeq: Number(row.last_seq), headHash: row.last_hash }));
    await expectedHeadsLeaf(database.db as never, LOG, size, heads, 'scope');
    const body = (
      await database.db
        .selectFrom('audit_head_maps')
        .select('body')
        .where('leaf_idx', '=', size - 1)
        .executeTakeFirstOrThrow()
    ).body;
    return parseHeadsLeaf(body, LOG)!.buckets;
  }

  /**
   * Each bucket's row (what a checkpoint reads back of a changed bucket) holds that bucket as the
   * map at `size` committed it: its text hashes to the bucket's latest stored hash, and the rows
   * are the current bucket count's alone. Answers how many scopes the rows hold.
   */
  async function assertBucketTexts(size: number, buckets: number): Promise<number> {
    const { rows } = await sql<{ bucket: number; entries: string; hash: string | null }>`
      select t.bucket, t.entries,
        (select b.hash from audit_head_buckets b where b.bucket = t.bucket and b.tree_size <= ${size - 1} order by b.tree_size desc limit 1) as hash
      from audit_head_bucket_texts t`.execute(database.db);
    let scopes = 0;
    for (const row of rows) {
      assert.ok(Number(row.bucket) >= buckets && Number(row.bucket) < 2 * buckets, `row ${row.bucket} is not a bucket of ${buckets}`);
      assert.equal(createHash('sha256').update(row.entries).digest('hex'), row.hash, `bucket ${Number(row.bucket) - buckets}`);
      scopes += row.entries.split('\n').length - 1;
    }
    return scopes;
  }

  async function assertProof(leafIndex: number, scopeId: string, expected: { seq: number; hash: string } | null): Promise<void> {
    const proof = (await headProofAt(database.db, leafIndex, scopeId))!;
    const leaf = parseHeadsLeaf(proof.leaf, LOG)!;
    const committed = headInBucket(
      scopeId,
      proof.bucket,
      proof.entries,
      proof.path.map((node) => Buffer.from(node, 'hex')),
      leaf,
    );
    assert.deepEqual(committed, expected, `${scopeId} at leaf ${leafIndex} (${leaf.buckets} buckets)`);
  }

  test('past 8 scopes per bucket the map doubles its buckets; roots and proofs hold before, across and after, with and without the last tree in memory', async () => {
    await migrateToLatest(database, { ...steps, ...growth });
    const cache: { current?: HeadMapCache } = {};
    await write(new Map(Array.from({ length: 30_000 }, (_, i) => [`s-${i}`, 0])));
    const first = await commit(cache);
    assert.equal(await assertCommitsEveryHead(first), 4096);

    // 3,000 more scopes (33,000 > 8 × 4,096) and five heads moved on: rebucketed under 8,192.
    await write(
      new Map([...Array.from({ length: 3000 }, (_, i): [string, number] => [`t-${i}`, 0]), ...[1, 2, 3, 4, 5].map((i): [string, number] => [`s-${i}`, 1])]),
    );
    const second = await commit(cache);
    assert.equal(await assertCommitsEveryHead(second), 8192);
    // Rebucketing wrote every non-empty bucket's row under 8,192 (and dropped the 4,096 ones).
    assert.equal(await assertBucketTexts(second, 8192), 33_000);
    assert.equal(
      (
        await database.db
          .selectFrom('audit_head_maps')
          .select('scopes')
          .where('leaf_idx', '=', second - 1)
          .executeTakeFirstOrThrow()
      ).scopes,
      33_000,
    );
    await assertProof(second - 1, 's-1', { seq: 1, hash: hashOf('s-1', 1) });
    await assertProof(second - 1, 't-7', { seq: 0, hash: hashOf('t-7', 0) });
    // The leaf before the growth still proves what it committed, under its own 4,096 buckets.
    await assertProof(first - 1, 's-1', { seq: 0, hash: hashOf('s-1', 0) });
    await assertProof(first - 1, 't-7', null);

    // Another instance (no tree in memory): two scopes gone, three moved on; the same map, never fewer buckets.
    await write(
      new Map<string, number | null>([
        ['s-10', null],
        ['t-11', null],
        ['s-1', 2],
        ['t-12', 1],
        ['s-13', 4],
      ]),
    );
    const third = await commit({});
    assert.equal(await assertCommitsEveryHead(third), 8192);
    await assertBucketTexts(third, 8192);
    await assertProof(third - 1, 's-10', null);
    await assertProof(third - 1, 's-1', { seq: 2, hash: hashOf('s-1', 2) });
    // And this instance, whose tree is older than the last leaf, reads the stored hashes rather than its own;
    // s-20's bucket has lost its row (as in a map written before rows were kept): it is read from the entries' versions.
    await write(new Map([['s-20', 3]]));
    await database.db
      .deleteFrom('audit_head_bucket_texts' as never)
      .where('bucket' as never, '=', (8192 + headBucketOf('s-20', 8192)) as never)
      .execute();
    const fourth = await commit(cache);
    assert.equal(await assertCommitsEveryHead(fourth), 8192);
    assert.equal(await assertBucketTexts(fourth, 8192), 32_998);
    assert.equal(
      (
        await database.db
          .selectFrom('audit_head_maps')
          .select('scopes')
          .where('leaf_idx', '=', fourth - 1)
          .executeTakeFirstOrThrow()
      ).scopes,
      32_998,
    );
  });

  test("a bucket's text is edited in place: scopes whose ids need escaping or sort by UTF-16 code units are found, placed, moved on and removed as the map from scratch has them", async () => {
    await migrateToLatest(database, { ...steps, ...growth });
    // Ids that share one bucket (4,096 buckets), each prefix followed by the first counter that lands there.
    const bucket = headBucketOf('plain');
    const prefixes = ['plain-', 'q"uote-', 'back\\slash-', 'line\nbreak-', 'tab\t-', 'é-', 'Z-', 'a-', '😀-', '\uffff-', 'scope":"x"}-', '-'];
    const ids = prefixes.map((prefix) => {
      for (let i = 0; ; i++) if (headBucketOf(`${prefix}${i}`) === bucket) return `${prefix}${i}`;
    });
    const cache: { current?: HeadMapCache } = {};
    const checkpoint = async (changes: [number, number | null][], expected: Record<number, number | null>) => {
      await write(new Map(changes.map(([i, seq]) => [ids[i]!, seq])));
      const size = await commit(cache);
      await assertCommitsEveryHead(size);
      await assertBucketTexts(size, 4096);
      for (const [i, seq] of Object.entries(expected))
        await assertProof(size - 1, ids[Number(i)]!, seq === null ? null : { seq, hash: hashOf(ids[Number(i)]!, seq) });
    };
    // Every other one first, then the rest between them, then heads moved on, then some removed and one back.
    await checkpoint(
      [0, 2, 4, 6, 8, 10].map((i) => [i, 0]),
      { 0: 0, 1: null, 10: 0 },
    );
    await checkpoint(
      [1, 3, 5, 7, 9, 11].map((i) => [i, 0]),
      { 1: 0, 11: 0, 9: 0 },
    );
    await checkpoint(
      [
        [1, 1],
        [10, 2],
        [11, 1],
        [0, 3],
      ],
      { 1: 1, 10: 2, 11: 1, 0: 3, 2: 0 },
    );
    await checkpoint(
      [
        [1, null],
        [10, null],
        [5, null],
        [11, 2],
      ],
      { 1: null, 10: null, 5: null, 11: 2, 6: 0 },
    );
    await checkpoint(
      [
        [10, 0],
        [6, 1],
      ],
      { 10: 0, 6: 1, 1: null },
    );
    // And from the stored rows alone (no tree or draft in memory).
    await write(new Map([[ids[3]!, 4]]));
    const size = await commit({});
    await assertCommitsEveryHead(size);
    await assertProof(size - 1, ids[3]!, { seq: 4, hash: hashOf(ids[3]!, 4) });
  });

  /**
   * Between a checkpoint's draft (made without the log's lock) and its commit the service goes on
   * writing: scopes the draft holds move on or go, new ones come, and enough of them to double the
   * map's buckets. `draftAndCommit` makes the draft, runs `meanwhile`, commits.
   */
  async function changesBetweenDraftAndCommit(draftAndCommit: (meanwhile: () => Promise<void>) => Promise<number>): Promise<void> {
    await migrateToLatest(database, { ...steps, ...growth });
    await write(new Map(Array.from({ length: 2000 }, (_, i) => [`s-${i}`, 0])));
    const first = await commit({});
    await write(new Map([...Array.from({ length: 500 }, (_, i): [string, number] => [`t-${i}`, 0]), ['s-1', 1], ['s-2', 1]]));
    const second = await draftAndCommit(() =>
      write(
        new Map<string, number | null>([
          ['s-1', 2],
          ['t-3', 1],
          ['t-4', null],
          ['s-5', null],
          ['u-1', 0],
        ]),
      ),
    );
    assert.ok(second > first + 500, 'the commit covers the leaves written after the draft');
    assert.equal(await assertCommitsEveryHead(second), 4096);
    assert.equal(await assertBucketTexts(second, 4096), 2499);
    await assertProof(second - 1, 's-1', { seq: 2, hash: hashOf('s-1', 2) });
    await assertProof(second - 1, 't-4', null);
    // 31,000 more scopes after the draft: the commit outgrows 4,096 buckets and rebuckets the whole map.
    await write(new Map([['s-7', 1]]));
    const third = await draftAndCommit(() => write(new Map(Array.from({ length: 31_000 }, (_, i) => [`v-${i}`, 0]))));
    assert.equal(await assertCommitsEveryHead(third), 8192);
    assert.equal(await assertBucketTexts(third, 8192), 33_499);
    // A draft whose base another writer moved on (it appended a heads leaf meanwhile) is dropped, and the step done whole.
    await write(new Map([['s-8', 1]]));
    const fourth = await draftAndCommit(async () => {
      await write(new Map([['s-9', 1]]));
      await commit({});
      await write(new Map([['s-10', 1]]));
    });
    assert.equal(await assertCommitsEveryHead(fourth), 8192);
    assert.equal(await assertBucketTexts(fourth, 8192), 33_499);
  }

  test('a draft made without the lock, then committed under it after more writes, commits every head as they are at the commit', async () => {
    const cache: { current?: HeadMapCache } = {};
    await changesBetweenDraftAndCommit(async (meanwhile) => {
      const draft = await prepareScopeHeads(database, LOG, SOURCE, cache);
      await meanwhile();
      return commit(cache, draft);
    });
  });

  if (backend.kind === 'sqlite')
    test('on the heads thread (its own connection), with the service writing between its draft and its commit', async () => {
      const thread = new HeadsThread({ sqlite: database.sqlite!, log: LOG, source: SOURCE });
      try {
        await changesBetweenDraftAndCommit(async (meanwhile) => {
          await thread.prepare();
          await meanwhile();
          return database.db.connection().execute(() => thread.commit());
        });
      } finally {
        await thread.close();
      }
    });

  if (backend.kind === 'sqlite')
    test("a log's checkpoint with enough leaves since its last heads leaf commits it on the heads thread, which its stop ends", async () => {
      await migrateToLatest(database, { ...steps, ...growth, '0006_checkpoint_notes': addCheckpointNotes });
      const log = testAuditLog(database as unknown as Database<AuditLogTables>, mkdtempSync(join(tmpdir(), 'vigil-heads-')), {
        name: LOG,
        heads: SOURCE,
        sqlite: { ...database.sqlite!, headsThreadFrom: 100 },
      });
      const thread = () => (log as unknown as { headsThread?: HeadsThread }).headsThread;
      await write(new Map(Array.from({ length: 99 }, (_, i) => [`s-${i}`, 0])));
      const small = await log.checkpoint();
      assert.equal(thread(), undefined, '99 leaves: committed in process');
      assert.equal(await assertCommitsEveryHead(small.treeSize), 4096);
      await write(new Map(Array.from({ length: 100 }, (_, i) => [`t-${i}`, 0])));
      const large = await log.checkpoint();
      assert.ok(thread() !== undefined, '100 leaves: committed on the thread');
      assert.equal(await assertCommitsEveryHead(large.treeSize), 4096);
      await log.stop();
      await assert.rejects(thread()!.commit(), /closed|exited/);

      // A thread that cannot work (here: its file cannot be opened) leaves the checkpoint to the log's own thread.
      const warnings: string[] = [];
      const broken = testAuditLog(database as unknown as Database<AuditLogTables>, mkdtempSync(join(tmpdir(), 'vigil-heads-')), {
        name: LOG,
        heads: SOURCE,
        sqlite: { file: join(tmpdir(), 'vigil-no-such-folder', 'gone', 'x.db'), synchronous: 'NORMAL', headsThreadFrom: 1 },
        log: { warn: (_object, message) => warnings.push(message), error() {} },
      });
      await write(new Map([['u-1', 0]]));
      const after = await broken.checkpoint();
      assert.equal(await assertCommitsEveryHead(after.treeSize), 4096);
      assert.deepEqual(warnings, ['the audit heads thread failed: the checkpoint commits its heads here']);
      await broken.stop();
    });

  test('a map stored before it could grow is rekeyed by the migration: its old leaf still proves its heads, and the next checkpoint counts its scopes', async () => {
    await migrateToLatest(database, steps);
    // The map as the first version stored it: entries by 12-bit bucket, bucket hashes numbered 0–4,095, no scope count.
    const ids = ['a', 'b', 'c'];
    await write(new Map(ids.map((id) => [id, 0])));
    const leafIndex = 3;
    const hashes = new Map<number, Buffer>();
    const byBucket = new Map<number, string[]>();
    for (const id of ids) byBucket.set(headBucketOf(id), [...(byBucket.get(headBucketOf(id)) ?? []), id]);
    for (const [bucket, inBucket] of byBucket)
      hashes.set(
        bucket,
        headBucketHash(
          inBucket
            .map((scopeId) => ({ scopeId }))
            .sort(byScope)
            .map(({ scopeId }) => headEntryText(scopeId, { seq: 0, hash: hashOf(scopeId, 0) })),
        ),
      );
    const body = headsLeafText(LOG, leafIndex, new HeadMapTree(4096, hashes).root);
    await database.db.transaction().execute(async (trx) => {
      await appendLeaves<Tables>(trx, database.dialect, [{ itemId: 'heads-3', scopeId: null, kind: 'heads', data: Buffer.from(body) }]);
      const old = trx as unknown as import('kysely').Kysely<{
        audit_head_entries: Record<string, unknown>;
        audit_head_buckets: Record<string, unknown>;
        audit_head_maps: Record<string, unknown>;
      }>;
      await old
        .insertInto('audit_head_entries')
        .values(ids.map((id) => ({ scope_id: id, tree_size: leafIndex, bucket: headBucketOf(id), head_seq: 0, head_hash: hashOf(id, 0) })))
        .execute();
      await old
        .insertInto('audit_head_buckets')
        .values([...hashes].map(([bucket, hash]) => ({ bucket, tree_size: leafIndex, hash: hash.toString('hex') })))
        .execute();
      await old.insertInto('audit_head_maps').values({ leaf_idx: leafIndex, body }).execute();
    });

    await migrateToLatest(database, { ...steps, ...growth });
    const { rows } = await sql<{ head_key: number }>`select head_key from audit_head_entries where scope_id = 'a'`.execute(database.db);
    assert.equal(Number(rows[0]!.head_key) >> 12, headBucketOf('a'), 'the entry is keyed by 24 bits of its hash');
    for (const id of ids) await assertProof(leafIndex, id, { seq: 0, hash: hashOf(id, 0) });

    await write(new Map([['d', 0]]));
    const size = await commit({});
    assert.equal(await assertCommitsEveryHead(size), 4096);
    assert.equal(
      (
        await database.db
          .selectFrom('audit_head_maps')
          .select('scopes')
          .where('leaf_idx', '=', size - 1)
          .executeTakeFirstOrThrow()
      ).scopes,
      4,
    );
  });
});
