// The audit-log feature's migration steps (src/migrations.ts collects them after the frozen history).
import { addKeyCertificates, indexLeavesByScope, type MigrationStep } from '@vigil/platform';

export const auditLogMigrations: Record<string, MigrationStep> = {
  /**
   * A session's leaves by session (the server's own verify counts them to catch a tail cut under a
   * rewritten head), and a key's certificate by the key it replaced (a key rotation the verifier can trust).
   */
  async '0026_audit_log_sessions_and_key_certificates'(db) {
    await indexLeavesByScope(db);
    await addKeyCertificates(db);
  },
};
