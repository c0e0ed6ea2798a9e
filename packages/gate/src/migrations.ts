// The gate's migration steps: the frozen history (0001–0009, migration-history/) and, after it, the
// steps each feature declares beside the tables it owns, collected in name order (a duplicate or
// missing number fails at startup).
import { collectMigrations } from '@vigil/platform';
import { approversMigrations } from './approvers/index.ts';
import { auditLogMigrations } from './audit-log/index.ts';
import { auditTrailMigrations } from './audit-trail/index.ts';
import { authMigrations } from './auth/index.ts';
import { chatMigrations } from './chat/index.ts';
import { erasureMigrations } from './erasure/index.ts';
import { escalationMigrations } from './escalation/index.ts';
import { gateHistory } from './migration-history/index.ts';
import { grantsMigrations } from './grants/index.ts';
import { budgetsMigrations } from './budgets/index.ts';
import { policiesMigrations } from './policies/index.ts';
import { receiptsMigrations } from './receipts/index.ts';
import { requestsMigrations } from './requests/index.ts';

export const gateMigrations = collectMigrations(
  gateHistory,
  auditLogMigrations,
  chatMigrations,
  auditTrailMigrations,
  policiesMigrations,
  authMigrations,
  receiptsMigrations,
  escalationMigrations,
  approversMigrations,
  grantsMigrations,
  budgetsMigrations,
  requestsMigrations,
  erasureMigrations,
);
