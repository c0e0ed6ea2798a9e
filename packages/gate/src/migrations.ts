// The gate's migration steps: the frozen history (0001–0009, migration-history/) and, after it, the
// steps each feature declares beside the tables it owns, collected in name order (a duplicate or
// missing number fails at startup).
import { collectMigrationsAround } from '@vigil/platform';
import { auditLogMigrations } from './audit-log/index.ts';
import { auditTrailMigrations } from './audit-trail/index.ts';
import { authMigrations } from './auth/index.ts';
import { chatMigrations } from './chat/index.ts';
import { gateHistory } from './migration-history/index.ts';
import { policiesMigrations } from './policies/index.ts';
import { receiptsMigrations } from './receipts/index.ts';

export const gateMigrations = collectMigrationsAround(
  // Taken by branches not merged yet (issues 39 and 41); the merge that brings each step takes its number off.
  ['0018', '0019', '0020', '0021', '0022'],
  gateHistory,
  auditLogMigrations,
  chatMigrations,
  auditTrailMigrations,
  policiesMigrations,
  authMigrations,
  receiptsMigrations,
);
