import { backfillLeaves, createAuditLogBaseTables, createAuditLogWitnessTables, type MigrationDb } from '@vigil/platform';
import { sql } from 'kysely';

/** Migration 0016 as it first shipped: the log's tables, leaves keyed by `event_id` (0017 renames it). */
export async function createAuditLogTablesV1(db: MigrationDb): Promise<void> {
  await createAuditLogBaseTables(db, { itemColumn: 'event_id', scoped: false, itemIndex: 'audit_log_leaves_event' });
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
