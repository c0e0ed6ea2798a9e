import assert from 'node:assert/strict';
import { test } from 'node:test';
import { leafHash, migrateToLatest, rootOf, type Checkpoint } from '@vigil/platform';
import { describeEachDatabase } from '@vigil/platform/testing';
import { sql } from 'kysely';
import { observeMigrations } from './migrations.ts';
import { ago, ingestEvents, started, startTestObserve, toolCall, type TestObserve } from './testing.ts';

/** The schema as it was before 0020: reflect's full tool-call index and, on SQLite, the leaves keyed by a bigint column beside the rowid. */
async function backToBefore0020(observe: TestObserve): Promise<void> {
  const { db, dialect } = observe.service.context.database;
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
      const leavesBefore = await db.selectFrom('audit_log_leaves').selectAll().orderBy('idx').execute();
      await migrateToLatest(database, observeMigrations);

      assert.deepEqual(await db.selectFrom('audit_log_leaves').selectAll().orderBy('idx').execute(), leavesBefore);
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
        const options = await sql<{ reloptions: string[] | null }>`select reloptions from pg_class where oid = 'events'::regclass`.execute(db);
        assert.deepEqual(options.rows[0]?.reloptions, ['autovacuum_vacuum_scale_factor=0.02']);
      }

      // The log goes on from the migrated leaves: a new event is the next leaf, and the checkpoint's root covers them all.
      const [appended] = await ingestEvents(observe, [toolCall('fp-a', 'agent', ago(1), 'c9')]);
      const leaves = await db.selectFrom('audit_log_leaves').select(['idx', 'item_id', 'leaf_hash']).orderBy('idx').execute();
      assert.equal(leaves.at(-1)!.item_id, appended!.id);
      assert.equal(Number(leaves.at(-1)!.idx), leavesBefore.length);
      assert.equal(leaves.at(-1)!.leaf_hash, leafHash(Buffer.from(appended!.hash, 'hex')).toString('hex'));
      const checkpoint = await observe.call({ method: 'POST', url: '/api/audit/checkpoint' });
      assert.equal(checkpoint.statusCode, 201, checkpoint.body);
      assert.equal((checkpoint.json() as Checkpoint).rootHash, rootOf(leaves.map((leaf) => Buffer.from(leaf.leaf_hash, 'hex'))).toString('hex'));
    } finally {
      await observe.close();
    }
  });
});
