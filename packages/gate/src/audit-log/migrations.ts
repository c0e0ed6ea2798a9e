// The audit-log feature's migration steps (src/migrations.ts collects them after the frozen history).
import {
  addCheckpointNotes,
  addHeadBucketTexts,
  keyLeavesByIndex,
  createHeadMapTables,
  addKeyCertificates,
  addLeafKinds,
  indexLeavesByScope,
  rekeyHeadMap,
  type MigrationStep,
} from '@vigil/platform';
import { ENTRY_LEAF } from './log.ts';

export const auditLogMigrations: Record<string, MigrationStep> = {
  /** A key's certificate by the key it replaced: a key rotation the verifier can trust. */
  async '0010_audit_key_certificates'(db) {
    await addKeyCertificates(db);
  },
  /**
   * A request's leaves by request (its trail's verify counts them to catch a tail cut under a
   * rewritten head), and each leaf's kind, backfilled (an entry's, a key rotation's, a change's).
   */
  async '0016_audit_leaf_kinds_and_requests'(db) {
    await indexLeavesByScope(db);
    await addLeafKinds(db, ENTRY_LEAF);
  },
  /** Each checkpoint as a C2SP signed note, and the witnesses' cosignatures of them (docs/audit.md, "C2SP formats"). */
  async '0017_audit_checkpoint_notes'(db) {
    await addCheckpointNotes(db);
  },
  /** The map of requests' heads each checkpoint commits in its last leaf (docs/audit.md, "Session heads"). */
  async '0022_audit_head_map'(db) {
    await createHeadMapTables(db);
  },
  /** The map of heads doubles its buckets as it grows (entries keyed by 24 bits of their scope's hash; docs/audit.md, "Session heads"). */
  async '0024_audit_head_map_growth'(db) {
    await rekeyHeadMap(db);
  },
  /** Each bucket of the map of heads as one row, what a checkpoint reads back of a changed bucket (docs/audit.md, "Session heads"). */
  async '0026_audit_head_bucket_texts'(db) {
    await addHeadBucketTexts(db);
  },
  /** On SQLite the leaves' index is the table's rowid: one B-tree less per append (audit-log.ts keyLeavesByIndex). */
  async '0027_audit_leaves_keyed_by_index'(db, dialect) {
    await keyLeavesByIndex(db, dialect);
  },
};
