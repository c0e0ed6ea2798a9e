import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { test } from 'node:test';
import { leafHash, migrateToLatest, rootOf, verifyConsistency, verifyInclusion, type Checkpoint } from '@vigil/platform';
import { describeEachDatabase, expectedHeadsLeaf, storeHashesAsHex } from '@vigil/platform/testing';
import { sql } from 'kysely';
import { OBSERVE_LOG } from './audit-log/index.ts';
import { storedWriter, writerLeafText, writerOfStored } from './events/index.ts';
import { observeMigrations } from './migrations.ts';
import { modelKey } from './recall/store.ts';
import { ago, backToBefore0044, custom, ingestEvents, started, startTestObserve, toolCall, type TestObserve } from './testing.ts';

/** The schema as it was before 0020: reflect's full tool-call index and, on SQLite, the leaves keyed by a bigint column beside the rowid. */
async function backToBefore0020(observe: TestObserve): Promise<void> {
  const { db, dialect } = observe.service.context.database;
  // 0020 altered the events table as it was then: unpartitioned (0044 runs again after it).
  await backToBefore0044(db, dialect);
  await db.schema.dropIndex('events_tool_calls').execute();
  await db.schema
    .createIndex('events_type_session_seq')
    .on('events')
    .columns(['event_type', 'session_id', 'seq', 'ts', 'tool_name', 'call_id', 'agent_id'])
    .execute();
  if (dialect === 'sqlite') {
    await sql`create table leaves_before (idx bigint primary key, item_id text not null, scope_id text, leaf_hash text not null)`.execute(db);
    await sql`insert into leaves_before select idx, item_id, scope_id, leaf_hash from audit_log_leaves`.execute(db);
    await db.schema.dropTable('audit_log_leaves').execute();
    await sql`alter table leaves_before rename to audit_log_leaves`.execute(db);
    await db.schema.createIndex('audit_log_leaves_item').unique().on('audit_log_leaves').columns(['item_id']).execute();
    // The table as it was before 0020 had no kinds either (0030 adds and backfills them again).
    await sql`delete from schema_migrations where name = '0030_audit_leaf_kinds'`.execute(db);
  } else {
    await sql`alter table events reset (autovacuum_vacuum_scale_factor)`.execute(db);
  }
  await sql`delete from schema_migrations where name = '0020_storage_footprint'`.execute(db);
}

await describeEachDatabase('migration 0020: storage footprint', (backend) => {
  test('an older database is migrated in place: the same leaves keyed by their index, the tool-call index partial, reflect unchanged', async () => {
    const observe = await startTestObserve(backend);
    try {
      const events = [];
      for (const session of ['fp-a', 'fp-b']) {
        events.push(started(session, 'agent', ago(40)));
        for (let i = 0; i < 6; i += 1) events.push(toolCall(session, 'agent', ago(30 - i), `c${i}`));
      }
      await ingestEvents(observe, events);
      const database = observe.service.context.database;
      const { db, dialect } = database;
      const reflect = async (): Promise<unknown> => (await observe.call({ method: 'GET', url: `/api/reflect?analysis=tool_sequences&from=${ago(60)}` })).json();
      const answer = await reflect();

      await backToBefore0020(observe);
      const leafColumns = ['idx', 'item_id', 'scope_id', 'leaf_hash'] as const;
      const leavesBefore = await db.selectFrom('audit_log_leaves').select(leafColumns).orderBy('idx').execute();
      await migrateToLatest(database, observeMigrations);

      assert.deepEqual(await db.selectFrom('audit_log_leaves').select(leafColumns).orderBy('idx').execute(), leavesBefore);
      assert.deepEqual(await reflect(), answer);
      if (dialect === 'sqlite') {
        const schema = await sql<{
          name: string;
          sql: string | null;
        }>`select name, sql from sqlite_schema where tbl_name in ('audit_log_leaves', 'events') and type = 'index'`.execute(db);
        const indexes = new Map(schema.rows.map((row) => [row.name, row.sql]));
        assert.match(indexes.get('events_tool_calls') ?? '', /where event_type = 'tool_call'/);
        assert.equal(indexes.has('events_type_session_seq'), false);
        assert.equal(indexes.has('sqlite_autoindex_audit_log_leaves_1'), false, 'the leaf index is the rowid, with no b-tree of its own');
        const keyed = await sql<{ same: number }>`select count(*) as same from audit_log_leaves where rowid = idx`.execute(db);
        assert.equal(Number(keyed.rows[0]!.same), leavesBefore.length);
      } else {
        const index = await sql<{
          indexdef: string;
        }>`select indexdef from pg_indexes where schemaname = current_schema() and indexname = 'events_tool_calls'`.execute(db);
        assert.match(index.rows[0]?.indexdef ?? '', /WHERE \(event_type = 'tool_call'::text\)/);
        // The table 0020 tuned is the legacy partition since 0044 (the job gives each week partition the same setting).
        const options = await sql<{ reloptions: string[] | null }>`select reloptions from pg_class where oid = 'events_legacy'::regclass`.execute(db);
        assert.deepEqual(options.rows[0]?.reloptions, ['autovacuum_vacuum_scale_factor=0.02']);
      }

      // The log goes on from the migrated leaves: a new event is the next leaf (then its batch's writer leaf), and the checkpoint's root covers them all.
      const [appended] = await ingestEvents(observe, [toolCall('fp-a', 'agent', ago(1), 'c9')]);
      const leaves = await db.selectFrom('audit_log_leaves').select(['idx', 'item_id', 'leaf_hash']).orderBy('idx').execute();
      assert.equal(leaves.length, leavesBefore.length + 2);
      assert.equal(leaves.at(-2)!.item_id, appended!.id);
      assert.equal(Number(leaves.at(-2)!.idx), leavesBefore.length);
      assert.deepEqual(leaves.at(-2)!.leaf_hash, leafHash(Buffer.from(appended!.hash, 'hex')));
      const checkpoint = await observe.call({ method: 'POST', url: '/api/audit/checkpoint' });
      assert.equal(checkpoint.statusCode, 201, checkpoint.body);
      // The checkpoint ends with its heads leaf (docs/audit.md, "Session heads").
      const signed = checkpoint.json() as Checkpoint;
      const heads = (await observe.call({ method: 'GET', url: '/api/audit/heads' })).json<{ sessions: Record<string, unknown>[] }>().sessions;
      const headsLeaf = await expectedHeadsLeaf(db as never, 'vigil-observe', signed.treeSize, heads, 'sessionId');
      assert.equal(signed.rootHash, rootOf([...leaves.map((leaf) => leaf.leaf_hash), headsLeaf]).toString('hex'));
    } finally {
      await observe.close();
    }
  });
});

/** The hash columns 0022 converts, as they were before it: hex text. */
async function backToBefore0022(observe: TestObserve): Promise<void> {
  const { db, dialect } = observe.service.context.database;
  await storeHashesAsHex(db, dialect, 'events', ['hash', 'prev_hash']);
  await storeHashesAsHex(db, dialect, 'audit_log_leaves', ['leaf_hash']);
  await storeHashesAsHex(db, dialect, 'audit_log_nodes', ['hash']);
  await sql`delete from schema_migrations where name = '0022_binary_hashes'`.execute(db);
}

interface Proof {
  leafIndex: number;
  treeSize: number;
  leafHash: string;
  proof: string[];
}

await describeEachDatabase('migration 0022: hashes stored as bytes', (backend) => {
  test('an older database is migrated in place: every answer as before, chains and proofs verify, a tampered row stays broken', async () => {
    const observe = await startTestObserve(backend);
    try {
      const events = [];
      for (const session of ['bin-a', 'bin-b', 'bin-tampered']) {
        events.push(started(session, 'agent', ago(40)));
        for (let i = 0; i < 12; i += 1) events.push(i % 2 === 0 ? toolCall(session, 'agent', ago(30 - i), `c${i}`) : custom(session, 'agent', ago(30 - i)));
      }
      const acks = await ingestEvents(observe, events);
      const database = observe.service.context.database;
      const { db } = database;
      const body = async (url: string): Promise<string> => {
        const response = await observe.call({ method: 'GET', url });
        assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
        return response.body;
      };
      const checkpoint = (await observe.call({ method: 'POST', url: '/api/audit/checkpoint' })).json<Checkpoint>();
      // Leaf 0 logs the first key's creation (a change leaf), the events follow, then their batch's writer leaf and the checkpoint's heads leaf.
      assert.equal(checkpoint.treeSize, 1 + acks.length + 2);
      // Read before: bin-a's timeline and export, the event listing, one proof. bin-b is first read after the migration.
      // 13 events per session, in batch order: bin-b's seq 5, bin-tampered's seq 4.
      const victim = acks[13 + 5]!;
      const urls = [
        '/api/sessions/bin-a/timeline',
        '/api/audit/export?sessionId=bin-a',
        '/api/events?sessionId=bin-a&limit=100',
        `/api/events/${victim.id}`,
        `/api/audit/inclusion?eventId=${victim.id}&treeSize=${checkpoint.treeSize}`,
      ];
      const before = await Promise.all(urls.map(body));

      await backToBefore0022(observe);
      // An edit of the old form: bin-tampered's seq-4 hash in upper case, the same digits.
      const tampered = acks[26 + 4]!;
      await sql`update events set hash = ${tampered.hash.toUpperCase()} where id = ${tampered.id}`.execute(db);
      const text = await sql<{ hash: unknown }>`select hash from events where id = ${victim.id}`.execute(db);
      assert.equal(text.rows[0]!.hash, victim.hash, 'the old form: hex text');

      await migrateToLatest(database, observeMigrations);

      const stored = await db.selectFrom('events').select(['id', 'hash', 'prev_hash']).where('session_id', '=', 'bin-b').orderBy('seq').execute();
      for (const row of stored) assert.ok(Buffer.isBuffer(row.hash) && row.hash.length === 32, 'each hash is its 32 bytes');
      assert.deepEqual(stored.find((row) => row.id === victim.id)!.hash, Buffer.from(victim.hash, 'hex'));
      const leaves = await db.selectFrom('audit_log_leaves').select(['item_id', 'leaf_hash']).orderBy('idx').execute();
      assert.equal(leaves.length, 1 + acks.length + 2, "the change leaf, the events' leaves, then their batch's writer leaf and the heads leaf");
      assert.ok(Buffer.isBuffer(leaves[0]!.leaf_hash) && leaves[0]!.leaf_hash.length === 32, 'the change leaf too');
      assert.deepEqual(
        leaves.slice(1, 1 + acks.length).map((leaf) => leaf.leaf_hash),
        acks.map((ack) => leafHash(Buffer.from(ack.hash, 'hex'))),
      );
      const nodes = await db.selectFrom('audit_log_nodes').select('hash').execute();
      assert.ok(nodes.length > 0 && nodes.every((node) => Buffer.isBuffer(node.hash) && node.hash.length === 32));

      assert.deepEqual(await Promise.all(urls.map(body)), before, 'the same answers, byte for byte');
      const verdict = async (sessionId: string) =>
        JSON.parse(await body(`/api/audit/verify?sessionId=${sessionId}`)) as { valid: boolean; brokenAt: { seq: number } | null };
      assert.equal((await verdict('bin-a')).valid, true);
      assert.equal((await verdict('bin-b')).valid, true);
      const broken = await verdict('bin-tampered');
      assert.equal(broken.valid, false);
      assert.equal(broken.brokenAt?.seq, 4, 'the old edit is still found where it was made');

      // The proof of an event read only now reaches the checkpoint signed before the migration.
      const proof = JSON.parse(await body(`/api/audit/inclusion?eventId=${victim.id}&treeSize=${checkpoint.treeSize}`)) as Proof;
      const root = Buffer.from(checkpoint.rootHash, 'hex');
      assert.ok(
        verifyInclusion(
          proof.leafIndex,
          proof.treeSize,
          leafHash(Buffer.from(victim.hash, 'hex')),
          proof.proof.map((h) => Buffer.from(h, 'hex')),
          root,
        ),
      );
      // The log and the chains go on from the migrated rows.
      const [next] = await ingestEvents(observe, [custom('bin-b', 'agent', ago(1))]);
      assert.equal((JSON.parse(await body(`/api/events/${next!.id}`)) as { prevHash: string }).prevHash, acks[13 + 12]!.hash);
      assert.equal((await verdict('bin-b')).valid, true);
      const later = (await observe.call({ method: 'POST', url: '/api/audit/checkpoint' })).json<Checkpoint>();
      const consistency = JSON.parse(await body(`/api/audit/consistency?from=${checkpoint.treeSize}&to=${later.treeSize}`)) as { proof: string[] };
      assert.ok(
        verifyConsistency(
          checkpoint.treeSize,
          later.treeSize,
          root,
          Buffer.from(later.rootHash, 'hex'),
          consistency.proof.map((h) => Buffer.from(h, 'hex')),
        ),
      );
    } finally {
      await observe.close();
    }
  });
});

/** The storage 0045 and 0048 change, as it was before them: writer bodies as JSON text, API-key writers as `key:<id>`, on SQLite the scope index with the leaf index, models by name. */
async function backToBefore0045And0048(observe: TestObserve, models: readonly string[]): Promise<void> {
  const { db, dialect } = observe.service.context.database;
  const bodies = await db.selectFrom('audit_writer_leaves').select(['leaf_idx', 'body']).execute();
  if (dialect === 'postgres') await sql`alter table audit_writer_leaves alter column body type text using ''`.execute(db);
  for (const row of bodies)
    await db
      .updateTable('audit_writer_leaves')
      .set({ body: writerLeafText(row.body, OBSERVE_LOG) })
      .where('leaf_idx', '=', row.leaf_idx)
      .execute();
  if (dialect === 'sqlite') {
    await sql`drop index audit_log_leaves_scope`.execute(db);
    await sql`create index audit_log_leaves_scope on audit_log_leaves (scope_id, idx)`.execute(db);
  }
  for (const model of models) await db.updateTable('embeddings').set({ model }).where('model', '=', modelKey(model)).execute();
  for (const { written_by: stored } of await db.selectFrom('events').select('written_by').distinct().execute())
    if (stored !== null)
      await db
        .updateTable('events')
        .set({ written_by: writerOfStored(stored) })
        .where('written_by', '=', stored)
        .execute();
  await sql`delete from schema_migrations where name in ('0045_compact_storage', '0048_embedding_model_keys')`.execute(db);
}

await describeEachDatabase('migrations 0045 and 0048: writer leaves and API-key writers stored compact, the scope index, embedding model keys', (backend) => {
  test('an older database is migrated: every answer as before, verification passes, an edited body stays evident, recall finds the vectors', async () => {
    const env = { AUDIT_SIGNING_KEY: generateKeyPairSync('ed25519').privateKey.export({ format: 'pem', type: 'pkcs8' }).toString() };
    const old = await startTestObserve(backend, { env });
    let migrated: TestObserve | null = null;
    try {
      // Two requests per session (two writer leaves each), and a session whose writer body is edited before the migration.
      for (const session of ['cw-a', 'cw-b', 'cw-edited']) {
        await ingestEvents(old, [started(session, 'agent', ago(40)), toolCall(session, 'agent', ago(39), 'c0')]);
        await ingestEvents(old, [custom(session, 'agent', ago(30)), toolCall(session, 'agent', ago(29), 'c1')]);
      }
      assert.equal(await old.service.jobs.embeddings.tick(), true, 'the embeddings job ran');
      const { db } = old.service.context.database;
      const model = old.service.context.embedder.model;
      assert.ok(
        Number(
          (
            await db
              .selectFrom('embeddings')
              .select((eb) => eb.fn.countAll().as('n'))
              .executeTakeFirstOrThrow()
          ).n,
        ) > 0,
      );
      await old.call({ method: 'POST', url: '/api/audit/checkpoint' });
      // The last writer leaf (cw-edited's second request) is edited below: the answers compared are read up to it.
      const lastWriter = await db.selectFrom('audit_writer_leaves').select('leaf_idx').orderBy('leaf_idx', 'desc').limit(1).executeTakeFirstOrThrow();
      const urls = [
        '/api/sessions/cw-a/timeline',
        '/api/audit/export?sessionId=cw-a',
        `/api/audit/leaves?from=0&limit=${Number(lastWriter.leaf_idx)}`,
        '/api/audit/verify?sessionId=cw-a',
        '/api/audit/verify?sessionId=cw-b',
        '/api/events?sessionId=cw-b&limit=100',
        '/api/recall?query=tool%20call%20c1&scope=events',
      ];
      const answers = async (observe: TestObserve): Promise<string[]> =>
        Promise.all(
          urls.map(async (url) => {
            const response = await observe.call({ method: 'GET', url });
            assert.equal(response.statusCode, 200, `${url}: ${response.body}`);
            return response.body;
          }),
        );
      const before = await answers(old);

      await backToBefore0045And0048(old, [model]);
      const texts = await db.selectFrom('audit_writer_leaves').select(['leaf_idx', 'body']).orderBy('leaf_idx').execute();
      assert.ok(
        texts.every((row) => typeof row.body === 'string' && row.body.startsWith('{"events":[')),
        'the old form: JSON text',
      );
      const writers = await db.selectFrom('events').select('written_by').distinct().execute();
      assert.deepEqual(
        writers.map((row) => row.written_by),
        [old.keyWriter],
        'the old form: key:<id>',
      );
      // An edit of the old form: the last writer leaf written with other whitespace, the same JSON value.
      const edited = texts.at(-1)!;
      await db
        .updateTable('audit_writer_leaves')
        .set({ body: JSON.stringify(JSON.parse(String(edited.body)), null, 1) })
        .where('leaf_idx', '=', edited.leaf_idx)
        .execute();
      await old.close();

      // The next start migrates; its vector index is loaded from the migrated rows.
      migrated = await startTestObserve(backend, { env, database: old.config.database, createKey: false });
      const next = migrated;
      next.call = (request) => next.service.app.inject({ ...request, headers: { authorization: `Bearer ${old.key}`, ...request.headers } });
      const { db: after, dialect } = next.service.context.database;
      const stored = await after.selectFrom('audit_writer_leaves').select(['leaf_idx', 'body']).orderBy('leaf_idx').execute();
      for (const row of stored.slice(0, -1)) assert.ok(Buffer.isBuffer(row.body) && row.body[0] === 0, `writer leaf ${row.leaf_idx}: the compact form`);
      assert.equal(stored.at(-1)!.body.toString(), JSON.stringify(JSON.parse(String(edited.body)), null, 1), 'the edited body keeps its bytes');
      const storedWriters = await after.selectFrom('events').select('written_by').distinct().execute();
      assert.deepEqual(
        storedWriters.map((row) => row.written_by),
        [storedWriter(old.keyWriter)],
      );
      assert.equal(storedWriter(old.keyWriter).length, 23, 'k and the key id in base64url');
      assert.deepEqual(await answers(next), before, 'the same answers, byte for byte');
      const verdict = (body: string) => JSON.parse(body) as { valid: boolean; brokenAt: { reason: string } | null };
      const [, , , a, b] = before;
      assert.equal(verdict(a!).valid, true);
      assert.equal(verdict(b!).valid, true);
      const broken = await next.call({ method: 'GET', url: '/api/audit/verify?sessionId=cw-edited' });
      assert.match(
        verdict(broken.body).brokenAt?.reason ?? '',
        /writer leaf \d+ is not the body stored for it/,
        'the edit made before the migration is still found',
      );
      const recalled = JSON.parse(before.at(-1)!) as { totalResults: number };
      assert.ok(recalled.totalResults > 0, 'recall finds the vectors stored before, by their model key');
      const models = await after.selectFrom('embeddings').select('model').distinct().execute();
      assert.deepEqual(
        models.map((row) => row.model),
        [modelKey(model)],
      );
      if (dialect === 'sqlite') {
        const index = await sql<{ sql: string }>`select sql from sqlite_schema where name = 'audit_log_leaves_scope'`.execute(after);
        assert.match(index.rows[0]!.sql, /\(scope_id\)$/);
        // countScopeLeaves' read is still one range of it: the scope, then the leaf index (the rowid) past the last tombstone.
        const plan = await sql<{ detail: string }>`explain query plan select count(*) from audit_log_leaves where scope_id = 'cw-a' and idx > 3`.execute(after);
        assert.deepEqual(
          plan.rows.map((row) => row.detail),
          ['SEARCH audit_log_leaves USING COVERING INDEX audit_log_leaves_scope (scope_id=? AND rowid>?)'],
        );
      }

      // The log and the writer checks go on from the migrated rows: a new request's body is stored compact and verifies.
      await ingestEvents(next, [custom('cw-a', 'agent', ago(1))]);
      const last = await after.selectFrom('audit_writer_leaves').select('body').orderBy('leaf_idx', 'desc').limit(1).executeTakeFirstOrThrow();
      assert.ok(Buffer.isBuffer(last.body) && last.body[0] === 0);
      const response = await next.call({ method: 'GET', url: '/api/audit/verify?sessionId=cw-a' });
      assert.equal(verdict(response.body).valid, true, response.body);
    } finally {
      await (migrated ?? old).close();
    }
  });
});
