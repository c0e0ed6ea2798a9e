// Observe's migration steps: the frozen history (0001–0023, migration-history/) and, from 0024 on,
// the steps each feature declares beside the tables it owns, collected in name order (a duplicate
// or missing number fails at startup).
import { collectMigrationsAround } from '@vigil/platform';
import { analyticsMigrations } from './analytics/index.ts';
import { auditLogMigrations, keyLeavesByScopeAlone, OBSERVE_LOG } from './audit-log/index.ts';
import { authMigrations } from './auth/index.ts';
import { encryptionMigrations } from './encryption/index.ts';
import { erasureMigrations } from './erasure/index.ts';
import { addCaseAnswerColumns } from './evals/index.ts';
import { compactKeyWriters, compactWriterLeaves, eventsMigrations } from './events/index.ts';
import { holdsMigrations } from './holds/index.ts';
import { createLlmCallIndexes } from './llm-calls/index.ts';
import { observeHistory } from './migration-history/index.ts';
import { recallMigrations } from './recall/index.ts';
import { redactionMigrations } from './redaction/index.ts';
import { settingsMigrations } from './settings/index.ts';

/** Numbers other branches have taken and not merged yet (collectMigrationsAround): 0047, the event-search branch (docs/scale.md, PostgreSQL writes). */
const PENDING_STEPS = ['0047'];

export const observeMigrations = collectMigrationsAround(
  PENDING_STEPS,
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
  recallMigrations,
  {
    /** Issue 42, one number for two features: the LLM-calls list's indexes and a run case's answer and reasoning. */
    async '0041_llm_call_indexes_and_case_answers'(db) {
      await createLlmCallIndexes(db);
      await addCaseAnswerColumns(db);
    },
    /**
     * Issue 43, bytes per event, one number for two features' storage: the writer leaves' bodies
     * stored compact (events/writer-leaf-store.ts), the events' API-key writers too
     * (events/stored-writer.ts) and, on SQLite, the leaves' scope index without the leaf index it
     * held twice (audit-log/migrations.ts). Every answer stays the same.
     */
    async '0045_compact_storage'(db, dialect) {
      await compactWriterLeaves(db, dialect, OBSERVE_LOG);
      await compactKeyWriters(db);
      await keyLeavesByScopeAlone(db, dialect);
    },
  },
);
