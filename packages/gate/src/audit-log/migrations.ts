// The audit-log feature's migration steps (src/migrations.ts collects them after the frozen history).
import { addKeyCertificates, indexLeavesByScope, type MigrationStep } from '@vigil/platform';

export const auditLogMigrations: Record<string, MigrationStep> = {
  /** A key's certificate by the key it replaced: a key rotation the verifier can trust. */
  async '0010_audit_key_certificates'(db) {
    await addKeyCertificates(db);
  },
  /** A request's leaves by request: its trail's verify counts them to catch a tail cut under a rewritten head. */
  async '0015_audit_leaves_by_request'(db) {
    await indexLeavesByScope(db);
  },
};
