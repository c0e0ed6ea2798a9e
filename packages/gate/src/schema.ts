// The gate database's schema, composed of the tables each feature declares in its tables.ts (the
// feature that writes a table owns it) and the platform's own: job leases, admin changes, the audit log
// (every audit entry is a leaf).
import type { AdminChangeTables, AuditLogTables, Database, LeaseTables } from '@vigil/platform';
import type { GateChangeResource } from './context.ts';
import type { ApproversTables } from './approvers/index.ts';
import type { AuditTrailTables } from './audit-trail/index.ts';
import type { AuthTables } from './auth/index.ts';
import type { BudgetsTables } from './budgets/index.ts';
import type { ChatTables } from './chat/index.ts';
import type { ErasureTables } from './erasure/index.ts';
import type { GrantsTables } from './grants/index.ts';
import type { PoliciesTables } from './policies/index.ts';
import type { ReceiptsTables } from './receipts/index.ts';
import type { RequestsTables } from './requests/index.ts';
import type { WebhooksTables } from './webhooks/index.ts';

export interface GateSchema
  extends
    LeaseTables,
    AdminChangeTables<GateChangeResource>,
    AuditLogTables,
    RequestsTables,
    AuditTrailTables,
    PoliciesTables,
    AuthTables,
    WebhooksTables,
    ChatTables,
    ReceiptsTables,
    ApproversTables,
    GrantsTables,
    BudgetsTables,
    ErasureTables {}

export type GateDatabase = Database<GateSchema>;
