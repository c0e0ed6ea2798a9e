// The audit-log feature's migration steps (src/migrations.ts collects them after the frozen history).
import {
  addCheckpointNotes,
  addHeadBucketTexts,
  createHeadMapTables,
  addKeyCertificates,
  addLeafKinds,
  indexLeavesByScope,
  rekeyHeadMap,
  type DialectName,
  type MigrationDb,
  type MigrationStep,
} from '@vigil/platform';
import { sql } from 'kysely';
import { EVENT_LEAF, WRITER_LEAF } from './writer-leaves.ts';

export const auditLogMigrations: Record<string, MigrationStep> = {
  /**
   * A session's leaves by session (the server's own verify counts them to catch a tail cut under a
   * rewritten head), and a key's certificate by the key it replaced (a key rotation the verifier can trust).
   */
  async '0026_audit_log_sessions_and_key_certificates'(db) {
    await indexLeavesByScope(db);
    await addKeyCertificates(db);
  },
  /** Each leaf's kind, backfilled: an event's, a writer leaf's, a tombstone's, a key rotation's, a change's. */
  async '0030_audit_leaf_kinds'(db) {
    await addLeafKinds(db, EVENT_LEAF, [{ table: 'audit_writer_leaves', leafColumn: 'leaf_idx', kind: WRITER_LEAF }]);
  },
  /** Each checkpoint as a C2SP signed note, and the witnesses' cosignatures of them (docs/audit.md, "C2SP formats"). */
  async '0033_audit_checkpoint_notes'(db) {
    await addCheckpointNotes(db);
  },
  /** The map of sessions' heads each checkpoint commits in its last leaf (docs/audit.md, "Session heads"). */
  async '0036_audit_head_map'(db) {
    await createHeadMapTables(db);
  },
  /** The map of heads doubles its buckets as it grows (entries keyed by 24 bits of their scope's hash; docs/audit.md, "Session heads"). */
  async '0040_audit_head_map_growth'(db) {
    await rekeyHeadMap(db);
  },
  /** Each bucket of the map of heads as one row, what a checkpoint reads back of a changed bucket (docs/audit.md, "Session heads"). */
  async '0046_audit_head_bucket_texts'(db) {
    await addHeadBucketTexts(db);
  },
};

/**
 * Part of step 0045 (src/migrations.ts): on SQLite the leaves' scope index keyed by the scope alone.
 * The leaf's index is the table's rowid there, which every index entry ends with already, so the
 * (scope_id, idx) index stored it twice; a scope's leaves are still one range in index order
 * (countScopeLeaves' `scope_id = ? and idx > ?` is one seek). PostgreSQL keeps (scope_id, idx).
 */
export async function keyLeavesByScopeAlone(db: MigrationDb, dialect: DialectName): Promise<void> {
  if (dialect !== 'sqlite') return;
  await sql`drop index audit_log_leaves_scope`.execute(db);
  await sql`create index audit_log_leaves_scope on audit_log_leaves (scope_id)`.execute(db);
}
