// The audit-log feature's migration steps (src/migrations.ts collects them after the frozen history).
import { indexLeavesByScope, type MigrationStep } from '@vigil/platform';

export const auditLogMigrations: Record<string, MigrationStep> = {
  /** A session's leaves by session: the server's own verify counts them to catch a tail cut under a rewritten head. */
  async '0026_audit_log_leaves_by_session'(db) {
    await indexLeavesByScope(db);
  },
};
