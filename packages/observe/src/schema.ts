// The observe database's schema, composed of the tables each feature declares in its tables.ts (the
// feature that writes a table owns it) and the platform's own: job leases, admin changes, the audit log.
import type { AdminChangeTables, AuditLogTables, Database, LeaseTables } from '@vigil/platform';
import type { ObserveChangeResource } from './context.ts';
import type { AlertsTables } from './alerts/index.ts';
import type { AnalyticsTables } from './analytics/index.ts';
import type { AuthTables } from './auth/index.ts';
import type { BenchmarksTables } from './benchmarks/index.ts';
import type { EvalsTables } from './evals/index.ts';
import type { EventsTables } from './events/index.ts';
import type { GuardrailsTables } from './guardrails/index.ts';
import type { HealthTables } from './health/index.ts';
import type { EncryptionTables } from './encryption/index.ts';
import type { ErasureTables } from './erasure/index.ts';
import type { HoldsTables } from './holds/index.ts';
import type { OtelTables } from './otel/index.ts';
import type { RecallTables } from './recall/index.ts';
import type { RedactionTables } from './redaction/index.ts';
import type { ReflectTables } from './reflect/index.ts';
import type { SettingsTables } from './settings/index.ts';
import type { StreamTables } from './stream/index.ts';

export interface ObserveSchema
  extends
    LeaseTables,
    AdminChangeTables<ObserveChangeResource>,
    AuditLogTables,
    EventsTables,
    AuthTables,
    SettingsTables,
    AlertsTables,
    AnalyticsTables,
    HealthTables,
    RecallTables,
    BenchmarksTables,
    EvalsTables,
    GuardrailsTables,
    StreamTables,
    OtelTables,
    ReflectTables,
    RedactionTables,
    HoldsTables,
    ErasureTables,
    EncryptionTables {}

export type ObserveDatabase = Database<ObserveSchema>;
