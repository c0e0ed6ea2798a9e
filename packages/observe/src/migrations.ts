// Observe's migration steps: the frozen history (0001–0023, migration-history/) and, from 0024 on,
// the steps each feature declares beside the tables it owns, collected in name order (a duplicate
// or missing number fails at startup).
import { collectMigrationsAround } from '@vigil/platform';
import { analyticsMigrations } from './analytics/index.ts';
import { auditLogMigrations } from './audit-log/index.ts';
import { authMigrations } from './auth/index.ts';
import { encryptionMigrations } from './encryption/index.ts';
import { erasureMigrations } from './erasure/index.ts';
import { addCaseAnswerColumns } from './evals/index.ts';
import { eventsMigrations } from './events/index.ts';
import { holdsMigrations } from './holds/index.ts';
import { createLlmCallIndexes } from './llm-calls/index.ts';
import { observeHistory } from './migration-history/index.ts';
import { redactionMigrations } from './redaction/index.ts';
import { settingsMigrations } from './settings/index.ts';

// 0045: taken by the storage-footprint branch (issue 43), not merged yet.
export const observeMigrations = collectMigrationsAround(
  ['0045'],
  observeHistory,
  eventsMigrations,
  analyticsMigrations,
  auditLogMigrations,
  authMigrations,
  settingsMigrations,
  redactionMigrations,
  holdsMigrations,
  erasureMigrations,
  encryptionMigrations,
  {
    /** Issue 42, one number for two features: the LLM-calls list's indexes and a run case's answer and reasoning. */
    async '0041_llm_call_indexes_and_case_answers'(db) {
      await createLlmCallIndexes(db);
      await addCaseAnswerColumns(db);
    },
  },
);
