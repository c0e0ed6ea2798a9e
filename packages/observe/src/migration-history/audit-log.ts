import { backfillLeaves, createAuditLogWitnessTables, type MigrationDb } from '@vigil/platform';
import { sql } from 'kysely';

/** Migration 0016 as it first shipped: the log's tables, leaves keyed by `event_id`. */
export async function createAuditLogTablesV1(db: MigrationDb): Promise<void> {
  await db.schema
    .createTable('audit_log_head')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('size', 'bigint', (c) => c.notNull())
    .execute();
  await db.insertInto('audit_log_head').values({ id: 1, size: 0 }).execute();
  await db.schema
    .createTable('audit_log_leaves')
    .addColumn('idx', 'bigint', (c) => c.primaryKey())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('leaf_hash', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('audit_log_leaves_event').unique().on('audit_log_leaves').columns(['event_id']).execute();
  await db.schema
    .createTable('audit_log_nodes')
    .addColumn('level', 'integer', (c) => c.notNull())
    .addColumn('idx', 'bigint', (c) => c.notNull())
    .addColumn('hash', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('audit_log_nodes_pk', ['level', 'idx'])
    .execute();
  await db.schema
    .createTable('audit_checkpoints')
    .addColumn('tree_size', 'bigint', (c) => c.primaryKey())
    .addColumn('root_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('signature', 'text', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('audit_keys')
    .addColumn('key_id', 'text', (c) => c.primaryKey())
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}

/**
 * Migration 0017: the platform's log shape (leaves name their item and its chain, the session),
 * the built-nodes row, tombstones and witness deliveries; then every event without a leaf becomes one.
 */
export async function upgradeAuditLog(db: MigrationDb): Promise<void> {
  await db.schema.alterTable('audit_log_leaves').renameColumn('event_id', 'item_id').execute();
  await db.schema.alterTable('audit_log_leaves').addColumn('scope_id', 'text').execute();
  await db.schema.dropIndex('audit_log_leaves_event').execute();
  await db.schema.createIndex('audit_log_leaves_item').unique().on('audit_log_leaves').columns(['item_id']).execute();
  await sql`update audit_log_leaves set scope_id = (select e.session_id from events e where e.id = audit_log_leaves.item_id)`.execute(db);
  // 0016 built the inner nodes of every leaf it appended.
  const head = await db.selectFrom('audit_log_head').select('size').where('id', '=', 1).executeTakeFirstOrThrow();
  await createAuditLogWitnessTables(db, Number(head.size));
  await backfillLeaves(db, 'events', 'session_id');
}
