// The audit-log feature's migration steps (src/migrations.ts collects them after the frozen history).
import { addKeyCertificates, type MigrationStep } from '@vigil/platform';

export const auditLogMigrations: Record<string, MigrationStep> = {
  /** A key's certificate by the key it replaced: a key rotation the verifier can trust. */
  async '0010_audit_key_certificates'(db) {
    await addKeyCertificates(db);
  },
};
